//! Radiologists' reviews of GIV-CXR QA pairs (paper 002: three radiologists validated 2,487
//! pairs, 82.43 % accepted): `cxrlake ratings add --flavour givcxr FILE` puts a file of
//! `qa_id, reviewer, accepted[, comment]` rows into `givcxr_reviews`; `cxrlake stats
//! givcxr_review` gives the acceptance rates. The pairs to review first are those of
//! `givcxr_review` with the lowest priority numbers (least confident verdicts).
//!
//! ```text
//!  reviews.csv (qa_id, reviewer, accepted = true|false|yes|no|1|0|accept|reject[, comment])
//!     ──check (every qa_id a pair of givcxr_qa)──► givcxr_reviews (a new review of the same
//!                                                   pair by the same reviewer replaces the old)
//! ```

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use cxrlake_lake::Lake;
use cxrlake_schemas::givcxr::givcxr_reviews;
use datafusion::arrow::array::{BooleanArray, StringArray};

use cxrlake_pipeline::error::{PipelineError, Result};
use cxrlake_pipeline::evaluate::{RatingsAdded, write_ratings};
use cxrlake_pipeline::evaluate::{register_file, require_columns, strings};
use cxrlake_pipeline::sql::collect;

/// The table reviews go to.
pub const TABLE: &str = "givcxr_reviews";

/// A review's key: qa_id, reviewer.
type Key = (String, String);
/// A review: accepted, comment, source file.
type Review = (bool, String, String);

/// The verdict a cell states.
fn accepted(text: &str) -> Option<bool> {
    match text.trim().to_ascii_lowercase().as_str() {
        "true" | "yes" | "1" | "accept" | "accepted" => Some(true),
        "false" | "no" | "0" | "reject" | "rejected" => Some(false),
        _ => None,
    }
}

/// Adds the reviews of `path` (.csv, .csv.gz, .jsonl or .parquet) to `givcxr_reviews`. Every
/// qa_id must be a pair of `givcxr_qa` and every `accepted` a yes/no; otherwise nothing is
/// written and the error names the row.
pub async fn add_reviews(lake: &Lake, path: &Path) -> Result<RatingsAdded> {
    let ctx = lake.session().await?;
    register_file(&ctx, "new_reviews", path).await?;
    let have = require_columns(
        &ctx,
        "new_reviews",
        path,
        &["qa_id", "reviewer", "accepted"],
    )
    .await?;
    let comment = if have.iter().any(|c| c == "comment") {
        "CAST(comment AS VARCHAR)"
    } else {
        "''"
    };
    let rows = strings(
        &collect(
            &ctx,
            "reviews",
            &format!(
                "SELECT CAST(qa_id AS VARCHAR), CAST(reviewer AS VARCHAR), \
                 CAST(accepted AS VARCHAR), {comment} FROM new_reviews"
            ),
        )
        .await?,
    )?;
    let known: std::collections::BTreeSet<String> =
        strings(&collect(&ctx, "reviews", "SELECT qa_id FROM givcxr_qa").await?)?
            .into_iter()
            .filter_map(|row| row.into_iter().next())
            .collect();
    let source = path.display().to_string();
    let mut new: BTreeMap<(String, String), (bool, String)> = BTreeMap::new();
    for (index, row) in rows.iter().enumerate() {
        let [qa_id, reviewer, verdict, comment] = row.as_slice() else {
            continue;
        };
        let at = || format!("{source}, row {}", index + 1);
        if !known.contains(qa_id) {
            return Err(PipelineError::Input(format!(
                "{}: qa_id '{qa_id}' is not a pair of givcxr_qa (review the pairs of the lake, \
                 e.g. in the order of givcxr_review)",
                at()
            )));
        }
        if reviewer.trim().is_empty() {
            return Err(PipelineError::Input(format!(
                "{}: the reviewer is empty",
                at()
            )));
        }
        let Some(verdict) = accepted(verdict) else {
            return Err(PipelineError::Input(format!(
                "{}: accepted = '{verdict}': write true/false (or yes/no, 1/0, accept/reject)",
                at()
            )));
        };
        new.insert(
            (qa_id.clone(), reviewer.trim().to_string()),
            (verdict, comment.clone()),
        );
    }
    let old = strings(
        &collect(
            &ctx,
            "reviews",
            &format!(
                "SELECT qa_id, reviewer, CAST(accepted AS VARCHAR), coalesce(comment, ''), \
                 coalesce(source, '') FROM {TABLE}"
            ),
        )
        .await?,
    )?;
    let mut all: BTreeMap<Key, Review> = BTreeMap::new();
    let mut replaced = 0;
    for row in old {
        if let [qa_id, reviewer, verdict, comment, from] = row.as_slice() {
            let key = (qa_id.clone(), reviewer.clone());
            if new.contains_key(&key) {
                replaced += 1;
            } else {
                all.insert(key, (verdict == "true", comment.clone(), from.clone()));
            }
        }
    }
    let added = new.len();
    for (key, (verdict, comment)) in new {
        all.insert(key, (verdict, comment, source.clone()));
    }
    let column = |pick: fn(&Key, &Review) -> String| {
        Arc::new(StringArray::from(
            all.iter().map(|(k, v)| pick(k, v)).collect::<Vec<_>>(),
        )) as _
    };
    let columns = vec![
        column(|k, _| k.0.clone()),
        column(|k, _| k.1.clone()),
        Arc::new(BooleanArray::from(
            all.values().map(|v| v.0).collect::<Vec<_>>(),
        )) as _,
        column(|_, v| v.1.clone()),
        column(|_, v| v.2.clone()),
    ];
    write_ratings(
        lake,
        TABLE,
        "reviews",
        givcxr_reviews(),
        columns,
        added,
        replaced,
        &source,
    )
    .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verdicts_read_in_the_usual_spellings() {
        for yes in ["true", "Yes", "1", "accept", " ACCEPTED "] {
            assert_eq!(accepted(yes), Some(true), "{yes}");
        }
        for no in ["false", "no", "0", "reject"] {
            assert_eq!(accepted(no), Some(false), "{no}");
        }
        assert_eq!(accepted("maybe"), None);
    }
}
