//! What the flavour exports (`gemex.rs`, `mimic_cxr_vqa.rs`) share: a table streamed as one JSON
//! object per row, the split a row's files go to, the error naming a row that cannot be
//! exported, and the summary of the files written per split.

use std::collections::BTreeMap;
use std::path::PathBuf;

use datafusion::arrow::json::LineDelimitedWriter;
use datafusion::prelude::DataFrame;
use futures::StreamExt;
use serde_json::Value;

use crate::error::{ExportError, Result};
use crate::files::JsonArray;

/// What a flavour export wrote.
#[derive(Debug, Clone, PartialEq)]
pub struct SplitFiles {
    /// The flavour (`gemex`, `mimic_cxr_vqa`).
    pub flavour: &'static str,
    /// What its rows are (`questions`, `QA pairs`).
    pub unit: &'static str,
    /// Rows per split.
    pub splits: BTreeMap<String, usize>,
    /// Files written.
    pub files: Vec<PathBuf>,
    /// Bytes written.
    pub bytes: u64,
    /// Wall-clock seconds.
    pub seconds: f64,
}

impl std::fmt::Display for SplitFiles {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let splits: Vec<String> = self
            .splits
            .iter()
            .map(|(split, n)| format!("{split} {n}"))
            .collect();
        write!(
            f,
            "{}: {} {} ({}) → {} files ({:.1} MB) in {:.2} s",
            self.flavour,
            self.splits.values().sum::<usize>(),
            self.unit,
            splits.join(", "),
            self.files.len(),
            self.bytes as f64 / 1e6,
            self.seconds
        )
    }
}

/// Calls `each` with every row of `frame` as a JSON object, in order.
pub(crate) async fn each_json_row(
    frame: DataFrame,
    mut each: impl FnMut(Value) -> Result<()>,
) -> Result<()> {
    let mut stream = frame.execute_stream().await?;
    while let Some(batch) = stream.next().await {
        let batch = batch?;
        if batch.num_rows() == 0 {
            continue;
        }
        let mut writer = LineDelimitedWriter::new(Vec::new());
        writer.write(&batch)?;
        writer.finish()?;
        let lines = writer.into_inner();
        for line in lines.split(|b| *b == b'\n').filter(|l| !l.is_empty()) {
            each(serde_json::from_slice(line)?)?;
        }
    }
    Ok(())
}

/// The split of a row's files: its `split`, or `none`.
pub(crate) fn split_of(row: &Value) -> String {
    row.get("split")
        .and_then(Value::as_str)
        .unwrap_or("none")
        .to_string()
}

/// The error of row `row` of `table` that cannot be exported, naming its question.
pub(crate) fn record_error(
    table: &'static str,
    row: usize,
    value: &Value,
    reason: String,
) -> ExportError {
    ExportError::Record {
        table,
        row,
        question_id: value
            .get("question_id")
            .and_then(Value::as_str)
            .map(str::to_string),
        reason,
    }
}

/// Closes every array and renames it into place: the files and their bytes.
pub(crate) fn finish_all(
    outputs: impl IntoIterator<Item = JsonArray>,
) -> Result<(Vec<PathBuf>, u64)> {
    let mut files = Vec::new();
    let mut bytes = 0;
    for output in outputs {
        files.push(output.target().to_path_buf());
        bytes += output.finish()?;
    }
    Ok((files, bytes))
}
