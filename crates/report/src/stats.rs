//! The statistics of `sql/stats/`, by name: `cxrlake stats NAME` prints one, the report runs
//! those of its figures and tables, so both show the same numbers. Both run them in
//! [`session`], which reads `qa.answers` with only the fields the statistics use.

use arrow::array::RecordBatch;
use cxrlake_lake::Lake;
use datafusion::prelude::SessionContext;

use crate::error::{ReportError, Result};
use crate::table::Table;

/// The statistics of `sql/stats/`, by name; each query's first line is a `-- ` comment saying
/// what it counts.
pub const STATS: [(&str, &str); 29] = [
    (
        "qa_overview",
        include_str!("../../../sql/stats/qa_overview.sql"),
    ),
    (
        "qa_templates",
        include_str!("../../../sql/stats/qa_templates.sql"),
    ),
    (
        "qa_balance",
        include_str!("../../../sql/stats/qa_balance.sql"),
    ),
    ("qa_texts", include_str!("../../../sql/stats/qa_texts.sql")),
    (
        "qa_answer_parts",
        include_str!("../../../sql/stats/qa_answer_parts.sql"),
    ),
    (
        "qa_answer_lengths",
        include_str!("../../../sql/stats/qa_answer_lengths.sql"),
    ),
    (
        "qa_rating_distribution",
        include_str!("../../../sql/stats/qa_rating_distribution.sql"),
    ),
    (
        "qa_ratings",
        include_str!("../../../sql/stats/qa_ratings.sql"),
    ),
    (
        "qa_rating_aspects",
        include_str!("../../../sql/stats/qa_rating_aspects.sql"),
    ),
    ("qa_tags", include_str!("../../../sql/stats/qa_tags.sql")),
    (
        "judge_calls",
        include_str!("../../../sql/stats/judge_calls.sql"),
    ),
    (
        "judge_dedup",
        include_str!("../../../sql/stats/judge_dedup.sql"),
    ),
    (
        "gemex_table2",
        include_str!("../../../sql/stats/gemex_table2.sql"),
    ),
    (
        "gemex_content",
        include_str!("../../../sql/stats/gemex_content.sql"),
    ),
    (
        "gemex_regions",
        include_str!("../../../sql/stats/gemex_regions.sql"),
    ),
    (
        "gemex_lengths",
        include_str!("../../../sql/stats/gemex_lengths.sql"),
    ),
    (
        "mimic_cxr_vqa_table1",
        include_str!("../../../sql/stats/mimic_cxr_vqa_table1.sql"),
    ),
    (
        "mimic_cxr_vqa_table2",
        include_str!("../../../sql/stats/mimic_cxr_vqa_table2.sql"),
    ),
    (
        "mimic_cxr_vqa_table3",
        include_str!("../../../sql/stats/mimic_cxr_vqa_table3.sql"),
    ),
    (
        "mimic_cxr_vqa_categories",
        include_str!("../../../sql/stats/mimic_cxr_vqa_categories.sql"),
    ),
    (
        "rexvqa_validators",
        include_str!("../../../sql/stats/rexvqa_validators.sql"),
    ),
    (
        "rexvqa_tasks",
        include_str!("../../../sql/stats/rexvqa_tasks.sql"),
    ),
    (
        "rexvqa_categories",
        include_str!("../../../sql/stats/rexvqa_categories.sql"),
    ),
    (
        "rexvqa_positions",
        include_str!("../../../sql/stats/rexvqa_positions.sql"),
    ),
    (
        "givcxr_regions",
        include_str!("../../../sql/stats/givcxr_regions.sql"),
    ),
    (
        "givcxr_findings",
        include_str!("../../../sql/stats/givcxr_findings.sql"),
    ),
    (
        "givcxr_hallucination",
        include_str!("../../../sql/stats/givcxr_hallucination.sql"),
    ),
    (
        "givcxr_terms",
        include_str!("../../../sql/stats/givcxr_terms.sql"),
    ),
    (
        "givcxr_review",
        include_str!("../../../sql/stats/givcxr_review.sql"),
    ),
];

/// The fields of `qa.answers` the statistics read (`answer_id` for counting parts). Of the
/// column's 40 Parquet leaves these are 13, and not the boxes (a quarter of its bytes, nested
/// four lists deep): at 3,000 studies pyarrow decodes them 4.4× faster than the whole column.
pub const ANSWER_FIELDS: [&str; 8] = [
    "answer_id",
    "answer_type",
    "text",
    "regions",
    "obs_entities",
    "positiveness",
    "from_report",
    "answer_quality",
];

/// A session over the lake's tables in which `qa.answers` holds only [`ANSWER_FIELDS`], so the
/// Parquet reader decodes only those leaves (see [`Lake::narrow`]).
pub async fn session(lake: &Lake) -> Result<SessionContext> {
    let ctx = lake.session().await?;
    if ctx
        .table_exist("qa")
        .map_err(cxrlake_lake::LakeError::from)?
    {
        lake.narrow(&ctx, "qa", "answers", &ANSWER_FIELDS).await?;
    }
    Ok(ctx)
}

/// The SQL of the statistic `name`, if there is one.
pub fn query(name: &str) -> Option<&'static str> {
    STATS
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, query)| *query)
}

/// Runs the statistic `name` (one of [`STATS`]) on `ctx`, a session over the lake's tables.
pub async fn run(ctx: &SessionContext, name: &str) -> Result<Table> {
    let query_error = |source| ReportError::Query {
        name: name.to_string(),
        source,
    };
    let sql = query(name).ok_or_else(|| {
        query_error(datafusion::error::DataFusionError::Plan(format!(
            "no statistic {name} in sql/stats/"
        )))
    })?;
    let frame = ctx.sql(sql).await.map_err(query_error)?;
    let schema = frame.schema().inner().clone();
    let batches: Vec<RecordBatch> = frame.collect().await.map_err(query_error)?;
    Table::new(name, schema, batches)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_statistic_says_what_it_counts_in_its_first_line() {
        for (name, sql) in STATS {
            assert!(sql.starts_with("-- "), "{name}");
        }
        let mut names: Vec<_> = STATS.iter().map(|(n, _)| *n).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), STATS.len(), "names are unique");
        assert!(query("qa_tags").is_some_and(|sql| sql.contains("obs_entities")));
        assert!(query("nope").is_none());
    }
}
