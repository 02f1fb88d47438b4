//! The `gemex_generate` stage (`crates/gemex/sql/generate.sql`): `gemex_qa`, 11 grounded and
//! explainable questions per frontal image with at least three re-grounded sentences (paper
//! 004, stage II), offline from the sentences and the scene graph, or by the prompt of table 10.

use std::sync::Arc;

use crate::functions::GemexRegionBoxesFunc;
use crate::generate::GenerateTask;
use cxrlake_schemas::gemex::qa_record_fields;
use datafusion::logical_expr::ScalarUDF;

use cxrlake_generate::GenerationTask;
use cxrlake_pipeline::Pipeline;
use cxrlake_pipeline::error::Result;
use cxrlake_pipeline::generation::{Extras, GenerationStage, task_error};
use cxrlake_pipeline::stage::{GENERATION_SETTINGS_AND_REFDEFS, StageDef, StageReport};

/// The stage's declaration.
pub static DEF: StageDef = StageDef::generation(
    "gemex_generate",
    "gemex_qa: 11 grounded, explainable questions per frontal image",
    include_str!("../../sql/generate.sql"),
    "crates/gemex/sql/generate.sql",
    &[
        "gemex_sentences",
        "images",
        "imagenome_boxes",
        "scene_graphs",
    ],
    &["gemex_qa", "quarantine"],
    GENERATION_SETTINGS_AND_REFDEFS,
);

/// The `gemex_generate` stage.
pub const STAGE: GenerationStage = GenerationStage {
    def: &DEF,
    task,
    record: qa_record_fields,
    step: "generated",
    requests: "SELECT study_id FROM images WHERE is_frontal",
    definitions: super::definitions,
    extras: extras,
    describe,
};

fn task(pipeline: &Pipeline) -> Result<Arc<dyn GenerationTask>> {
    let prompts = super::prompts(pipeline)?;
    let task = GenerateTask::new(prompts, super::regions(pipeline)?)
        .map_err(task_error("GEMeX generation"))?;
    Ok(Arc::new(task))
}

/// `gemex_region_boxes`, over the region table.
fn extras(pipeline: &Pipeline) -> Result<Extras> {
    let boxes = ScalarUDF::from(GemexRegionBoxesFunc::new(super::regions(pipeline)?));
    Ok((vec![boxes], Vec::new()))
}

fn describe(report: &StageReport) -> String {
    format!(
        "gemex_generate ({}): {} questions for {} frontal images in {:.1} s ({:.0} \
         questions/s), {} rejected",
        report.metric_text("generator"),
        report.rows("gemex_qa"),
        report.metric("inputs"),
        report.seconds,
        report.rows("gemex_qa") as f64 / report.seconds.max(1e-9),
        report.metric("rejects"),
    )
}
