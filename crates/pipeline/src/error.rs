//! The pipeline crate's one error enum.

use thiserror::Error;

/// Errors of pipeline stages.
#[derive(Debug, Error)]
pub enum PipelineError {
    /// A lake operation failed.
    #[error(transparent)]
    Lake(#[from] cxrlake_lake::LakeError),
    /// A stage query failed.
    #[error("stage {stage}: {source}")]
    Query {
        /// Stage name.
        stage: &'static str,
        /// Underlying error.
        source: Box<datafusion::error::DataFusionError>,
    },
    /// A stage produced rows that do not match its table.
    #[error("stage {stage}: result does not match table {table}: {reason}")]
    Schema {
        /// Stage name.
        stage: &'static str,
        /// Target table.
        table: &'static str,
        /// What differs.
        reason: String,
    },
}

impl PipelineError {
    pub(crate) fn query(stage: &'static str, source: datafusion::error::DataFusionError) -> Self {
        PipelineError::Query {
            stage,
            source: Box::new(source),
        }
    }
}

/// Result alias of the pipeline crate.
pub type Result<T, E = PipelineError> = std::result::Result<T, E>;
