//! The error of the judge crate: loading a judge-prompts folder.

use std::path::PathBuf;

/// Loading the judge prompts failed.
#[derive(Debug, thiserror::Error)]
pub enum JudgeError {
    /// A file could not be read.
    #[error("{}: {source}; pass a folder laid out like prompts/judge/", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A file is not a valid prompt or settings file.
    #[error("{file}: {reason}")]
    Invalid {
        /// File name within the folder.
        file: String,
        /// What is wrong and what to do.
        reason: String,
    },
}

/// Result with [`JudgeError`].
pub type Result<T> = std::result::Result<T, JudgeError>;
