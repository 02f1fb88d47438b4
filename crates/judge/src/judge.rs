//! Which judge rates, and the content-addressed request of one QA pair for one criterion.

use std::sync::Arc;

use sha2::{Digest, Sha256};

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
    /// `sha256(judge cache id, criterion, input)`, 32 hex digits: equal inputs, one verdict.
    pub content_hash: String,
}

impl Judge {
    /// The `judge` value recorded in `qa` and `qa_judgements`: `heuristic-1`, or
    /// `llm:<model>@judge-prompts-<version>`.
    pub fn id(&self) -> String {
        match self {
            Judge::Heuristic => HEURISTIC_JUDGE.to_string(),
            Judge::Reading { .. } => READING_JUDGE.to_string(),
            Judge::Llm { model, prompts } => {
                format!("llm:{model}@judge-prompts-{}", prompts.version())
            }
        }
    }

    /// What content hashes are keyed by: `heuristic-1`, or `llm:<model>` (the rendered prompt is
    /// part of the input, so editing one criterion's prompt re-judges that criterion only).
    pub fn cache_id(&self) -> String {
        match self {
            Judge::Heuristic => HEURISTIC_JUDGE.to_string(),
            Judge::Reading { .. } => READING_JUDGE.to_string(),
            Judge::Llm { model, .. } => format!("llm:{model}"),
        }
    }

    /// The request of `item` for `criterion` under the cache identity `id` (its
    /// [`Judge::cache_id`]).
    pub fn request(&self, id: &str, criterion: Criterion, item: &QaItem<'_>) -> Request {
        let input = match self {
            Judge::Heuristic => heuristic::input(criterion, item),
            Judge::Reading { reader } => heuristic::reading_input(criterion, item, reader.as_ref()),
            Judge::Llm { prompts, .. } => prompts.render(criterion, item),
        };
        let mut hasher = Sha256::new();
        hasher.update(id.as_bytes());
        hasher.update([0]);
        hasher.update(criterion.key().as_bytes());
        hasher.update([0]);
        hasher.update(input.as_bytes());
        let content_hash = hex::encode(&hasher.finalize()[..16]);
        Request {
            criterion,
            input,
            content_hash,
        }
    }
}
