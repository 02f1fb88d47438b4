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
//! Files are written to hidden temporary files and renamed into place when complete
//! (`flavour::write_splits`). Images are
//! named as MIMIC-CXR-JPG stores them: `files/pXX/pXXXXXXXX/sXXXXXXXX/<image_id>.jpg`.

use std::path::PathBuf;

use cxrlake_lake::Lake;
use datafusion::prelude::col;
use serde_json::{Value, json};

use cxrlake_export::error::Result;
use cxrlake_export::flavour::{SplitExport, SplitFiles, study_images, write_splits};
use cxrlake_export::scan::{filtered_table, nothing_to_export};

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
        "images": study_images(row),
        "prohibited_terms": row.get("prohibited_terms").cloned().unwrap_or(json!([])),
        "report_references": row.get("report_references").cloned().unwrap_or(json!([])),
        "generator": text("generator"),
    }))
}

/// Writes the `mimic_cxr_vqa_qa` rows of `lake` (matching the export's filter) as JSON and
/// Parquet per split.
pub async fn export_mimic_cxr_vqa(lake: &Lake, export: &MimicVqaExport) -> Result<MimicVqaSummary> {
    let frame = filtered_table(lake, TABLE, export.filter.as_deref()).await?;
    let frame = frame.sort(vec![col("question_id").sort(true, false)])?;
    let summary = write_splits(
        frame,
        SplitExport {
            flavour: "mimic_cxr_vqa",
            unit: "QA pairs",
            table: TABLE,
            out_dir: &export.out_dir,
        },
        |row| record(row, &export.dataset_id),
    )
    .await?;
    if summary.splits.is_empty() {
        return Err(nothing_to_export(lake, TABLE, export.filter.as_deref()));
    }
    Ok(summary)
}
