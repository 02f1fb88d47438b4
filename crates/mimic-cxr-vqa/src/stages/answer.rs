//! The `mimic_cxr_vqa_answer` stage (`crates/mimic-cxr-vqa/sql/answer.sql`): `mimic_cxr_vqa_qa`, one
//! answer per question by the prompt of appendices B and C, or offline from the scene graph,
//! with the echo check and the linter (paper 001, section 3.2).

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::answer::{AnswerTask, LintPolicy};
use async_trait::async_trait;
use cxrlake_schemas::mimic_cxr_vqa::answer_fields;
use datafusion::common::ScalarValue;

use cxrlake_pipeline::Pipeline;
use cxrlake_pipeline::error::{PipelineError, Result};
use cxrlake_pipeline::generation::bind;
use cxrlake_pipeline::stage::{
    Chunking, Coverage, LlmRequests, Prepared, RunMode, Stage, StageDef, StageReport, Writes,
};

/// The stage's declaration.
pub static DEF: StageDef = StageDef {
    name: "mimic_cxr_vqa_answer",
    doc: "mimic_cxr_vqa_qa: one answer per question, linted",
    sql: include_str!("../../sql/answer.sql"),
    inputs: &[
        "mimic_cxr_vqa_questions",
        "mimic_cxr_vqa_reports",
        "scene_graphs",
    ],
    side_inputs: &["quarantine"],
    outputs: &["mimic_cxr_vqa_qa", "quarantine"],
    settings: &[
        "templates",
        "generator",
        "llm_endpoint",
        "llm_model",
        "flavour_prompts",
        "vqa_lint",
        "chunk_patients",
    ],
    chunking: Chunking::Patients { default: 2000 },
    writes: Writes::Replace,
    coverage: Coverage::PerStudy,
    detects_changes: true,
    reads_synonyms: true,
};

/// The `mimic_cxr_vqa_answer` stage.
#[derive(Debug)]
pub struct Answer;

fn task(pipeline: &Pipeline) -> Result<(Arc<AnswerTask>, String, LintPolicy)> {
    let prompts = super::prompts(pipeline)?;
    let version = prompts.version().to_string();
    let policy = super::lint_policy(pipeline)?;
    let task = AnswerTask::new(prompts, super::bank(pipeline)?, policy)
        .map_err(|e| PipelineError::Config(format!("MIMIC-CXR-VQA answers: {e}")))?;
    Ok((Arc::new(task), version, policy))
}

#[async_trait]
impl Stage for Answer {
    fn def(&self) -> &'static StageDef {
        &DEF
    }

    /// One per question.
    fn llm_requests(&self) -> Option<LlmRequests> {
        Some(LlmRequests {
            backend: "generator",
            rows: "SELECT study_id FROM mimic_cxr_vqa_questions",
        })
    }

    async fn definitions(&self, pipeline: &Pipeline) -> Result<BTreeMap<String, String>> {
        let (task, version, _) = task(pipeline)?;
        super::definitions(pipeline, task.as_ref(), &version)
    }

    async fn prepare(&self, pipeline: &Pipeline, _mode: RunMode) -> Result<Prepared> {
        let (task, version, policy) = task(pipeline)?;
        let bound = bind(pipeline, task, answer_fields(), &version, "answered").await?;
        Ok(bound.prepared(vec![(
            "lint_drop",
            ScalarValue::from(policy == LintPolicy::Drop),
        )]))
    }

    fn describe(&self, report: &StageReport) -> String {
        format!(
            "mimic_cxr_vqa_answer ({}): {} answers to {} questions in {:.1} s ({:.0} answers/s), \
             {} rejected",
            report.metric_text("generator"),
            report.rows("mimic_cxr_vqa_qa"),
            report.metric("inputs"),
            report.seconds,
            report.rows("mimic_cxr_vqa_qa") as f64 / report.seconds.max(1e-9),
            report.metric("rejects"),
        ) + &cxrlake_pipeline::llm_calls::describe_llm(report)
    }
}
