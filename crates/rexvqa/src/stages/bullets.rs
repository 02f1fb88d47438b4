//! The `rexvqa_bullets` stage (`crates/rexvqa/sql/bullets.sql`): `rexvqa_bullets`, each report as a
//! structured bullet list, by the LLM or offline from the report's statements (paper 003,
//! appendix A, generation layer).

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::bullets::BulletsTask;
use async_trait::async_trait;
use cxrlake_schemas::rexvqa::bullet_fields;

use cxrlake_pipeline::Pipeline;
use cxrlake_pipeline::error::{PipelineError, Result};
use cxrlake_pipeline::generation::{bind, generator_id};
use cxrlake_pipeline::stage::{
    Chunking, Coverage, LlmRequests, Prepared, RunMode, Stage, StageDef, StageReport, Writes,
};

/// The stage's declaration.
pub static DEF: StageDef = StageDef {
    name: "rexvqa_bullets",
    doc: "rexvqa_bullets: each report as a structured bullet list",
    sql: include_str!("../../sql/bullets.sql"),
    inputs: &["reports", "sentences", "images"],
    side_inputs: &["quarantine"],
    outputs: &["rexvqa_bullets", "quarantine"],
    settings: &[
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

/// The `rexvqa_bullets` stage.
#[derive(Debug)]
pub struct Bullets;

fn task(pipeline: &Pipeline) -> Result<(Arc<BulletsTask>, String)> {
    let prompts = super::prompts(pipeline)?;
    let version = prompts.version().to_string();
    let task = BulletsTask::new(prompts)
        .map_err(|e| PipelineError::Config(format!("ReXVQA bullets: {e}")))?;
    Ok((Arc::new(task), version))
}

#[async_trait]
impl Stage for Bullets {
    fn def(&self) -> &'static StageDef {
        &DEF
    }

    /// One per report.
    fn llm_requests(&self) -> Option<LlmRequests> {
        Some(LlmRequests {
            backend: "generator",
            rows: "SELECT study_id FROM reports",
        })
    }

    async fn definitions(&self, pipeline: &Pipeline) -> Result<BTreeMap<String, String>> {
        let (task, version) = task(pipeline)?;
        Ok(BTreeMap::from([(
            "generator".into(),
            generator_id(pipeline, task.as_ref(), &version)?,
        )]))
    }

    async fn prepare(&self, pipeline: &Pipeline, _mode: RunMode) -> Result<Prepared> {
        let (task, version) = task(pipeline)?;
        let bound = bind(pipeline, task, bullet_fields(), &version, "bulleted").await?;
        Ok(bound.prepared(Vec::new()))
    }

    fn describe(&self, report: &StageReport) -> String {
        format!(
            "rexvqa_bullets ({}): {} reports as bullet lists in {:.1} s, {} rejected",
            report.metric_text("generator"),
            report.rows("rexvqa_bullets"),
            report.seconds,
            report.metric("rejects"),
        ) + &cxrlake_pipeline::llm_calls::describe_llm(report)
    }
}
