//! The `rexvqa_filter` stage (`crates/rexvqa/sql/filter.sql`): `rexvqa_questions`, every MCQ with
//! V(Q), the PHI check, the near-duplicate filter and the stratified QC sample, and
//! `rexvqa_taxonomy` (paper 003, appendix A).

use std::collections::BTreeMap;

use crate::functions::{RexvqaPhiFunc, RexvqaTaxonomyFunc};
use async_trait::async_trait;
use datafusion::common::ScalarValue;
use datafusion::logical_expr::ScalarUDF;

use cxrlake_pipeline::Pipeline;
use cxrlake_pipeline::error::Result;
use cxrlake_pipeline::stage::{
    Chunking, Coverage, Prepared, RunMode, Stage, StageDef, StageReport, Writes,
};

/// The stage's declaration.
pub static DEF: StageDef = StageDef {
    name: "rexvqa_filter",
    doc: "rexvqa_questions: V(Q), PHI, near-duplicate and QC-sample columns; kept = exported",
    sql: include_str!("../../sql/filter.sql"),
    file: "crates/rexvqa/sql/filter.sql",
    inputs: &["rexvqa_mcq", "rexvqa_judgements"],
    side_inputs: &[],
    outputs: &["rexvqa_questions", "rexvqa_taxonomy"],
    settings: &[
        "refdefs",
        "seed",
        "embedder",
        "onnx_model",
        "onnx_tokenizer",
        "rexvqa_duplicate_threshold",
        "rexvqa_qc_per_1000",
    ],
    chunking: Chunking::Whole,
    writes: Writes::Replace,
    coverage: Coverage::Dataset,
    detects_changes: false,
    reads_synonyms: true,
};

/// The `rexvqa_filter` stage.
#[derive(Debug)]
pub struct Filter;

#[async_trait]
impl Stage for Filter {
    fn def(&self) -> &'static StageDef {
        &DEF
    }

    async fn definitions(&self, pipeline: &Pipeline) -> Result<BTreeMap<String, String>> {
        Ok(BTreeMap::from([
            (
                "taxonomy".into(),
                super::taxonomy(pipeline)?.version().to_string(),
            ),
            ("embedder".into(), pipeline.embedder()?.id().to_string()),
        ]))
    }

    async fn prepare(&self, pipeline: &Pipeline, _mode: RunMode) -> Result<Prepared> {
        let taxonomy = super::taxonomy(pipeline)?;
        let version = taxonomy.version().to_string();
        let config = pipeline.config();
        let threshold = super::duplicate_threshold(pipeline)?;
        Ok(Prepared::new(
            vec![
                ScalarUDF::from(RexvqaTaxonomyFunc::new(taxonomy)),
                ScalarUDF::from(RexvqaPhiFunc::new()),
            ],
            vec![
                ("seed", ScalarValue::from(config.seed)),
                ("duplicate_threshold", ScalarValue::from(threshold)),
                (
                    "qc_per_1000",
                    ScalarValue::from(config.rexvqa_qc_per_1000.min(1000) as i64),
                ),
                ("taxonomy", ScalarValue::from(version)),
            ],
        ))
    }

    fn describe(&self, report: &StageReport) -> String {
        format!(
            "rexvqa_filter: {} MCQs checked in {:.1} s",
            report.rows("rexvqa_questions"),
            report.seconds,
        )
    }
}
