//! The `judge` stage (`sql/judge.sql`): the five text criteria of every QA pair (paper 000, E.3)
//! rated by the heuristic judge (default) or an LLM, each distinct input once, chunk by chunk of
//! patients, appended to the content-addressed `qa_judgements`.
//!
//! ```text
//!  qa (chunk) ─judge_requests─▶ requests: 5 per QA pair, content_hash = sha256(judge, criterion, input)
//!                                  │  GROUP BY content_hash, NOT IN judged
//!                                  ▼
//!                               pending ─judge_verdict─▶ qa_judgements (append)
//!  judged = qa_judgements of this judge without error ∪ this run's earlier chunks
//! ```
//!
//! A rerun judges nothing it has judged (a judgement with an error, e.g. a failed LLM call, is
//! asked again; LLM answers are cached in `llm_calls`, so a resumed run sends no request twice).

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use cxrlake_judge::{Judge, JudgePrompts};
use cxrlake_lake::{Lake, StageCommit};
use cxrlake_llm::{CallStats, LlmClient, LlmConfig};
use cxrlake_udfs::extract::CALL_FAILED;
use cxrlake_udfs::judge::{HeuristicVerdictFunc, JudgeRequestsFunc, LlmVerdictFunc};
use datafusion::arrow::array::{Array, AsArray, BooleanArray, RecordBatch};
use datafusion::arrow::compute::{cast, filter_record_batch};
use datafusion::arrow::datatypes::{DataType, Field, Schema};
use datafusion::logical_expr::ScalarUDF;
use datafusion::logical_expr::async_udf::AsyncScalarUDF;
use datafusion::prelude::SessionContext;
use datafusion::scalar::ScalarValue;
use serde_json::json;

use crate::error::{PipelineError, Result};
use crate::llm_calls::LakeCache;
use crate::scope::Scope;
use crate::stage::{
    Rows, chunk_context, collect, conform, count, patient_ranges, register, run_statement,
    sql_hash, statements,
};

/// Stage name (= SQL file name = module name).
pub const STAGE: &str = "judge";
/// The stage's SQL.
pub const SQL: &str = include_str!("../../../sql/judge.sql");

const INPUTS: [&str; 2] = ["qa", "reports"];
const TABLE: &str = "qa_judgements";

/// Which judge rates.
#[derive(Debug, Clone, Default)]
pub enum JudgeBackend {
    /// The heuristic judge (no LLM).
    #[default]
    Heuristic,
    /// An OpenAI-compatible server with the prompts of listings 7–11.
    Llm(Box<LlmConfig>),
}

/// Options of the judge stage (the grade stage takes the same, to find the verdicts).
#[derive(Debug, Clone)]
pub struct JudgeOptions {
    /// The backend.
    pub backend: JudgeBackend,
    /// A judge-prompts folder to use instead of the embedded `prompts/judge/`.
    pub prompts: Option<PathBuf>,
    /// Patients per chunk.
    pub chunk_patients: usize,
    /// Count the requests and distinct inputs without judging or writing anything.
    pub plan_only: bool,
    /// Show a progress bar for LLM calls.
    pub progress: bool,
}

impl Default for JudgeOptions {
    fn default() -> Self {
        Self {
            backend: JudgeBackend::Heuristic,
            prompts: None,
            chunk_patients: 100,
            plan_only: false,
            progress: false,
        }
    }
}

impl JudgeOptions {
    /// The judge these options name (its id and how it builds requests).
    pub fn judge(&self) -> Result<Judge> {
        Ok(match &self.backend {
            JudgeBackend::Heuristic => Judge::Heuristic,
            JudgeBackend::Llm(config) => Judge::Llm {
                model: config.model.clone(),
                prompts: Arc::new(match &self.prompts {
                    Some(dir) => JudgePrompts::load(dir)
                        .map_err(|e| PipelineError::Config(format!("judge prompts: {e}")))?,
                    None => JudgePrompts::embedded(),
                }),
            },
        })
    }
}

/// What a judge run did.
#[derive(Debug, Clone, PartialEq)]
pub struct JudgeSummary {
    /// The judge id.
    pub judge: String,
    /// QA pairs read.
    pub questions: usize,
    /// Criterion requests, five per QA pair: the calls a judge without dedup would make.
    pub requests: usize,
    /// Distinct inputs judged in this run (the calls made; `plan_only`: that would be made).
    pub judged: usize,
    /// Of those, verdicts without usable levels (unparseable answers, failed calls).
    pub unusable: usize,
    /// Whether nothing was judged or written.
    pub plan_only: bool,
    /// LLM call accounting (`None` for the heuristic judge).
    pub llm: Option<CallStats>,
    /// Wall time in seconds.
    pub seconds: f64,
}

impl JudgeSummary {
    /// Judged inputs per naive request.
    pub fn call_ratio(&self) -> f64 {
        self.judged as f64 / self.requests.max(1) as f64
    }
}

impl std::fmt::Display for JudgeSummary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let verb = if self.plan_only {
            "would judge"
        } else {
            "judged"
        };
        write!(
            f,
            "judge ({}): {} QA pairs, {} criterion requests (5 per pair), {verb} {} distinct \
             inputs ({:.1} % of the requests), {} unusable, in {:.1} s",
            self.judge,
            self.questions,
            self.requests,
            self.judged,
            100.0 * self.call_ratio(),
            self.unusable,
            self.seconds
        )?;
        if let Some(stats) = &self.llm {
            write!(
                f,
                "; LLM: {} requests, {} from llm_calls, {} sent, {} failed, {} prompt + {} \
                 completion tokens",
                stats.requested,
                stats.cache_hits,
                stats.sent,
                stats.failures,
                stats.prompt_tokens,
                stats.completion_tokens
            )?;
        }
        Ok(())
    }
}

/// The content hashes already judged, as batches of one `content_hash` column.
struct Judged {
    batches: Vec<RecordBatch>,
}

impl Judged {
    fn schema() -> Arc<Schema> {
        Arc::new(Schema::new(vec![Field::new(
            "content_hash",
            DataType::Utf8,
            false,
        )]))
    }

    /// The hashes rated without error (a content hash includes the judge's cache identity).
    async fn read(ctx: &SessionContext) -> Result<Self> {
        let sql = format!("SELECT content_hash FROM {TABLE} WHERE error IS NULL");
        let mut judged = Judged {
            batches: Vec::new(),
        };
        for batch in collect(ctx, STAGE, &sql).await? {
            judged.push(batch.column(0))?;
        }
        Ok(judged)
    }

    fn push(&mut self, hashes: &Arc<dyn Array>) -> Result<()> {
        let hashes =
            cast(hashes, &DataType::Utf8).map_err(|e| PipelineError::query(STAGE, e.into()))?;
        let batch = RecordBatch::try_new(Self::schema(), vec![hashes])
            .map_err(|e| PipelineError::query(STAGE, e.into()))?;
        self.batches.push(batch);
        Ok(())
    }

    /// Adds the hashes of `verdicts` (rows of `qa_judgements`) that have no error.
    fn add(&mut self, verdicts: &[RecordBatch]) -> Result<()> {
        for batch in verdicts {
            let (Some(hashes), Some(errors)) = (
                batch.column_by_name("content_hash"),
                batch.column_by_name("error"),
            ) else {
                continue;
            };
            let errors =
                cast(errors, &DataType::Utf8).map_err(|e| PipelineError::query(STAGE, e.into()))?;
            let ok: BooleanArray = errors
                .as_string::<i32>()
                .iter()
                .map(|e| Some(e.is_none()))
                .collect();
            let hashes = RecordBatch::try_new(
                Arc::new(Schema::new(vec![Field::new(
                    "h",
                    hashes.data_type().clone(),
                    true,
                )])),
                vec![Arc::clone(hashes)],
            )
            .and_then(|b| filter_record_batch(&b, &ok))
            .map_err(|e| PipelineError::query(STAGE, e.into()))?;
            self.push(hashes.column(0))?;
        }
        Ok(())
    }
}

/// The functions of a judge run and, for an LLM, its client.
fn functions(
    lake_judge: &Judge,
    options: &JudgeOptions,
    cache: Option<Arc<LakeCache>>,
) -> Result<(Vec<ScalarUDF>, Option<Arc<LlmClient>>)> {
    let judge = Arc::new(lake_judge.clone());
    let requests = ScalarUDF::from(JudgeRequestsFunc::new(Arc::clone(&judge)));
    match (&options.backend, cache) {
        (JudgeBackend::Llm(config), Some(cache)) => {
            let client = Arc::new(
                LlmClient::new(config.as_ref().clone())?
                    .with_cache(cache)
                    .with_prompt_version(format!("judge-{}", judge.id()))
                    .with_progress(options.progress),
            );
            let verdict = AsyncScalarUDF::new(Arc::new(LlmVerdictFunc::new(
                Arc::clone(&client),
                judge.id(),
            )))
            .into_scalar_udf();
            Ok((vec![requests, verdict], Some(client)))
        }
        _ => Ok((
            vec![requests, ScalarUDF::from(HeuristicVerdictFunc::new())],
            None,
        )),
    }
}

/// Runs the stage over every QA pair; appends the new verdicts to `qa_judgements`.
pub async fn run(lake: &Lake, options: &JudgeOptions) -> Result<JudgeSummary> {
    run_scoped(lake, options, &Scope::All).await
}

/// Runs the stage over the QA pairs of `scope`'s studies.
pub async fn run_scoped(
    lake: &Lake,
    options: &JudgeOptions,
    scope: &Scope,
) -> Result<JudgeSummary> {
    let started = Instant::now();
    let judge = options.judge()?;
    let id = judge.id();
    let cache = match &options.backend {
        JudgeBackend::Llm(config) if !options.plan_only => {
            Some(LakeCache::open(lake, config.endpoint.as_str(), &config.model).await?)
        }
        _ => None,
    };
    let (functions, client) = functions(&judge, options, cache)?;
    // The qa stage's version: a grade run interrupted after some chunks leaves the newest
    // version partial, and grade reads the source version too.
    let source = crate::grade::source_version(lake).await?;
    let pinned = HashMap::from([("qa".to_string(), source)]);
    let lake_ctx = lake.session_with(&pinned).await?;
    // A scoped run counts its chunks' questions (without a scan of `qa`).
    let mut questions = match scope {
        Scope::All => count(&lake_ctx, STAGE, "SELECT count(*) FROM qa").await?,
        Scope::Studies(_) => 0,
    };
    let fingerprint = json!({
        "inputs": {
            "qa": source,
            "reports": lake.table("reports").await?.version(),
        },
        "judge": id,
        "sql": sql_hash(SQL),
        "code": env!("CARGO_PKG_VERSION"),
    });
    let statements = statements(STAGE, SQL)?;
    let mut judged = Judged::read(&lake_ctx).await?;
    tracing::debug!(
        stage = STAGE,
        seconds = started.elapsed().as_secs_f64(),
        "judged hashes read"
    );
    let chunks: Vec<Vec<String>> = match scope.studies() {
        None => patient_ranges(&lake_ctx, STAGE, "qa", options.chunk_patients)
            .await?
            .into_iter()
            .map(|(first, last)| vec![first, last])
            .collect(),
        Some(ids) => ids
            .iter()
            .cloned()
            .collect::<Vec<_>>()
            .chunks(options.chunk_patients.saturating_mul(30).max(1))
            .map(<[String]>::to_vec)
            .collect(),
    };
    let params = [("judge", ScalarValue::from(id.as_str()))];
    let (mut requests, mut new, mut unusable) = (0, 0, 0);
    for (chunk, rows) in chunks.iter().enumerate() {
        let rows = match scope {
            Scope::All => Rows::Patients(&rows[0], &rows[1]),
            Scope::Studies(_) => Rows::Studies(rows),
        };
        let ctx = chunk_context(lake, &lake_ctx, &pinned, STAGE, &INPUTS, rows, &functions).await?;
        if let Scope::Studies(_) = scope {
            questions += count(&ctx, STAGE, "SELECT count(*) FROM qa").await?;
        }
        register(&ctx, STAGE, "judged", Judged::schema(), &judged.batches)?;
        let mut verdicts = Vec::new();
        for statement in &statements {
            if options.plan_only && statement.is_table {
                continue;
            }
            let step = Instant::now();
            let (schema, batches) = run_statement(&ctx, STAGE, statement, &params).await?;
            let rows: usize = batches.iter().map(RecordBatch::num_rows).sum();
            tracing::info!(
                stage = STAGE,
                statement = statement.name.as_str(),
                chunk = chunk + 1,
                rows,
                seconds = step.elapsed().as_secs_f64(),
                "statement done"
            );
            match statement.name.as_str() {
                "requests" => requests += rows,
                "pending" => {
                    new += rows;
                    if options.plan_only {
                        for batch in &batches {
                            if let Some(hashes) = batch.column_by_name("content_hash") {
                                judged.push(hashes)?;
                            }
                        }
                    }
                }
                _ => {}
            }
            register(&ctx, STAGE, &statement.name, schema, &batches)?;
            if statement.is_table {
                verdicts = batches;
            }
        }
        if options.plan_only {
            continue;
        }
        if client.is_some() {
            refuse_if_every_call_failed(&verdicts)?;
        }
        unusable += verdicts
            .iter()
            .filter_map(|b| b.column_by_name("error"))
            .map(|e| e.len() - e.null_count())
            .sum::<usize>();
        judged.add(&verdicts)?;
        let rows: usize = verdicts.iter().map(RecordBatch::num_rows).sum();
        let batches = verdicts
            .iter()
            .filter(|b| b.num_rows() > 0)
            .map(|b| conform(STAGE, TABLE, b))
            .collect::<Result<Vec<_>>>()?;
        if batches.is_empty() {
            continue;
        }
        let commit = StageCommit::new(STAGE)
            .with_fingerprint(fingerprint.clone())
            .with_metrics(json!({
                "rows": rows,
                "chunk": chunk + 1,
                "chunks": chunks.len(),
            }));
        lake.write(TABLE)
            .append()
            .commit(commit)
            .execute(batches)
            .await?;
    }
    Ok(JudgeSummary {
        judge: id,
        questions,
        requests,
        judged: new,
        unusable,
        plan_only: options.plan_only,
        llm: client.map(|c| c.stats()),
        seconds: started.elapsed().as_secs_f64(),
    })
}

/// Fails when every verdict of a chunk is a failed LLM call: the endpoint is down or does not
/// serve the model, and writing would only record failures (the calls are in `llm_calls`; a
/// rerun asks them again).
fn refuse_if_every_call_failed(verdicts: &[RecordBatch]) -> Result<()> {
    let (mut rows, mut failed, mut first) = (0, 0, None);
    for batch in verdicts {
        let Some(errors) = batch.column_by_name("error") else {
            continue;
        };
        let errors =
            cast(errors, &DataType::Utf8).map_err(|e| PipelineError::query(STAGE, e.into()))?;
        rows += errors.len();
        for error in errors.as_string::<i32>().iter().flatten() {
            if error.starts_with(CALL_FAILED) {
                failed += 1;
                first.get_or_insert_with(|| error.to_string());
            }
        }
    }
    match first {
        Some(first) if failed == rows => Err(PipelineError::LlmUnavailable {
            step: TABLE.to_string(),
            calls: failed,
            first,
        }),
        _ => Ok(()),
    }
}
