//! Rows of the `quarantine` table as one Arrow batch: what every writer of it (ingest, import)
//! builds the same way, and the cap on the raw bytes a row keeps, for them and for the stages
//! that quarantine LLM answers.

use std::sync::Arc;

use arrow::array::{
    ArrayRef, AsArray, BinaryBuilder, RecordBatch, StringBuilder, TimestampMicrosecondArray,
};

/// Raw bytes kept per quarantined input at most (a whole broken file or a runaway LLM answer
/// can be large); the rest is cut.
pub const MAX_RAW_BYTES: usize = 1 << 20;

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
        raw.append_value(&row.raw[..row.raw.len().min(MAX_RAW_BYTES)]);
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

/// `batch` (rows of `quarantine`, as a stage's SQL wrote them) with every `raw` value longer than
/// [`MAX_RAW_BYTES`] cut to that length; the batch itself when none is.
pub fn cap_raw(batch: RecordBatch) -> arrow::error::Result<RecordBatch> {
    let Some(index) = batch.schema().index_of("raw").ok() else {
        return Ok(batch);
    };
    let Some(raw) = batch.column(index).as_binary_opt::<i32>() else {
        return Ok(batch);
    };
    if raw
        .iter()
        .flatten()
        .all(|bytes| bytes.len() <= MAX_RAW_BYTES)
    {
        return Ok(batch);
    }
    let mut capped = BinaryBuilder::new();
    for value in raw.iter() {
        match value {
            Some(bytes) => capped.append_value(&bytes[..bytes.len().min(MAX_RAW_BYTES)]),
            None => capped.append_null(),
        }
    }
    let mut columns = batch.columns().to_vec();
    columns[index] = Arc::new(capped.finish());
    RecordBatch::try_new(batch.schema(), columns)
}

#[cfg(test)]
mod tests {
    use arrow::array::Array;

    use super::*;

    #[test]
    fn raw_bytes_are_capped() {
        let big = vec![b'x'; MAX_RAW_BYTES + 10];
        let batch = quarantine_batch(
            "extract",
            [QuarantineRow {
                source: "llm",
                location: "s1",
                reason: "unparseable",
                raw: &big,
            }],
        )
        .expect("batch");
        let raw = batch.column(4).as_binary::<i32>();
        assert_eq!(raw.value(0).len(), MAX_RAW_BYTES);

        let mut columns = batch.columns().to_vec();
        let mut long = BinaryBuilder::new();
        long.append_value(&big);
        columns[4] = Arc::new(long.finish());
        let uncapped = RecordBatch::try_new(batch.schema(), columns).expect("batch");
        let capped = cap_raw(uncapped).expect("capped");
        assert_eq!(
            capped.column(4).as_binary::<i32>().value(0).len(),
            MAX_RAW_BYTES
        );
        assert_eq!(capped.column(4).len(), 1);
        assert!(!capped.column(4).is_null(0));
    }
}
