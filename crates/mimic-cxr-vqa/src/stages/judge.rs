//! The `mimic_cxr_vqa_judge` stage (`crates/mimic-cxr-vqa/sql/judge.sql`): `mimic_cxr_vqa_judgements`,
//! the four rubrics of paper 001 table 3 for every QA pair of a seeded QC sample of reports, by
//! the LLM or the offline heuristic that reads the report.

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::judge::JudgeTask;
use async_trait::async_trait;
use cxrlake_schemas::mimic_cxr_vqa::verdict_fields;
use datafusion::common::ScalarValue;

use cxrlake_pipeline::Pipeline;
use cxrlake_pipeline::error::{PipelineError, Result};
use cxrlake_pipeline::generation::bind;
use cxrlake_pipeline::stage::{
    Chunking, Coverage, LlmRequests, Prepared, RunMode, Stage, StageDef, StageReport, Writes,
};

/// The stage's declaration.
pub static DEF: StageDef = StageDef {
    name: "mimic_cxr_vqa_judge",
    doc: "mimic_cxr_vqa_judgements: four-rubric verdicts on a QC sample of reports",
    sql: include_str!("../../sql/judge.sql"),
    inputs: &["mimic_cxr_vqa_qa", "mimic_cxr_vqa_reports"],
    side_inputs: &["quarantine"],
    outputs: &["mimic_cxr_vqa_judgements", "quarantine"],
    settings: &[
        "templates",
        "seed",
        "generator",
        "llm_endpoint",
        "llm_model",
        "flavour_prompts",
        "vqa_qc_reports",
    ],
    chunking: Chunking::Whole,
    writes: Writes::Replace,
    coverage: Coverage::Dataset,
    detects_changes: false,
    reads_synonyms: true,
};

/// The `mimic_cxr_vqa_judge` stage.
#[derive(Debug)]
pub struct Judge;

fn task(pipeline: &Pipeline) -> Result<(Arc<JudgeTask>, String)> {
    let prompts = super::prompts(pipeline)?;
    let version = prompts.version().to_string();
    let task = JudgeTask::new(prompts, super::bank(pipeline)?)
        .map_err(|e| PipelineError::Config(format!("MIMIC-CXR-VQA judge: {e}")))?;
    Ok((Arc::new(task), version))
}

#[async_trait]
impl Stage for Judge {
    fn def(&self) -> &'static StageDef {
        &DEF
    }

    /// At most one per QA pair (those of the QC sample's reports).
    fn llm_requests(&self) -> Option<LlmRequests> {
        Some(LlmRequests {
            backend: "generator",
            rows: "SELECT study_id FROM mimic_cxr_vqa_qa",
        })
    }

    async fn definitions(&self, pipeline: &Pipeline) -> Result<BTreeMap<String, String>> {
        let (task, version) = task(pipeline)?;
        super::definitions(pipeline, task.as_ref(), &version)
    }

    async fn prepare(&self, pipeline: &Pipeline, _mode: RunMode) -> Result<Prepared> {
        let (task, version) = task(pipeline)?;
        let bound = bind(pipeline, task, verdict_fields(), &version, "judged").await?;
        let config = pipeline.config();
        Ok(bound.prepared(vec![
            ("seed", ScalarValue::from(config.seed)),
            (
                "qc_reports",
                ScalarValue::from(config.vqa_qc_reports as u64),
            ),
        ]))
    }

    fn describe(&self, report: &StageReport) -> String {
        format!(
            "mimic_cxr_vqa_judge ({}): {} QA pairs of the QC sample judged in {:.1} s, {} \
             rejected",
            report.metric_text("generator"),
            report.rows("mimic_cxr_vqa_judgements"),
            report.seconds,
            report.metric("rejects"),
        ) + &cxrlake_pipeline::llm_calls::describe_llm(report)
    }
}
