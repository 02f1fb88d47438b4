//! The MIMIC-CXR-VQA flavour's domain logic (paper 001, Aas-Alas et al.; not Bae et al.'s
//! EHRXQA dataset of the same name): free-text QA pairs from the CheXpert labels of MIMIC-CXR.
//!
//! ```text
//!  CheXpert labels + "heart" rule ──bank (15 × 6 questions, value-conditioned sampling)──► questions
//!  question + indication + findings ──answer (appendices B/C prompt, or offline from the scene graph)──► answer
//!                                   └─ echo check, comparison-term / report-reference linter
//!  question + answer + report ──judge (four rubrics of table 3; LLM or offline heuristic)──► verdicts
//! ```

pub mod answer;
pub mod bank;
pub mod export;
pub mod functions;
pub mod judge;
pub mod lint;
pub mod stages;
mod text;

use std::path::PathBuf;

use cxrlake_generate::PromptSet;

/// The files of `prompts/mimic_cxr_vqa/`, embedded: the answer prompt of appendices B and C and
/// our four-rubric judge prompt, their settings and answer schemas.
pub const PROMPT_FILES: [(&str, &str); 7] = [
    (
        "prompts.toml",
        include_str!("../../../prompts/mimic_cxr_vqa/prompts.toml"),
    ),
    (
        "answer.md",
        include_str!("../../../prompts/mimic_cxr_vqa/answer.md"),
    ),
    (
        "answer.user.md",
        include_str!("../../../prompts/mimic_cxr_vqa/answer.user.md"),
    ),
    (
        "answer.schema.json",
        include_str!("../../../prompts/mimic_cxr_vqa/answer.schema.json"),
    ),
    (
        "judge.md",
        include_str!("../../../prompts/mimic_cxr_vqa/judge.md"),
    ),
    (
        "judge.user.md",
        include_str!("../../../prompts/mimic_cxr_vqa/judge.user.md"),
    ),
    (
        "judge.schema.json",
        include_str!("../../../prompts/mimic_cxr_vqa/judge.schema.json"),
    ),
];

/// The embedded prompts of `prompts/mimic_cxr_vqa/` (tasks `answer` and `judge`).
pub fn prompts() -> cxrlake_generate::Result<PromptSet> {
    PromptSet::from_files(&PROMPT_FILES)
}

/// Everything that can go wrong in the MIMIC-CXR-VQA flavour's domain logic.
#[derive(Debug, thiserror::Error)]
pub enum MimicVqaError {
    /// The question bank could not be read.
    #[error(
        "cannot read the MIMIC-CXR-VQA question bank {path}: {source} (the folder must hold \
         questions.toml)"
    )]
    Io {
        /// The file that failed.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// The question bank is malformed or inconsistent.
    #[error(
        "MIMIC-CXR-VQA question bank {origin}: {reason} (fix the file; see \
         templates/mimic_cxr_vqa/questions.toml)"
    )]
    Bank {
        /// The file, or `embedded`.
        origin: String,
        /// What is wrong.
        reason: String,
    },
    /// The prompts folder lacks a task or is malformed.
    #[error("MIMIC-CXR-VQA prompts: {0}")]
    Prompt(#[from] cxrlake_generate::GenerateError),
}

/// Result with [`MimicVqaError`].
pub type Result<T, E = MimicVqaError> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_embedded_prompts_have_both_tasks() {
        let prompts = prompts().expect("embedded prompts");
        assert!(prompts.task("answer").is_some());
        assert!(prompts.task("judge").is_some());
        let loaded = PromptSet::load(
            &std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../prompts/mimic_cxr_vqa"),
        )
        .expect("prompts/mimic_cxr_vqa");
        assert_eq!(loaded.version(), prompts.version());
    }
}
