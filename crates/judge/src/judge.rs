//! Which judge rates, and the content-addressed request of one QA pair for one criterion.

use std::sync::Arc;

use ring::digest::{Context, SHA256};

use crate::criterion::Criterion;
use crate::heuristic::{self, HEURISTIC_JUDGE};
use crate::item::QaItem;
use crate::prompts::JudgePrompts;
use crate::reading::{READING_JUDGE, ReportReader};

/// The judge of a run.
#[derive(Debug, Clone)]
pub enum Judge {
    /// The offline default: rules over provenance and text ([`crate::heuristic`]).
    Heuristic,
    /// Offline: the heuristic with an entailment criterion that reads the report through
    /// `reader` ([`crate::reading`]).
    Reading {
        /// What reads claims from the report and the answer parts.
        reader: Arc<dyn ReportReader>,
    },
    /// An LLM through an OpenAI-compatible server, with the prompts of listings 7–11.
    Llm {
        /// The model name sent to the server.
        model: String,
        /// The prompts.
        prompts: Arc<JudgePrompts>,
        /// Items of one study and criterion asked in one call (`cxrlake.judge_batch`); 1: the
        /// single-item prompts of listings 7–11.
        batch: usize,
    },
}

impl PartialEq for Judge {
    fn eq(&self, other: &Judge) -> bool {
        match (self, other) {
            (Judge::Llm { prompts: a, .. }, Judge::Llm { prompts: b, .. }) => {
                self.id() == other.id() && a == b
            }
            _ => self.id() == other.id(),
        }
    }
}

impl Eq for Judge {}

/// What the judge reads for one criterion of one QA pair, and its content hash.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    /// The criterion.
    pub criterion: Criterion,
    /// Exactly what the judge reads: the rendered prompt (LLM) or the heuristic's input.
    pub input: String,
    /// A batched LLM judge's block of this item in its batched prompt
    /// ([`JudgePrompts::render_item`]); empty for every other judge.
    pub item: String,
    /// `sha256(judge cache id, criterion, input)`, 32 hex digits: equal inputs, one verdict.
    pub content_hash: String,
}

impl Judge {
    /// The `judge` value recorded in `qa` and `qa_judgements`: `heuristic-1`, `reading-1`,
    /// `llm:<model>@judge-prompts-<version>`, or with batched calls
    /// `llm:<model>@judge-prompts-<version>/batch-<n>`.
    pub fn id(&self) -> String {
        match self {
            Judge::Heuristic => HEURISTIC_JUDGE.to_string(),
            Judge::Reading { .. } => READING_JUDGE.to_string(),
            Judge::Llm { prompts, .. } => {
                format!(
                    "{}@judge-prompts-{}{}",
                    self.model_id(),
                    prompts.version(),
                    self.batch_suffix()
                )
            }
        }
    }

    fn model_id(&self) -> String {
        match self {
            Judge::Llm { model, .. } => format!("llm:{model}"),
            _ => String::new(),
        }
    }

    /// `/batch-<n>` for an LLM judge asking several items per call, else empty.
    fn batch_suffix(&self) -> String {
        match self {
            Judge::Llm { batch, .. } if *batch > 1 => format!("/batch-{batch}"),
            _ => String::new(),
        }
    }

    /// Items of one study and criterion per LLM call (1 for the judges without an LLM).
    pub fn batch(&self) -> usize {
        match self {
            Judge::Llm { batch, .. } => (*batch).max(1),
            _ => 1,
        }
    }

    /// What content hashes are keyed by: `heuristic-1`, `reading-1`, `llm:<model>`, or
    /// `llm:<model>/batch-<n>` (an item answered in a batched call is another measurement than
    /// its single-item prompt: the two never share a verdict). The rendered prompt is part of the
    /// input, so editing one criterion's prompt re-judges that criterion only.
    pub fn cache_id(&self) -> String {
        match self {
            Judge::Heuristic => HEURISTIC_JUDGE.to_string(),
            Judge::Reading { .. } => READING_JUDGE.to_string(),
            Judge::Llm { .. } => format!("{}{}", self.model_id(), self.batch_suffix()),
        }
    }

    /// The request of `item` for `criterion` under the cache identity `id` (its
    /// [`Judge::cache_id`]). A batched LLM judge also keys the hash by its batched prompt of
    /// `criterion` ([`JudgePrompts::batch_digest`]).
    pub fn request(&self, id: &str, criterion: Criterion, item: &QaItem<'_>) -> Request {
        let (input, batched) = match self {
            Judge::Heuristic => (heuristic::input(criterion, item), None),
            Judge::Reading { reader } => (
                heuristic::reading_input(criterion, item, reader.as_ref()),
                None,
            ),
            Judge::Llm { prompts, batch, .. } => (
                prompts.render(criterion, item),
                (*batch > 1).then(|| {
                    (
                        prompts.render_item(criterion, item),
                        prompts.batch_digest(criterion),
                    )
                }),
            ),
        };
        let mut hasher = Context::new(&SHA256);
        hasher.update(id.as_bytes());
        hasher.update(&[0]);
        hasher.update(criterion.key().as_bytes());
        hasher.update(&[0]);
        hasher.update(input.as_bytes());
        if let Some((_, digest)) = &batched {
            hasher.update(&[0]);
            hasher.update(digest.as_bytes());
        }
        let content_hash = hex_of(&hasher.finish().as_ref()[..16]);
        Request {
            criterion,
            input,
            item: batched.map(|(item, _)| item).unwrap_or_default(),
            content_hash,
        }
    }
}

/// `bytes` in lower-case hex (`hex::encode` collects an iterator of chars, a visible share of
/// grade's time at 5 hashes per QA pair).
fn hex_of(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(2 * bytes.len());
    for byte in bytes {
        out.push(char::from(DIGITS[usize::from(byte >> 4)]));
        out.push(char::from(DIGITS[usize::from(byte & 15)]));
    }
    out
}
