//! The GIV-CXR flavour (paper 002) as five stages: `givcxr_context` (one region context per
//! frontal image and GIV-CXR region with facts), `givcxr_questions` (prompt P1),
//! `givcxr_answers` (prompt P2, with the derived fields), `givcxr_judge` (prompt P3, batched
//! per region context) and `givcxr_filter` (the export, the rejects, the review queue, the
//! region map and the prompts' changelog). The domain logic is crate `cxrlake-givcxr`; the
//! vocabularies are `refdefs/givcxr/vocabulary.toml`, the prompts `prompts/givcxr/`.

mod answers;
mod context;
mod filter;
mod judge;
mod questions;
pub mod reviews;

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::split::Split;
use crate::vocab::{FILE, RegionMap, Vocabulary};
use cxrlake_generate::PromptSet;

use cxrlake_pipeline::Pipeline;
use cxrlake_pipeline::error::{PipelineError, Result};
use cxrlake_pipeline::flavours::Flavour;
use cxrlake_pipeline::generation::flavour_prompts;
use cxrlake_pipeline::settings;
use cxrlake_pipeline::stage::Stage;

pub use context::Context;
pub use filter::Filter;

/// The flavour, as `cxrlake-flavours` registers it.
pub const FLAVOUR: Flavour = Flavour {
    name: "givcxr",
    doc: "GIV-CXR (paper 002): region contexts per frontal image over 36 anatomical regions, \
          region-specific questions and answers (prompts P1/P2 or offline), hallucination judge \
          (P3, reverse negation), rejects, review queue, patient-disjoint split",
    stages,
    check: check_settings,
    functions: Vec::new,
};

/// The flavour's stages, in run order.
pub fn stages() -> Vec<Arc<dyn Stage>> {
    vec![
        Arc::new(Context),
        Arc::new(questions::STAGE),
        Arc::new(answers::STAGE),
        Arc::new(judge::STAGE),
        Arc::new(Filter),
    ]
}

/// The vocabularies: `givcxr/vocabulary.toml` of the reference definitions folder
/// (`cxrlake.refdefs`) when it has one, else the embedded one.
fn vocabulary(pipeline: &Pipeline) -> Result<Arc<Vocabulary>> {
    let folder = settings::path(&pipeline.config().refdefs)
        .map(|dir| dir.join("givcxr"))
        .filter(|dir| dir.join(FILE).is_file());
    let vocabulary = match folder {
        Some(dir) => Vocabulary::load(&dir),
        None => Vocabulary::embedded(),
    }
    .map_err(|e| PipelineError::Definitions(e.to_string()))?;
    Ok(Arc::new(vocabulary))
}

/// cxrlake's regions (from the reference definitions) resolved onto the vocabulary's.
fn region_map(pipeline: &Pipeline, vocabulary: &Vocabulary) -> Arc<RegionMap> {
    let regions: Vec<(String, Option<String>)> = pipeline
        .defs()
        .regions()
        .map(|r| {
            (
                r.name.get_ref().clone(),
                r.parent.as_ref().map(|p| p.get_ref().clone()),
            )
        })
        .collect();
    Arc::new(RegionMap::new(vocabulary, &regions))
}

/// The prompts: `givcxr/` of `cxrlake.flavour_prompts` when set, else the embedded ones.
fn prompts(pipeline: &Pipeline) -> Result<Arc<PromptSet>> {
    flavour_prompts(pipeline, "givcxr", crate::prompts, "GIV-CXR")
}

/// `cxrlake.givcxr_split`.
pub(crate) fn split(pipeline: &Pipeline) -> Result<Split> {
    Split::parse(&pipeline.config().givcxr_split)
        .map_err(|e| PipelineError::setting("givcxr_split", format!("cxrlake.givcxr_split = {e}")))
}

/// `cxrlake.givcxr_bbox_small` and `givcxr_bbox_large`: shares of the image, small < large.
pub(crate) fn bbox_thresholds(pipeline: &Pipeline) -> Result<(f64, f64)> {
    let config = pipeline.config();
    let (small, large) = (config.givcxr_bbox_small, config.givcxr_bbox_large);
    if 0.0 < small && small < large && large <= 1.0 {
        Ok((small, large))
    } else {
        Err(PipelineError::setting(
            "givcxr_bbox_small",
            format!(
                "cxrlake.givcxr_bbox_small = {small} and givcxr_bbox_large = {large}: shares of the \
             image with 0 < small < large <= 1 (defaults 0.05 and 0.2)"
            ),
        ))
    }
}

/// Checks the flavour's settings before any work.
pub(crate) fn check_settings(pipeline: &Pipeline) -> Result<()> {
    split(pipeline)?;
    bbox_thresholds(pipeline)?;
    Ok(())
}

/// What the generation stages' fingerprints record: the vocabulary's version and the generator.
pub(crate) fn definitions(pipeline: &Pipeline) -> Result<BTreeMap<String, String>> {
    Ok(BTreeMap::from([(
        "vocabulary".into(),
        vocabulary(pipeline)?.version().to_string(),
    )]))
}
