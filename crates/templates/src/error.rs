//! The error of loading templates.

use std::path::PathBuf;

/// Loading or validating a templates folder failed.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A file could not be read.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file or folder.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A file is not a valid template or settings file.
    #[error("{file}: {reason}")]
    Invalid {
        /// File name within the folder.
        file: String,
        /// What is wrong and what to do.
        reason: String,
    },
}

/// Result with [`Error`].
pub type Result<T> = std::result::Result<T, Error>;

impl Error {
    pub(crate) fn invalid(file: &str, reason: impl Into<String>) -> Self {
        Error::Invalid {
            file: file.to_string(),
            reason: reason.into(),
        }
    }
}
