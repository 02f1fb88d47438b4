//! `cxrlake evaluate`: the papers' evaluations over a lake and the user's own files, each as a
//! long-format score table `eval_<kind>` (schema `cxrlake_schemas::evaluate::eval_scores`), a
//! printed table and JSON. The metrics themselves are plain functions in `cxrlake-evaluate`;
//! this module reads their inputs (lake tables, label CSVs, reference boxes, prediction files),
//! runs one seeded percentile bootstrap per evaluation over its items (studies, pairs,
//! samples), and writes the scores.
//!
//! ```text
//!  scene_graphs + chexpert_labels | labels CSV ──► labels ──┐
//!  scene_graphs + images + reference boxes CSV ──► boxes  ──┤
//!  qa | predictions file (JSON/Parquet)         ──► radstruct, text, gemex, choice
//!  ratings CSV (item, rater, value)             ──► agreement
//!  scores file | givcxr_verdicts + givcxr_qa    ──► givcxr_bias (common vs rare groups)
//!                                                           └─► Evaluation ──► eval_<kind>
//!  ground_truth.jsonl (synthetic corpus)        ──► truth (TruthReport, printed only)
//! ```
//!
//! Every score carries a percentile-bootstrap interval (`--n-boot`, `--seed`, `--level`); with
//! `--baseline`, the same resamples score both systems and a `difference` row gives the paired
//! interval of system minus baseline.

mod agreement;
mod boxes;
mod choice;
mod labels;
mod radstruct;
pub mod scores;
mod text;
mod truth;

pub use agreement::{
    AgreementOptions, RatingsAdded, RatingsSource, rater_agreement, write_ratings,
};
pub use boxes::{BoxOptions, boxes_vs_reference};
pub use choice::{ChoiceOptions, choice_accuracy};
pub use labels::{LabelOptions, LabelSource, Uncertain, labels_vs_scene_graphs};
pub use radstruct::{Entailer, LlmEntail, LlmEntailer, RadStructOptions, radstruct_scores};
pub use scores::{EvalOptions, Evaluation, Score};
pub use text::{TextOptions, TextTargets, text_scores};
pub use truth::*;

use std::path::Path;

use datafusion::arrow::array::{Array, AsArray, RecordBatch};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::DataType;
use datafusion::prelude::{CsvReadOptions, JsonReadOptions, ParquetReadOptions, SessionContext};

use crate::error::{PipelineError, Result};

/// Name used in query errors.
pub const STAGE: &str = "evaluate";

/// Every row of `batches` as strings (NULL as the empty string).
pub fn strings(batches: &[RecordBatch]) -> Result<Vec<Vec<String>>> {
    let mut rows = Vec::new();
    for batch in batches {
        let columns = batch
            .columns()
            .iter()
            .map(|c| cast(c, &DataType::Utf8))
            .collect::<std::result::Result<Vec<_>, _>>()
            .map_err(|e| PipelineError::query(STAGE, e.into()))?;
        for row in 0..batch.num_rows() {
            rows.push(
                columns
                    .iter()
                    .map(|c| {
                        let c = c.as_string::<i32>();
                        if c.is_null(row) {
                            String::new()
                        } else {
                            c.value(row).to_owned()
                        }
                    })
                    .collect(),
            );
        }
    }
    Ok(rows)
}

/// Registers the outside file `path` as table `name` in `ctx`: Parquet (`.parquet`), CSV with a
/// header (`.csv`, `.csv.gz`) or JSON Lines (`.jsonl`, `.ndjson`, `.json`: one object per line).
pub async fn register_file(ctx: &SessionContext, name: &str, path: &Path) -> Result<()> {
    let text = path.to_string_lossy();
    let lower = text.to_lowercase();
    if !path.exists() {
        return Err(PipelineError::Input(format!("{text}: no such file")));
    }
    let result = if lower.ends_with(".parquet") {
        ctx.register_parquet(name, text.as_ref(), ParquetReadOptions::default())
            .await
    } else if lower.ends_with(".csv") || lower.ends_with(".csv.gz") {
        let mut options = CsvReadOptions::new().file_extension(if lower.ends_with(".gz") {
            ".csv.gz"
        } else {
            ".csv"
        });
        if lower.ends_with(".gz") {
            options = options.file_compression_type(
                datafusion::datasource::file_format::file_compression_type::FileCompressionType::GZIP,
            );
        }
        ctx.register_csv(name, text.as_ref(), options).await
    } else if let Some(extension) = [".jsonl", ".ndjson", ".json"]
        .into_iter()
        .find(|e| lower.ends_with(e))
    {
        ctx.register_json(
            name,
            text.as_ref(),
            JsonReadOptions::default().file_extension(extension),
        )
        .await
    } else {
        return Err(PipelineError::Input(format!(
            "{text}: unknown file type; give a .parquet, .csv, .csv.gz or .jsonl (JSON Lines) file"
        )));
    };
    result.map_err(|e| PipelineError::Input(format!("{text}: cannot read it: {e}")))
}

/// The columns of table `name` that `required` lists, or an error naming the file, the missing
/// columns and the ones it has.
pub async fn require_columns(
    ctx: &SessionContext,
    name: &str,
    path: &Path,
    required: &[&str],
) -> Result<Vec<String>> {
    let table = ctx
        .table(name)
        .await
        .map_err(|e| PipelineError::query(STAGE, e))?;
    let have: Vec<String> = table
        .schema()
        .fields()
        .iter()
        .map(|f| f.name().clone())
        .collect();
    let missing: Vec<&str> = required
        .iter()
        .filter(|c| !have.iter().any(|h| h == *c))
        .copied()
        .collect();
    if !missing.is_empty() {
        return Err(PipelineError::Input(format!(
            "{}: missing column(s) {}; it has: {}",
            path.display(),
            missing.join(", "),
            have.join(", ")
        )));
    }
    Ok(have)
}
