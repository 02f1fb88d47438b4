//! What each folder of a release describes about itself: `<folder>/cxrlake_info.json` (name,
//! version, the writing cxrlake's version, the subset's filter, counts, questions per split and
//! rating) and, at the release's root, `stats/` (the report of `cxrlake report`: figures, CSV
//! tables, `index.html`).
//!
//! ```text
//! metadata/question_metadata.parquet ─GROUP BY "question.quality.rating"─┐
//! PartSummary (rows of the metadata tables, splits) ─────────────────────┴─▶ cxrlake_info.json
//! lake ─cxrlake_report::write_report─▶ stats/
//! ```
//! `metadata/dataset_info.json` (PhysioNet layout, in every folder's `metadata/`) is another
//! file: the reference definitions' vocabularies, as the real release has it. (Releases before
//! 2026-12-06 named the self-description `dataset_info.json` too; loaders looking for the
//! vocabulary found it instead.)

use std::path::Path;

use arrow::array::{Array, AsArray};
use arrow::compute::cast;
use arrow::datatypes::{DataType, Int64Type};
use cxrlake_lake::Lake;
use cxrlake_schemas::Rating;
use datafusion::prelude::SessionContext;
use serde_json::{Value, json};

use super::{PartSummary, ReleaseExport, Subset, register_file};
use crate::error::Result;
use crate::files::write_file;

/// The file in which each folder of a release describes itself.
pub const SELF_DESCRIPTION: &str = "cxrlake_info.json";

/// The dataset a release is written in the layout of.
const DATASET_NAME: &str = "MIMIC-Ext-CXR-QBA";
/// The version of that dataset's layout the export follows.
const DATASET_VERSION: &str = "1.0.0";

/// What `subset` keeps, in words.
fn subset_filter(subset: Subset) -> String {
    match subset.min_rating() {
        None => "every QA pair, every image".into(),
        Some(rating) => format!("rating >= '{rating}', frontal images only"),
    }
}

/// QA pairs per rating of the part's `question_metadata.parquet`, best first, every rating
/// listed (an unjudged QA pair counts as `not rated`).
async fn rating_counts(ctx: &SessionContext, metadata: &Path) -> Result<Vec<(Rating, u64)>> {
    register_file(
        ctx,
        "release_qa",
        &metadata.join("question_metadata.parquet"),
    )
    .await?;
    let batches = ctx
        .sql(
            "SELECT \"question.quality.rating\", count(*) FROM release_qa \
             GROUP BY 1",
        )
        .await?
        .collect()
        .await?;
    let mut counts: Vec<(Rating, u64)> = Rating::ALL.iter().rev().map(|r| (*r, 0)).collect();
    for batch in batches {
        let codes = cast(batch.column(0), &DataType::Utf8)?;
        let numbers = cast(batch.column(1), &DataType::Int64)?;
        let (codes, numbers) = (
            codes.as_string::<i32>(),
            numbers.as_primitive::<Int64Type>(),
        );
        for row in 0..batch.num_rows() {
            let code = codes.is_valid(row).then(|| codes.value(row));
            let rating = Rating::ALL
                .into_iter()
                .find(|r| code == Some(r.release_code().as_str()))
                .unwrap_or(Rating::NotRated);
            if let Some(entry) = counts.iter_mut().find(|(r, _)| *r == rating) {
                entry.1 += numbers.value(row).max(0) as u64;
            }
        }
    }
    Ok(counts)
}

/// The JSON of `cxrlake_info.json` for `part`.
fn info(export: &ReleaseExport, part: &PartSummary, ratings: &[(Rating, u64)]) -> Value {
    let splits: serde_json::Map<String, Value> = part
        .splits
        .iter()
        .map(|(split, questions)| (split.clone(), json!(questions)))
        .collect();
    let ratings: Vec<Value> = ratings
        .iter()
        .map(|(rating, questions)| json!({"rating": rating.to_string(), "qa_pairs": questions}))
        .collect();
    json!({
        "name": DATASET_NAME,
        "version": DATASET_VERSION,
        "cxrlake_version": env!("CARGO_PKG_VERSION"),
        "lake_format_version": cxrlake_schemas::FORMAT_VERSION,
        "folder": if part.folder.is_empty() { "." } else { part.folder.as_str() },
        "subset": part.subset.name(),
        "filter": {
            "subset": subset_filter(part.subset),
            "where": export.filter,
            "split": export.split,
        },
        "counts": {
            "patients": part.rows("patient_metadata"),
            "studies": part.rows("study_metadata"),
            "images": part.rows("image_metadata"),
            "qa_pairs": part.questions,
            "answer_parts": part.rows("answer_metadata"),
            "sample_qa_pairs": part.sample_questions,
        },
        "splits": splits,
        "ratings": ratings,
    })
}

/// Writes `<dir>/cxrlake_info.json` of `part`.
pub(super) async fn write_self_description(
    ctx: &SessionContext,
    export: &ReleaseExport,
    part: &PartSummary,
    dir: &Path,
) -> Result<()> {
    let ratings = rating_counts(ctx, &dir.join("metadata")).await?;
    let text = serde_json::to_string_pretty(&info(export, part, &ratings))? + "\n";
    write_file(&dir.join(SELF_DESCRIPTION), text.as_bytes())
}

/// Writes the release's `stats/` folder: the report of the lake the release is written from.
pub(super) async fn write_stats(lake: &Lake, export: &ReleaseExport) -> Result<()> {
    let lake = lake
        .clone()
        .with_session_factory(cxrlake_udfs::session_context_on);
    let report = cxrlake_report::Report::new(export.out_dir.join("stats"))
        .with_title(format!("{DATASET_NAME} (cxrlake): dataset statistics"));
    cxrlake_report::write_report(&lake, &report).await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn info_names_the_subset_its_filter_counts_and_ratings() {
        let export = ReleaseExport::new("out").with_filter("question_strategy = 'finding'");
        let part = PartSummary {
            folder: "exports/A_frontal".into(),
            subset: Subset::Ft,
            tables: vec![("study_metadata".into(), 2), ("image_metadata".into(), 3)],
            questions: 5,
            splits: vec![("train".into(), 5)],
            sample_questions: 0,
            bytes: 0,
        };
        let value = info(&export, &part, &[(Rating::APlusPlus, 1), (Rating::A, 4)]);
        assert_eq!(
            value["filter"]["subset"],
            "rating >= 'A', frontal images only"
        );
        assert_eq!(value["filter"]["where"], "question_strategy = 'finding'");
        assert_eq!(value["counts"]["studies"], 2);
        assert_eq!(value["counts"]["qa_pairs"], 5);
        assert_eq!(value["splits"]["train"], 5);
        assert_eq!(value["ratings"][0]["rating"], "A++");
        assert_eq!(value["ratings"][1]["qa_pairs"], 4);
        assert_eq!(subset_filter(Subset::All), "every QA pair, every image");
    }
}
