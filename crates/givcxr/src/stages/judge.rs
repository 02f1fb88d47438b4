//! The `givcxr_judge` stage (`crates/givcxr/sql/judge.sql`): `givcxr_verdicts`, the hallucination
//! verdict of every QA pair by prompt P3, one call per region context with all its pairs (LLM,
//! cached in `llm_calls`; a verdict array of another length is rejected, never shifted), or the
//! offline heuristic; reverse-negation questions are always flagged (paper 002, supplement
//! section 3.3).

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::judge::JudgeTask;
use async_trait::async_trait;
use cxrlake_schemas::givcxr::verdict_fields;

use cxrlake_pipeline::Pipeline;
use cxrlake_pipeline::error::{PipelineError, Result};
use cxrlake_pipeline::generation::bind;
use cxrlake_pipeline::stage::{
    Chunking, Coverage, LlmRequests, Prepared, RunMode, Stage, StageDef, StageReport, Writes,
};

/// The stage's declaration.
pub static DEF: StageDef = StageDef {
    name: "givcxr_judge",
    doc: "givcxr_verdicts: hallucination verdicts (prompt P3) batched per region context",
    sql: include_str!("../../sql/judge.sql"),
    inputs: &["givcxr_qa", "givcxr_regions"],
    side_inputs: &["quarantine"],
    outputs: &["givcxr_verdicts", "quarantine"],
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

/// The `givcxr_judge` stage.
#[derive(Debug)]
pub struct Judge;

fn task(pipeline: &Pipeline) -> Result<(Arc<JudgeTask>, String)> {
    let prompts = super::prompts(pipeline)?;
    let version = prompts.version().to_string();
    let task = JudgeTask::new(prompts, super::vocabulary(pipeline)?)
        .map_err(|e| PipelineError::Config(format!("GIV-CXR judge: {e}")))?;
    Ok((Arc::new(task), version))
}

#[async_trait]
impl Stage for Judge {
    fn def(&self) -> &'static StageDef {
        &DEF
    }

    /// At most one per region context (those with QA pairs).
    fn llm_requests(&self) -> Option<LlmRequests> {
        Some(LlmRequests {
            backend: "generator",
            rows: "SELECT study_id FROM givcxr_regions",
        })
    }

    async fn definitions(&self, pipeline: &Pipeline) -> Result<BTreeMap<String, String>> {
        let (task, version) = task(pipeline)?;
        super::definitions(pipeline, task.as_ref(), &version)
    }

    async fn prepare(&self, pipeline: &Pipeline, _mode: RunMode) -> Result<Prepared> {
        let (task, version) = task(pipeline)?;
        let bound = bind(pipeline, task, verdict_fields(), &version, "judged").await?;
        Ok(bound.prepared(Vec::new()))
    }

    fn describe(&self, report: &StageReport) -> String {
        format!(
            "givcxr_judge ({}): {} QA pairs of {} region contexts judged in {:.1} s, {} region \
             contexts rejected",
            report.metric_text("generator"),
            report.rows("givcxr_verdicts"),
            report.metric("inputs"),
            report.seconds,
            report.metric("rejects"),
        ) + &cxrlake_pipeline::llm_calls::describe_llm(report)
    }
}
