//! The `grade` stage (`sql/grade.sql`): every QA pair's rating (paper 000, D.3, crate
//! `cxrlake-grade`) from the judge's verdicts in `qa_judgements` and the scene-graph quality
//! its rows carry, chunk by chunk of patients; `qa` is rewritten with the judged columns filled.
//!
//! `qa` is read at the version the `qa` stage wrote (its producer), not at the version a grade
//! run left: a grade run interrupted after some chunks, or a regrade with another judge, starts
//! again from the qa stage's rows. That version is in every grade commit's fingerprint.
//!
//! The verdicts are read once per run into an index by content hash (`verdicts.rs`); after each
//! chunk's `requests` step the stage registers that chunk's verdicts as `chunk_verdicts`, so a
//! chunk costs its own requests, not a scan of all of `qa_judgements`.

use std::collections::BTreeMap;
use std::sync::Arc;

use async_trait::async_trait;
use cxrlake_judge::Judge as JudgeKind;
use cxrlake_schemas::Rating;
use cxrlake_udfs::grade::GradeQaFunc;
use cxrlake_udfs::judge::JudgeRequestsFunc;
use cxrlake_udfs::portable::Recipe;
use datafusion::arrow::array::{AsArray, RecordBatch};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Int64Type};
use datafusion::logical_expr::ScalarUDF;
use datafusion::prelude::SessionContext;
use datafusion::scalar::ScalarValue;
use serde_json::Value;

use crate::error::{PipelineError, Result};
use crate::pipeline::Pipeline;
use crate::scope::Scope;
use crate::sql::{Statement, collect, count, first_column_strings};
use crate::stage::{
    ChunkInfo, Chunking, Coverage, HookTable, Metrics, Prepared, RunHooks, RunMode, Stage,
    StageDef, StageReport, Writes, recipe_functions,
};
use crate::verdicts::{VerdictIndex, request_hashes};

/// The stage's declaration.
pub static DEF: StageDef = StageDef {
    name: "grade",
    doc: "qa rewritten with ratings from qa_judgements and the scene-graph quality",
    sql: include_str!("../../../sql/grade.sql"),
    file: "sql/grade.sql",
    inputs: &["qa", "reports", "images", "qa_judgements"],
    side_inputs: &[],
    outputs: &["qa"],
    settings: &[
        "judge",
        "llm_model",
        "judge_prompts",
        "judge_batch",
        "chunk_patients",
    ],
    chunking: Chunking::Patients { default: 100 },
    writes: Writes::Replace,
    coverage: Coverage::PerStudy,
    detects_changes: false,
    reads_synonyms: true,
};

/// The `grade` stage.
#[derive(Debug)]
pub struct Grade;

#[async_trait]
impl Stage for Grade {
    fn def(&self) -> &'static StageDef {
        &DEF
    }

    async fn definitions(&self, pipeline: &Pipeline) -> Result<BTreeMap<String, String>> {
        Ok(BTreeMap::from([("judge".into(), pipeline.judge()?.id())]))
    }

    async fn prepare(&self, pipeline: &Pipeline, _mode: RunMode) -> Result<Prepared> {
        let judge = pipeline.judge()?;
        let id = judge.id();
        refuse_unknown_judge(pipeline, &id).await?;
        let functions = match judge {
            // Nothing but the judge's id: the stage can run where the plan is sent.
            JudgeKind::Heuristic => {
                recipe_functions("grade", Recipe::HeuristicGrade, pipeline.defs())?
            }
            judge => vec![
                ScalarUDF::from(JudgeRequestsFunc::hashes(Arc::new(judge))),
                ScalarUDF::from(GradeQaFunc::new()),
            ],
        };
        Ok(
            Prepared::new(functions, vec![("judge", ScalarValue::from(id.as_str()))]).with_hooks(
                GradeHooks {
                    judge: id,
                    index: None,
                },
            ),
        )
    }

    fn describe(&self, report: &StageReport) -> String {
        let ratings = ratings(report);
        let at_least = |rating: Rating| -> usize {
            ratings
                .iter()
                .filter(|(name, _)| name.parse().is_ok_and(|r: Rating| r >= rating))
                .map(|(_, n)| n)
                .sum()
        };
        let mut line = format!(
            "grade ({}): {} QA pairs in {:.1} s",
            report.metric_text("judge"),
            report.rows("qa"),
            report.seconds,
        );
        if !ratings.is_empty() {
            let listed: Vec<String> = ratings.iter().map(|(r, n)| format!("{r} {n}")).collect();
            line.push_str(&format!(
                ": {}; fine-tuning grade (A or better) {}, pre-training grade (B or better) {}",
                listed.join(", "),
                at_least(Rating::A),
                at_least(Rating::B)
            ));
        }
        line.push_str(&format!("; qa v{}", report.version));
        line
    }
}

/// QA pairs per rating of the whole `qa` table (a full run's report), best first.
pub fn ratings(report: &StageReport) -> Vec<(String, usize)> {
    match report.metrics.get("ratings") {
        Some(Value::Array(pairs)) => pairs
            .iter()
            .filter_map(|pair| {
                Some((
                    pair.get(0)?.as_str()?.to_string(),
                    pair.get(1)?.as_u64()? as usize,
                ))
            })
            .collect(),
        _ => Vec::new(),
    }
}

/// Refuses to grade with a judge that has no verdict in `qa_judgements` while there are QA pairs
/// (a mistyped `--model`, a judge never run): every rating would become `not rated`.
async fn refuse_unknown_judge(pipeline: &Pipeline, id: &str) -> Result<()> {
    let ctx = pipeline.lake().session().await?;
    let quoted = id.replace('\'', "''");
    let sql = format!(
        "SELECT count(*) FROM (SELECT 1 FROM qa_judgements WHERE judge = '{quoted}' LIMIT 1)"
    );
    if count(&ctx, "grade", &sql).await? > 0
        || count(
            &ctx,
            "grade",
            "SELECT count(*) FROM (SELECT 1 FROM qa LIMIT 1)",
        )
        .await?
            == 0
    {
        return Ok(());
    }
    let judges = collect(
        &ctx,
        "grade",
        "SELECT DISTINCT judge FROM qa_judgements ORDER BY judge",
    )
    .await?;
    let judges = first_column_strings("grade", &judges)?;
    Err(PipelineError::Refused(format!(
        "judge `{id}` has no verdicts in qa_judgements, so every QA pair would be 'not rated'; \
         run `cxrlake run judge` with the same settings first, or check the judge settings \
         (--judge, --model, --judge-prompts). Judges with verdicts: {}",
        if judges.is_empty() {
            "none".to_string()
        } else {
            judges.join(", ")
        }
    )))
}

/// The grade run's state.
struct GradeHooks {
    judge: String,
    /// The usable verdicts of qa_judgements, read by the first chunk.
    index: Option<VerdictIndex>,
}

#[async_trait]
impl RunHooks for GradeHooks {
    async fn before_chunk(&mut self, ctx: &SessionContext, _chunk: ChunkInfo<'_>) -> Result<()> {
        // grade.sql writes each join's build side first (see its header), and a chunk's build
        // sides are collected whole: the probe side's wide qa rows are never repartitioned.
        for set in [
            "SET datafusion.optimizer.join_reordering = false",
            "SET datafusion.optimizer.hash_join_single_partition_threshold = 4294967296",
            "SET datafusion.optimizer.hash_join_single_partition_threshold_rows = 4294967296",
        ] {
            collect(ctx, "grade", set).await?;
        }
        if self.index.is_none() {
            self.index = Some(VerdictIndex::read(ctx, "grade").await?);
        }
        Ok(())
    }

    /// After `requests`: `chunk_verdicts`, the verdicts of this chunk's hashes from the index.
    fn tables_after(
        &mut self,
        statement: &Statement,
        batches: &[RecordBatch],
    ) -> Result<Vec<HookTable>> {
        let (Some(index), "requests") = (&self.index, statement.name.as_str()) else {
            return Ok(Vec::new());
        };
        Ok(vec![HookTable {
            name: "chunk_verdicts",
            schema: index.table_schema(),
            batches: vec![index.of("grade", &request_hashes("grade", batches)?)?],
        }])
    }

    async fn finish(&mut self, pipeline: &Pipeline, scope: &Scope) -> Result<Metrics> {
        let mut metrics = Metrics::from([("judge".to_string(), self.judge.clone().into())]);
        // Counting the ratings of a run over some studies would scan the whole table.
        if scope.is_all() {
            let counts = rating_counts(pipeline).await?;
            metrics.insert("ratings".into(), serde_json::json!(counts));
        }
        Ok(metrics)
    }
}

/// QA pairs per rating in the lake's `qa`, best first.
async fn rating_counts(pipeline: &Pipeline) -> Result<Vec<(String, usize)>> {
    let ctx = pipeline.lake().session().await?;
    let batches = collect(
        &ctx,
        "grade",
        "SELECT coalesce(rating, 'not rated') AS rating, count(*) AS n FROM qa \
         GROUP BY 1 ORDER BY 1 DESC",
    )
    .await?;
    let mut out = Vec::new();
    for batch in &batches {
        let ratings = cast(batch.column(0), &DataType::Utf8)
            .map_err(|e| PipelineError::query("grade", e.into()))?;
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
