//! The `givcxr_context` stage (`crates/givcxr/sql/context.sql`): `givcxr_regions`, one region context
//! per frontal image and GIV-CXR region with facts, from the scene graphs' observations and the
//! Chest ImaGenome boxes' attributes and phrases, with the region's box and the patient's split
//! (paper 002, supplement section 3.1). On a lake imported from the release (no `region_boxes`)
//! the boxes come from the scene graphs' region nodes.

use std::collections::BTreeMap;

use crate::functions::{
    GivcxrFindingFunc, GivcxrRegionFunc, GivcxrSplitFunc, GivcxrTextureFunc, Lookup,
};
use async_trait::async_trait;
use datafusion::common::ScalarValue;
use datafusion::logical_expr::ScalarUDF;

use cxrlake_pipeline::Pipeline;
use cxrlake_pipeline::error::Result;
use cxrlake_pipeline::sql::count;
use cxrlake_pipeline::stage::{
    Chunking, Coverage, Prepared, RunMode, Stage, StageDef, StageReport, Writes,
};

/// The stage's declaration.
pub static DEF: StageDef = StageDef {
    name: "givcxr_context",
    doc: "givcxr_regions: one region context per frontal image and GIV-CXR region with facts",
    sql: include_str!("../../sql/context.sql"),
    file: "crates/givcxr/sql/context.sql",
    inputs: &["scene_graphs", "images", "region_boxes", "imagenome_boxes"],
    side_inputs: &[],
    outputs: &["givcxr_regions"],
    settings: &["refdefs", "seed", "givcxr_split", "chunk_patients"],
    chunking: Chunking::Patients { default: 2000 },
    writes: Writes::Replace,
    coverage: Coverage::PerStudy,
    detects_changes: true,
    reads_synonyms: false,
};

/// The `givcxr_context` stage.
#[derive(Debug)]
pub struct Context;

#[async_trait]
impl Stage for Context {
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
        ]))
    }

    async fn prepare(&self, pipeline: &Pipeline, _mode: RunMode) -> Result<Prepared> {
        let vocabulary = super::vocabulary(pipeline)?;
        let version = vocabulary.version().to_string();
        let map = super::region_map(pipeline, &vocabulary);
        let normal = vocabulary.normal_findings().join("|");
        // A lake imported from the release has no region_boxes: the scene graphs' region nodes
        // carry the boxes.
        let ctx = pipeline.lake().session().await?;
        let graph_boxes = count(&ctx, DEF.name, "SELECT count(*) FROM region_boxes").await? == 0;
        Ok(Prepared::new(
            vec![
                ScalarUDF::from(GivcxrRegionFunc::new(map.clone(), &version, Lookup::Region)),
                ScalarUDF::from(GivcxrRegionFunc::new(map, &version, Lookup::SourceRank)),
                ScalarUDF::from(GivcxrFindingFunc::new(vocabulary.clone())),
                ScalarUDF::from(GivcxrTextureFunc::new(vocabulary)),
                ScalarUDF::from(GivcxrSplitFunc::new(
                    super::split(pipeline)?,
                    pipeline.config().seed,
                )),
            ],
            vec![
                ("normal_findings", ScalarValue::from(normal)),
                ("graph_boxes", ScalarValue::from(graph_boxes)),
            ],
        ))
    }

    fn describe(&self, report: &StageReport) -> String {
        format!(
            "givcxr_context: {} region contexts in {:.1} s",
            report.rows("givcxr_regions"),
            report.seconds,
        )
    }
}
