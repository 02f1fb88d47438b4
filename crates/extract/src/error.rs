//! The extraction crate's one error enum.

/// Errors of report extraction: LLM outputs that cannot be parsed, prompt files that are broken.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ExtractError {
    /// An LLM output that could not be parsed (or repaired) into the expected structure.
    #[error("cannot parse the {what} output: {reason}")]
    Parse {
        /// Which output: `sentences`, `observations` or `indication`.
        what: &'static str,
        /// What is wrong, with the line or JSON position where known.
        reason: String,
    },
    /// A prompt folder that is missing a file or placeholder.
    #[error(
        "prompt {file}: {reason} (fix the file in the prompts/ folder or remove --prompts to use the embedded ones)"
    )]
    Prompt {
        /// The file within the prompts folder.
        file: String,
        /// What is wrong.
        reason: String,
    },
}

impl ExtractError {
    /// A parse error of output `what`.
    pub fn parse(what: &'static str, reason: impl Into<String>) -> Self {
        Self::Parse {
            what,
            reason: reason.into(),
        }
    }
}

/// Result with [`ExtractError`].
pub type Result<T, E = ExtractError> = std::result::Result<T, E>;
