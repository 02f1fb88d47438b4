//! The export crate's one error enum: every message says what went wrong and what to do next.

use std::path::PathBuf;

use thiserror::Error;

/// Errors of release-layout exports.
#[derive(Debug, Error)]
pub enum ExportError {
    /// The lake has no `scene_graphs` table.
    #[error(
        "the lake at {root} has no scene_graphs table; run `cxrlake init`, then `cxrlake run graph`"
    )]
    NoSceneGraphs {
        /// Lake root.
        root: String,
    },
    /// `scene_graphs` has no rows.
    #[error("scene_graphs in the lake at {root} is empty; run `cxrlake run graph` first")]
    Empty {
        /// Lake root.
        root: String,
    },
    /// The filter matched no row.
    #[error(
        "no scene graph matches the filter `{filter}`; check it with \
         `cxrlake sql \"SELECT patient_id, study_id FROM scene_graphs WHERE {filter}\"`"
    )]
    NoMatch {
        /// The filter as given.
        filter: String,
    },
    /// The filter is not a valid SQL predicate over `scene_graphs`.
    #[error(
        "invalid filter `{filter}`: {source}; write a SQL predicate over scene_graphs columns, \
         e.g. study_id = 's50414267'"
    )]
    Filter {
        /// The filter as given.
        filter: String,
        /// Why DataFusion rejected it.
        source: Box<datafusion::error::DataFusionError>,
    },
    /// The table lacks columns the export reads.
    #[error(
        "scene_graphs lacks the columns {missing}; it was written by another cxrlake version: \
         rerun `cxrlake run graph`"
    )]
    MissingColumns {
        /// The missing column names, comma-separated.
        missing: String,
    },
    /// A column has a type that does not fit D.1 (or has no JSON form).
    #[error(
        "scene_graphs column {column} has type {data_type}, expected {expected}; \
         rerun `cxrlake run graph` to rewrite the table with its schema"
    )]
    UnsupportedType {
        /// Column path (`scene_graphs.observations.localization`).
        column: String,
        /// The Arrow type.
        data_type: String,
        /// What D.1 needs there.
        expected: &'static str,
    },
    /// A patient or study id that does not follow the MIMIC pattern.
    #[error(
        "scene_graphs row {row} (patient_id {patient_id:?}, study_id {study_id:?}): malformed \
         {field}: expected {expected}; fix or delete the row and rerun the export"
    )]
    MalformedId {
        /// Row number in export order (0-based, after the filter).
        row: usize,
        /// `patient_id` or `study_id`.
        field: &'static str,
        /// What a valid id looks like.
        expected: &'static str,
        /// The row's patient id (`None` when null).
        patient_id: Option<String>,
        /// The row's study id (`None` when null).
        study_id: Option<String>,
    },
    /// Two rows of `scene_graphs` have the same study id.
    #[error(
        "study {study_id} has more than one row in scene_graphs (row {row}); the table is keyed \
         by study_id: rerun `cxrlake run graph`"
    )]
    DuplicateStudy {
        /// The repeated study id.
        study_id: String,
        /// Row number of the second occurrence (0-based, after the filter).
        row: usize,
    },
    /// A row's nested data does not fit the D.1 shape (e.g. two observations with one obs_id).
    #[error(
        "scene graph of study {study_id} cannot be written as D.1 JSON: {detail}; \
         rerun `cxrlake run graph`"
    )]
    Shape {
        /// The row's study id.
        study_id: String,
        /// What is wrong.
        detail: String,
    },
    /// `scene_graph_json` was asked for a row the batch does not have.
    #[error("row {row} is out of range: the batch has {rows} rows")]
    RowOutOfRange {
        /// Requested row.
        row: usize,
        /// Rows in the batch.
        rows: usize,
    },
    /// A file or folder could not be written.
    #[error(
        "cannot write {path}: {source}; check that the output folder is writable and has space"
    )]
    Io {
        /// The path being written.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// A writer task panicked or was cancelled.
    #[error("an export worker failed: {0}")]
    Worker(#[from] tokio::task::JoinError),
    /// A lake operation failed.
    #[error(transparent)]
    Lake(#[from] cxrlake_lake::LakeError),
    /// A DataFusion operation (reading the table) failed.
    #[error("reading scene_graphs: {0}")]
    DataFusion(#[from] datafusion::error::DataFusionError),
    /// A JSON value could not be serialised.
    #[error("serialising JSON: {0}")]
    Json(#[from] serde_json::Error),
}

/// Result alias of the export crate.
pub type Result<T, E = ExportError> = std::result::Result<T, E>;

impl From<arrow::error::ArrowError> for ExportError {
    fn from(err: arrow::error::ArrowError) -> Self {
        ExportError::DataFusion(err.into())
    }
}

impl From<ExportError> for datafusion::error::DataFusionError {
    fn from(err: ExportError) -> Self {
        match err {
            ExportError::DataFusion(inner) => inner,
            other => datafusion::error::DataFusionError::External(Box::new(other)),
        }
    }
}
