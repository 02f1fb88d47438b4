//! The crate's error type and `Result` alias.

use std::path::PathBuf;

/// Everything that can go wrong while generating a synthetic corpus.
#[derive(Debug, thiserror::Error)]
pub enum SynthError {
    /// The options cannot produce a corpus.
    #[error("invalid synth options: {0}")]
    InvalidOptions(String),
    /// Writing an output file failed (check free disk space and permissions of the output dir).
    #[error("cannot write {path}: {source}")]
    Io {
        /// The file or folder being written.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// Serialising JSON failed (a bug: every value is plain data).
    #[error("cannot serialise JSON: {0}")]
    Json(#[from] serde_json::Error),
    /// Building the report zip failed.
    #[error("cannot write the report zip: {0}")]
    Zip(#[from] zip::result::ZipError),
}

/// `Result` with [`SynthError`].
pub type Result<T, E = SynthError> = std::result::Result<T, E>;

impl SynthError {
    /// Wraps an I/O error with the path it concerns.
    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Self::Io {
            path: path.into(),
            source,
        }
    }
}
