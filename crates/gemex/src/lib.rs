//! The GEMeX flavour's domain logic (paper 004): GEMeX's 30 anatomical regions built from Chest
//! ImaGenome's 29 (table 8), their boxes on an image and the 224 × 224 frame, the clinical
//! rules of re-grounding, the two generation tasks (re-grounding report sentences onto one
//! region each; 11 grounded, explainable QA pairs per frontal image) with their LLM checks and
//! offline generators, and the records of the GEMeX and LLaVA exports.
//!
//! ```text
//!  sentence + Chest ImaGenome links ──reground (table 9 / rules)──► sentences on 1 of 30 each
//!  grounded report + boxes + facts ──generate (table 10 / offline)──► 11 QA records per image
//!  QA record ──export──► GEMeX JSON record, LLaVA conversation (tables 3, 11–14)
//! ```

pub mod evaluate;
pub mod export;
pub mod frame;
pub mod functions;
pub mod generate;
pub mod records;
pub mod regions;
pub mod reground;
pub mod stages;

use std::path::PathBuf;

use cxrlake_generate::PromptSet;
pub(crate) use cxrlake_generate::nullable;

/// The files of `prompts/gemex/`, embedded: the prompts of tables 9 and 10 with our
/// demonstrations, their settings and answer schemas.
pub const PROMPT_FILES: [(&str, &str); 9] = [
    (
        "prompts.toml",
        include_str!("../../../prompts/gemex/prompts.toml"),
    ),
    (
        "reground.md",
        include_str!("../../../prompts/gemex/reground.md"),
    ),
    (
        "reground.user.md",
        include_str!("../../../prompts/gemex/reground.user.md"),
    ),
    (
        "reground.fewshot.md",
        include_str!("../../../prompts/gemex/reground.fewshot.md"),
    ),
    (
        "reground.schema.json",
        include_str!("../../../prompts/gemex/reground.schema.json"),
    ),
    (
        "generate.md",
        include_str!("../../../prompts/gemex/generate.md"),
    ),
    (
        "generate.user.md",
        include_str!("../../../prompts/gemex/generate.user.md"),
    ),
    (
        "generate.fewshot.md",
        include_str!("../../../prompts/gemex/generate.fewshot.md"),
    ),
    (
        "generate.schema.json",
        include_str!("../../../prompts/gemex/generate.schema.json"),
    ),
];

/// The embedded prompts of `prompts/gemex/` (tasks `reground` and `generate`).
pub fn prompts() -> cxrlake_generate::Result<PromptSet> {
    PromptSet::from_files(&PROMPT_FILES)
}

/// Everything that can go wrong in the GEMeX flavour's domain logic.
#[derive(Debug, thiserror::Error)]
pub enum GemexError {
    /// The region table could not be read.
    #[error(
        "cannot read the GEMeX region table {path}: {source} (the folder must hold regions.toml)"
    )]
    Io {
        /// The file that failed.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// The region table is malformed or inconsistent.
    #[error("GEMeX region table {origin}: {reason} (fix the file; see refdefs/gemex/regions.toml)")]
    Regions {
        /// The file, or `embedded`.
        origin: String,
        /// What is wrong.
        reason: String,
    },
    /// The prompts folder lacks a task or is malformed.
    #[error("GEMeX prompts: {0}")]
    Prompt(#[from] cxrlake_generate::GenerateError),
}

/// Result with [`GemexError`].
pub type Result<T, E = GemexError> = std::result::Result<T, E>;

/// The lower-case words (letters and digits) of `text`, in order.
pub(crate) fn words(text: &str) -> Vec<String> {
    text.to_lowercase()
        .split(|c: char| !c.is_alphanumeric())
        .filter(|word| !word.is_empty())
        .map(str::to_string)
        .collect()
}

/// The word index where the phrase `phrase` (lower-case words separated by spaces) first starts
/// in `words`.
pub(crate) fn find_phrase(words: &[String], phrase: &str) -> Option<usize> {
    let parts: Vec<&str> = phrase.split(' ').collect();
    words
        .windows(parts.len())
        .position(|window| window.iter().zip(&parts).all(|(w, p)| w == p))
}

/// `text` with its first letter in upper case.
pub(crate) fn capitalize(text: &str) -> String {
    let mut chars = text.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_embedded_prompts_have_both_tasks() {
        let prompts = prompts().expect("embedded prompts");
        assert!(prompts.task("reground").is_some());
        assert!(prompts.task("generate").is_some());
        assert!(prompts.version().starts_with("1+"));
        let loaded = PromptSet::load(
            &std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../prompts/gemex"),
        )
        .expect("prompts/gemex");
        assert_eq!(loaded.version(), prompts.version());
    }

    #[test]
    fn word_helpers() {
        let text = words("Small LEFT pleural-effusion, no pneumothorax.");
        assert_eq!(
            text,
            ["small", "left", "pleural", "effusion", "no", "pneumothorax"]
        );
        assert_eq!(find_phrase(&text, "pleural effusion"), Some(2));
        assert_eq!(find_phrase(&text, "effusion pleural"), None);
        assert_eq!(capitalize("left lung"), "Left lung");
        assert_eq!(capitalize(""), "");
    }
}
