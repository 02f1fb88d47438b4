//! The `graph` stage (`sql/graph.sql`): `scene_graphs`, one nested row per study, from
//! `sentences`, `observations`, `indications`, `region_boxes` and `images` (paper 000, E.1.3
//! "Graph Construction", D.1), assembled by crate `cxrlake-graph`. Runs chunk by chunk of
//! patients, so memory is bounded by the chunk.

use std::collections::BTreeMap;

use async_trait::async_trait;
use cxrlake_udfs::portable::Recipe;
use datafusion::scalar::ScalarValue;

use crate::error::Result;
use crate::pipeline::Pipeline;
use crate::stage::{
    Chunking, Coverage, Prepared, RunMode, Stage, StageDef, Writes, recipe_functions,
};

/// The stage's declaration.
pub static DEF: StageDef = StageDef {
    name: "graph",
    doc: "scene_graphs: one nested scene graph per study",
    sql: include_str!("../../../sql/graph.sql"),
    file: "sql/graph.sql",
    inputs: &[
        "sentences",
        "observations",
        "indications",
        "region_boxes",
        "images",
    ],
    side_inputs: &[],
    outputs: &["scene_graphs"],
    settings: &["refdefs", "chunk_patients"],
    chunking: Chunking::Patients { default: 2000 },
    writes: Writes::Replace,
    coverage: Coverage::PerStudy,
    detects_changes: true,
    reads_synonyms: false,
};

/// The `graph` stage.
#[derive(Debug)]
pub struct Graph;

#[async_trait]
impl Stage for Graph {
    fn def(&self) -> &'static StageDef {
        &DEF
    }

    async fn definitions(&self, pipeline: &Pipeline) -> Result<BTreeMap<String, String>> {
        Ok(BTreeMap::from([(
            "refdefs".into(),
            pipeline.defs().fingerprint().to_string(),
        )]))
    }

    async fn prepare(&self, pipeline: &Pipeline, _mode: RunMode) -> Result<Prepared> {
        Ok(Prepared::new(
            recipe_functions("graph", Recipe::Graph, pipeline.defs())?,
            vec![("embedder", ScalarValue::from("none"))],
        ))
    }
}
