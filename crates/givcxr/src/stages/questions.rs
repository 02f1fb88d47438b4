//! The `givcxr_questions` stage (`crates/givcxr/sql/questions.sql`): `givcxr_questions`, the questions
//! of every region context by prompt P1 (LLM, cached in `llm_calls`) or the offline generator,
//! each with its guideline breaches (paper 002, supplement section 3.1).

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::questions::QuestionsTask;
use async_trait::async_trait;
use cxrlake_schemas::givcxr::question_fields;

use cxrlake_pipeline::Pipeline;
use cxrlake_pipeline::error::{PipelineError, Result};
use cxrlake_pipeline::generation::bind;
use cxrlake_pipeline::stage::{
    Chunking, Coverage, LlmRequests, Prepared, RunMode, Stage, StageDef, StageReport, Writes,
};

/// The stage's declaration.
pub static DEF: StageDef = StageDef {
    name: "givcxr_questions",
    doc: "givcxr_questions: questions per region context (prompt P1) with their guideline breaches",
    sql: include_str!("../../sql/questions.sql"),
    inputs: &["givcxr_regions"],
    side_inputs: &["quarantine"],
    outputs: &["givcxr_questions", "quarantine"],
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

/// The `givcxr_questions` stage.
#[derive(Debug)]
pub struct Questions;

fn task(pipeline: &Pipeline) -> Result<(Arc<QuestionsTask>, String)> {
    let prompts = super::prompts(pipeline)?;
    let version = prompts.version().to_string();
    let task = QuestionsTask::new(prompts)
        .map_err(|e| PipelineError::Config(format!("GIV-CXR questions: {e}")))?;
    Ok((Arc::new(task), version))
}

#[async_trait]
impl Stage for Questions {
    fn def(&self) -> &'static StageDef {
        &DEF
    }

    /// One per region context.
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
        let bound = bind(pipeline, task, question_fields(), &version, "generated").await?;
        Ok(bound.prepared(Vec::new()))
    }

    fn describe(&self, report: &StageReport) -> String {
        format!(
            "givcxr_questions ({}): {} questions for {} region contexts in {:.1} s, {} rejected",
            report.metric_text("generator"),
            report.rows("givcxr_questions"),
            report.metric("inputs"),
            report.seconds,
            report.metric("rejects"),
        ) + &cxrlake_pipeline::llm_calls::describe_llm(report)
    }
}
