//! The cxrlake lake: Delta tables on object_store under one root URL, stage commit metadata, the
//! `cxrlake.*` configuration, and one `SessionContext` in which every table is registered.
//!
//! ```text
//! <root>/_cxrlake/lake.json        format version, creator
//! <root>/<table>/_delta_log/…      one Delta table per name of cxrlake_schemas::TABLES
//! <root>/<table>/part-….parquet
//! <root>/_cxrlake/scratch/…        a stage's intermediate rows, for a cluster's executors
//! <root>/<table>/w-<uuid>/….parquet data files a cluster's executors wrote (committed here)
//! ```

pub mod commit;
pub mod config;
mod deletion;
pub mod error;
pub mod lake;
pub mod lease;
mod narrow;
mod outside;
pub mod portable;
mod quarantine;
mod read;
mod replace;
mod scratch;
pub mod store;
pub mod transfer;
mod vacuum;
mod written;

pub use commit::{CommitRecord, StageCommit};
pub use config::{CxrlakeConfig, Settings, Source};
pub use error::{LakeError, Result};
pub use lake::{Lake, LakeMarker, SessionFactory, TableWrite, WriteMode};
pub use lease::{Lease, LeaseRecord, STALE_AFTER};
pub use portable::{has_view_types, portable_batch, portable_schema, portable_type};
pub use quarantine::{MAX_RAW_BYTES, QuarantineRow, cap_raw, quarantine_batch};
pub use read::cast_batch;
pub use vacuum::Vacuumed;
pub use written::WrittenFolder;
