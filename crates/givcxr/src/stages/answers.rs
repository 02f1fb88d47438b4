//! The `givcxr_answers` stage (`crates/givcxr/sql/answers.sql`): `givcxr_qa`, one answer per question
//! of every region context by prompt P2 (LLM, cached in `llm_calls`; an answer list of another
//! length is rejected, never shifted) or the offline generator, with the derived fields:
//! reasoning aspect, clinical finding, box size category, lengths, prompt version (paper 002,
//! supplement sections 3.2 and 7.1).

use std::sync::Arc;

use crate::answers::AnswersTask;
use crate::functions::GivcxrDeriveFunc;
use cxrlake_schemas::givcxr::answer_fields;
use datafusion::common::ScalarValue;
use datafusion::logical_expr::ScalarUDF;

use cxrlake_generate::GenerationTask;
use cxrlake_pipeline::Pipeline;
use cxrlake_pipeline::error::Result;
use cxrlake_pipeline::generation::{Extras, GenerationStage, task_error};
use cxrlake_pipeline::stage::{StageDef, StageReport};

/// The stage's declaration.
pub static DEF: StageDef = StageDef::generation(
    "givcxr_answers",
    "givcxr_qa: one answer per question (prompt P2) with aspect, finding, box size, lengths",
    include_str!("../../sql/answers.sql"),
    "crates/givcxr/sql/answers.sql",
    &["givcxr_questions", "givcxr_regions"],
    &["givcxr_qa", "quarantine"],
    &[
        "refdefs",
        "generator",
        "llm_endpoint",
        "llm_model",
        "flavour_prompts",
        "givcxr_bbox_small",
        "givcxr_bbox_large",
        "chunk_patients",
    ],
);

/// The `givcxr_answers` stage.
pub const STAGE: GenerationStage = GenerationStage {
    def: &DEF,
    task,
    record: answer_fields,
    step: "generated",
    requests: "SELECT study_id FROM givcxr_questions",
    definitions: super::definitions,
    extras: extras,
    describe,
};

fn task(pipeline: &Pipeline) -> Result<Arc<dyn GenerationTask>> {
    let prompts = super::prompts(pipeline)?;
    let task = AnswersTask::new(prompts).map_err(task_error("GIV-CXR answers"))?;
    Ok(Arc::new(task))
}

/// `givcxr_derive` over the vocabulary, and the box size thresholds.
fn extras(pipeline: &Pipeline) -> Result<Extras> {
    let (small, large) = super::bbox_thresholds(pipeline)?;
    let derive = ScalarUDF::from(GivcxrDeriveFunc::new(super::vocabulary(pipeline)?));
    Ok((
        vec![derive],
        vec![
            ("bbox_small", ScalarValue::from(small)),
            ("bbox_large", ScalarValue::from(large)),
        ],
    ))
}

fn describe(report: &StageReport) -> String {
    format!(
        "givcxr_answers ({}): {} QA pairs for {} region contexts in {:.1} s ({:.0} pairs/s), \
         {} rejected",
        report.metric_text("generator"),
        report.rows("givcxr_qa"),
        report.metric("inputs"),
        report.seconds,
        report.rows("givcxr_qa") as f64 / report.seconds.max(1e-9),
        report.metric("rejects"),
    )
}
