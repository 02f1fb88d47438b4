//! The `extract` stage (`sql/extract.sql`): `sentences`, `observations_raw` and `indications`
//! from `reports`, with the rules backend (default) or an OpenAI-compatible LLM.
//!
//! The SQL file is a sequence of statements, each headed by `-- @step <name>` (the result becomes
//! an in-memory table of that name) or `-- @table <name>` (the result is also written to the lake
//! table, replacing it). With the LLM backend every answer is journaled locally and committed to
//! `llm_calls` as it arrives, so a killed run re-run with the same settings sends no request that
//! was already answered.

use std::sync::Arc;
use std::time::Instant;

use cxrlake_extract::prompts::Prompts;
use cxrlake_extract::rules::{RULES_VERSION, RulesExtractor};
use cxrlake_lake::{Lake, StageCommit};
use cxrlake_llm::{CallStats, LlmClient, LlmConfig};
use cxrlake_refdefs::RefDefs;
use cxrlake_udfs::extract::CALL_FAILED;
use cxrlake_udfs::extract::{Naming, llm_functions, rules_functions};
use datafusion::arrow::array::{AsArray, RecordBatch};
use datafusion::scalar::ScalarValue;
use serde_json::json;

use crate::error::{PipelineError, Result};
use crate::llm_calls::LakeCache;
use crate::scope::Scope;
pub use crate::stage::Statement;
use crate::stage::{conform, count, register, run_statement, sql_hash};

/// Stage name (= SQL file name = module name).
pub const STAGE: &str = "extract";
/// The stage's SQL.
pub const SQL: &str = include_str!("../../../sql/extract.sql");

/// Which backend extracts.
#[derive(Debug, Clone, Default)]
pub enum Backend {
    /// The rule-based backend (no LLM).
    #[default]
    Rules,
    /// An OpenAI-compatible server.
    Llm(Box<LlmConfig>),
}

/// Options of the extract stage.
#[derive(Debug, Clone, Default)]
pub struct ExtractOptions {
    /// The backend.
    pub backend: Backend,
    /// Prompts of the LLM backend (the embedded ones when `None`).
    pub prompts: Option<Prompts>,
    /// Show a progress bar for LLM calls.
    pub progress: bool,
}

/// What an extract run did.
#[derive(Debug, Clone, PartialEq)]
pub struct ExtractSummary {
    /// The `extractor` value of every row.
    pub extractor: String,
    /// Reports read.
    pub reports: usize,
    /// Rows written per table, in statement order.
    pub rows: Vec<(String, usize)>,
    /// Extraction outputs that failed (quarantined).
    pub failures: usize,
    /// LLM call accounting (`None` for the rules backend).
    pub llm: Option<CallStats>,
    /// Wall time in seconds.
    pub seconds: f64,
}

impl ExtractSummary {
    /// Rows written to `table`.
    pub fn rows_of(&self, table: &str) -> usize {
        self.rows
            .iter()
            .find(|(name, _)| name == table)
            .map_or(0, |(_, rows)| *rows)
    }
}

impl std::fmt::Display for ExtractSummary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "extract ({}): {} reports in {:.1} s ({}): {} sentences, {} raw observations, {} indications, {} failures",
            self.extractor,
            self.reports,
            self.seconds,
            throughput(self.reports, self.seconds),
            self.rows_of("sentences"),
            self.rows_of("observations_raw"),
            self.rows_of("indications"),
            self.failures,
        )?;
        if let Some(stats) = &self.llm {
            write!(
                f,
                "; LLM: {} requests, {} from llm_calls, {} sent, {} retries, {} failed, {} prompt + {} completion tokens",
                stats.requested,
                stats.cache_hits,
                stats.sent,
                stats.retries,
                stats.failures,
                stats.prompt_tokens,
                stats.completion_tokens
            )?;
        }
        Ok(())
    }
}

/// `N reports/s`, or `N s/report` when slower than one per second.
fn throughput(reports: usize, seconds: f64) -> String {
    let per_second = reports as f64 / seconds.max(1e-9);
    if per_second >= 1.0 || reports == 0 {
        format!("{per_second:.0} reports/s")
    } else {
        format!("{:.1} s/report", seconds / reports as f64)
    }
}

/// The `extractor` value the options write: `rules-<version>` or
/// `llm:<model>@prompts-<version>`.
pub fn extractor_id(options: &ExtractOptions) -> String {
    match &options.backend {
        Backend::Rules => RULES_VERSION.to_string(),
        Backend::Llm(config) => {
            let version = options.prompts.as_ref().map_or_else(
                || Prompts::embedded().version().to_string(),
                |p| p.version().to_string(),
            );
            format!("llm:{}@prompts-{version}", config.model)
        }
    }
}

/// Splits a stage SQL file into its `-- @step` / `-- @table` statements.
pub fn statements(sql: &str) -> Result<Vec<Statement>> {
    crate::stage::statements(STAGE, sql)
}

/// Runs the stage over every report and replaces its tables.
pub async fn run(lake: &Lake, defs: &RefDefs, options: &ExtractOptions) -> Result<ExtractSummary> {
    Ok(run_scoped(lake, defs, options, &Scope::All, false).await?.0)
}

/// Runs the stage over the reports of `scope`'s studies and replaces their rows; returns the
/// studies whose sentences, observations or indications changed (with `detect`, else the
/// scope).
pub async fn run_scoped(
    lake: &Lake,
    defs: &RefDefs,
    options: &ExtractOptions,
    scope: &Scope,
    detect: bool,
) -> Result<(ExtractSummary, Scope)> {
    let started = Instant::now();
    // The snapshot a scoped run compares its new rows with: `ctx` registers each statement's
    // result under its table's name.
    let lake_ctx = lake.session().await?;
    let ctx = lake.session().await?;
    if let Some(filter) = crate::scope::study_filter(scope) {
        let reports = ctx
            .table("reports")
            .await
            .and_then(|f| f.filter(filter))
            .map_err(|e| PipelineError::query(STAGE, e))?;
        ctx.deregister_table("reports")
            .map_err(|e| PipelineError::query(STAGE, e))?;
        ctx.register_table("reports", reports.into_view())
            .map_err(|e| PipelineError::query(STAGE, e))?;
    }
    let ids = scope
        .studies()
        .map(|s| s.iter().cloned().collect::<Vec<_>>());
    let scope_schema = Arc::new(datafusion::arrow::datatypes::Schema::new(vec![
        datafusion::arrow::datatypes::Field::new(
            "study_id",
            datafusion::arrow::datatypes::DataType::Utf8,
            false,
        ),
    ]));
    let scope_batch = RecordBatch::try_new(
        scope_schema.clone(),
        vec![Arc::new(datafusion::arrow::array::StringArray::from(
            ids.clone().unwrap_or_default(),
        ))],
    )
    .map_err(|e| PipelineError::query(STAGE, e.into()))?;
    register(&ctx, STAGE, "extract_scope", scope_schema, &[scope_batch])?;
    let extractor = extractor_id(options);
    let (functions, client, prompts_version) = match &options.backend {
        Backend::Rules => (
            rules_functions(&Arc::new(RulesExtractor::new(defs)), Naming::Step),
            None,
            None,
        ),
        Backend::Llm(config) => {
            let prompts = Arc::new(options.prompts.clone().unwrap_or_else(Prompts::embedded));
            let cache = LakeCache::open(lake, config.endpoint.as_str(), &config.model).await?;
            let client = Arc::new(
                LlmClient::new(config.as_ref().clone())?
                    .with_cache(cache)
                    .with_prompt_version(prompts.version())
                    .with_progress(options.progress),
            );
            (
                llm_functions(&client, &prompts, Naming::Step),
                Some(client),
                Some(prompts.version().to_string()),
            )
        }
    };
    for function in functions {
        ctx.register_udf(function);
    }
    let reports = lake.table("reports").await?.version();
    let fingerprint = json!({
        "inputs": { "reports": reports },
        "refdefs": defs.fingerprint(),
        "extractor": extractor,
        "prompts": prompts_version,
        "sql": sql_hash(SQL),
        "code": env!("CARGO_PKG_VERSION"),
    });
    let report_count = count(&ctx, STAGE, "SELECT count(*) FROM reports").await?;
    // Every statement runs before any table is written, so a failing step changes nothing.
    let mut outputs = Vec::new();
    let mut failures = 0;
    for statement in statements(SQL)? {
        let params = [
            ("extractor", ScalarValue::from(extractor.as_str())),
            ("full", ScalarValue::from(scope.is_all())),
        ];
        let (schema, batches) = run_statement(&ctx, STAGE, &statement, &params).await?;
        if client.is_some() {
            refuse_if_every_call_failed(&statement.name, &batches)?;
        }
        register(&ctx, STAGE, &statement.name, schema, &batches)?;
        if !statement.is_table {
            continue;
        }
        let table = cxrlake_schemas::table(&statement.name).ok_or_else(|| PipelineError::Sql {
            file: format!("sql/{STAGE}.sql"),
            reason: format!("@table {} is not a lake table", statement.name),
        })?;
        if table.name == "quarantine" {
            failures = count(
                &ctx,
                STAGE,
                "SELECT count(*) FROM quarantine WHERE stage = 'extract'",
            )
            .await?;
        }
        outputs.push((table, batches));
    }
    let mut rows = Vec::new();
    let mut changed = std::collections::BTreeSet::new();
    for (table, batches) in outputs {
        let rows_written: usize = batches.iter().map(RecordBatch::num_rows).sum();
        let mut batches = batches
            .iter()
            .filter(|b| b.num_rows() > 0)
            .map(|b| conform(STAGE, table.name, b))
            .collect::<Result<Vec<_>>>()?;
        let per_study = table.replace_by == Some("study_id");
        if detect && per_study {
            let old = match scope.studies() {
                Some(ids) => crate::scope::study_digests_of(lake, STAGE, table.name, ids).await?,
                None => crate::scope::table_digests(&lake_ctx, STAGE, table.name, None).await?,
            };
            let mut new = crate::scope::Digests::new();
            crate::scope::digest(STAGE, &batches, &mut new)?;
            changed.extend(crate::scope::changed(&old, &new));
        }
        if batches.is_empty() {
            batches.push(RecordBatch::new_empty((table.schema)()));
        }
        let commit = StageCommit::new(STAGE)
            .with_fingerprint(fingerprint.clone())
            .with_metrics(json!({
                "reports": report_count,
                "rows": rows_written,
                "changed": match (&ids, detect) {
                    (_, true) => json!(changed),
                    (Some(ids), false) => json!(ids),
                    (None, false) => json!("all"),
                },
            }));
        let write = lake.write(table.name).commit(commit);
        let write = match &ids {
            Some(ids) if per_study => write.replace_studies(ids.clone()),
            _ => write.overwrite(),
        };
        write.execute(batches).await?;
        rows.push((table.name.to_string(), rows_written));
    }
    let llm = client.as_ref().map(|client| client.stats());
    let summary = ExtractSummary {
        extractor,
        reports: report_count,
        rows,
        failures,
        llm,
        seconds: started.elapsed().as_secs_f64(),
    };
    let changed = if detect {
        Scope::Studies(changed)
    } else {
        scope.clone()
    };
    Ok((summary, changed))
}

/// Fails when every row of a step's result (`r.error`) is a failed LLM call: the endpoint is down
/// or misconfigured, and committing would replace earlier results with empty tables.
fn refuse_if_every_call_failed(step: &str, batches: &[RecordBatch]) -> Result<()> {
    let (mut rows, mut failed, mut first) = (0, 0, None);
    for batch in batches {
        let Some(errors) = batch
            .column_by_name("r")
            .and_then(|r| r.as_struct_opt())
            .and_then(|r| r.column_by_name("error"))
            .and_then(|e| e.as_string_opt::<i32>())
        else {
            return Ok(());
        };
        rows += batch.num_rows();
        for error in errors.iter().flatten() {
            if error.starts_with(CALL_FAILED) {
                failed += 1;
                first.get_or_insert_with(|| error.to_string());
            }
        }
    }
    match first {
        Some(first) if failed == rows => Err(PipelineError::LlmUnavailable {
            step: step.to_string(),
            calls: failed,
            first,
        }),
        _ => Ok(()),
    }
}
