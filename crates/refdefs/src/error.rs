//! The crate's error type and `Result` alias.

use std::path::PathBuf;

use crate::check::Diagnostic;

/// Everything that can go wrong while loading, exporting or tabulating reference definitions.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A definition file could not be read.
    #[error(
        "cannot read reference definitions file {path}: {source} (check that the directory holds regions.toml, findings.toml, modifiers.toml, changes.toml and sources/)"
    )]
    Io {
        /// The file that failed.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// The definitions failed validation; every problem is listed with file and line.
    #[error("{} error(s) in the reference definitions (run `cxrlake refdefs check` for details):\n{}", .0.len(), render(.0))]
    Invalid(Vec<Diagnostic>),
    /// A recipe or entry could not be written as JSON.
    #[error("cannot encode reference definitions as JSON: {0}")]
    Json(#[from] serde_json::Error),
    /// An invariant of validated definitions did not hold.
    #[error("internal error in cxrlake-refdefs: {0} (please report this bug)")]
    Internal(String),
    /// A lake table batch could not be built.
    #[error("cannot build reference table batch: {0}")]
    Arrow(#[from] arrow::error::ArrowError),
}

/// The crate's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;

fn render(diagnostics: &[Diagnostic]) -> String {
    diagnostics
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("\n")
}
