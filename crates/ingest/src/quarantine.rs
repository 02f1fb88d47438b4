//! Rows of the `quarantine` table: every input that could not be used, with where it was, why,
//! and its raw bytes, so that nothing is ever silently dropped.

use arrow::array::RecordBatch;
use cxrlake_lake::QuarantineRow;

use crate::error::Result;
use crate::writer::Row;

/// `quarantine.stage` of every row written by ingest.
pub const STAGE: &str = "ingest";

pub use cxrlake_lake::MAX_RAW_BYTES;

/// Why a file could not be read as `what` (e.g. "a Chest ImaGenome scene graph"): invalid or
/// truncated JSON, or valid JSON of another shape (a missing or mistyped field).
pub(crate) fn json_reason(error: &serde_json::Error, what: &str) -> String {
    match error.classify() {
        serde_json::error::Category::Data => format!("valid JSON, but not {what}: {error}"),
        serde_json::error::Category::Eof => format!("invalid JSON (truncated): {error}"),
        serde_json::error::Category::Syntax | serde_json::error::Category::Io => {
            format!("invalid JSON: {error}")
        }
    }
}

/// The target table a quarantined input was meant for (the summary counts them per table).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Target {
    /// `reports`.
    Reports,
    /// `images` (metadata CSV rows).
    Images,
    /// `splits` (split CSV rows).
    Splits,
    /// `chexpert_labels`.
    ChexpertLabels,
    /// `imagenome_boxes`.
    ImagenomeBoxes,
    /// `cxas_masks`.
    CxasMasks,
    /// A zip archive or member whose kind is unknown because it could not be read.
    Archive,
}

impl Target {
    /// The summary's name for it (the table name, or `archives`).
    pub fn name(self) -> &'static str {
        match self {
            Self::Reports => "reports",
            Self::Images => "images",
            Self::Splits => "splits",
            Self::ChexpertLabels => "chexpert_labels",
            Self::ImagenomeBoxes => "imagenome_boxes",
            Self::CxasMasks => "cxas_masks",
            Self::Archive => "archives",
        }
    }
}

/// One input that could not be used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Quarantined {
    /// The table it was meant for.
    pub target: Target,
    /// The file (`path` or `archive!member`).
    pub source: String,
    /// Where in the file: `line 12`, `objects[3]`, `annotation 7`, `file`, `archive`, …
    pub location: String,
    /// What is wrong.
    pub reason: String,
    /// The offending bytes (at most [`MAX_RAW_BYTES`]).
    pub raw: Vec<u8>,
}

impl Quarantined {
    /// A quarantine record; `raw` is cut to [`MAX_RAW_BYTES`].
    pub fn new(
        target: Target,
        source: impl Into<String>,
        location: impl Into<String>,
        reason: impl Into<String>,
        mut raw: Vec<u8>,
    ) -> Self {
        raw.truncate(MAX_RAW_BYTES);
        Self {
            target,
            source: source.into(),
            location: location.into(),
            reason: reason.into(),
            raw,
        }
    }
}

impl Row for Quarantined {
    const TABLE: &'static str = "quarantine";

    fn key(&self) -> String {
        quarantine_key(&self.source, &self.location, &self.reason)
    }

    fn approx_bytes(&self) -> usize {
        self.raw.len() + self.reason.len() + self.source.len() + 64
    }

    fn batch(rows: &[Self]) -> Result<RecordBatch> {
        Ok(cxrlake_lake::quarantine_batch(
            STAGE,
            rows.iter().map(|row| QuarantineRow {
                source: &row.source,
                location: &row.location,
                reason: &row.reason,
                raw: &row.raw,
            }),
        )?)
    }
}

/// Identity of a quarantine row within the `ingest` stage: the same bad input ingested twice
/// is recorded once.
pub fn quarantine_key(source: &str, location: &str, reason: &str) -> String {
    format!("{source}\u{1f}{location}\u{1f}{reason}")
}
