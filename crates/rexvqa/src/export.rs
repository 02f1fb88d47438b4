//! `cxrlake export rexvqa`: the kept MCQs of `rexvqa_questions` (paper 003: V(Q) true, no PHI,
//! not a near-duplicate) as ReXVQA-style JSON and Parquet per split.
//!
//! ```text
//! <out>/rexvqa/train.json      [{id, study_id, split, task_name, category, subcategory,
//!                                difficulty, question, options: ["A. …", …], correct_answer: "C",
//!                                correct_answer_explanation, images, qc_sample, …}, …]
//! <out>/rexvqa/train.parquet   the same rows, the table's columns
//!   (and validate, test; rows without a split go to none)
//! ```
//!
//! The supplement gives the record's content (question, four options, the correct index, the
//! explanation, difficulty and categories) but no field names; these follow the public ReXVQA
//! release's JSON as far as we know it (`task_name`, `correct_answer` as a letter,
//! `correct_answer_explanation`). Options carry their letters, as the release's do.

use std::path::PathBuf;

use cxrlake_lake::Lake;
use datafusion::prelude::{col, lit};
use serde_json::{Value, json};

use cxrlake_export::error::Result;
use cxrlake_export::flavour::{SplitExport, SplitFiles, study_images, write_splits};
use cxrlake_export::scan::{filtered_table, nothing_to_export};

/// The table it exports.
const TABLE: &str = "rexvqa_questions";

/// The option letters.
const LETTERS: [&str; 4] = ["A", "B", "C", "D"];

/// What `cxrlake export rexvqa` writes.
#[derive(Debug, Clone)]
pub struct RexvqaExport {
    out_dir: PathBuf,
    filter: Option<String>,
}

impl RexvqaExport {
    /// Writes under `out_dir/rexvqa/`.
    pub fn new(out_dir: impl Into<PathBuf>) -> Self {
        Self {
            out_dir: out_dir.into(),
            filter: None,
        }
    }

    /// Only the kept MCQs that also match this SQL predicate over `rexvqa_questions` columns.
    pub fn with_filter(mut self, filter: impl Into<String>) -> Self {
        self.filter = Some(filter.into());
        self
    }
}

/// What a ReXVQA export wrote.
pub type RexvqaSummary = SplitFiles;

/// One exported record of a kept `rexvqa_questions` row (read as JSON).
fn record(row: &Value) -> std::result::Result<Value, String> {
    let text = |key: &str| row.get(key).cloned().unwrap_or(Value::Null);
    let options: Vec<&str> = row
        .get("options")
        .and_then(Value::as_array)
        .map(|o| o.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    if options.len() != LETTERS.len() {
        return Err(format!("the row has {} options, not four", options.len()));
    }
    let answer = row
        .get("answer_index")
        .and_then(Value::as_u64)
        .and_then(|i| LETTERS.get(i as usize))
        .ok_or("the row has no answer index between 0 and 3")?;
    let lettered: Vec<String> = LETTERS
        .iter()
        .zip(&options)
        .map(|(letter, option)| format!("{letter}. {option}"))
        .collect();
    Ok(json!({
        "id": text("mcq_id"),
        "patient_id": text("patient_id"),
        "study_id": text("study_id"),
        "split": text("split"),
        "task_name": text("task_type"),
        "category": text("category"),
        "subcategory": text("subcategory"),
        "category_raw": text("category_raw"),
        "difficulty": text("difficulty"),
        "question": text("question"),
        "options": lettered,
        "correct_answer": answer,
        "correct_answer_explanation": text("explanation"),
        "images": study_images(row),
        "qc_sample": text("qc_sample"),
        "generator": text("generator"),
        "bullets_generator": text("bullets_generator"),
    }))
}

/// Writes the kept `rexvqa_questions` rows of `lake` (matching the export's filter) as JSON and
/// Parquet per split.
pub async fn export_rexvqa(lake: &Lake, export: &RexvqaExport) -> Result<RexvqaSummary> {
    let frame = filtered_table(lake, TABLE, export.filter.as_deref()).await?;
    let frame = frame
        .filter(col("kept").eq(lit(true)))?
        .sort(vec![col("mcq_id").sort(true, false)])?;
    let summary = write_splits(
        frame,
        SplitExport {
            flavour: "rexvqa",
            unit: "MCQs",
            table: TABLE,
            out_dir: &export.out_dir,
        },
        record,
    )
    .await?;
    if summary.splits.is_empty() {
        return Err(nothing_to_export(lake, TABLE, export.filter.as_deref()));
    }
    Ok(summary)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_letter_their_options_and_answer() {
        let row = json!({
            "mcq_id": "s1_q00", "patient_id": "p1", "study_id": "s1", "split": "train",
            "task_type": "presence", "category": "negation", "subcategory": "absence_of_disease",
            "difficulty": "easy", "question": "Which?", "options": ["a", "b", "c", "d"],
            "answer_index": 2, "explanation": "Because.", "images": [], "qc_sample": false
        });
        let out = record(&row).expect("record");
        assert_eq!(out["options"], json!(["A. a", "B. b", "C. c", "D. d"]));
        assert_eq!(out["correct_answer"], "C");
        assert_eq!(out["task_name"], "presence");
        let mut three = row.clone();
        three["options"] = json!(["a", "b", "c"]);
        assert_eq!(
            record(&three).expect_err("three"),
            "the row has 3 options, not four"
        );
    }
}
