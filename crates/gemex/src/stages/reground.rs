//! The `gemex_reground` stage (`crates/gemex/sql/reground.sql`): `gemex_sentences`, each FINDINGS and
//! IMPRESSION sentence of a study on exactly one of GEMeX's 30 regions (paper 004, stage I),
//! from Chest ImaGenome's sentence-region links offline, or by the prompt of table 9.

use std::sync::Arc;

use crate::reground::RegroundTask;
use cxrlake_schemas::gemex::grounded_fields;

use cxrlake_generate::GenerationTask;
use cxrlake_pipeline::Pipeline;
use cxrlake_pipeline::error::Result;
use cxrlake_pipeline::generation::{GenerationStage, no_extras, task_error};
use cxrlake_pipeline::stage::{GENERATION_SETTINGS_AND_REFDEFS, StageDef, StageReport};

/// The stage's declaration.
pub static DEF: StageDef = StageDef::generation(
    "gemex_reground",
    "gemex_sentences: report sentences re-grounded onto one of GEMeX's 30 regions",
    include_str!("../../sql/reground.sql"),
    "crates/gemex/sql/reground.sql",
    &["sentences", "imagenome_boxes", "images"],
    &["gemex_sentences", "quarantine"],
    GENERATION_SETTINGS_AND_REFDEFS,
);

/// The `gemex_reground` stage.
pub const STAGE: GenerationStage = GenerationStage {
    def: &DEF,
    task,
    record: grounded_fields,
    step: "grounded",
    requests: "SELECT study_id FROM sentences WHERE section_type IN ('FINDINGS', 'IMPRESSION')",
    definitions: super::definitions,
    extras: no_extras,
    describe,
};

fn task(pipeline: &Pipeline) -> Result<Arc<dyn GenerationTask>> {
    let prompts = super::prompts(pipeline)?;
    let task = RegroundTask::new(prompts, super::regions(pipeline)?)
        .map_err(task_error("GEMeX re-grounding"))?;
    Ok(Arc::new(task))
}

fn describe(report: &StageReport) -> String {
    format!(
        "gemex_reground ({}): {} sentences → {} re-grounded sentences in {:.1} s, {} \
         rejected",
        report.metric_text("generator"),
        report.metric("inputs"),
        report.rows("gemex_sentences"),
        report.seconds,
        report.metric("rejects"),
    )
}
