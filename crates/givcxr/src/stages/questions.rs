//! The `givcxr_questions` stage (`crates/givcxr/sql/questions.sql`): `givcxr_questions`, the questions
//! of every region context by prompt P1 (LLM, cached in `llm_calls`) or the offline generator,
//! each with its guideline breaches (paper 002, supplement section 3.1).

use std::sync::Arc;

use crate::questions::QuestionsTask;
use cxrlake_schemas::givcxr::question_fields;

use cxrlake_generate::GenerationTask;
use cxrlake_pipeline::Pipeline;
use cxrlake_pipeline::error::Result;
use cxrlake_pipeline::generation::{GenerationStage, no_extras, task_error};
use cxrlake_pipeline::stage::{GENERATION_SETTINGS, StageDef, StageReport};

/// The stage's declaration.
pub static DEF: StageDef = StageDef::generation(
    "givcxr_questions",
    "givcxr_questions: questions per region context (prompt P1) with their guideline breaches",
    include_str!("../../sql/questions.sql"),
    "crates/givcxr/sql/questions.sql",
    &["givcxr_regions"],
    &["givcxr_questions", "quarantine"],
    GENERATION_SETTINGS,
);

/// The `givcxr_questions` stage.
pub const STAGE: GenerationStage = GenerationStage {
    def: &DEF,
    task,
    record: question_fields,
    step: "generated",
    requests: "SELECT study_id FROM givcxr_regions",
    definitions: super::definitions,
    extras: no_extras,
    describe,
};

fn task(pipeline: &Pipeline) -> Result<Arc<dyn GenerationTask>> {
    let prompts = super::prompts(pipeline)?;
    let task = QuestionsTask::new(prompts).map_err(task_error("GIV-CXR questions"))?;
    Ok(Arc::new(task))
}

fn describe(report: &StageReport) -> String {
    format!(
        "givcxr_questions ({}): {} questions for {} region contexts in {:.1} s, {} rejected",
        report.metric_text("generator"),
        report.rows("givcxr_questions"),
        report.metric("inputs"),
        report.seconds,
        report.metric("rejects"),
    )
}
