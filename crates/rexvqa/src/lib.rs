//! The ReXVQA flavour's domain logic (paper 003, Pal et al.): four-option multiple-choice
//! questions with an explanation from each report, through a structured bullet list, filtered
//! by structural and content validators, a PHI check and near-duplicate removal.
//!
//! ```text
//!  report sentences ──bullets (LLM prompt, or the report's own statements)──► bullet list
//!  bullet list + scene graph ──generate (LLM prompt, or offline from facts + refdefs)──► MCQs
//!         │  v1 schema · v2 types · v3 format · v4 completeness (per MCQ, kept as columns)
//!         │  option-position balancing (seeded), table A2 category normaliser
//!  MCQ + bullets ──judge (LLM prompt, or offline heuristic)──► c1 domain · c2 depth · c3 alignment
//!  MCQ text ──phi──► names, dates, ids, `___` markers (dropped and recorded)
//! ```
//!
//! The SQL stages (`crates/rexvqa/sql/`) add the near-duplicate filter (`near_duplicates`), V(Q) and the
//! stratified QC sample.

pub mod balance;
pub mod bullets;
pub mod export;
pub mod functions;
pub mod generate;
pub mod judge;
pub mod offline;
pub mod phi;
pub mod stages;
pub mod taxonomy;
mod text;
pub mod validate;

use std::path::PathBuf;

use cxrlake_generate::PromptSet;

/// The files of `prompts/rexvqa/`, embedded: the three tasks' system and user templates and
/// answer schemas, and their settings.
pub const PROMPT_FILES: [(&str, &str); 10] = [
    (
        "prompts.toml",
        include_str!("../../../prompts/rexvqa/prompts.toml"),
    ),
    (
        "bullets.md",
        include_str!("../../../prompts/rexvqa/bullets.md"),
    ),
    (
        "bullets.user.md",
        include_str!("../../../prompts/rexvqa/bullets.user.md"),
    ),
    (
        "bullets.schema.json",
        include_str!("../../../prompts/rexvqa/bullets.schema.json"),
    ),
    (
        "generate.md",
        include_str!("../../../prompts/rexvqa/generate.md"),
    ),
    (
        "generate.user.md",
        include_str!("../../../prompts/rexvqa/generate.user.md"),
    ),
    (
        "generate.schema.json",
        include_str!("../../../prompts/rexvqa/generate.schema.json"),
    ),
    ("judge.md", include_str!("../../../prompts/rexvqa/judge.md")),
    (
        "judge.user.md",
        include_str!("../../../prompts/rexvqa/judge.user.md"),
    ),
    (
        "judge.schema.json",
        include_str!("../../../prompts/rexvqa/judge.schema.json"),
    ),
];

/// The embedded prompts of `prompts/rexvqa/` (tasks `bullets`, `generate` and `judge`).
pub fn prompts() -> cxrlake_generate::Result<PromptSet> {
    PromptSet::from_files(&PROMPT_FILES)
}

/// Everything that can go wrong in the ReXVQA flavour's domain logic.
#[derive(Debug, thiserror::Error)]
pub enum RexvqaError {
    /// The taxonomy file could not be read.
    #[error("cannot read the ReXVQA taxonomy {path}: {source}")]
    Io {
        /// The file that failed.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// The taxonomy is malformed or inconsistent.
    #[error("ReXVQA taxonomy {origin}: {reason} (fix the file; see refdefs/rexvqa/taxonomy.toml)")]
    Taxonomy {
        /// The file, or `embedded`.
        origin: String,
        /// What is wrong.
        reason: String,
    },
    /// The prompts folder lacks a task or is malformed.
    #[error("ReXVQA prompts: {0}")]
    Prompt(#[from] cxrlake_generate::GenerateError),
}

/// Result with [`RexvqaError`].
pub type Result<T, E = RexvqaError> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_embedded_prompts_have_the_three_tasks() {
        let prompts = prompts().expect("embedded prompts");
        for task in ["bullets", "generate", "judge"] {
            assert!(prompts.task(task).is_some(), "{task}");
        }
        let loaded = PromptSet::load(
            &std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../prompts/rexvqa"),
        )
        .expect("prompts/rexvqa");
        assert_eq!(loaded.version(), prompts.version());
    }
}
