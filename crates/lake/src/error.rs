//! The lake crate's one error enum: every message says what went wrong and what to do next.

use thiserror::Error;

/// Errors of lake operations.
#[derive(Debug, Error)]
pub enum LakeError {
    /// The lake URL could not be parsed or names an unsupported scheme.
    #[error(
        "invalid lake URL '{url}': {reason} (use a folder path, file://, memory://, s3://, gs:// or az://)"
    )]
    InvalidUrl {
        /// The URL as given.
        url: String,
        /// Why it was rejected.
        reason: String,
    },
    /// Another cxrlake command holds the lake's write lease.
    #[error(
        "another cxrlake command (`{}`, pid {} on {}) holds the lake at {root} since {} (last \
         heartbeat {}); wait for it to finish. If it is gone (killed), its lease expires \
         {stale_minutes} minutes after its last heartbeat, or delete {path}",
        holder.command, holder.pid, holder.host, holder.since, holder.heartbeat
    )]
    Busy {
        /// The lake.
        root: String,
        /// Who holds it.
        holder: Box<crate::lease::LeaseRecord>,
        /// Minutes without a heartbeat after which the lease is taken over.
        stale_minutes: u64,
        /// The lease file.
        path: String,
    },
    /// The lease changed hands on every try (other commands kept starting and stopping).
    #[error(
        "the lake's write lease ({path}) changed hands on each of {tries} tries: other cxrlake \
         commands keep starting and stopping on this lake; try again, or pass --wait to queue"
    )]
    Contended {
        /// The lease file.
        path: String,
        /// How often this command tried.
        tries: usize,
    },
    /// The lake has not been initialised.
    #[error("no cxrlake lake at {0}; run `cxrlake init` (or pass --lake URL for another lake)")]
    NotInitialized(String),
    /// A table does not exist.
    #[error(
        "table '{name}' does not exist in the lake at {root}; `cxrlake tables` lists the tables"
    )]
    NoSuchTable {
        /// Table name.
        name: String,
        /// Lake root.
        root: String,
    },
    /// A table name that is not a valid identifier.
    #[error("invalid table name '{0}': use lower-case letters, digits and '_'")]
    InvalidTableName(String),
    /// A table version that does not exist.
    #[error("table '{name}' has no version {version}: {source}")]
    NoSuchVersion {
        /// Table name.
        name: String,
        /// Requested version.
        version: u64,
        /// Underlying Delta error.
        source: Box<deltalake::DeltaTableError>,
    },
    /// The lake was written by an incompatible cxrlake version.
    #[error(
        "lake format version {found} at {root} is not supported (this cxrlake reads version {expected})"
    )]
    FormatVersion {
        /// Lake root.
        root: String,
        /// Version found in the lake.
        found: u32,
        /// Version this build supports.
        expected: u32,
    },
    /// A configuration file or value was invalid.
    #[error("configuration: {0}")]
    Config(String),

    /// A replace of some studies' rows was refused or failed; nothing was committed.
    #[error("table '{table}': studies not replaced: {detail}")]
    Replace {
        /// The table.
        table: String,
        /// What was wrong.
        detail: String,
    },
    /// Data files written elsewhere (a cluster's executors) were not committed; nothing was.
    #[error(
        "table '{table}': the files in {folder} were not committed: {detail}; run the stage again"
    )]
    Written {
        /// The table.
        table: String,
        /// Their folder.
        folder: String,
        /// What was wrong.
        detail: String,
    },
    /// A Delta Lake operation failed.
    #[error("delta table '{table}': {source}")]
    Delta {
        /// Table name.
        table: String,
        /// Underlying Delta error.
        source: Box<deltalake::DeltaTableError>,
    },
    /// An object store refused or could not serve a location (missing bucket, refused
    /// credentials, unreachable endpoint, a copy that failed).
    #[error("{url}: {problem}; {hint}")]
    Storage {
        /// The location.
        url: String,
        /// What went wrong.
        problem: String,
        /// What to do.
        hint: String,
    },
    /// An object-store operation failed.
    #[error("object store: {0}")]
    ObjectStore(#[from] object_store::Error),
    /// An Arrow computation failed.
    #[error("{0}")]
    Arrow(#[from] arrow::error::ArrowError),
    /// A Parquet file could not be read or written.
    #[error("parquet: {0}")]
    Parquet(#[from] datafusion::parquet::errors::ParquetError),
    /// A DataFusion operation failed.
    #[error("{0}")]
    DataFusion(#[from] datafusion::error::DataFusionError),
    /// Lake metadata could not be (de)serialised.
    #[error("lake metadata: {0}")]
    Json(#[from] serde_json::Error),
}

impl LakeError {
    pub(crate) fn delta(table: &str, source: deltalake::DeltaTableError) -> Self {
        LakeError::Delta {
            table: table.to_string(),
            source: Box::new(source),
        }
    }
}

/// Result alias of the lake crate.
pub type Result<T, E = LakeError> = std::result::Result<T, E>;

impl From<LakeError> for datafusion::error::DataFusionError {
    fn from(err: LakeError) -> Self {
        match err {
            LakeError::DataFusion(inner) => inner,
            other => datafusion::error::DataFusionError::External(Box::new(other)),
        }
    }
}
