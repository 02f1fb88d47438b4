//! Rows of the `quarantine` table as one Arrow batch: what every writer of it (ingest, import)
//! builds the same way.

use std::sync::Arc;

use arrow::array::{
    ArrayRef, BinaryBuilder, RecordBatch, StringBuilder, TimestampMicrosecondArray,
};

/// One input that could not be used: where it was (`source`, `location`), why, and its bytes.
#[derive(Debug, Clone, Copy)]
pub struct QuarantineRow<'a> {
    /// The file (`path`, `archive!member`, a zip).
    pub source: &'a str,
    /// Where in it.
    pub location: &'a str,
    /// What is wrong.
    pub reason: &'a str,
    /// The offending bytes.
    pub raw: &'a [u8],
}

/// A `quarantine` batch of `rows`, all of `stage`, recorded now.
pub fn quarantine_batch<'a>(
    stage: &str,
    rows: impl IntoIterator<Item = QuarantineRow<'a>>,
) -> arrow::error::Result<RecordBatch> {
    let now = chrono::Utc::now().timestamp_micros();
    let mut stages = StringBuilder::new();
    let mut source = StringBuilder::new();
    let mut location = StringBuilder::new();
    let mut reason = StringBuilder::new();
    let mut raw = BinaryBuilder::new();
    let mut count = 0;
    for row in rows {
        stages.append_value(stage);
        source.append_value(row.source);
        location.append_value(row.location);
        reason.append_value(row.reason);
        raw.append_value(row.raw);
        count += 1;
    }
    let recorded_at = TimestampMicrosecondArray::from(vec![now; count]).with_timezone("UTC");
    let columns: Vec<ArrayRef> = vec![
        Arc::new(stages.finish()),
        Arc::new(source.finish()),
        Arc::new(location.finish()),
        Arc::new(reason.finish()),
        Arc::new(raw.finish()),
        Arc::new(recorded_at),
    ];
    RecordBatch::try_new(cxrlake_schemas::sources::quarantine(), columns)
}
