//! The `rexvqa_generate` stage (`crates/rexvqa/sql/generate.sql`): `rexvqa_mcq`, four-option MCQs from
//! each study's bullets by the LLM, or offline from its scene graph and the reference
//! definitions, with the structural validators v1–v4, option-position balancing and the table
//! A2 normaliser (paper 003, appendix A).

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::generate::GenerateTask;
use cxrlake_schemas::rexvqa::mcq_fields;

use cxrlake_generate::GenerationTask;
use cxrlake_pipeline::Pipeline;
use cxrlake_pipeline::error::Result;
use cxrlake_pipeline::generation::{GenerationStage, no_extras, task_error};
use cxrlake_pipeline::stage::{StageDef, StageReport};

/// The stage's declaration.
pub static DEF: StageDef = StageDef {
    reads_synonyms: false,
    ..StageDef::generation(
        "rexvqa_generate",
        "rexvqa_mcq: four-option MCQs per study with the structural validators v1-v4",
        include_str!("../../sql/generate.sql"),
        "crates/rexvqa/sql/generate.sql",
        &["rexvqa_bullets", "scene_graphs"],
        &["rexvqa_mcq", "quarantine"],
        &[
            "refdefs",
            "seed",
            "generator",
            "llm_endpoint",
            "llm_model",
            "flavour_prompts",
            "rexvqa_min_explanation",
            "chunk_patients",
        ],
    )
};

/// The `rexvqa_generate` stage.
pub const STAGE: GenerationStage = GenerationStage {
    def: &DEF,
    task,
    record: mcq_fields,
    step: "generated",
    requests: "SELECT study_id FROM reports",
    definitions: definitions,
    extras: no_extras,
    describe,
};

fn task(pipeline: &Pipeline) -> Result<Arc<dyn GenerationTask>> {
    let prompts = super::prompts(pipeline)?;
    let config = pipeline.config();
    let task = GenerateTask::new(
        prompts,
        super::taxonomy(pipeline)?,
        Arc::new(super::catalog(pipeline.defs())),
        config.seed,
        config.rexvqa_min_explanation,
    )
    .map_err(task_error("ReXVQA MCQs"))?;
    Ok(Arc::new(task))
}

/// The taxonomy's version and the reference definitions (the offline options' catalog).
fn definitions(pipeline: &Pipeline) -> Result<BTreeMap<String, String>> {
    let mut definitions = super::definitions(pipeline)?;
    definitions.insert("refdefs".into(), pipeline.defs().fingerprint().to_string());
    Ok(definitions)
}

fn describe(report: &StageReport) -> String {
    format!(
        "rexvqa_generate ({}): {} MCQs for {} studies in {:.1} s ({:.0} MCQs/s), {} rejected",
        report.metric_text("generator"),
        report.rows("rexvqa_mcq"),
        report.metric("inputs"),
        report.seconds,
        report.rows("rexvqa_mcq") as f64 / report.seconds.max(1e-9),
        report.metric("rejects"),
    )
}
