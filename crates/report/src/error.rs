//! The report's one error enum: a failed query, chart or file, each saying what to do next.

use std::path::PathBuf;

use thiserror::Error;

/// Errors of `cxrlake report`.
#[derive(Debug, Error)]
pub enum ReportError {
    /// Reading the lake failed.
    #[error(transparent)]
    Lake(#[from] cxrlake_lake::LakeError),
    /// A statistics query failed to plan or run.
    #[error(
        "statistic {name} failed: {source}; run `cxrlake stats {name}` to see the query's error"
    )]
    Query {
        /// The statistic (`sql/stats/<name>.sql`).
        name: String,
        /// Underlying error.
        source: datafusion::error::DataFusionError,
    },
    /// A result could not be formatted as text or CSV.
    #[error("cannot format a result: {0}")]
    Arrow(#[from] arrow::error::ArrowError),
    /// A chart could not be drawn.
    #[error("cannot draw the figure {figure}: {reason}")]
    Chart {
        /// The figure's file name (without extension).
        figure: String,
        /// What the drawing library said.
        reason: String,
    },
    /// A file could not be written.
    #[error("cannot write {path}: {source}; check that the folder is writable")]
    Write {
        /// The file or folder.
        path: PathBuf,
        /// Underlying error.
        source: std::io::Error,
    },
}

/// Result alias of the report.
pub type Result<T, E = ReportError> = std::result::Result<T, E>;

impl ReportError {
    /// A failed write of `path`.
    pub(crate) fn write(path: &std::path::Path) -> impl FnOnce(std::io::Error) -> Self + '_ {
        move |source| ReportError::Write {
            path: path.to_path_buf(),
            source,
        }
    }
}
