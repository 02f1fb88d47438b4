//! The `localize` stage (`sql/localize.sql`): `region_boxes` from `images`, `cxas_masks` and
//! `imagenome_boxes`, one row per image × localized region of the reference definitions
//! (paper 000, E.1.1), with the recipes of crate `cxrlake-localize`.
//!
//! It runs chunk by chunk of patients (the inputs are views filtered to a `patient_id` range,
//! which Delta file statistics prune because ingest writes in patient order), so memory is
//! bounded by the chunk, not the lake: all of MIMIC's CXAS masks are ~100 GB of RLE.

use std::collections::BTreeMap;

use async_trait::async_trait;
use cxrlake_udfs::portable::Recipe;

use crate::error::Result;
use crate::pipeline::Pipeline;
use crate::stage::{
    Chunking, Coverage, Prepared, RunMode, Stage, StageDef, Writes, recipe_functions,
};

/// The stage's declaration.
pub static DEF: StageDef = StageDef {
    name: "localize",
    doc: "region_boxes: every localized region's boxes on every image",
    sql: include_str!("../../../sql/localize.sql"),
    file: "sql/localize.sql",
    inputs: &["images", "cxas_masks", "imagenome_boxes"],
    side_inputs: &[],
    outputs: &["region_boxes"],
    settings: &["refdefs", "min_area", "chunk_patients"],
    chunking: Chunking::Patients { default: 500 },
    writes: Writes::Replace,
    coverage: Coverage::PerStudy,
    detects_changes: true,
    reads_synonyms: false,
};

/// The `localize` stage.
#[derive(Debug)]
pub struct Localize;

#[async_trait]
impl Stage for Localize {
    fn def(&self) -> &'static StageDef {
        &DEF
    }

    async fn definitions(&self, pipeline: &Pipeline) -> Result<BTreeMap<String, String>> {
        Ok(BTreeMap::from([
            ("refdefs".into(), pipeline.defs().fingerprint().to_string()),
            ("min_area".into(), pipeline.config().min_area.to_string()),
        ]))
    }

    async fn prepare(&self, pipeline: &Pipeline, _mode: RunMode) -> Result<Prepared> {
        let recipe = Recipe::Localize {
            min_area: pipeline.config().min_area,
        };
        Ok(Prepared::new(
            recipe_functions("localize", recipe, pipeline.defs())?,
            Vec::new(),
        ))
    }
}
