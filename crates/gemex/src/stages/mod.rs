//! The GEMeX flavour (paper 004) as two stages: `gemex_reground` (stage I: each report sentence
//! re-grounded onto one of 30 regions) and `gemex_generate` (stage II: 11 grounded, explainable
//! questions per frontal image). The domain logic is crate `cxrlake-gemex`; the region table is
//! `refdefs/gemex/regions.toml`, the prompts `prompts/gemex/`.

mod generate;
mod reground;

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::regions::Regions;
use cxrlake_generate::PromptSet;

use cxrlake_pipeline::Pipeline;
use cxrlake_pipeline::error::{PipelineError, Result};
use cxrlake_pipeline::flavours::Flavour;
use cxrlake_pipeline::generation::flavour_prompts;
use cxrlake_pipeline::settings;
use cxrlake_pipeline::stage::Stage;

/// The flavour, as `cxrlake-flavours` registers it.
pub const FLAVOUR: Flavour = Flavour {
    name: "gemex",
    doc: "GEMeX (paper 004): report sentences re-grounded onto 30 regions, 11 grounded and \
          explainable QA pairs per frontal image",
    stages,
    check: |_| Ok(()),
    functions: Vec::new,
};

/// The flavour's stages, in run order.
pub fn stages() -> Vec<Arc<dyn Stage>> {
    vec![Arc::new(reground::STAGE), Arc::new(generate::STAGE)]
}

/// The region table: `gemex/regions.toml` of the reference definitions folder
/// (`cxrlake.refdefs`) when it has one, else the embedded one.
fn regions(pipeline: &Pipeline) -> Result<Arc<Regions>> {
    let folder = settings::path(&pipeline.config().refdefs)
        .map(|dir| dir.join("gemex"))
        .filter(|dir| dir.join("regions.toml").is_file());
    let regions = match folder {
        Some(dir) => Regions::load(&dir),
        None => Regions::embedded(),
    }
    .map_err(|e| PipelineError::Definitions(format!("GEMeX regions: {e}")))?;
    Ok(Arc::new(regions))
}

/// The prompts: `gemex/` of `cxrlake.flavour_prompts` when set, else the embedded ones.
fn prompts(pipeline: &Pipeline) -> Result<Arc<PromptSet>> {
    flavour_prompts(pipeline, "gemex", crate::prompts, "GEMeX")
}

/// What both stages' fingerprints record: the region table's version (the generator id is added by the stage).
pub(crate) fn definitions(pipeline: &Pipeline) -> Result<BTreeMap<String, String>> {
    Ok(BTreeMap::from([(
        "regions".into(),
        regions(pipeline)?.version().to_string(),
    )]))
}
