//! The three LLM prompts of extraction (paper 000, listings 1, 3 and 5) with our few-shot examples,
//! from the top-level `prompts/` folder: embedded at compile time or loaded from a directory.
//!
//! ```text
//!  prompts.toml ──► version ─┐
//!  all 8 files ──► sha256 ───┴─► "<version>+<12 hex>"   (LLM cache key, stage fingerprint)
//!
//!  sentences.md ─┬─ <FEWSHOT> ◄── sentences.fewshot.md      (at load)
//!                └─ <REPORT>  ◄── the report               (per call)
//!  observations.md ─┬─ <GUIDE>   ◄── observations.guidelines.md
//!                   ├─ <FEWSHOT> ◄── observations.fewshot.md
//!                   └─ <SENT>    ◄── the cluster's sentences
//!  indication.md ─┬─ <FEWSHOT> ◄── indication.fewshot.md
//!                 ├─ <IND>     ◄── the indication
//!                 └─ <FIND>    ◄── "[S05] text" lines
//! ```
//!
//! Each template is split into text and placeholder segments once, so inserted text (a report
//! containing `<FEWSHOT>`, say) is never searched for placeholders.

use std::path::Path;

use sha2::{Digest, Sha256};

use crate::{ExtractError, Result};

/// The files of a prompts folder.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum PromptFile {
    Config,
    Sentences,
    SentencesFewshot,
    Observations,
    ObservationsGuidelines,
    ObservationsFewshot,
    Indication,
    IndicationFewshot,
}

impl PromptFile {
    /// All files, in hashing order.
    const ALL: [PromptFile; 8] = [
        Self::Config,
        Self::Sentences,
        Self::SentencesFewshot,
        Self::Observations,
        Self::ObservationsGuidelines,
        Self::ObservationsFewshot,
        Self::Indication,
        Self::IndicationFewshot,
    ];

    /// Name within the prompts folder.
    fn name(self) -> &'static str {
        match self {
            Self::Config => "prompts.toml",
            Self::Sentences => "sentences.md",
            Self::SentencesFewshot => "sentences.fewshot.md",
            Self::Observations => "observations.md",
            Self::ObservationsGuidelines => "observations.guidelines.md",
            Self::ObservationsFewshot => "observations.fewshot.md",
            Self::Indication => "indication.md",
            Self::IndicationFewshot => "indication.fewshot.md",
        }
    }

    fn embedded_text(self) -> &'static str {
        match self {
            Self::Config => include_str!("../../../prompts/prompts.toml"),
            Self::Sentences => include_str!("../../../prompts/sentences.md"),
            Self::SentencesFewshot => include_str!("../../../prompts/sentences.fewshot.md"),
            Self::Observations => include_str!("../../../prompts/observations.md"),
            Self::ObservationsGuidelines => {
                include_str!("../../../prompts/observations.guidelines.md")
            }
            Self::ObservationsFewshot => include_str!("../../../prompts/observations.fewshot.md"),
            Self::Indication => include_str!("../../../prompts/indication.md"),
            Self::IndicationFewshot => include_str!("../../../prompts/indication.fewshot.md"),
        }
    }
}

/// A placeholder of a template.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Slot {
    FewShot,
    Guide,
    Report,
    Sentences,
    Indication,
    Findings,
}

impl Slot {
    fn token(self) -> &'static str {
        match self {
            Self::FewShot => "<FEWSHOT>",
            Self::Guide => "<GUIDE>",
            Self::Report => "<REPORT>",
            Self::Sentences => "<SENT>",
            Self::Indication => "<IND>",
            Self::Findings => "<FIND>",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Segment {
    Text(String),
    Slot(Slot),
}

/// A template split into text and the placeholders left for rendering.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Template {
    segments: Vec<Segment>,
}

impl Template {
    /// Splits `text` at the placeholders `fixed` (filled now from their texts) and `per_call`
    /// (filled by [`Template::render`]); each of them must occur at least once.
    fn parse(
        file: PromptFile,
        text: &str,
        fixed: &[(Slot, &str)],
        per_call: &[Slot],
    ) -> Result<Template> {
        let slots: Vec<Slot> = fixed
            .iter()
            .map(|(slot, _)| *slot)
            .chain(per_call.iter().copied())
            .collect();
        let mut segments = Vec::new();
        let mut seen = Vec::new();
        let mut rest = text.trim_end();
        loop {
            let next = slots
                .iter()
                .filter_map(|slot| rest.find(slot.token()).map(|at| (at, *slot)))
                .min_by_key(|(at, _)| *at);
            let Some((at, slot)) = next else {
                segments.push(Segment::Text(rest.to_string()));
                break;
            };
            segments.push(Segment::Text(rest[..at].to_string()));
            match fixed.iter().find(|(fixed_slot, _)| *fixed_slot == slot) {
                Some((_, value)) => segments.push(Segment::Text(value.trim_end().to_string())),
                None => segments.push(Segment::Slot(slot)),
            }
            seen.push(slot);
            rest = &rest[at + slot.token().len()..];
        }
        if let Some(missing) = slots.iter().find(|slot| !seen.contains(slot)) {
            return Err(ExtractError::Prompt {
                file: file.name().to_string(),
                reason: format!(
                    "the template lacks the placeholder {}; it needs {}",
                    missing.token(),
                    slots
                        .iter()
                        .map(|slot| slot.token())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            });
        }
        segments.retain(|segment| segment != &Segment::Text(String::new()));
        Ok(Template { segments })
    }

    /// The template with each remaining placeholder replaced by its value in `values`.
    fn render(&self, values: &[(Slot, &str)]) -> String {
        let mut out = String::new();
        for segment in &self.segments {
            match segment {
                Segment::Text(text) => out.push_str(text),
                Segment::Slot(slot) => {
                    if let Some((_, value)) = values.iter().find(|(s, _)| s == slot) {
                        out.push_str(value);
                    }
                }
            }
        }
        out
    }
}

/// `prompts.toml`.
#[derive(Debug, serde::Deserialize)]
struct Config {
    version: String,
}

/// The three extraction prompts with their few-shot examples and a version that changes whenever
/// any prompt file changes.
#[derive(Debug, Clone)]
pub struct Prompts {
    version: String,
    sentences: Template,
    observations: Template,
    indication: Template,
}

impl Prompts {
    /// The prompts shipped with this build (the repository's `prompts/` at compile time).
    pub fn embedded() -> Prompts {
        Self::from_texts(|file| Ok(file.embedded_text().to_string()))
            .expect("the embedded prompts/ folder is valid (checked by tests/it/prompts.rs)")
    }

    /// Reads the prompt files from `dir` (a copy of the repository's `prompts/` folder).
    ///
    /// Fails with [`ExtractError::Prompt`] naming the file when a file is missing or unreadable,
    /// `prompts.toml` has no `version`, or a template lacks one of its placeholders.
    pub fn load(dir: &Path) -> Result<Prompts> {
        Self::from_texts(|file| {
            std::fs::read_to_string(dir.join(file.name())).map_err(|err| ExtractError::Prompt {
                file: file.name().to_string(),
                reason: format!("cannot read {}: {err}", dir.join(file.name()).display()),
            })
        })
    }

    fn from_texts(read: impl Fn(PromptFile) -> Result<String>) -> Result<Prompts> {
        let texts = PromptFile::ALL
            .into_iter()
            .map(|file| read(file).map(|text| (file, text)))
            .collect::<Result<Vec<_>>>()?;
        let text = |wanted: PromptFile| {
            texts
                .iter()
                .find(|(file, _)| *file == wanted)
                .map_or("", |(_, text)| text.as_str())
        };
        let config: Config =
            toml::from_str(text(PromptFile::Config)).map_err(|err| ExtractError::Prompt {
                file: PromptFile::Config.name().to_string(),
                reason: format!("expected `version = \"1\"`: {err}"),
            })?;
        if config.version.trim().is_empty() {
            return Err(ExtractError::Prompt {
                file: PromptFile::Config.name().to_string(),
                reason: "`version` is empty".to_string(),
            });
        }
        let mut hasher = Sha256::new();
        for (file, content) in &texts {
            hasher.update(file.name().as_bytes());
            hasher.update([0]);
            hasher.update((content.len() as u64).to_le_bytes());
            hasher.update(content.as_bytes());
        }
        let digest = hex::encode(hasher.finalize());
        Ok(Prompts {
            version: format!("{}+{}", config.version.trim(), &digest[..12]),
            sentences: Template::parse(
                PromptFile::Sentences,
                text(PromptFile::Sentences),
                &[(Slot::FewShot, text(PromptFile::SentencesFewshot))],
                &[Slot::Report],
            )?,
            observations: Template::parse(
                PromptFile::Observations,
                text(PromptFile::Observations),
                &[
                    (Slot::Guide, text(PromptFile::ObservationsGuidelines)),
                    (Slot::FewShot, text(PromptFile::ObservationsFewshot)),
                ],
                &[Slot::Sentences],
            )?,
            indication: Template::parse(
                PromptFile::Indication,
                text(PromptFile::Indication),
                &[(Slot::FewShot, text(PromptFile::IndicationFewshot))],
                &[Slot::Indication, Slot::Findings],
            )?,
        })
    }

    /// `"<declared version>+<first 12 hex of sha256 over all files' contents>"`: changes when any
    /// file changes, even if the declared version was not bumped.
    pub fn version(&self) -> &str {
        &self.version
    }

    /// The sentence-extraction prompt (listing 1) for a full report.
    pub fn sentences(&self, report: &str) -> String {
        self.sentences.render(&[(Slot::Report, report.trim_end())])
    }

    /// The observation-extraction prompt (listing 3) for the sentences of one cluster.
    pub fn observations(&self, sentences: &[&str]) -> String {
        let joined = sentences
            .iter()
            .map(|sentence| sentence.trim())
            .collect::<Vec<_>>()
            .join(" ");
        self.observations.render(&[(Slot::Sentences, &joined)])
    }

    /// The indication-extraction prompt (listing 5) for the indication text and the
    /// `(sent_id, sentence)` pairs of the FINDINGS and IMPRESSION sentences.
    pub fn indication(&self, indication: &str, findings: &[(&str, &str)]) -> String {
        let lines = findings
            .iter()
            .map(|(id, sentence)| format!("[{id}] {}", sentence.trim()))
            .collect::<Vec<_>>()
            .join("\n");
        self.indication.render(&[
            (Slot::Indication, indication.trim()),
            (Slot::Findings, &lines),
        ])
    }
}
