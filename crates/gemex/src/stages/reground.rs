//! The `gemex_reground` stage (`crates/gemex/sql/reground.sql`): `gemex_sentences`, each FINDINGS and
//! IMPRESSION sentence of a study on exactly one of GEMeX's 30 regions (paper 004, stage I),
//! from Chest ImaGenome's sentence-region links offline, or by the prompt of table 9.

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::reground::RegroundTask;
use async_trait::async_trait;
use cxrlake_schemas::gemex::grounded_fields;

use cxrlake_pipeline::Pipeline;
use cxrlake_pipeline::error::Result;
use cxrlake_pipeline::generation::bind;
use cxrlake_pipeline::stage::{
    Chunking, Coverage, LlmRequests, Prepared, RunMode, Stage, StageDef, StageReport, Writes,
};

/// The stage's declaration.
pub static DEF: StageDef = StageDef {
    name: "gemex_reground",
    doc: "gemex_sentences: report sentences re-grounded onto one of GEMeX's 30 regions",
    sql: include_str!("../../sql/reground.sql"),
    inputs: &["sentences", "imagenome_boxes", "images"],
    side_inputs: &["quarantine"],
    outputs: &["gemex_sentences", "quarantine"],
    settings: &[
        "refdefs",
        "generator",
        "llm_endpoint",
        "llm_model",
        "flavour_prompts",
        "chunk_patients",
    ],
    chunking: Chunking::Patients { default: 2000 },
    writes: Writes::Replace,
    coverage: Coverage::PerStudy,
    detects_changes: true,
    reads_synonyms: true,
};

/// The `gemex_reground` stage.
#[derive(Debug)]
pub struct Reground;

fn task(pipeline: &Pipeline) -> Result<(Arc<RegroundTask>, String)> {
    let prompts = super::prompts(pipeline)?;
    let version = prompts.version().to_string();
    let task = RegroundTask::new(prompts, super::regions(pipeline)?).map_err(|e| {
        cxrlake_pipeline::error::PipelineError::Config(format!("GEMeX re-grounding: {e}"))
    })?;
    Ok((Arc::new(task), version))
}

#[async_trait]
impl Stage for Reground {
    fn def(&self) -> &'static StageDef {
        &DEF
    }

    /// One per FINDINGS or IMPRESSION sentence.
    fn llm_requests(&self) -> Option<LlmRequests> {
        Some(LlmRequests {
            backend: "generator",
            rows: "SELECT study_id FROM sentences WHERE section_type IN ('FINDINGS', 'IMPRESSION')",
        })
    }

    async fn definitions(&self, pipeline: &Pipeline) -> Result<BTreeMap<String, String>> {
        let (task, version) = task(pipeline)?;
        super::definitions(pipeline, task.as_ref(), &version)
    }

    async fn prepare(&self, pipeline: &Pipeline, _mode: RunMode) -> Result<Prepared> {
        let (task, version) = task(pipeline)?;
        let bound = bind(pipeline, task, grounded_fields(), &version, "grounded").await?;
        Ok(bound.prepared(Vec::new()))
    }

    fn describe(&self, report: &StageReport) -> String {
        format!(
            "gemex_reground ({}): {} sentences → {} re-grounded sentences in {:.1} s, {} \
             rejected",
            report.metric_text("generator"),
            report.metric("inputs"),
            report.rows("gemex_sentences"),
            report.seconds,
            report.metric("rejects"),
        ) + &cxrlake_pipeline::llm_calls::describe_llm(report)
    }
}
