//! The generation crate's one error enum.

/// Errors of the generation operator's domain side: a prompts folder that cannot be used, or a
/// prompt rendered with the wrong placeholders.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GenerateError {
    /// A prompts folder with a missing, unreadable or malformed file.
    #[error("prompt {file}: {reason} (fix the file in the flavour's prompts folder)")]
    Prompt {
        /// The file within the prompts folder.
        file: String,
        /// What is wrong.
        reason: String,
    },
    /// A template rendered with placeholder values that do not match its placeholders: a bug of
    /// the task or of the template, the same for every row.
    #[error("prompt {file}: {reason} (the task and the template must name the same placeholders)")]
    Placeholder {
        /// The template file (or files) concerned.
        file: String,
        /// Which placeholder is missing or unknown.
        reason: String,
    },
}

/// Result with [`GenerateError`].
pub type Result<T, E = GenerateError> = std::result::Result<T, E>;
