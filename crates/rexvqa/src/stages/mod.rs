//! The ReXVQA flavour (paper 003) as four stages: `rexvqa_bullets` (each report as a structured
//! bullet list), `rexvqa_generate` (four-option MCQs from the bullets, with the structural
//! validators v1–v4 and option-position balancing), `rexvqa_judge` (the content validators
//! c1–c3) and `rexvqa_filter` (V(Q), the PHI check, near-duplicate removal, the stratified QC
//! sample). The domain logic is crate `cxrlake-rexvqa`; the taxonomy is
//! `refdefs/rexvqa/taxonomy.toml`, the prompts `prompts/rexvqa/`.

mod bullets;
mod filter;
mod generate;
mod judge;

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::offline::{Catalog, CatalogFinding, CatalogRegion};
use crate::taxonomy::{FILE, Taxonomy};
use cxrlake_generate::PromptSet;
use cxrlake_refdefs::RefDefs;

use cxrlake_pipeline::Pipeline;
use cxrlake_pipeline::error::{PipelineError, Result};
use cxrlake_pipeline::flavours::Flavour;
use cxrlake_pipeline::generation::flavour_prompts;
use cxrlake_pipeline::settings;
use cxrlake_pipeline::stage::Stage;
use datafusion::logical_expr::ScalarUDF;

pub use filter::Filter;

/// The flavour, as `cxrlake-flavours` registers it.
pub const FLAVOUR: Flavour = Flavour {
    name: "rexvqa",
    doc: "ReXVQA (paper 003): each report as a bullet list, four-option MCQs with explanations \
          over five task types, structural (v1-v4) and content (c1-c3) validators, PHI check, \
          near-duplicate removal, balanced answer positions, stratified QC sample",
    stages,
    check: |pipeline| duplicate_threshold(pipeline).map(drop),
    functions: || vec![ScalarUDF::from(crate::functions::RexvqaPhiFunc::new())],
};

/// The flavour's stages, in run order.
pub fn stages() -> Vec<Arc<dyn Stage>> {
    vec![
        Arc::new(bullets::STAGE),
        Arc::new(generate::STAGE),
        Arc::new(judge::STAGE),
        Arc::new(Filter),
    ]
}

/// The taxonomy: `rexvqa/taxonomy.toml` of the reference definitions folder (`cxrlake.refdefs`)
/// when it has one, else the embedded one.
fn taxonomy(pipeline: &Pipeline) -> Result<Arc<Taxonomy>> {
    let folder = settings::path(&pipeline.config().refdefs)
        .map(|dir| dir.join("rexvqa"))
        .filter(|dir| dir.join(FILE).is_file());
    let taxonomy = match folder {
        Some(dir) => Taxonomy::load(&dir),
        None => Taxonomy::embedded(),
    }
    .map_err(|e| PipelineError::Definitions(e.to_string()))?;
    Ok(Arc::new(taxonomy))
}

/// The prompts: `rexvqa/` of `cxrlake.flavour_prompts` when set, else the embedded ones.
fn prompts(pipeline: &Pipeline) -> Result<Arc<PromptSet>> {
    flavour_prompts(pipeline, "rexvqa", crate::prompts, "ReXVQA")
}

/// `cxrlake.rexvqa_duplicate_threshold`, a cosine similarity between 0 and 1.
pub(crate) fn duplicate_threshold(pipeline: &Pipeline) -> Result<f64> {
    let threshold = pipeline.config().rexvqa_duplicate_threshold;
    if (0.0..=1.0).contains(&threshold) {
        Ok(threshold)
    } else {
        Err(PipelineError::setting(
            "rexvqa_duplicate_threshold",
            format!(
                "cxrlake.rexvqa_duplicate_threshold = {threshold}: a cosine similarity between 0 and \
             1 (the paper uses 0.9)"
            ),
        ))
    }
}

/// What the offline generator draws options from: the findings and regions of `defs`.
pub fn catalog(defs: &RefDefs) -> Catalog {
    let names = |names: &[cxrlake_refdefs::model::Name]| -> Vec<String> {
        names.iter().map(|n| n.get_ref().clone()).collect()
    };
    let findings = defs
        .findings()
        .map(|f| {
            (
                f.name.get_ref().clone(),
                CatalogFinding {
                    category: f.category.get_ref().clone(),
                    subcategories: names(&f.subcategories),
                    parents: names(&f.parents),
                    indicative_of: names(&f.indicative_of),
                },
            )
        })
        .collect();
    let regions = defs
        .regions()
        .map(|r| {
            let laterality = r.laterality.get_ref().as_str().to_string();
            let counterpart = match laterality.as_str() {
                "left" => r.right.as_ref(),
                "right" => r.left.as_ref(),
                _ => None,
            };
            (
                r.name.get_ref().clone(),
                CatalogRegion {
                    laterality,
                    counterpart: counterpart.map(|n| n.get_ref().clone()),
                    parent: r.parent.as_ref().map(|n| n.get_ref().clone()),
                },
            )
        })
        .collect();
    Catalog { findings, regions }
}

/// What the generation stages' fingerprints record: the taxonomy's version and the generator.
pub(crate) fn definitions(pipeline: &Pipeline) -> Result<BTreeMap<String, String>> {
    Ok(BTreeMap::from([(
        "taxonomy".into(),
        taxonomy(pipeline)?.version().to_string(),
    )]))
}
