//! The `extract` stage (`sql/extract.sql`): `sentences`, `observations_raw` and `indications`
//! from `reports` (paper 000, E.1.2), with the rules backend (default) or an OpenAI-compatible
//! LLM, bound to the names `extract_sentences`, `extract_observations`, `extract_indication`.
//!
//! One chunk: every statement runs before any table is written, so a failing step changes
//! nothing. With the LLM backend every answer is journaled locally and committed to
//! `llm_calls` as it arrives, so a killed run re-run with the same settings sends no request
//! that was already answered; a step whose every call failed stops the stage.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use async_trait::async_trait;
use cxrlake_extract::rules::RULES_VERSION;
use cxrlake_llm::LlmClient;
use cxrlake_refdefs::FileKind;
use cxrlake_udfs::extract::{Naming, llm_functions};
use cxrlake_udfs::portable::Recipe;
use datafusion::arrow::array::{Array, AsArray, RecordBatch};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::DataType;
use datafusion::prelude::SessionContext;
use datafusion::scalar::ScalarValue;

use crate::error::{PipelineError, Result};
use crate::fingerprint::Fingerprint;
use crate::incremental::{StagePlan, refdefs_change, rescope_other_definitions};
use crate::llm_calls::{cached_client, check_answers, llm_metrics};
use crate::pipeline::Pipeline;
use crate::refdefs::mentions;
use crate::scope::Scope;
use crate::sql::{Statement, collect};
use crate::stage::{
    Chunking, Coverage, LlmRequests, Metrics, Prepared, RunHooks, RunMode, Stage, StageDef,
    StageReport, Writes, recipe_functions,
};

/// The stage's declaration.
pub static DEF: StageDef = StageDef {
    name: "extract",
    doc: "sentences, observations_raw, indications from reports (rules or LLM backend)",
    sql: include_str!("../../../sql/extract.sql"),
    file: "sql/extract.sql",
    inputs: &["reports"],
    side_inputs: &["quarantine"],
    outputs: &["sentences", "observations_raw", "indications", "quarantine"],
    settings: &[
        "refdefs",
        "extractor",
        "llm_endpoint",
        "llm_model",
        "prompts",
    ],
    chunking: Chunking::Whole,
    writes: Writes::Replace,
    coverage: Coverage::PerStudy,
    detects_changes: true,
    reads_synonyms: true,
};

/// The `extract` stage.
#[derive(Debug)]
pub struct Extract;

/// The `extractor` value the settings write: `rules-<version>` or
/// `llm:<model>@prompts-<version>`.
pub fn extractor_id(pipeline: &Pipeline) -> Result<String> {
    Ok(match pipeline.config().extractor.as_str() {
        "llm" => format!(
            "llm:{}@prompts-{}",
            pipeline.required_llm("extractor")?.model,
            pipeline.prompts()?.version()
        ),
        _ => RULES_VERSION.to_string(),
    })
}

#[async_trait]
impl Stage for Extract {
    fn def(&self) -> &'static StageDef {
        &DEF
    }

    /// One per report, FINDINGS/IMPRESSION cluster and indication (listings 1, 3 and 5).
    fn llm_requests(&self) -> Option<LlmRequests> {
        Some(LlmRequests {
            backend: "extractor",
            rows: "SELECT study_id FROM reports \
                   UNION ALL SELECT study_id FROM (SELECT DISTINCT study_id, cluster_id \
                       FROM sentences WHERE section_type IN ('FINDINGS', 'IMPRESSION')) \
                   UNION ALL SELECT DISTINCT study_id FROM sentences \
                       WHERE section_type = 'INDICATION'",
        })
    }

    async fn definitions(&self, pipeline: &Pipeline) -> Result<BTreeMap<String, String>> {
        Ok(BTreeMap::from([
            ("refdefs".into(), pipeline.defs().fingerprint().to_string()),
            ("extractor".into(), extractor_id(pipeline)?),
        ]))
    }

    async fn prepare(&self, pipeline: &Pipeline, _mode: RunMode) -> Result<Prepared> {
        let extractor = extractor_id(pipeline)?;
        let (functions, client) = match pipeline.config().extractor.as_str() {
            "llm" => {
                let prompts = pipeline.prompts()?;
                let config = pipeline.required_llm("extractor")?;
                let client = cached_client(pipeline, "extract", config, prompts.version()).await?;
                (
                    llm_functions(&client, &prompts, Naming::Step).into(),
                    Some(client),
                )
            }
            _ => (
                recipe_functions("extract", Recipe::RulesExtract, pipeline.defs())?,
                None,
            ),
        };
        // Only the LLM backend leaves studies unfinished (and reads the lake's history for them).
        let retried = match client {
            Some(_) => crate::incremental::unfinished_studies(pipeline, &DEF).await?,
            None => BTreeSet::new(),
        };
        Ok(Prepared::new(
            functions,
            vec![("extractor", ScalarValue::from(extractor.as_str()))],
        )
        .with_hooks(ExtractHooks {
            extractor,
            client,
            failures: 0,
            max_failure_share: pipeline.config().llm_max_failure_share,
            retried,
            unfinished: BTreeSet::new(),
        }))
    }

    async fn rescope(
        &self,
        pipeline: &Pipeline,
        last: &Fingerprint,
        now: &BTreeMap<String, String>,
        plan: &mut StagePlan,
    ) -> Result<()> {
        rescope_other_definitions(last, now, plan, &["refdefs"]);
        if !plan.scope.is_all() && pipeline.config().extractor != "llm" {
            match refdefs_change(pipeline, last).await? {
                // Triggers are no entries: an edit of them may change any report's reading.
                Some(Ok(change))
                    if change.old.file_hash(FileKind::Context)
                        != pipeline.defs().file_hash(FileKind::Context) =>
                {
                    plan.all("context.toml edited (negation and uncertainty triggers)")
                }
                Some(Ok(change)) => {
                    let studies = reports_mentioning(pipeline, &change.terms).await?;
                    let reason = format!(
                        "{}: {} mentioning them",
                        change.describe(),
                        studies.describe()
                    );
                    plan.add(&studies, reason);
                }
                Some(Err(reason)) => plan.all(reason),
                None => {}
            }
        }
        Ok(())
    }

    fn describe(&self, report: &StageReport) -> String {
        let mut line = format!(
            "extract ({}): {} reports in {:.1} s ({}): {} sentences, {} raw observations, {} \
             indications, {} failures",
            report.metric_text("extractor"),
            report.units.0,
            report.seconds,
            throughput(report.units.0, report.seconds),
            report.rows("sentences"),
            report.rows("observations_raw"),
            report.rows("indications"),
            report.metric("failures"),
        );
        if report.metrics.contains_key("llm_requested") {
            line.push_str(&crate::llm_calls::describe_llm(report));
        }
        line
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

/// The extract run's state: the LLM client (stats, refusal when too many answers are
/// unusable), the quarantined outputs and the chunk's studies with unusable answers.
struct ExtractHooks {
    extractor: String,
    client: Option<Arc<LlmClient>>,
    failures: u64,
    max_failure_share: f64,
    /// The studies the last run could not finish: asked again, their answers do not count
    /// toward the failure checks (a model that fails them again must not block the pipeline).
    retried: BTreeSet<String>,
    unfinished: BTreeSet<String>,
}

#[async_trait]
impl RunHooks for ExtractHooks {
    async fn after_statement(
        &mut self,
        _ctx: &SessionContext,
        statement: &Statement,
        batches: &[RecordBatch],
    ) -> Result<()> {
        if self.client.is_some() {
            let unusable = check_answers(
                &statement.name,
                batches,
                Some("r"),
                self.max_failure_share,
                &self.retried,
            )?;
            self.unfinished.extend(unusable);
        }
        if statement.name == "quarantine" {
            for batch in batches {
                let stages = cast(batch.column(0), &DataType::Utf8)
                    .map_err(|e| PipelineError::query("extract", e.into()))?;
                self.failures += stages
                    .as_string::<i32>()
                    .iter()
                    .filter(|s| *s == Some("extract"))
                    .count() as u64;
            }
        }
        Ok(())
    }

    fn unfinished(&mut self) -> BTreeSet<String> {
        std::mem::take(&mut self.unfinished)
    }

    /// Every LLM answer is checked; quarantined reports are counted.
    fn reads_rows(&self, statement: &Statement) -> bool {
        self.client.is_some() || statement.name == "quarantine"
    }

    async fn finish(&mut self, _pipeline: &Pipeline, _scope: &Scope) -> Result<Metrics> {
        let mut metrics = Metrics::from([
            ("extractor".to_string(), self.extractor.clone().into()),
            ("failures".to_string(), self.failures.into()),
        ]);
        if let Some(client) = &self.client {
            metrics.extend(llm_metrics(&client.stats()));
        }
        Ok(metrics)
    }
}

/// Studies whose report mentions one of `terms`.
async fn reports_mentioning(pipeline: &Pipeline, terms: &BTreeSet<String>) -> Result<Scope> {
    if terms.is_empty() {
        return Ok(Scope::none());
    }
    let ctx = pipeline.lake().session().await?;
    let batches = collect(&ctx, "extract", "SELECT study_id, text FROM reports").await?;
    let mut studies = BTreeSet::new();
    for batch in &batches {
        let ids = cast(batch.column(0), &DataType::Utf8)
            .map_err(|e| PipelineError::query("extract", e.into()))?;
        let texts = cast(batch.column(1), &DataType::Utf8)
            .map_err(|e| PipelineError::query("extract", e.into()))?;
        let (ids, texts) = (ids.as_string::<i32>(), texts.as_string::<i32>());
        for row in 0..batch.num_rows() {
            if texts.is_null(row) {
                continue;
            }
            let text = texts.value(row).to_lowercase();
            if terms.iter().any(|t| mentions(&text, t)) {
                studies.insert(ids.value(row).to_string());
            }
        }
    }
    Ok(Scope::Studies(studies))
}
