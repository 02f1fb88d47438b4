//! The `givcxr_answers` stage (`crates/givcxr/sql/answers.sql`): `givcxr_qa`, one answer per question
//! of every region context by prompt P2 (LLM, cached in `llm_calls`; an answer list of another
//! length is rejected, never shifted) or the offline generator, with the derived fields:
//! reasoning aspect, clinical finding, box size category, lengths, prompt version (paper 002,
//! supplement sections 3.2 and 7.1).

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::answers::AnswersTask;
use crate::functions::GivcxrDeriveFunc;
use async_trait::async_trait;
use cxrlake_schemas::givcxr::answer_fields;
use datafusion::common::ScalarValue;

use cxrlake_pipeline::Pipeline;
use cxrlake_pipeline::error::{PipelineError, Result};
use cxrlake_pipeline::generation::bind;
use cxrlake_pipeline::stage::{
    Chunking, Coverage, LlmRequests, Prepared, RunMode, Stage, StageDef, StageReport, Writes,
};

/// The stage's declaration.
pub static DEF: StageDef = StageDef {
    name: "givcxr_answers",
    doc: "givcxr_qa: one answer per question (prompt P2) with aspect, finding, box size, lengths",
    sql: include_str!("../../sql/answers.sql"),
    inputs: &["givcxr_questions", "givcxr_regions"],
    side_inputs: &["quarantine"],
    outputs: &["givcxr_qa", "quarantine"],
    settings: &[
        "refdefs",
        "generator",
        "llm_endpoint",
        "llm_model",
        "flavour_prompts",
        "givcxr_bbox_small",
        "givcxr_bbox_large",
        "chunk_patients",
    ],
    chunking: Chunking::Patients { default: 2000 },
    writes: Writes::Replace,
    coverage: Coverage::PerStudy,
    detects_changes: true,
    reads_synonyms: true,
};

/// The `givcxr_answers` stage.
#[derive(Debug)]
pub struct Answers;

fn task(pipeline: &Pipeline) -> Result<(Arc<AnswersTask>, String)> {
    let prompts = super::prompts(pipeline)?;
    let version = prompts.version().to_string();
    let task = AnswersTask::new(prompts)
        .map_err(|e| PipelineError::Config(format!("GIV-CXR answers: {e}")))?;
    Ok((Arc::new(task), version))
}

#[async_trait]
impl Stage for Answers {
    fn def(&self) -> &'static StageDef {
        &DEF
    }

    /// One per question.
    fn llm_requests(&self) -> Option<LlmRequests> {
        Some(LlmRequests {
            backend: "generator",
            rows: "SELECT study_id FROM givcxr_questions",
        })
    }

    async fn definitions(&self, pipeline: &Pipeline) -> Result<BTreeMap<String, String>> {
        let (task, version) = task(pipeline)?;
        super::definitions(pipeline, task.as_ref(), &version)
    }

    async fn prepare(&self, pipeline: &Pipeline, _mode: RunMode) -> Result<Prepared> {
        let (task, version) = task(pipeline)?;
        let (small, large) = super::bbox_thresholds(pipeline)?;
        let bound = bind(pipeline, task, answer_fields(), &version, "generated").await?;
        let derive = datafusion::logical_expr::ScalarUDF::from(GivcxrDeriveFunc::new(
            super::vocabulary(pipeline)?,
        ));
        let mut prepared = bound.prepared(vec![
            ("bbox_small", ScalarValue::from(small)),
            ("bbox_large", ScalarValue::from(large)),
        ]);
        prepared.functions.push(derive);
        Ok(prepared)
    }

    fn describe(&self, report: &StageReport) -> String {
        format!(
            "givcxr_answers ({}): {} QA pairs for {} region contexts in {:.1} s ({:.0} pairs/s), \
             {} rejected",
            report.metric_text("generator"),
            report.rows("givcxr_qa"),
            report.metric("inputs"),
            report.seconds,
            report.rows("givcxr_qa") as f64 / report.seconds.max(1e-9),
            report.metric("rejects"),
        ) + &cxrlake_pipeline::llm_calls::describe_llm(report)
    }
}
