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
}

impl Slot {
    const ALL: [Slot; 4] = [Slot::Report, Slot::Question, Slot::Count, Slot::Answers];

    fn token(self) -> &'static str {
        match self {
            Slot::Report => "<REPORT>",
            Slot::Question => "<QUEST>",
            Slot::Count => "<NUMANS>",
            Slot::Answers => "<ANSWERS>",
        }
    }

    /// Whether the prompt of `criterion` must contain this placeholder.
    fn required(self, criterion: Criterion) -> bool {
        match self {
            Slot::Report => matches!(criterion, Criterion::Entailment | Criterion::Completeness),
            Slot::Question => criterion != Criterion::AnswerClarity,
            Slot::Count => criterion.per_part(),
            Slot::Answers => criterion != Criterion::QuestionClarity,
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
    fn parse(file: &str, criterion: Criterion, text: &str) -> Result<Template> {
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
            if slot.required(criterion) && !present {
                return Err(JudgeError::Invalid {
                    file: file.to_string(),
                    reason: format!(
                        "the {criterion} prompt must contain the placeholder {}",
                        slot.token()
                    ),
                });
            }
            if !slot.required(criterion) && present {
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

/// The five judge prompts and their version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JudgePrompts {
    version: String,
    templates: Vec<(Criterion, Template)>,
}

/// The file of a criterion's prompt.
fn file_name(criterion: Criterion) -> String {
    format!("{}.md", criterion.key())
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
        Self::from_texts(config, |criterion| Ok(embedded_text(criterion).to_string()))
            .unwrap_or_else(|e| panic!("the embedded judge prompts are invalid: {e}"))
    }

    /// Loads a copy of the `prompts/judge/` folder.
    pub fn load(dir: &Path) -> Result<Self> {
        let read = |name: &str| {
            let path = dir.join(name);
            std::fs::read_to_string(&path).map_err(|source| JudgeError::Io { path, source })
        };
        let config = read(CONFIG)?;
        Self::from_texts(&config, |criterion| read(&file_name(criterion)))
    }

    fn from_texts(config: &str, text: impl Fn(Criterion) -> Result<String>) -> Result<Self> {
        let parsed: Config = toml::from_str(config).map_err(|e| JudgeError::Invalid {
            file: CONFIG.into(),
            reason: format!("{e}; expected `version = \"1\"`"),
        })?;
        let mut hasher = Sha256::new();
        hasher.update(config.as_bytes());
        let mut templates = Vec::new();
        for criterion in Criterion::ALL {
            let body = text(criterion)?;
            hasher.update([0]);
            hasher.update(body.as_bytes());
            templates.push((
                criterion,
                Template::parse(&file_name(criterion), criterion, &body)?,
            ));
        }
        let digest = hex::encode(hasher.finalize());
        Ok(JudgePrompts {
            version: format!("{}+{}", parsed.version.trim(), &digest[..12]),
            templates,
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
        })
    }
}
