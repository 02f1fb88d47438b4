//! The `mimic_cxr_vqa_answer` stage (`crates/mimic-cxr-vqa/sql/answer.sql`): `mimic_cxr_vqa_qa`, one
//! answer per question by the prompt of appendices B and C, or offline from the scene graph,
//! with the echo check and the linter (paper 001, section 3.2).

use std::sync::Arc;

use crate::answer::{AnswerTask, LintPolicy};
use cxrlake_schemas::mimic_cxr_vqa::answer_fields;
use datafusion::common::ScalarValue;

use cxrlake_generate::GenerationTask;
use cxrlake_pipeline::Pipeline;
use cxrlake_pipeline::error::Result;
use cxrlake_pipeline::generation::{Extras, GenerationStage, task_error};
use cxrlake_pipeline::stage::{StageDef, StageReport};

/// The stage's declaration.
pub static DEF: StageDef = StageDef::generation(
    "mimic_cxr_vqa_answer",
    "mimic_cxr_vqa_qa: one answer per question, linted",
    include_str!("../../sql/answer.sql"),
    "crates/mimic-cxr-vqa/sql/answer.sql",
    &[
        "mimic_cxr_vqa_questions",
        "mimic_cxr_vqa_reports",
        "scene_graphs",
    ],
    &["mimic_cxr_vqa_qa", "quarantine"],
    &[
        "templates",
        "generator",
        "llm_endpoint",
        "llm_model",
        "flavour_prompts",
        "vqa_lint",
        "chunk_patients",
    ],
);

/// The `mimic_cxr_vqa_answer` stage.
pub const STAGE: GenerationStage = GenerationStage {
    def: &DEF,
    task,
    record: answer_fields,
    step: "answered",
    requests: "SELECT study_id FROM mimic_cxr_vqa_questions",
    definitions: super::definitions,
    extras: extras,
    describe,
};

fn task(pipeline: &Pipeline) -> Result<Arc<dyn GenerationTask>> {
    let prompts = super::prompts(pipeline)?;
    let task = AnswerTask::new(
        prompts,
        super::bank(pipeline)?,
        super::lint_policy(pipeline)?,
    )
    .map_err(task_error("MIMIC-CXR-VQA answers"))?;
    Ok(Arc::new(task))
}

/// Whether the linter drops an answer (`cxrlake.vqa_lint = drop`).
fn extras(pipeline: &Pipeline) -> Result<Extras> {
    let drop = super::lint_policy(pipeline)? == LintPolicy::Drop;
    Ok((Vec::new(), vec![("lint_drop", ScalarValue::from(drop))]))
}

fn describe(report: &StageReport) -> String {
    format!(
        "mimic_cxr_vqa_answer ({}): {} answers to {} questions in {:.1} s ({:.0} answers/s), \
         {} rejected",
        report.metric_text("generator"),
        report.rows("mimic_cxr_vqa_qa"),
        report.metric("inputs"),
        report.seconds,
        report.rows("mimic_cxr_vqa_qa") as f64 / report.seconds.max(1e-9),
        report.metric("rejects"),
    )
}
