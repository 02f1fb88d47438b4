//! The `rexvqa_judge` stage (`crates/rexvqa/sql/judge.sql`): `rexvqa_judgements`, the content
//! validators c1–c3 of every structurally valid MCQ, by the LLM or the offline heuristic that
//! reads the study's bullets (paper 003, appendix A).

use std::sync::Arc;

use crate::judge::JudgeTask;
use cxrlake_schemas::rexvqa::content_fields;

use cxrlake_generate::GenerationTask;
use cxrlake_pipeline::Pipeline;
use cxrlake_pipeline::error::Result;
use cxrlake_pipeline::generation::{GenerationStage, no_extras, task_error};
use cxrlake_pipeline::stage::{GENERATION_SETTINGS, StageDef, StageReport};

/// The stage's declaration.
pub static DEF: StageDef = StageDef::generation(
    "rexvqa_judge",
    "rexvqa_judgements: content validators c1-c3 of the structurally valid MCQs",
    include_str!("../../sql/judge.sql"),
    "crates/rexvqa/sql/judge.sql",
    &["rexvqa_mcq", "rexvqa_bullets"],
    &["rexvqa_judgements", "quarantine"],
    GENERATION_SETTINGS,
);

/// The `rexvqa_judge` stage.
pub const STAGE: GenerationStage = GenerationStage {
    def: &DEF,
    task,
    record: content_fields,
    step: "judged",
    requests: "SELECT study_id FROM rexvqa_mcq",
    definitions: super::definitions,
    extras: no_extras,
    describe,
};

fn task(pipeline: &Pipeline) -> Result<Arc<dyn GenerationTask>> {
    let prompts = super::prompts(pipeline)?;
    let task = JudgeTask::new(prompts).map_err(task_error("ReXVQA judge"))?;
    Ok(Arc::new(task))
}

fn describe(report: &StageReport) -> String {
    format!(
        "rexvqa_judge ({}): {} MCQs judged in {:.1} s, {} rejected",
        report.metric_text("generator"),
        report.rows("rexvqa_judgements"),
        report.seconds,
        report.metric("rejects"),
    )
}
