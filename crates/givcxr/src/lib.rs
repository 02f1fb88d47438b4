//! The GIV-CXR flavour's domain logic (paper 002, supplement): region-grounded open questions
//! per anatomical region of each frontal image, from the region's box, its Chest ImaGenome-style
//! attributes and its report phrases, filtered by a hallucination judge.
//!
//! ```text
//!  region context (box, `category|yes|value` attributes, texture cues, phrases)
//!     ──questions (P1: LLM, or offline from the facts)──► {"questions": [...]}  + lint codes
//!     ──answers   (P2: LLM, or offline from the facts)──► {"answers": [...]}    same order, same count
//!  context + its QA pairs
//!     ──judge     (P3: LLM, or offline heuristic)──► [{is_hallucination, explanation, score}]
//!        reverse negation → always flagged · supported by any fact → not flagged
//! ```
//!
//! The SQL stages (`crates/givcxr/sql/`) build the contexts from the scene graphs and ImaGenome boxes,
//! derive the per-pair fields (aspect, clinical finding, box size, lengths), split patients and
//! filter; the vocabularies are `refdefs/givcxr/vocabulary.toml`, the prompts `prompts/givcxr/`.

pub mod answers;
pub mod context;
pub mod evaluate;
pub mod export;
pub mod functions;
pub mod judge;
pub mod offline;
pub mod questions;
pub mod split;
pub mod stages;
pub mod text;
pub mod vocab;

use std::path::PathBuf;

use cxrlake_generate::PromptSet;

/// The files of `prompts/givcxr/`, embedded: the three tasks' system and user templates and
/// answer schemas, and their settings with the changelog.
pub const PROMPT_FILES: [(&str, &str); 10] = [
    (
        "prompts.toml",
        include_str!("../../../prompts/givcxr/prompts.toml"),
    ),
    (
        "questions.md",
        include_str!("../../../prompts/givcxr/questions.md"),
    ),
    (
        "questions.user.md",
        include_str!("../../../prompts/givcxr/questions.user.md"),
    ),
    (
        "questions.schema.json",
        include_str!("../../../prompts/givcxr/questions.schema.json"),
    ),
    (
        "answers.md",
        include_str!("../../../prompts/givcxr/answers.md"),
    ),
    (
        "answers.user.md",
        include_str!("../../../prompts/givcxr/answers.user.md"),
    ),
    (
        "answers.schema.json",
        include_str!("../../../prompts/givcxr/answers.schema.json"),
    ),
    ("judge.md", include_str!("../../../prompts/givcxr/judge.md")),
    (
        "judge.user.md",
        include_str!("../../../prompts/givcxr/judge.user.md"),
    ),
    (
        "judge.schema.json",
        include_str!("../../../prompts/givcxr/judge.schema.json"),
    ),
];

/// The embedded prompts of `prompts/givcxr/` (tasks `questions`, `answers` and `judge`).
pub fn prompts() -> cxrlake_generate::Result<PromptSet> {
    PromptSet::from_files(&PROMPT_FILES)
}

/// Everything that can go wrong in the GIV-CXR flavour's domain logic.
#[derive(Debug, thiserror::Error)]
pub enum GivcxrError {
    /// The vocabulary file could not be read.
    #[error("cannot read the GIV-CXR vocabulary {path}: {source}")]
    Io {
        /// The file that failed.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// The vocabulary is malformed or inconsistent.
    #[error(
        "GIV-CXR vocabulary {origin}: {reason} (fix the file; see refdefs/givcxr/vocabulary.toml)"
    )]
    Vocabulary {
        /// The file, or `embedded`.
        origin: String,
        /// What is wrong.
        reason: String,
    },
    /// The prompts folder lacks a task or is malformed.
    #[error("GIV-CXR prompts: {0}")]
    Prompt(#[from] cxrlake_generate::GenerateError),
}

/// Result with [`GivcxrError`].
pub type Result<T, E = GivcxrError> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_embedded_prompts_have_the_three_tasks_and_the_changelog() {
        let prompts = prompts().expect("embedded prompts");
        for task in ["questions", "answers", "judge"] {
            assert!(prompts.task(task).is_some(), "{task}");
        }
        let loaded = PromptSet::load(
            &std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../prompts/givcxr"),
        )
        .expect("prompts/givcxr");
        assert_eq!(loaded.version(), prompts.version());
        let versions: Vec<&str> = prompts
            .changelog()
            .iter()
            .map(|c| c.version.as_str())
            .collect();
        assert_eq!(versions[..5], ["0.1", "0.2", "0.3", "0.4", "1.0"]);
    }
}
