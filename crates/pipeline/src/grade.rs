//! The `grade` stage (`sql/grade.sql`): every QA pair's rating (paper 000, D.3) from the judge's
//! verdicts in `qa_judgements` and the scene-graph quality its rows carry, chunk by chunk of
//! patients; `qa` is rewritten with the judged columns filled.
//!
//! `qa` is read at the version the `qa` stage wrote (the "source"), not at the version a grade run
//! left: a grade run interrupted after some chunks, or a regrade with another judge, starts again
//! from all of the source's rows. The source version is in every grade commit's fingerprint.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

use cxrlake_lake::Lake;
use cxrlake_udfs::grade::GradeQaFunc;
use cxrlake_udfs::judge::JudgeRequestsFunc;
use datafusion::arrow::array::AsArray;
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Int64Type};
use datafusion::logical_expr::ScalarUDF;
use datafusion::scalar::ScalarValue;
use serde_json::json;

use crate::error::{PipelineError, Result};
use crate::judge::JudgeOptions;
use crate::scope::Scope;
use crate::stage::{ChunkedStage, collect, sql_hash};

/// Stage name (= SQL file name = module name).
pub const STAGE: &str = "grade";
/// The stage's SQL.
pub const SQL: &str = include_str!("../../../sql/grade.sql");

const INPUTS: [&str; 4] = ["qa", "reports", "images", "qa_judgements"];

/// What a grade run did.
#[derive(Debug, Clone, PartialEq)]
pub struct GradeSummary {
    /// The judge whose verdicts were read.
    pub judge: String,
    /// QA pairs graded.
    pub questions: usize,
    /// QA pairs of the whole `qa` table per rating, best first (`A++` … `not rated`); empty
    /// after a run over some studies (counting them would scan the table).
    pub ratings: Vec<(String, usize)>,
    /// The `qa` version graded.
    pub source_version: u64,
    /// The `qa` version written last.
    pub version: u64,
    /// Wall time in seconds.
    pub seconds: f64,
}

impl GradeSummary {
    /// QA pairs rated `rating` or better.
    pub fn at_least(&self, rating: cxrlake_schemas::Rating) -> usize {
        self.ratings
            .iter()
            .filter(|(name, _)| {
                name.parse()
                    .is_ok_and(|r: cxrlake_schemas::Rating| r >= rating)
            })
            .map(|(_, n)| n)
            .sum()
    }
}

impl std::fmt::Display for GradeSummary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let ratings: Vec<String> = self
            .ratings
            .iter()
            .map(|(rating, n)| format!("{rating} {n}"))
            .collect();
        write!(
            f,
            "grade ({}): {} QA pairs of qa v{} in {:.1} s: {}; fine-tuning grade (A or better) {}, \
             pre-training grade (B or better) {}; qa v{}",
            self.judge,
            self.questions,
            self.source_version,
            self.seconds,
            ratings.join(", "),
            self.at_least(cxrlake_schemas::Rating::A),
            self.at_least(cxrlake_schemas::Rating::B),
            self.version
        )
    }
}

/// The `qa` version the qa stage wrote last: the newest, unless a grade run wrote it, whose
/// fingerprint names its source.
pub async fn source_version(lake: &Lake) -> Result<u64> {
    let newest = lake.history("qa", Some(1)).await?;
    let Some(commit) = newest.first() else {
        return Ok(0);
    };
    match &commit.stage {
        Some(stage) if stage.stage == STAGE => {
            stage.fingerprint["inputs"]["qa"].as_u64().ok_or_else(|| {
                PipelineError::Config(format!(
                    "qa v{} was written by grade without its source version; rerun `cxrlake run \
                     qa`",
                    commit.version
                ))
            })
        }
        _ => Ok(commit.version),
    }
}

/// QA pairs per rating in the lake's `qa`, best first.
pub async fn rating_counts(lake: &Lake) -> Result<Vec<(String, usize)>> {
    let ctx = lake.session().await?;
    let batches = collect(
        &ctx,
        STAGE,
        "SELECT coalesce(rating, 'not rated') AS rating, count(*) AS n FROM qa \
         GROUP BY 1 ORDER BY 1 DESC",
    )
    .await?;
    let mut out = Vec::new();
    for batch in &batches {
        let ratings = cast(batch.column(0), &DataType::Utf8)
            .map_err(|e| PipelineError::query(STAGE, e.into()))?;
        let counts = batch.column(1).as_primitive::<Int64Type>();
        for (rating, n) in ratings.as_string::<i32>().iter().zip(counts.iter()) {
            out.push((
                rating.unwrap_or("not rated").to_string(),
                n.unwrap_or(0) as usize,
            ));
        }
    }
    Ok(out)
}

/// Runs the stage with the verdicts of the judge `options` names and rewrites `qa`.
pub async fn run(lake: &Lake, options: &JudgeOptions) -> Result<GradeSummary> {
    Ok(run_scoped(lake, options, &Scope::All).await?.0)
}

/// Grades the QA pairs of `scope`'s studies and replaces their rows; returns the studies whose
/// rows changed (a scoped run detects them; a full run names all).
pub async fn run_scoped(
    lake: &Lake,
    options: &JudgeOptions,
    scope: &Scope,
) -> Result<(GradeSummary, Scope)> {
    let started = Instant::now();
    let judge = options.judge()?;
    let id = judge.id();
    let source = source_version(lake).await?;
    let pinned = HashMap::from([("qa".to_string(), source)]);
    let stage = ChunkedStage {
        stage: STAGE,
        sql: SQL,
        inputs: &INPUTS,
        functions: vec![
            ScalarUDF::from(JudgeRequestsFunc::new(Arc::new(judge))),
            ScalarUDF::from(GradeQaFunc::new()),
        ],
        params: vec![("judge", ScalarValue::from(id.as_str()))],
        chunk_patients: options.chunk_patients,
    };
    let fingerprint = json!({
        "inputs": {
            "qa": source,
            "reports": lake.table("reports").await?.version(),
            "images": lake.table("images").await?.version(),
            "qa_judgements": lake.table("qa_judgements").await?.version(),
        },
        "judge": id,
        "sql": sql_hash(SQL),
        "code": env!("CARGO_PKG_VERSION"),
    });
    // Nothing reads which graded studies changed: grade's inputs are new whenever it runs.
    let run = stage
        .run_scoped(lake, &pinned, &fingerprint, scope, false)
        .await?;
    let (rows, version) = (run.rows, run.version);
    tracing::debug!(
        stage = STAGE,
        seconds = started.elapsed().as_secs_f64(),
        "graded"
    );
    let summary = GradeSummary {
        judge: id,
        questions: rows.iter().map(|(_, n)| n).sum(),
        ratings: match scope {
            Scope::All => rating_counts(lake).await?,
            Scope::Studies(_) => Vec::new(),
        },
        source_version: source,
        version,
        seconds: started.elapsed().as_secs_f64(),
    };
    Ok((summary, run.changed))
}
