//! The `gemex_generate` stage (`crates/gemex/sql/generate.sql`): `gemex_qa`, 11 grounded and
//! explainable questions per frontal image with at least three re-grounded sentences (paper
//! 004, stage II), offline from the sentences and the scene graph, or by the prompt of table 10.

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::functions::GemexRegionBoxesFunc;
use crate::generate::GenerateTask;
use async_trait::async_trait;
use cxrlake_schemas::gemex::qa_record_fields;
use datafusion::logical_expr::ScalarUDF;

use cxrlake_pipeline::Pipeline;
use cxrlake_pipeline::error::Result;
use cxrlake_pipeline::generation::bind;
use cxrlake_pipeline::stage::{
    Chunking, Coverage, LlmRequests, Prepared, RunMode, Stage, StageDef, StageReport, Writes,
};

/// The stage's declaration.
pub static DEF: StageDef = StageDef {
    name: "gemex_generate",
    doc: "gemex_qa: 11 grounded, explainable questions per frontal image",
    sql: include_str!("../../sql/generate.sql"),
    inputs: &[
        "gemex_sentences",
        "images",
        "imagenome_boxes",
        "scene_graphs",
    ],
    side_inputs: &["quarantine"],
    outputs: &["gemex_qa", "quarantine"],
    settings: &[
        "refdefs",
        "generator",
        "llm_endpoint",
        "llm_model",
        "flavour_prompts",
        "chunk_patients",
    ],
    chunking: Chunking::Patients { default: 2000 },
    writes: Writes::Replace,
    coverage: Coverage::PerStudy,
    detects_changes: true,
    reads_synonyms: true,
};

/// The `gemex_generate` stage.
#[derive(Debug)]
pub struct Generate;

fn task(pipeline: &Pipeline) -> Result<(Arc<GenerateTask>, String)> {
    let prompts = super::prompts(pipeline)?;
    let version = prompts.version().to_string();
    let task = GenerateTask::new(prompts, super::regions(pipeline)?).map_err(|e| {
        cxrlake_pipeline::error::PipelineError::Config(format!("GEMeX generation: {e}"))
    })?;
    Ok((Arc::new(task), version))
}

#[async_trait]
impl Stage for Generate {
    fn def(&self) -> &'static StageDef {
        &DEF
    }

    /// One per frontal image.
    fn llm_requests(&self) -> Option<LlmRequests> {
        Some(LlmRequests {
            backend: "generator",
            rows: "SELECT study_id FROM images WHERE is_frontal",
        })
    }

    async fn definitions(&self, pipeline: &Pipeline) -> Result<BTreeMap<String, String>> {
        let (task, version) = task(pipeline)?;
        super::definitions(pipeline, task.as_ref(), &version)
    }

    async fn prepare(&self, pipeline: &Pipeline, _mode: RunMode) -> Result<Prepared> {
        let (task, version) = task(pipeline)?;
        let boxes = ScalarUDF::from(GemexRegionBoxesFunc::new(super::regions(pipeline)?));
        let bound = bind(pipeline, task, qa_record_fields(), &version, "generated").await?;
        Ok(Prepared::new(vec![bound.function, boxes], Vec::new()).with_hooks(bound.hooks))
    }

    fn describe(&self, report: &StageReport) -> String {
        format!(
            "gemex_generate ({}): {} questions for {} frontal images in {:.1} s ({:.0} \
             questions/s), {} rejected",
            report.metric_text("generator"),
            report.rows("gemex_qa"),
            report.metric("inputs"),
            report.seconds,
            report.rows("gemex_qa") as f64 / report.seconds.max(1e-9),
            report.metric("rejects"),
        ) + &cxrlake_pipeline::llm_calls::describe_llm(report)
    }
}
