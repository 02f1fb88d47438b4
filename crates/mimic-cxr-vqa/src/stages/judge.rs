//! The `mimic_cxr_vqa_judge` stage (`crates/mimic-cxr-vqa/sql/judge.sql`): `mimic_cxr_vqa_judgements`,
//! the four rubrics of paper 001 table 3 for every QA pair of a seeded QC sample of reports, by
//! the LLM or the offline heuristic that reads the report.

use std::sync::Arc;

use crate::judge::JudgeTask;
use cxrlake_schemas::mimic_cxr_vqa::verdict_fields;
use datafusion::common::ScalarValue;

use cxrlake_generate::GenerationTask;
use cxrlake_pipeline::Pipeline;
use cxrlake_pipeline::error::Result;
use cxrlake_pipeline::generation::{Extras, GenerationStage, task_error};
use cxrlake_pipeline::stage::{Chunking, Coverage, StageDef, StageReport};

/// The stage's declaration.
pub static DEF: StageDef = StageDef {
    chunking: Chunking::Whole,
    coverage: Coverage::Dataset,
    detects_changes: false,
    ..StageDef::generation(
        "mimic_cxr_vqa_judge",
        "mimic_cxr_vqa_judgements: four-rubric verdicts on a QC sample of reports",
        include_str!("../../sql/judge.sql"),
        "crates/mimic-cxr-vqa/sql/judge.sql",
        &["mimic_cxr_vqa_qa", "mimic_cxr_vqa_reports"],
        &["mimic_cxr_vqa_judgements", "quarantine"],
        &[
            "templates",
            "seed",
            "generator",
            "llm_endpoint",
            "llm_model",
            "flavour_prompts",
            "vqa_qc_reports",
        ],
    )
};

/// The `mimic_cxr_vqa_judge` stage.
pub const STAGE: GenerationStage = GenerationStage {
    def: &DEF,
    task,
    record: verdict_fields,
    step: "judged",
    requests: "SELECT study_id FROM mimic_cxr_vqa_qa",
    definitions: super::definitions,
    extras: extras,
    describe,
};

fn task(pipeline: &Pipeline) -> Result<Arc<dyn GenerationTask>> {
    let prompts = super::prompts(pipeline)?;
    let task = JudgeTask::new(prompts, super::bank(pipeline)?)
        .map_err(task_error("MIMIC-CXR-VQA judge"))?;
    Ok(Arc::new(task))
}

/// The QC sample's seed and size.
fn extras(pipeline: &Pipeline) -> Result<Extras> {
    let config = pipeline.config();
    Ok((
        Vec::new(),
        vec![
            ("seed", ScalarValue::from(config.seed)),
            (
                "qc_reports",
                ScalarValue::from(config.vqa_qc_reports as u64),
            ),
        ],
    ))
}

fn describe(report: &StageReport) -> String {
    format!(
        "mimic_cxr_vqa_judge ({}): {} QA pairs of the QC sample judged in {:.1} s, {} \
         rejected",
        report.metric_text("generator"),
        report.rows("mimic_cxr_vqa_judgements"),
        report.seconds,
        report.metric("rejects"),
    )
}
