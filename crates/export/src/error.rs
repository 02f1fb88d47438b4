//! The export crate's one error enum: every message says what went wrong and what to do next.

use std::path::PathBuf;

use thiserror::Error;

/// What `cxrlake run` needs to write `table` (or the table a column path such as
/// `qa.answers.localization` starts with): the stage for the core tables, else the flavour, whose
/// tables are named `<flavour>_<name>`.
fn stage_of(table: &str) -> String {
    match table.split('.').next().unwrap_or(table) {
        "qa" => "qa".into(),
        "scene_graphs" => "graph".into(),
        other => match other.rsplit_once('_') {
            Some((flavour, _)) => format!("--flavour {flavour}"),
            None => "graph".into(),
        },
    }
}

/// Errors of release-layout exports.
#[derive(Debug, Error)]
pub enum ExportError {
    /// The release's `stats/` report could not be written.
    #[error("stats/: {0}")]
    Report(#[from] cxrlake_report::ReportError),
    /// A release to import cannot be read.
    #[error("cannot import {}: {reason}", .path.display())]
    Import {
        /// The file or folder.
        path: PathBuf,
        /// What is wrong and what to do.
        reason: String,
    },
    /// The lake lacks the table an export reads.
    #[error(
        "the lake at {root} has no {table} table; run `cxrlake init`, then `cxrlake run {stage}`",
        stage = stage_of(.table)
    )]
    NoTable {
        /// `scene_graphs` or `qa`.
        table: &'static str,
        /// Lake root.
        root: String,
    },
    /// The table has no rows.
    #[error(
        "{table} in the lake at {root} is empty; run `cxrlake run {stage}` first",
        stage = stage_of(.table)
    )]
    Empty {
        /// `scene_graphs` or `qa`.
        table: &'static str,
        /// Lake root.
        root: String,
    },
    /// The filter matched no row.
    #[error(
        "no row of {table} matches the filter `{filter}`; check it with \
         `cxrlake sql \"SELECT patient_id, study_id FROM {table} WHERE {filter}\"`"
    )]
    NoMatch {
        /// `scene_graphs` or `qa`.
        table: &'static str,
        /// The filter as given.
        filter: String,
    },
    /// The filter is not a valid SQL predicate over the table.
    #[error(
        "invalid filter `{filter}`: {source}; write a SQL predicate over {table} columns, \
         e.g. study_id = 's50414267'"
    )]
    Filter {
        /// `scene_graphs` or `qa`.
        table: &'static str,
        /// The filter as given.
        filter: String,
        /// Why DataFusion rejected it.
        source: Box<datafusion::error::DataFusionError>,
    },
    /// The table lacks columns the export reads.
    #[error(
        "{table} lacks the columns {missing}; it was written by another cxrlake version: \
         rerun `cxrlake run {stage}`",
        stage = stage_of(.table)
    )]
    MissingColumns {
        /// `scene_graphs` or `qa`.
        table: &'static str,
        /// The missing column names, comma-separated.
        missing: String,
    },
    /// A column has a type that does not fit the release layout (or has no JSON form).
    #[error(
        "column {column} has type {data_type}, expected {expected}; \
         rerun `cxrlake run {stage}` to rewrite the table with its schema",
        stage = stage_of(.column)
    )]
    UnsupportedType {
        /// Column path starting with the table (`scene_graphs.observations.localization`).
        column: String,
        /// The Arrow type.
        data_type: String,
        /// What the layout needs there.
        expected: &'static str,
    },
    /// A patient or study id that does not follow the MIMIC pattern.
    #[error(
        "{table} row {row} (patient_id {patient_id:?}, study_id {study_id:?}): malformed \
         {field}: expected {expected}; fix or delete the row and rerun the export"
    )]
    MalformedId {
        /// `scene_graphs` or `qa`.
        table: &'static str,
        /// Row number in read order (0-based, after the filter).
        row: usize,
        /// `patient_id`, `study_id` or `question_id`.
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
    /// A study of `qa` appears under two patient ids.
    #[error(
        "study {study_id} of qa belongs to two patients, {patient_id} and {other_patient_id}; \
         rerun `cxrlake run graph`, then `cxrlake run qa`"
    )]
    StudyOfTwoPatients {
        /// The study id.
        study_id: String,
        /// One patient id (`null` for a missing one).
        patient_id: String,
        /// The other.
        other_patient_id: String,
    },
    /// Two rows of `qa` have the same study and question id.
    #[error(
        "question {question_id} of study {study_id} has more than one row in qa; the table is \
         keyed by (study_id, question_id): rerun `cxrlake run qa`"
    )]
    DuplicateQuestion {
        /// The study id.
        study_id: String,
        /// The repeated question id.
        question_id: String,
    },
    /// The export read another number of questions for a study than it counted first.
    #[error(
        "read {read} questions of study {study_id} where qa counted {expected}: the table \
         changed during the export; rerun the export"
    )]
    QuestionsMissing {
        /// The study id.
        study_id: String,
        /// Questions read.
        read: usize,
        /// Questions counted.
        expected: usize,
    },
    /// A row's nested data does not fit the release shape (e.g. two observations with one
    /// obs_id, an answer part whose parent is missing).
    #[error(
        "{table} row of study {study_id} cannot be written as release JSON: {detail}; \
         rerun `cxrlake run {stage}`",
        stage = stage_of(.table)
    )]
    Shape {
        /// `scene_graphs` or `qa`.
        table: &'static str,
        /// The row's study id.
        study_id: String,
        /// What is wrong.
        detail: String,
    },
    /// A row does not read as the record its export writes.
    #[error(
        "{table} row {row} (question {question_id:?}) cannot be exported: {reason}; rerun \
         `cxrlake run {stage}`",
        stage = stage_of(.table)
    )]
    Record {
        /// The table (`gemex_qa`).
        table: &'static str,
        /// Row number in read order (0-based, after the filter).
        row: usize,
        /// The row's question id, if it has one.
        question_id: Option<String>,
        /// What does not fit.
        reason: String,
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
    /// A Parquet file could not be written.
    #[error(
        "cannot write the Parquet file {path}: {source}; check that the output folder is \
         writable and has space"
    )]
    Parquet {
        /// The file.
        path: PathBuf,
        /// The Parquet error.
        source: parquet::errors::ParquetError,
    },
    /// A release subset selected no question.
    #[error(
        "the {subset} release has no question{detail}; see the ratings with \
         `cxrlake sql \"SELECT rating, count(*) FROM qa GROUP BY 1\"` (they are NULL until the \
         grade stage ran) and the views with `cxrlake sql \"SELECT view, count(*) FROM images \
         GROUP BY 1\"`"
    )]
    EmptyRelease {
        /// The subset (`ft`, …).
        subset: &'static str,
        /// The user's filter and split, if any (` matching …`).
        detail: String,
    },
    /// An option of the release export has a value it cannot use.
    #[error("{0}")]
    Usage(String),
    /// A zip writer was used after a failed or finished write.
    #[error("an export worker failed while writing a zip archive; rerun the export")]
    Poisoned,
    /// A writer task panicked or was cancelled.
    #[error("an export worker failed: {0}")]
    Worker(#[from] tokio::task::JoinError),
    /// A lake operation failed.
    #[error(transparent)]
    Lake(#[from] cxrlake_lake::LakeError),
    /// The engine (a Ballista cluster) could not be reached or refused the query.
    #[error(transparent)]
    Engine(#[from] cxrlake_distributed::DistributedError),
    /// A DataFusion operation (reading the table) failed.
    #[error("reading the lake: {0}")]
    DataFusion(#[from] datafusion::error::DataFusionError),
    /// A JSON value could not be serialised.
    #[error("serialising JSON: {0}")]
    Json(#[from] serde_json::Error),
}

/// Result alias of the export crate.
pub type Result<T, E = ExportError> = std::result::Result<T, E>;

impl From<parquet::errors::ParquetError> for ExportError {
    fn from(err: parquet::errors::ParquetError) -> Self {
        ExportError::DataFusion(err.into())
    }
}

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
