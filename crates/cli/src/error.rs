//! The CLI's one error enum; each message is one line saying what was wrong and how to fix it.

use std::path::PathBuf;

use thiserror::Error;

/// Errors reported by `cxrlake` commands.
#[derive(Debug, Error)]
pub enum CliError {
    /// A lake operation failed.
    #[error(transparent)]
    Lake(#[from] cxrlake_lake::LakeError),
    /// Reference definitions could not be loaded.
    #[error("reference definitions: {0}")]
    Refdefs(#[from] cxrlake_refdefs::Error),
    /// The synthetic corpus could not be written.
    #[error("synth: {0}")]
    Synth(#[from] cxrlake_synth::SynthError),
    /// Ingest failed (bad input itself goes to quarantine and does not fail).
    #[error(transparent)]
    Ingest(#[from] cxrlake_ingest::IngestError),
    /// A pipeline stage failed.
    #[error(transparent)]
    Pipeline(#[from] cxrlake_pipeline::PipelineError),
    /// An export failed.
    #[error(transparent)]
    Export(#[from] cxrlake_export::ExportError),
    /// The report could not be written.
    #[error(transparent)]
    Report(#[from] cxrlake_report::ReportError),
    /// A Ballista scheduler, executor or client failed.
    #[error(transparent)]
    Distributed(#[from] cxrlake_distributed::DistributedError),
    /// A query failed to plan or run.
    #[error("query failed: {0}")]
    Query(#[from] datafusion::error::DataFusionError),
    /// Writing results failed.
    #[error("cannot write {path}: {source}")]
    Output {
        /// The file (or `stdout`).
        path: PathBuf,
        /// Underlying error.
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// The command line was valid but the request cannot be done as asked.
    #[error("{0}")]
    Usage(String),
    /// An export of a flavour whose tables are older than what the lake's settings and
    /// definitions would build now.
    #[error("{0}")]
    Stale(String),
    /// The command ran, but `--strict` turns what it quarantined into a failure (exit 1).
    #[error("{0}")]
    Strict(String),
}

/// Result alias of the CLI.
pub type Result<T, E = CliError> = std::result::Result<T, E>;

impl CliError {
    /// Process exit code: 2 for usage errors (as clap uses), 1 otherwise.
    pub fn exit_code(&self) -> u8 {
        match self {
            CliError::Usage(_)
            | CliError::Export(cxrlake_export::ExportError::Usage(_))
            | CliError::Distributed(cxrlake_distributed::DistributedError::Engine { .. })
            | CliError::Pipeline(
                cxrlake_pipeline::PipelineError::Setting { .. }
                | cxrlake_pipeline::PipelineError::Definitions(_)
                | cxrlake_pipeline::PipelineError::Input(_)
                | cxrlake_pipeline::PipelineError::Refused(_)
                | cxrlake_pipeline::PipelineError::UnknownStage { .. },
            ) => 2,
            _ => 1,
        }
    }

    /// The message on one line (DataFusion nests context over several lines).
    pub fn one_line(&self) -> String {
        self.to_string()
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .collect::<Vec<_>>()
            .join(" ")
    }
}
