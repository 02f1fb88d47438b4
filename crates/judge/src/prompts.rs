//! The LLM-judge prompts (paper 000, listings 7–11) from the top-level `prompts/judge/` folder:
//! embedded at compile time or loaded from a directory.
//!
//! ```text
//!  judge.toml ──► version ─┐
//!  all 6 files ──► sha256 ─┴─► "<version>+<12 hex>"   (judge id → content hashes, fingerprint)
//!
//!  entailment.md        <REPORT> <QUEST> <NUMANS> <ANSWERS: "[01] text" lines>
//!  relevance.md                  <QUEST> <NUMANS> <ANSWERS: "[01] text" lines>
//!  completeness.md      <REPORT> <QUEST>          <ANSWERS: the texts, one per line>
//!  question_clarity.md           <QUEST>
//!  answer_clarity.md                     <NUMANS> <ANSWERS: "[01] text" lines>
//!
//!  batch/<criterion>.md (judge_batch > 1: several items of one study in one call)
//!    entailment, completeness: <REPORT> once, <NUMITEMS> <ITEMS>
//!    relevance, question_clarity, answer_clarity:  <NUMITEMS> <ITEMS>
//!    <ITEMS> = "Item 1:\n<block>\n\nItem 2:\n<block>…", each block rendered by
//!    JudgePrompts::render_item (the item's question and/or numbered answer lines)
//! ```
//!
//! Each template is split at its placeholders once, so inserted text (a report containing
//! `<QUEST>`, say) is never searched for placeholders.

use std::path::Path;

use sha2::{Digest, Sha256};

use crate::criterion::Criterion;
use crate::error::{JudgeError, Result};
use crate::item::QaItem;

const CONFIG: &str = "judge.toml";

/// A placeholder of a judge prompt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Slot {
    Report,
    Question,
    Count,
    Answers,
    ItemCount,
    Items,
}

impl Slot {
    const ALL: [Slot; 6] = [
        Slot::Report,
        Slot::Question,
        Slot::Count,
        Slot::Answers,
        Slot::ItemCount,
        Slot::Items,
    ];

    fn token(self) -> &'static str {
        match self {
            Slot::Report => "<REPORT>",
            Slot::Question => "<QUEST>",
            Slot::Count => "<NUMANS>",
            Slot::Answers => "<ANSWERS>",
            Slot::ItemCount => "<NUMITEMS>",
            Slot::Items => "<ITEMS>",
        }
    }

    /// Whether the prompt of `criterion` must contain this placeholder (else it must not);
    /// `batch`: the prompt of several items.
    fn required(self, criterion: Criterion, batch: bool) -> bool {
        match self {
            Slot::Report => matches!(criterion, Criterion::Entailment | Criterion::Completeness),
            Slot::Question => !batch && criterion != Criterion::AnswerClarity,
            Slot::Count => !batch && criterion.per_part(),
            Slot::Answers => !batch && criterion != Criterion::QuestionClarity,
            Slot::ItemCount | Slot::Items => batch,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Segment {
    Text(String),
    Slot(Slot),
}

/// One criterion's prompt, split at its placeholders.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Template {
    segments: Vec<Segment>,
}

impl Template {
    fn parse(file: &str, criterion: Criterion, text: &str, batch: bool) -> Result<Template> {
        let mut segments = Vec::new();
        let mut rest = text.trim_end();
        while !rest.is_empty() {
            let next = Slot::ALL
                .iter()
                .filter_map(|slot| rest.find(slot.token()).map(|at| (at, *slot)))
                .min_by_key(|(at, _)| *at);
            match next {
                Some((at, slot)) => {
                    if at > 0 {
                        segments.push(Segment::Text(rest[..at].to_string()));
                    }
                    segments.push(Segment::Slot(slot));
                    rest = &rest[at + slot.token().len()..];
                }
                None => {
                    segments.push(Segment::Text(rest.to_string()));
                    rest = "";
                }
            }
        }
        for slot in Slot::ALL {
            let present = segments.contains(&Segment::Slot(slot));
            if slot.required(criterion, batch) && !present {
                return Err(JudgeError::Invalid {
                    file: file.to_string(),
                    reason: format!(
                        "the {criterion} prompt must contain the placeholder {}",
                        slot.token()
                    ),
                });
            }
            if !slot.required(criterion, batch) && present {
                return Err(JudgeError::Invalid {
                    file: file.to_string(),
                    reason: format!(
                        "the {criterion} prompt cannot fill {}: the judge does not give it that \
                         input",
                        slot.token()
                    ),
                });
            }
        }
        Ok(Template { segments })
    }

    fn render(&self, fill: impl Fn(Slot, &mut String)) -> String {
        let mut out = String::new();
        for segment in &self.segments {
            match segment {
                Segment::Text(text) => out.push_str(text),
                Segment::Slot(slot) => fill(*slot, &mut out),
            }
        }
        out.push('\n');
        out
    }
}

#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Config {
    version: String,
}

/// The five judge prompts, their batched forms and their version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JudgePrompts {
    version: String,
    templates: Vec<(Criterion, Template)>,
    /// Per criterion: the batched prompt and 12 hex digits of sha256 over its text.
    batch: Vec<(Criterion, Template, String)>,
}

/// The file of a criterion's prompt (`batch`: of its batched prompt).
fn file_name(criterion: Criterion, batch: bool) -> String {
    if batch {
        format!("batch/{}.md", criterion.key())
    } else {
        format!("{}.md", criterion.key())
    }
}

fn embedded_batch_text(criterion: Criterion) -> &'static str {
    match criterion {
        Criterion::Entailment => include_str!("../../../prompts/judge/batch/entailment.md"),
        Criterion::Relevance => include_str!("../../../prompts/judge/batch/relevance.md"),
        Criterion::Completeness => include_str!("../../../prompts/judge/batch/completeness.md"),
        Criterion::QuestionClarity => {
            include_str!("../../../prompts/judge/batch/question_clarity.md")
        }
        Criterion::AnswerClarity => include_str!("../../../prompts/judge/batch/answer_clarity.md"),
    }
}

fn embedded_text(criterion: Criterion) -> &'static str {
    match criterion {
        Criterion::Entailment => include_str!("../../../prompts/judge/entailment.md"),
        Criterion::Relevance => include_str!("../../../prompts/judge/relevance.md"),
        Criterion::Completeness => include_str!("../../../prompts/judge/completeness.md"),
        Criterion::QuestionClarity => include_str!("../../../prompts/judge/question_clarity.md"),
        Criterion::AnswerClarity => include_str!("../../../prompts/judge/answer_clarity.md"),
    }
}

impl JudgePrompts {
    /// The prompts compiled into the binary (`prompts/judge/`).
    pub fn embedded() -> Self {
        let config = include_str!("../../../prompts/judge/judge.toml");
        Self::from_texts(config, |criterion, batch| {
            Ok(if batch {
                embedded_batch_text(criterion)
            } else {
                embedded_text(criterion)
            }
            .to_string())
        })
        .unwrap_or_else(|e| panic!("the embedded judge prompts are invalid: {e}"))
    }

    /// Loads a copy of the `prompts/judge/` folder.
    pub fn load(dir: &Path) -> Result<Self> {
        let read = |name: &str| {
            let path = dir.join(name);
            std::fs::read_to_string(&path).map_err(|source| JudgeError::Io { path, source })
        };
        let config = read(CONFIG)?;
        Self::from_texts(&config, |criterion, batch| {
            read(&file_name(criterion, batch))
        })
    }

    fn from_texts(config: &str, text: impl Fn(Criterion, bool) -> Result<String>) -> Result<Self> {
        let parsed: Config = toml::from_str(config).map_err(|e| JudgeError::Invalid {
            file: CONFIG.into(),
            reason: format!("{e}; expected `version = \"1\"`"),
        })?;
        let mut hasher = Sha256::new();
        hasher.update(config.as_bytes());
        let mut templates = Vec::new();
        let mut batch = Vec::new();
        for criterion in Criterion::ALL {
            let body = text(criterion, false)?;
            hasher.update([0]);
            hasher.update(body.as_bytes());
            templates.push((
                criterion,
                Template::parse(&file_name(criterion, false), criterion, &body, false)?,
            ));
        }
        for criterion in Criterion::ALL {
            let body = text(criterion, true)?;
            hasher.update([0]);
            hasher.update(body.as_bytes());
            let digest = hex::encode(Sha256::digest(body.as_bytes()));
            batch.push((
                criterion,
                Template::parse(&file_name(criterion, true), criterion, &body, true)?,
                digest[..12].to_string(),
            ));
        }
        let digest = hex::encode(hasher.finalize());
        Ok(JudgePrompts {
            version: format!("{}+{}", parsed.version.trim(), &digest[..12]),
            templates,
            batch,
        })
    }

    /// `"<version>+<12 hex of sha256 over the files>"`.
    pub fn version(&self) -> &str {
        &self.version
    }

    /// The prompt asking `criterion` about `item`.
    pub fn render(&self, criterion: Criterion, item: &QaItem<'_>) -> String {
        let template = self
            .templates
            .iter()
            .find(|(c, _)| *c == criterion)
            .map(|(_, t)| t)
            .unwrap_or_else(|| unreachable!("every criterion has a template"));
        template.render(|slot, out| match slot {
            Slot::Report => out.push_str(item.report.unwrap_or("").trim()),
            Slot::Question => out.push_str(item.question.trim()),
            Slot::Count => out.push_str(&item.parts.len().to_string()),
            Slot::Answers if criterion.per_part() => {
                for (i, part) in item.parts.iter().enumerate() {
                    if i > 0 {
                        out.push('\n');
                    }
                    out.push_str(&format!("[{:02}] {}", i + 1, part.text.trim()));
                }
            }
            Slot::Answers => {
                let texts: Vec<&str> = item.parts.iter().map(|p| p.text.trim()).collect();
                out.push_str(&texts.join("\n"));
            }
            Slot::ItemCount | Slot::Items => {}
        })
    }

    fn batch_of(&self, criterion: Criterion) -> (&Template, &str) {
        self.batch
            .iter()
            .find(|(c, _, _)| *c == criterion)
            .map(|(_, t, digest)| (t, digest.as_str()))
            .unwrap_or_else(|| unreachable!("every criterion has a batched template"))
    }

    /// 12 hex digits of sha256 over the batched prompt of `criterion` (part of the content hash
    /// of a batched judge's requests, so editing it re-judges that criterion only).
    pub fn batch_digest(&self, criterion: Criterion) -> &str {
        self.batch_of(criterion).1
    }

    /// What the batched prompt of `criterion` shows of `item` (after its `Item N:` line): the
    /// single-item prompt's question and answer lines, without the report.
    pub fn render_item(&self, criterion: Criterion, item: &QaItem<'_>) -> String {
        let question = item.question.trim();
        let numbered = || {
            item.parts
                .iter()
                .enumerate()
                .map(|(i, part)| format!("[{:02}] {}", i + 1, part.text.trim()))
                .collect::<Vec<_>>()
                .join("\n")
        };
        let count = item.parts.len();
        match criterion {
            Criterion::Entailment | Criterion::Relevance => format!(
                "Question: {question}\nAnswer ({count} sentences to rate):\n{}",
                numbered()
            ),
            Criterion::Completeness => {
                let texts: Vec<&str> = item.parts.iter().map(|p| p.text.trim()).collect();
                format!(
                    "Question: {question}\nAnswer (to rate):\n{}",
                    texts.join("\n")
                )
            }
            Criterion::QuestionClarity => format!("Question (to rate): {question}"),
            Criterion::AnswerClarity => {
                format!("Answer ({count} sentences to rate):\n{}", numbered())
            }
        }
    }

    /// The prompt asking `criterion` about several items of one study (`report`: the study's
    /// report, read by entailment and completeness), each one's block from
    /// [`JudgePrompts::render_item`], numbered `Item 1:` on in the given order.
    pub fn render_batch(&self, criterion: Criterion, report: &str, items: &[&str]) -> String {
        let (template, _) = self.batch_of(criterion);
        template.render(|slot, out| match slot {
            Slot::Report => out.push_str(report.trim()),
            Slot::ItemCount => out.push_str(&items.len().to_string()),
            Slot::Items => {
                for (i, block) in items.iter().enumerate() {
                    if i > 0 {
                        out.push_str("\n\n");
                    }
                    out.push_str(&format!("Item {}:\n{}", i + 1, block.trim_end()));
                }
            }
            Slot::Question | Slot::Count | Slot::Answers => {}
        })
    }
}
