//! Human (and other) ratings of MIMIC-CXR-VQA QA pairs (paper 001, section 4.1: 100 pairs rated
//! by three radiologists beside the LLM judge): `cxrlake ratings add FILE` puts a file of
//! `item, rater, rubric, value` rows into `mimic_cxr_vqa_ratings`, and `cxrlake evaluate
//! agreement --rubric R` computes the agreement of these raters and the judges over the items
//! they share.
//!
//! ```text
//!  ratings.csv (item = question_id, rater, rubric, value) ──check──► mimic_cxr_vqa_ratings
//!  mimic_cxr_vqa_judgements (rater = judge) ∪ mimic_cxr_vqa_ratings ──► item, rater, value of one rubric
//! ```

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use crate::judge::{RUBRICS, level};
use cxrlake_lake::Lake;
use cxrlake_schemas::mimic_cxr_vqa::mimic_cxr_vqa_ratings;
use datafusion::arrow::array::StringArray;

use cxrlake_pipeline::error::{PipelineError, Result};
use cxrlake_pipeline::evaluate::{
    RatingsAdded, register_file, require_columns, strings, write_ratings,
};
use cxrlake_pipeline::sql::collect;

/// The table ratings go to.
pub const TABLE: &str = "mimic_cxr_vqa_ratings";

/// Adds the ratings of `path` (`item, rater, rubric, value`; .csv, .csv.gz, .jsonl or
/// .parquet) to `mimic_cxr_vqa_ratings`, a rating of the same item, rater and rubric replacing
/// the old one. Every item must be a question_id of `mimic_cxr_vqa_qa`, every rubric one of the
/// four and every value one of its levels (case and spacing ignored); otherwise nothing is
/// written and the error names the row.
pub async fn add_ratings(lake: &Lake, path: &Path) -> Result<RatingsAdded> {
    let ctx = lake.session().await?;
    register_file(&ctx, "new_ratings", path).await?;
    require_columns(
        &ctx,
        "new_ratings",
        path,
        &["item", "rater", "rubric", "value"],
    )
    .await?;
    let rows = strings(
        &collect(
            &ctx,
            "ratings",
            "SELECT CAST(item AS VARCHAR), CAST(rater AS VARCHAR), CAST(rubric AS VARCHAR), \
             CAST(value AS VARCHAR) FROM new_ratings",
        )
        .await?,
    )?;
    let known: std::collections::BTreeSet<String> =
        strings(&collect(&ctx, "ratings", "SELECT question_id FROM mimic_cxr_vqa_qa").await?)?
            .into_iter()
            .filter_map(|row| row.into_iter().next())
            .collect();
    let source = path.display().to_string();
    let mut new: BTreeMap<(String, String, String), String> = BTreeMap::new();
    for (index, row) in rows.iter().enumerate() {
        let [item, rater, rubric, value] = row.as_slice() else {
            continue;
        };
        let at = || format!("{source}, row {}", index + 1);
        if !known.contains(item) {
            return Err(PipelineError::Input(format!(
                "{}: item '{item}' is not a question_id of mimic_cxr_vqa_qa (rate the pairs of \
                 the lake, e.g. those of mimic_cxr_vqa_judgements)",
                at()
            )));
        }
        if rater.trim().is_empty() {
            return Err(PipelineError::Input(format!(
                "{}: the rater is empty",
                at()
            )));
        }
        let Some((rubric, levels)) = RUBRICS
            .iter()
            .find(|(name, _)| name.eq_ignore_ascii_case(rubric.trim()))
        else {
            return Err(PipelineError::Input(format!(
                "{}: rubric '{rubric}' is not one of correctness, consistency, completeness, \
                 relevance",
                at()
            )));
        };
        let Some(value) = level(rubric, value) else {
            return Err(PipelineError::Input(format!(
                "{}: '{value}' is not a level of {rubric} ({})",
                at(),
                levels.join(", ")
            )));
        };
        new.insert(
            (item.clone(), rater.trim().to_string(), rubric.to_string()),
            value.to_string(),
        );
    }
    let old = strings(
        &collect(
            &ctx,
            "ratings",
            &format!("SELECT item, rater, rubric, value, source FROM {TABLE}"),
        )
        .await?,
    )?;
    let mut all: BTreeMap<(String, String, String), (String, String)> = BTreeMap::new();
    let mut replaced = 0;
    for row in old {
        if let [item, rater, rubric, value, from] = row.as_slice() {
            let key = (item.clone(), rater.clone(), rubric.clone());
            if new.contains_key(&key) {
                replaced += 1;
            } else {
                all.insert(key, (value.clone(), from.clone()));
            }
        }
    }
    let added = new.len();
    for (key, value) in new {
        all.insert(key, (value, source.clone()));
    }
    let mut columns: [Vec<&str>; 5] = Default::default();
    for ((item, rater, rubric), (value, from)) in &all {
        for (column, text) in columns.iter_mut().zip([item, rater, rubric, value, from]) {
            column.push(text);
        }
    }
    let columns = columns
        .into_iter()
        .map(|column| Arc::new(StringArray::from(column)) as _)
        .collect();
    write_ratings(
        lake,
        TABLE,
        "ratings",
        mimic_cxr_vqa_ratings(),
        columns,
        added,
        replaced,
        &source,
    )
    .await
}

/// The SQL of one rubric's ratings as `item, rater, value`: the judges' verdicts (rater = the
/// judge's id) and the added ratings, over the items at least two raters rated.
pub fn rubric_ratings_sql(rubric: &str) -> Result<String> {
    let Some((name, _)) = RUBRICS.iter().find(|(name, _)| *name == rubric) else {
        return Err(PipelineError::Input(format!(
            "--rubric {rubric}: use correctness, consistency, completeness or relevance"
        )));
    };
    Ok(format!(
        "WITH r AS (SELECT question_id AS item, judge AS rater, {name} AS value \
                    FROM mimic_cxr_vqa_judgements \
                    UNION ALL \
                    SELECT item, rater, value FROM {TABLE} WHERE rubric = '{name}') \
         SELECT item, rater, value FROM r \
         WHERE item IN (SELECT item FROM r GROUP BY item HAVING count(DISTINCT rater) >= 2)"
    ))
}

/// The levels of `rubric`, worst first (the order weighted kappa and AC2 need).
pub fn rubric_levels(rubric: &str) -> Option<Vec<String>> {
    RUBRICS
        .iter()
        .find(|(name, _)| *name == rubric)
        .map(|(_, levels)| levels.iter().rev().map(|l| l.to_string()).collect())
}
