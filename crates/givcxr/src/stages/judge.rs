//! The `givcxr_judge` stage (`crates/givcxr/sql/judge.sql`): `givcxr_verdicts`, the hallucination
//! verdict of every QA pair by prompt P3, one call per region context with all its pairs (LLM,
//! cached in `llm_calls`; a verdict array of another length is rejected, never shifted), or the
//! offline heuristic; reverse-negation questions are always flagged (paper 002, supplement
//! section 3.3).

use std::sync::Arc;

use crate::judge::JudgeTask;
use cxrlake_schemas::givcxr::verdict_fields;

use cxrlake_generate::GenerationTask;
use cxrlake_pipeline::Pipeline;
use cxrlake_pipeline::error::Result;
use cxrlake_pipeline::generation::{GenerationStage, no_extras, task_error};
use cxrlake_pipeline::stage::{GENERATION_SETTINGS_AND_REFDEFS, StageDef, StageReport};

/// The stage's declaration.
pub static DEF: StageDef = StageDef::generation(
    "givcxr_judge",
    "givcxr_verdicts: hallucination verdicts (prompt P3) batched per region context",
    include_str!("../../sql/judge.sql"),
    "crates/givcxr/sql/judge.sql",
    &["givcxr_qa", "givcxr_regions"],
    &["givcxr_verdicts", "quarantine"],
    GENERATION_SETTINGS_AND_REFDEFS,
);

/// The `givcxr_judge` stage.
pub const STAGE: GenerationStage = GenerationStage {
    def: &DEF,
    task,
    record: verdict_fields,
    step: "judged",
    requests: "SELECT study_id FROM givcxr_regions",
    definitions: super::definitions,
    extras: no_extras,
    describe,
};

fn task(pipeline: &Pipeline) -> Result<Arc<dyn GenerationTask>> {
    let prompts = super::prompts(pipeline)?;
    let task = JudgeTask::new(prompts, super::vocabulary(pipeline)?)
        .map_err(task_error("GIV-CXR judge"))?;
    Ok(Arc::new(task))
}

fn describe(report: &StageReport) -> String {
    format!(
        "givcxr_judge ({}): {} QA pairs of {} region contexts judged in {:.1} s, {} region \
         contexts rejected",
        report.metric_text("generator"),
        report.rows("givcxr_verdicts"),
        report.metric("inputs"),
        report.seconds,
        report.metric("rejects"),
    )
}
