//! The `judge` stage (`sql/judge.sql`): the five text criteria of every QA pair (paper 000, E.3)
//! rated by the heuristic judge (default) or an LLM, each distinct input once, chunk by chunk of
//! patients, appended to the content-addressed `qa_judgements`.
//!
//! ```text
//!  qa (chunk) ─judge_requests─▶ requests: 5 per QA pair, content_hash = sha256(judge, criterion, input)
//!                                  │  GROUP BY content_hash, NOT IN judged
//!                                  ▼
//!                               pending: one row per distinct input
//!                                  │  per study and criterion, by content hash, ≤ judge_batch each
//!                                  ▼
//!                               groups ─judge_verdicts─▶ one verdict per input ─▶ qa_judgements (append)
//!  judged = the chunk's hashes found in the run's set (verdicts.rs): qa_judgements without
//!           error ∪ this run's earlier chunks, read once per run
//! ```
//!
//! The LLM judge sends one call per group (`cxrlake.judge_batch` items, the report once); the
//! heuristic and reading judges rate each input on its own (groups of one).
//!
//! A rerun judges nothing it has judged (a judgement with an error, e.g. a failed LLM call, is
//! asked again; LLM answers are cached in `llm_calls`, so a resumed run sends no request twice).

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;

use async_trait::async_trait;
use cxrlake_judge::Judge as JudgeKind;
use cxrlake_llm::LlmClient;
use cxrlake_udfs::judge::{HeuristicVerdictFunc, JudgeRequestsFunc, LlmVerdictFunc};
use cxrlake_udfs::portable::Recipe;
use datafusion::arrow::array::{Array, AsArray, RecordBatch};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::DataType;
use datafusion::logical_expr::ScalarUDF;
use datafusion::logical_expr::async_udf::AsyncScalarUDF;
use datafusion::prelude::{Expr, SessionContext, col, lit};
use datafusion::scalar::ScalarValue;

use crate::error::{PipelineError, Result};
use crate::fingerprint::Fingerprint;
use crate::incremental::{StagePlan, rescope_other_definitions};
use crate::llm_calls::{cached_client, describe_llm, llm_metrics, refuse_if_every_call_failed};
use crate::pipeline::Pipeline;
use crate::scope::Scope;
use crate::sql::{Statement, collect, count, first_column_strings};
use crate::stage::{
    ChunkInfo, Chunking, Coverage, HookTable, Metrics, Prepared, RunHooks, RunMode, Stage,
    StageDef, StageReport, Writes, recipe_functions,
};
use crate::verdicts::{JudgedSet, request_hashes};

const TABLE: &str = "qa_judgements";

/// The stage's declaration.
pub static DEF: StageDef = StageDef {
    name: "judge",
    doc: "qa_judgements: the five text criteria of every QA pair, each distinct input judged once",
    sql: include_str!("../../../sql/judge.sql"),
    file: "sql/judge.sql",
    inputs: &["qa", "reports"],
    side_inputs: &[],
    outputs: &[TABLE],
    settings: &[
        "judge",
        "llm_endpoint",
        "llm_model",
        "judge_prompts",
        "judge_batch",
        "chunk_patients",
    ],
    chunking: Chunking::Patients { default: 100 },
    writes: Writes::Append,
    coverage: Coverage::PerStudy,
    detects_changes: false,
    reads_synonyms: true,
};

/// The `judge` stage.
#[derive(Debug)]
pub struct Judge;

#[async_trait]
impl Stage for Judge {
    fn def(&self) -> &'static StageDef {
        &DEF
    }

    async fn definitions(&self, pipeline: &Pipeline) -> Result<BTreeMap<String, String>> {
        Ok(BTreeMap::from([("judge".into(), pipeline.judge()?.id())]))
    }

    /// The generic rules, and: while this LLM judge has failed verdicts, the next run asks them
    /// again (over every study: a verdict is shared by all the pairs with its input).
    async fn rescope(
        &self,
        pipeline: &Pipeline,
        last: &Fingerprint,
        now: &BTreeMap<String, String>,
        plan: &mut StagePlan,
    ) -> Result<()> {
        rescope_other_definitions(last, now, plan, &[]);
        if pipeline.config().judge != "llm" || plan.scope.is_all() {
            return Ok(());
        }
        let ctx = pipeline.lake().session().await?;
        let failed = failed_hashes(&ctx, &pipeline.judge()?.id()).await?.len();
        if failed > 0 {
            plan.all(format!("{failed} failed verdicts are asked again"));
        }
        Ok(())
    }

    async fn prepare(&self, pipeline: &Pipeline, mode: RunMode) -> Result<Prepared> {
        let judge = Arc::new(pipeline.judge()?);
        let id = judge.id();
        let requests = || ScalarUDF::from(JudgeRequestsFunc::new(Arc::clone(&judge)));
        let (functions, client) = match judge.as_ref() {
            JudgeKind::Llm { prompts, .. } if mode == RunMode::Write => {
                let config = pipeline.required_llm("judge")?;
                let client =
                    cached_client(pipeline, "judge", config, &format!("judge-{id}")).await?;
                let verdict = AsyncScalarUDF::new(Arc::new(LlmVerdictFunc::new(
                    Arc::clone(&client),
                    id.clone(),
                    Arc::clone(prompts),
                )))
                .into_scalar_udf();
                (vec![requests(), verdict], Some(client))
            }
            // Nothing but rules: the stage can run where the plan is sent.
            JudgeKind::Heuristic => (
                recipe_functions("judge", Recipe::HeuristicJudge, pipeline.defs())?,
                None,
            ),
            _ => (
                vec![requests(), ScalarUDF::from(HeuristicVerdictFunc::new())],
                None,
            ),
        };
        let batch = judge.batch() as i64;
        let ctx = pipeline.lake().session().await?;
        let judged = JudgedSet::read(&ctx, "judge").await?;
        let failed = failed_hashes(&ctx, &id).await?;
        Ok(Prepared::new(
            functions,
            vec![
                ("judge", ScalarValue::from(id.as_str())),
                ("judge_batch", ScalarValue::from(batch)),
            ],
        )
        .with_hooks(JudgeHooks {
            judge: id,
            judged,
            client,
            count_only: mode == RunMode::CountOnly,
            failed,
            replaces: None,
            questions: 0,
            requests: 0,
            pending: 0,
            calls: 0,
            unusable: 0,
        }))
    }

    fn describe(&self, report: &StageReport) -> String {
        let count_only = report.metrics.get("plan_only") == Some(&true.into());
        let verb = if count_only { "would judge" } else { "judged" };
        let (requests, judged) = (report.metric("requests"), report.metric("judged"));
        let mut line = format!(
            "judge ({}): {} QA pairs, {requests} criterion requests (5 per pair), {verb} \
             {judged} distinct inputs ({:.1} % of the requests), {} unusable{}, in {:.1} s",
            report.metric_text("judge"),
            report.metric("questions"),
            100.0 * judged as f64 / requests.max(1) as f64,
            report.metric("unusable"),
            if report.metric("unusable") > 0 && !count_only {
                " (asked again by the next `cxrlake run judge`)"
            } else {
                ""
            },
            report.seconds
        );
        if report.metric_text("judge").starts_with("llm:") {
            let calls = report.metric("calls");
            line.push_str(&format!(
                "; {calls} LLM calls ({:.1} % of the requests, {:.2} per QA pair)",
                100.0 * calls as f64 / requests.max(1) as f64,
                calls as f64 / report.metric("questions").max(1) as f64
            ));
        }
        if report.metrics.contains_key("llm_requested") {
            line.push_str(&describe_llm(report));
        }
        line
    }
}

/// A written verdict: its content hash and whether it failed.
struct Outcome {
    hash: String,
    failed: bool,
}

/// The outcome of each row of `verdicts` (rows of `qa_judgements`).
fn outcomes(verdicts: &[RecordBatch]) -> Result<Vec<Outcome>> {
    let utf8 = |column: &Arc<dyn Array>| {
        cast(column, &DataType::Utf8).map_err(|e| PipelineError::query("judge", e.into()))
    };
    let mut out = Vec::new();
    for batch in verdicts {
        let (Some(hashes), Some(errors)) = (
            batch.column_by_name("content_hash"),
            batch.column_by_name("error"),
        ) else {
            continue;
        };
        let (hashes, errors) = (utf8(hashes)?, utf8(errors)?);
        for (hash, error) in hashes
            .as_string::<i32>()
            .iter()
            .zip(errors.as_string::<i32>())
        {
            if let Some(hash) = hash {
                out.push(Outcome {
                    hash: hash.to_string(),
                    failed: error.is_some(),
                });
            }
        }
    }
    Ok(out)
}

/// The content hashes of `judge` whose only verdicts failed (error set): asked again by the next
/// run, and their failed rows replaced by the new verdict, so a hash has one row however often it
/// is retried.
async fn failed_hashes(ctx: &SessionContext, judge: &str) -> Result<HashSet<String>> {
    let judge = judge.replace('\'', "''");
    let sql = format!(
        "SELECT content_hash FROM {TABLE} WHERE judge = '{judge}' \
         GROUP BY content_hash HAVING bool_and(error IS NOT NULL)"
    );
    let batches = collect(ctx, "judge", &sql).await?;
    Ok(first_column_strings("judge", &batches)?
        .into_iter()
        .collect())
}

/// The judge run's state: what is judged, the LLM client, and the counts.
struct JudgeHooks {
    judge: String,
    /// The hashes judged without error: the table's and this run's.
    judged: JudgedSet,
    client: Option<Arc<LlmClient>>,
    count_only: bool,
    /// Hashes with only failed verdicts in the table (before this chunk's write).
    failed: HashSet<String>,
    /// This chunk's replacement of failed verdicts it judged again.
    replaces: Option<Expr>,
    questions: usize,
    requests: usize,
    pending: usize,
    /// Groups of pending inputs: the LLM judge's calls.
    calls: usize,
    unusable: usize,
}

impl JudgeHooks {
    /// When `verdicts` judge again a hash with a failed row, the predicate replacing those rows:
    /// `content_hash IN (every hash written)` (all new rows match it; the old rows it matches are
    /// the failed ones, a hash judged without error is never asked again). The hashes failing
    /// now join `failed`.
    fn retried(&mut self, verdicts: &[Outcome]) -> Option<Expr> {
        let retried = verdicts.iter().any(|v| self.failed.contains(&v.hash));
        self.failed
            .extend(verdicts.iter().filter(|v| v.failed).map(|v| v.hash.clone()));
        retried.then(|| {
            let written = verdicts.iter().map(|v| lit(v.hash.as_str())).collect();
            col("content_hash").in_list(written, false)
        })
    }
}

#[async_trait]
impl RunHooks for JudgeHooks {
    async fn before_chunk(&mut self, ctx: &SessionContext, _chunk: ChunkInfo<'_>) -> Result<()> {
        self.questions += count(ctx, "judge", "SELECT count(*) FROM qa").await?;
        Ok(())
    }

    async fn after_statement(
        &mut self,
        _ctx: &SessionContext,
        statement: &Statement,
        batches: &[RecordBatch],
    ) -> Result<()> {
        let rows: usize = batches.iter().map(RecordBatch::num_rows).sum();
        match statement.name.as_str() {
            "requests" => self.requests += rows,
            "groups" => self.calls += rows,
            "pending" => {
                self.pending += rows;
                if self.count_only {
                    for hashes in request_hashes("judge", batches)? {
                        self.judged.insert(&hashes);
                    }
                }
            }
            TABLE => {
                if self.client.is_some() {
                    refuse_if_every_call_failed(TABLE, batches, None)?;
                }
                self.unusable += batches
                    .iter()
                    .filter_map(|b| b.column_by_name("error"))
                    .map(|e| e.len() - e.null_count())
                    .sum::<usize>();
                let outcomes = outcomes(batches)?;
                for outcome in outcomes.iter().filter(|o| !o.failed) {
                    self.judged.insert_one(&outcome.hash);
                }
                self.replaces = self.retried(&outcomes);
            }
            _ => {}
        }
        Ok(())
    }

    /// The verdicts' outcomes are counted and indexed.
    fn reads_rows(&self, statement: &Statement) -> bool {
        statement.name == TABLE
    }

    /// After `requests`: `judged`, this chunk's hashes that are judged, looked up in the run's set.
    fn tables_after(
        &mut self,
        statement: &Statement,
        batches: &[RecordBatch],
    ) -> Result<Vec<HookTable>> {
        if statement.name != "requests" {
            return Ok(Vec::new());
        }
        let hashes = request_hashes("judge", batches)?;
        Ok(vec![HookTable {
            name: "judged",
            schema: JudgedSet::schema(),
            batches: vec![self.judged.among("judge", &hashes)?],
        }])
    }

    fn replaces(&mut self, table: &str) -> Option<Expr> {
        if table == TABLE {
            self.replaces.take()
        } else {
            None
        }
    }

    async fn finish(&mut self, _pipeline: &Pipeline, _scope: &Scope) -> Result<Metrics> {
        let mut metrics = Metrics::from([
            ("judge".to_string(), self.judge.clone().into()),
            ("questions".to_string(), self.questions.into()),
            ("requests".to_string(), self.requests.into()),
            ("judged".to_string(), self.pending.into()),
            ("calls".to_string(), self.calls.into()),
            ("unusable".to_string(), self.unusable.into()),
            ("plan_only".to_string(), self.count_only.into()),
        ]);
        if let Some(client) = &self.client {
            metrics.extend(llm_metrics(&client.stats()));
        }
        Ok(metrics)
    }
}
