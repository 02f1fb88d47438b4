//! The `rexvqa_generate` stage (`crates/rexvqa/sql/generate.sql`): `rexvqa_mcq`, four-option MCQs from
//! each study's bullets by the LLM, or offline from its scene graph and the reference
//! definitions, with the structural validators v1–v4, option-position balancing and the table
//! A2 normaliser (paper 003, appendix A).

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::generate::GenerateTask;
use async_trait::async_trait;
use cxrlake_schemas::rexvqa::mcq_fields;

use cxrlake_pipeline::Pipeline;
use cxrlake_pipeline::error::{PipelineError, Result};
use cxrlake_pipeline::generation::bind;
use cxrlake_pipeline::stage::{
    Chunking, Coverage, LlmRequests, Prepared, RunMode, Stage, StageDef, StageReport, Writes,
};

/// The stage's declaration.
pub static DEF: StageDef = StageDef {
    name: "rexvqa_generate",
    doc: "rexvqa_mcq: four-option MCQs per study with the structural validators v1-v4",
    sql: include_str!("../../sql/generate.sql"),
    inputs: &["rexvqa_bullets", "scene_graphs"],
    side_inputs: &["quarantine"],
    outputs: &["rexvqa_mcq", "quarantine"],
    settings: &[
        "refdefs",
        "seed",
        "generator",
        "llm_endpoint",
        "llm_model",
        "flavour_prompts",
        "rexvqa_min_explanation",
        "chunk_patients",
    ],
    chunking: Chunking::Patients { default: 2000 },
    writes: Writes::Replace,
    coverage: Coverage::PerStudy,
    detects_changes: true,
    reads_synonyms: false,
};

/// The `rexvqa_generate` stage.
#[derive(Debug)]
pub struct Generate;

fn task(pipeline: &Pipeline) -> Result<(Arc<GenerateTask>, String)> {
    let prompts = super::prompts(pipeline)?;
    let version = prompts.version().to_string();
    let config = pipeline.config();
    let task = GenerateTask::new(
        prompts,
        super::taxonomy(pipeline)?,
        Arc::new(super::catalog(pipeline.defs())),
        config.seed,
        config.rexvqa_min_explanation,
    )
    .map_err(|e| PipelineError::Config(format!("ReXVQA MCQs: {e}")))?;
    Ok((Arc::new(task), version))
}

#[async_trait]
impl Stage for Generate {
    fn def(&self) -> &'static StageDef {
        &DEF
    }

    /// One per report's bullet list.
    fn llm_requests(&self) -> Option<LlmRequests> {
        Some(LlmRequests {
            backend: "generator",
            rows: "SELECT study_id FROM reports",
        })
    }

    async fn definitions(&self, pipeline: &Pipeline) -> Result<BTreeMap<String, String>> {
        let (task, version) = task(pipeline)?;
        let mut definitions = super::definitions(pipeline, task.as_ref(), &version)?;
        definitions.insert("refdefs".into(), pipeline.defs().fingerprint().to_string());
        Ok(definitions)
    }

    async fn prepare(&self, pipeline: &Pipeline, _mode: RunMode) -> Result<Prepared> {
        let (task, version) = task(pipeline)?;
        let bound = bind(pipeline, task, mcq_fields(), &version, "generated").await?;
        Ok(bound.prepared(Vec::new()))
    }

    fn describe(&self, report: &StageReport) -> String {
        format!(
            "rexvqa_generate ({}): {} MCQs for {} studies in {:.1} s ({:.0} MCQs/s), {} rejected",
            report.metric_text("generator"),
            report.rows("rexvqa_mcq"),
            report.metric("inputs"),
            report.seconds,
            report.rows("rexvqa_mcq") as f64 / report.seconds.max(1e-9),
            report.metric("rejects"),
        ) + &cxrlake_pipeline::llm_calls::describe_llm(report)
    }
}
