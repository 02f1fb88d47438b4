//! The ingest crate's one error enum. Bad *input* never becomes an error (it goes to
//! `quarantine`); these are the failures that stop a run: missing inputs, lake and I/O failures.

use std::path::PathBuf;

use thiserror::Error;

/// Errors that stop an ingest run.
#[derive(Debug, Error)]
pub enum IngestError {
    /// An input path given on the command line does not exist or cannot be listed.
    #[error("cannot read input {path}: {source}; pass existing folders, files or zip archives")]
    Input {
        /// The input path.
        path: PathBuf,
        /// Underlying I/O error.
        source: std::io::Error,
    },
    /// No input paths were given.
    #[error("no inputs given; pass the folders, files or zip archives to ingest")]
    NoInputs,
    /// A lake operation failed.
    #[error(transparent)]
    Lake(#[from] cxrlake_lake::LakeError),
    /// A query of the lake's existing keys failed.
    #[error("reading existing keys from the lake: {0}")]
    DataFusion(#[from] datafusion::error::DataFusionError),
    /// A record batch could not be built (a bug: rows are built against the table schemas).
    #[error("building a record batch (internal error, please report): {0}")]
    Arrow(#[from] arrow::error::ArrowError),
    /// The task writing a commit in the background panicked or was cancelled.
    #[error("writing a commit in the background (internal error, please report): {0}")]
    Background(#[from] tokio::task::JoinError),
}

/// Result alias of the ingest crate.
pub type Result<T, E = IngestError> = std::result::Result<T, E>;

impl From<IngestError> for datafusion::error::DataFusionError {
    fn from(err: IngestError) -> Self {
        match err {
            IngestError::DataFusion(inner) => inner,
            other => datafusion::error::DataFusionError::External(Box::new(other)),
        }
    }
}
