//! The `rexvqa_judge` stage (`crates/rexvqa/sql/judge.sql`): `rexvqa_judgements`, the content
//! validators c1–c3 of every structurally valid MCQ, by the LLM or the offline heuristic that
//! reads the study's bullets (paper 003, appendix A).

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::judge::JudgeTask;
use async_trait::async_trait;
use cxrlake_schemas::rexvqa::content_fields;

use cxrlake_pipeline::Pipeline;
use cxrlake_pipeline::error::{PipelineError, Result};
use cxrlake_pipeline::generation::bind;
use cxrlake_pipeline::stage::{
    Chunking, Coverage, LlmRequests, Prepared, RunMode, Stage, StageDef, StageReport, Writes,
};

/// The stage's declaration.
pub static DEF: StageDef = StageDef {
    name: "rexvqa_judge",
    doc: "rexvqa_judgements: content validators c1-c3 of the structurally valid MCQs",
    sql: include_str!("../../sql/judge.sql"),
    inputs: &["rexvqa_mcq", "rexvqa_bullets"],
    side_inputs: &["quarantine"],
    outputs: &["rexvqa_judgements", "quarantine"],
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

/// The `rexvqa_judge` stage.
#[derive(Debug)]
pub struct Judge;

fn task(pipeline: &Pipeline) -> Result<(Arc<JudgeTask>, String)> {
    let prompts = super::prompts(pipeline)?;
    let version = prompts.version().to_string();
    let task =
        JudgeTask::new(prompts).map_err(|e| PipelineError::Config(format!("ReXVQA judge: {e}")))?;
    Ok((Arc::new(task), version))
}

#[async_trait]
impl Stage for Judge {
    fn def(&self) -> &'static StageDef {
        &DEF
    }

    /// One per MCQ.
    fn llm_requests(&self) -> Option<LlmRequests> {
        Some(LlmRequests {
            backend: "generator",
            rows: "SELECT study_id FROM rexvqa_mcq",
        })
    }

    async fn definitions(&self, pipeline: &Pipeline) -> Result<BTreeMap<String, String>> {
        let (task, version) = task(pipeline)?;
        super::definitions(pipeline, task.as_ref(), &version)
    }

    async fn prepare(&self, pipeline: &Pipeline, _mode: RunMode) -> Result<Prepared> {
        let (task, version) = task(pipeline)?;
        let bound = bind(pipeline, task, content_fields(), &version, "judged").await?;
        Ok(bound.prepared(Vec::new()))
    }

    fn describe(&self, report: &StageReport) -> String {
        format!(
            "rexvqa_judge ({}): {} MCQs judged in {:.1} s, {} rejected",
            report.metric_text("generator"),
            report.rows("rexvqa_judgements"),
            report.seconds,
            report.metric("rejects"),
        ) + &cxrlake_pipeline::llm_calls::describe_llm(report)
    }
}
