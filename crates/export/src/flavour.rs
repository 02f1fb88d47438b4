//! What the flavour exports (`gemex.rs`, `mimic_cxr_vqa.rs`, `rexvqa.rs`, `givcxr.rs`) share: a
//! table streamed as one JSON object per row, the split a row's files go to, the error naming a
//! row that cannot be exported, the JSON (an array, or GIV-CXR's versioned envelope) and Parquet
//! files per split, and their summary.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

use datafusion::arrow::json::LineDelimitedWriter;
use datafusion::dataframe::DataFrameWriteOptions;
use datafusion::prelude::{DataFrame, col, lit};
use futures::StreamExt;
use serde::Serialize;
use serde_json::Value;

use crate::error::{ExportError, Result};
use crate::files::{JsonArray, create_folder, hidden_temp, image_path};

/// What [`write_splits`] writes: the flavour and its rows' unit, the table's name for errors.
#[derive(Debug)]
pub struct SplitExport<'a> {
    /// The flavour (`mimic_cxr_vqa`, `rexvqa`): the folder and the summary's name.
    pub flavour: &'static str,
    /// What a row is (`QA pairs`, `MCQs`).
    pub unit: &'static str,
    /// The table read (named in errors).
    pub table: &'static str,
    /// The export's root folder.
    pub out_dir: &'a Path,
}

/// Writes `frame`'s rows under `out_dir/<flavour>/`: `<split>.json`, a JSON array of `render`ed
/// records, and `<split>.parquet`, the rows themselves (rows without a split go to `none`).
/// Files are written to hidden temporary files and renamed into place when complete.
pub async fn write_splits<R: Serialize>(
    frame: DataFrame,
    export: SplitExport<'_>,
    render: impl FnMut(&Value) -> std::result::Result<R, String>,
) -> Result<SplitFiles> {
    write_splits_in(frame, export, None, render).await
}

/// [`write_splits`] with each `<split>.json` one object holding the records under `data`:
/// `{"version": "<version>", "split": "<split>", "data": [records]}`.
pub async fn write_versioned_splits<R: Serialize>(
    frame: DataFrame,
    export: SplitExport<'_>,
    version: &str,
    render: impl FnMut(&Value) -> std::result::Result<R, String>,
) -> Result<SplitFiles> {
    write_splits_in(frame, export, Some(version), render).await
}

/// The JSON file of `split` at `target`: an array, or with a `version` the envelope of
/// [`write_versioned_splits`].
pub fn open_split(target: PathBuf, split: &str, version: Option<&str>) -> Result<JsonArray> {
    let Some(version) = version else {
        return JsonArray::open(target);
    };
    let prefix = format!(
        "{{\"version\": {}, \"split\": {}, \"data\": [",
        Value::from(version),
        Value::from(split)
    );
    JsonArray::open_enveloped(target, prefix.as_bytes(), b"\n]}\n")
}

async fn write_splits_in<R: Serialize>(
    frame: DataFrame,
    export: SplitExport<'_>,
    version: Option<&str>,
    mut render: impl FnMut(&Value) -> std::result::Result<R, String>,
) -> Result<SplitFiles> {
    let started = Instant::now();
    let dir = export.out_dir.join(export.flavour);
    create_folder(&dir)?;
    let mut outputs: BTreeMap<String, JsonArray> = BTreeMap::new();
    let mut splits: BTreeMap<String, usize> = BTreeMap::new();
    let mut row = 0;
    each_json_row(frame.clone(), |value| {
        let rendered =
            render(&value).map_err(|reason| record_error(export.table, row, &value, reason))?;
        row += 1;
        let split = split_of(&value);
        if !outputs.contains_key(&split) {
            let target = dir.join(format!("{split}.json"));
            outputs.insert(split.clone(), open_split(target, &split, version)?);
        }
        if let Some(output) = outputs.get_mut(&split) {
            output.record(&rendered)?;
        }
        *splits.entry(split).or_default() += 1;
        Ok(())
    })
    .await?;
    let (mut files, mut bytes) = finish_all(outputs.into_values())?;
    for split in splits.keys() {
        let target = dir.join(format!("{split}.parquet"));
        let temp = hidden_temp(&target)?;
        let rows = if split == "none" {
            frame.clone().filter(col("split").is_null())?
        } else {
            frame.clone().filter(col("split").eq(lit(split.as_str())))?
        };
        rows.write_parquet(
            &temp.to_string_lossy(),
            DataFrameWriteOptions::new().with_single_file_output(true),
            None,
        )
        .await?;
        let io = |path: &PathBuf| {
            let path = path.clone();
            move |source| ExportError::Io { path, source }
        };
        std::fs::rename(&temp, &target).map_err(io(&target))?;
        bytes += std::fs::metadata(&target).map_err(io(&target))?.len();
        files.push(target);
    }
    Ok(SplitFiles {
        flavour: export.flavour,
        unit: export.unit,
        splits,
        files,
        bytes,
        seconds: started.elapsed().as_secs_f64(),
    })
}

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
pub async fn each_json_row(
    frame: DataFrame,
    mut each: impl FnMut(Value) -> Result<()>,
) -> Result<()> {
    let mut stream = crate::scan::ordered_stream(frame).await?;
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

/// A row's `images` (`{image_id, view_position}`) as exported: with the path MIMIC-CXR-JPG
/// stores each under (`files/pXX/pXXXXXXXX/sXXXXXXXX/<image_id>.jpg`).
pub fn study_images(row: &Value) -> Vec<Value> {
    let text = |key: &str| row.get(key).and_then(Value::as_str).unwrap_or_default();
    row.get("images")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|image| {
            let image_id = image
                .get("image_id")
                .and_then(Value::as_str)
                .unwrap_or_default();
            serde_json::json!({
                "image_id": image_id,
                "view_position": image.get("view_position").cloned().unwrap_or(Value::Null),
                "path": image_path(text("patient_id"), text("study_id"), image_id),
            })
        })
        .collect()
}

/// The split of a row's files: its `split`, or `none`.
pub fn split_of(row: &Value) -> String {
    row.get("split")
        .and_then(Value::as_str)
        .unwrap_or("none")
        .to_string()
}

/// The error of row `row` of `table` that cannot be exported, naming its question.
pub fn record_error(table: &'static str, row: usize, value: &Value, reason: String) -> ExportError {
    ExportError::Record {
        table,
        row,
        question_id: value
            .get("question_id")
            .or_else(|| value.get("qa_id"))
            .and_then(Value::as_str)
            .map(str::to_string),
        reason,
    }
}

/// Closes every array and renames it into place: the files and their bytes.
pub fn finish_all(outputs: impl IntoIterator<Item = JsonArray>) -> Result<(Vec<PathBuf>, u64)> {
    let mut files = Vec::new();
    let mut bytes = 0;
    for output in outputs {
        files.push(output.target().to_path_buf());
        bytes += output.finish()?;
    }
    Ok((files, bytes))
}
