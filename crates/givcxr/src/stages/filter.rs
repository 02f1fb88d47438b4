//! The `givcxr_filter` stage (`crates/givcxr/sql/filter.sql`): `givcxr_dataset` (the exported pairs),
//! `givcxr_rejects` (every other pair with its reasons), `givcxr_review` (the judged pairs,
//! least confident verdict first), `givcxr_region_map` and `givcxr_prompt_versions` (paper 002,
//! supplement sections 2 and 3).

use std::collections::BTreeMap;

use crate::functions::{GivcxrChangelogFunc, GivcxrRegionMapFunc};
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
    name: "givcxr_filter",
    doc: "givcxr_dataset, givcxr_rejects, givcxr_review: hallucinated, linted, unjudged pairs out",
    sql: include_str!("../../sql/filter.sql"),
    file: "crates/givcxr/sql/filter.sql",
    inputs: &["givcxr_qa", "givcxr_verdicts"],
    side_inputs: &[],
    outputs: &[
        "givcxr_dataset",
        "givcxr_rejects",
        "givcxr_review",
        "givcxr_region_map",
        "givcxr_prompt_versions",
    ],
    settings: &["refdefs", "flavour_prompts"],
    chunking: Chunking::Whole,
    writes: Writes::Replace,
    coverage: Coverage::Dataset,
    detects_changes: false,
    reads_synonyms: false,
};

/// The `givcxr_filter` stage.
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
                "vocabulary".into(),
                super::vocabulary(pipeline)?.version().to_string(),
            ),
            ("refdefs".into(), pipeline.defs().fingerprint().to_string()),
            (
                "prompts".into(),
                super::prompts(pipeline)?.version().to_string(),
            ),
        ]))
    }

    async fn prepare(&self, pipeline: &Pipeline, _mode: RunMode) -> Result<Prepared> {
        let vocabulary = super::vocabulary(pipeline)?;
        let version = vocabulary.version().to_string();
        let map = super::region_map(pipeline, &vocabulary);
        let prompts = super::prompts(pipeline)?;
        Ok(Prepared::new(
            vec![
                ScalarUDF::from(GivcxrRegionMapFunc::new(map, &version)),
                ScalarUDF::from(GivcxrChangelogFunc::new(
                    prompts.changelog().to_vec(),
                    prompts.version(),
                )),
            ],
            vec![
                ("vocabulary", ScalarValue::from(version)),
                ("prompts", ScalarValue::from(prompts.version().to_string())),
            ],
        ))
    }

    fn describe(&self, report: &StageReport) -> String {
        let kept = report.rows("givcxr_dataset");
        let rejected = report.rows("givcxr_rejects");
        format!(
            "givcxr_filter: {kept} QA pairs kept, {rejected} rejected ({:.1} %) in {:.1} s",
            100.0 * rejected as f64 / (kept + rejected).max(1) as f64,
            report.seconds,
        )
    }
}
