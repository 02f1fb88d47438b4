//! `cxrlake export mimic-cxr-vqa`: the `mimic_cxr_vqa_qa` table (paper 001) as flat JSON and
//! Parquet per split, each record naming the dataset (`mimic_cxr_vqa_upv_llama`, not Bae et
//! al.'s MIMIC-CXR-VQA) and its study's images with their view positions.
//!
//! ```text
//! <out>/mimic_cxr_vqa/train.json      [{dataset_id, question_id, study_id, split, category,
//!                                       label_value, question, answer, answer_type, images, …}, …]
//! <out>/mimic_cxr_vqa/train.parquet   the same rows, the table's columns
//!   (and validate, test; rows without a split go to none)
//! ```
//!
//! Files are written to hidden temporary files and renamed into place when complete. Images are
//! named as MIMIC-CXR-JPG stores them: `files/pXX/pXXXXXXXX/sXXXXXXXX/<image_id>.jpg`.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Instant;

use cxrlake_lake::Lake;
use datafusion::dataframe::DataFrameWriteOptions;
use datafusion::prelude::{col, lit};
use serde_json::{Value, json};

use crate::error::{ExportError, Result};
use crate::files::{JsonArray, create_folder, hidden_temp, image_path};
use crate::flavour::{SplitFiles, each_json_row, finish_all, record_error, split_of};
use crate::scan::{filtered_table, nothing_to_export};

/// The table it exports.
const TABLE: &str = "mimic_cxr_vqa_qa";

/// What `cxrlake export mimic-cxr-vqa` writes.
#[derive(Debug, Clone)]
pub struct MimicVqaExport {
    out_dir: PathBuf,
    filter: Option<String>,
    dataset_id: String,
}

impl MimicVqaExport {
    /// Writes under `out_dir/mimic_cxr_vqa/`, records naming `dataset_id`.
    pub fn new(out_dir: impl Into<PathBuf>, dataset_id: impl Into<String>) -> Self {
        Self {
            out_dir: out_dir.into(),
            filter: None,
            dataset_id: dataset_id.into(),
        }
    }

    /// Only the QA pairs matching this SQL predicate over `mimic_cxr_vqa_qa` columns.
    pub fn with_filter(mut self, filter: impl Into<String>) -> Self {
        self.filter = Some(filter.into());
        self
    }
}

/// What a MIMIC-CXR-VQA export wrote.
pub type MimicVqaSummary = SplitFiles;

/// One exported record of a `mimic_cxr_vqa_qa` row (read as JSON).
fn record(row: &Value, dataset_id: &str) -> std::result::Result<Value, String> {
    let text = |key: &str| row.get(key).and_then(Value::as_str).unwrap_or_default();
    for key in ["question_id", "study_id", "question", "answer"] {
        if text(key).is_empty() {
            return Err(format!("the row has no {key}"));
        }
    }
    let images: Vec<Value> = row
        .get("images")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|image| {
            let image_id = image
                .get("image_id")
                .and_then(Value::as_str)
                .unwrap_or_default();
            json!({
                "image_id": image_id,
                "view_position": image.get("view_position").cloned().unwrap_or(Value::Null),
                "path": image_path(text("patient_id"), text("study_id"), image_id),
            })
        })
        .collect();
    Ok(json!({
        "dataset_id": dataset_id,
        "question_id": text("question_id"),
        "patient_id": text("patient_id"),
        "study_id": text("study_id"),
        "split": row.get("split").cloned().unwrap_or(Value::Null),
        "category": text("category"),
        "label_value": text("label_value"),
        "template_id": text("template_id"),
        "question": text("question"),
        "answer": text("answer"),
        "answer_type": text("answer_type"),
        "images": images,
        "prohibited_terms": row.get("prohibited_terms").cloned().unwrap_or(json!([])),
        "report_references": row.get("report_references").cloned().unwrap_or(json!([])),
        "generator": text("generator"),
    }))
}

/// Writes the `mimic_cxr_vqa_qa` rows of `lake` (matching the export's filter) as JSON and
/// Parquet per split.
pub async fn export_mimic_cxr_vqa(lake: &Lake, export: &MimicVqaExport) -> Result<MimicVqaSummary> {
    let started = Instant::now();
    let frame = filtered_table(lake, TABLE, export.filter.as_deref()).await?;
    let frame = frame.sort(vec![col("question_id").sort(true, false)])?;
    let dir = export.out_dir.join("mimic_cxr_vqa");
    create_folder(&dir)?;
    let mut outputs: BTreeMap<String, JsonArray> = BTreeMap::new();
    let mut splits: BTreeMap<String, usize> = BTreeMap::new();
    let mut row = 0;
    each_json_row(frame.clone(), |value| {
        let rendered = record(&value, &export.dataset_id)
            .map_err(|reason| record_error(TABLE, row, &value, reason))?;
        row += 1;
        let split = split_of(&value);
        if !outputs.contains_key(&split) {
            let target = dir.join(format!("{split}.json"));
            outputs.insert(split.clone(), JsonArray::open(target)?);
        }
        if let Some(output) = outputs.get_mut(&split) {
            output.record(&rendered)?;
        }
        *splits.entry(split).or_default() += 1;
        Ok(())
    })
    .await?;
    if splits.is_empty() {
        return Err(nothing_to_export(lake, TABLE, export.filter.as_deref()));
    }
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
        flavour: "mimic_cxr_vqa",
        unit: "QA pairs",
        splits,
        files,
        bytes,
        seconds: started.elapsed().as_secs_f64(),
    })
}
