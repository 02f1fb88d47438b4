//! The `rexvqa_bullets` stage (`crates/rexvqa/sql/bullets.sql`): `rexvqa_bullets`, each report as a
//! structured bullet list, by the LLM or offline from the report's statements (paper 003,
//! appendix A, generation layer).

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::bullets::BulletsTask;
use cxrlake_schemas::rexvqa::bullet_fields;

use cxrlake_generate::GenerationTask;
use cxrlake_pipeline::Pipeline;
use cxrlake_pipeline::error::Result;
use cxrlake_pipeline::generation::{GenerationStage, no_extras, task_error};
use cxrlake_pipeline::stage::{GENERATION_SETTINGS, StageDef, StageReport};

/// The stage's declaration.
pub static DEF: StageDef = StageDef::generation(
    "rexvqa_bullets",
    "rexvqa_bullets: each report as a structured bullet list",
    include_str!("../../sql/bullets.sql"),
    "crates/rexvqa/sql/bullets.sql",
    &["reports", "sentences", "images"],
    &["rexvqa_bullets", "quarantine"],
    GENERATION_SETTINGS,
);

/// The `rexvqa_bullets` stage.
pub const STAGE: GenerationStage = GenerationStage {
    def: &DEF,
    task,
    record: bullet_fields,
    step: "bulleted",
    requests: "SELECT study_id FROM reports",
    definitions: |_| Ok(BTreeMap::new()),
    extras: no_extras,
    describe,
};

fn task(pipeline: &Pipeline) -> Result<Arc<dyn GenerationTask>> {
    let prompts = super::prompts(pipeline)?;
    let task = BulletsTask::new(prompts).map_err(task_error("ReXVQA bullets"))?;
    Ok(Arc::new(task))
}

fn describe(report: &StageReport) -> String {
    format!(
        "rexvqa_bullets ({}): {} reports as bullet lists in {:.1} s, {} rejected",
        report.metric_text("generator"),
        report.rows("rexvqa_bullets"),
        report.seconds,
        report.metric("rejects"),
    )
}
