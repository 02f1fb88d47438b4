//! The MIMIC-CXR-VQA flavour (paper 001) as three stages: `mimic_cxr_vqa_questions` (the
//! question bank sampled per study from its CheXpert labels and the Heart rule),
//! `mimic_cxr_vqa_answer` (the paper's answer prompt, or offline from the scene graph, with the
//! linter) and `mimic_cxr_vqa_judge` (four rubrics on a QC sample of reports). The domain logic
//! is crate `cxrlake-mimic-cxr-vqa`; the bank is `templates/mimic_cxr_vqa/questions.toml`, the
//! prompts `prompts/mimic_cxr_vqa/`.

mod answer;
mod judge;
mod questions;
pub mod ratings;

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::answer::LintPolicy;
pub use crate::bank::Bank;
use crate::bank::FILE;
use cxrlake_generate::PromptSet;

use cxrlake_pipeline::Pipeline;
use cxrlake_pipeline::error::{PipelineError, Result};
use cxrlake_pipeline::flavours::Flavour;
use cxrlake_pipeline::generation::flavour_prompts;
use cxrlake_pipeline::settings;
use cxrlake_pipeline::stage::Stage;
use datafusion::logical_expr::ScalarUDF;

pub use questions::Questions;

/// The flavour, as `cxrlake-flavours` registers it.
pub const FLAVOUR: Flavour = Flavour {
    name: "mimic_cxr_vqa",
    doc: "MIMIC-CXR-VQA (paper 001, Aas-Alas et al.): the 90-question bank sampled per study \
          from its CheXpert labels, free-text answers from the report (paper prompt or offline), \
          linter, four-rubric judge on a QC sample of reports",
    stages,
    check: |pipeline| lint_policy(pipeline).map(drop),
    functions: || {
        vec![ScalarUDF::from(
            crate::functions::MimicCxrVqaHeartFunc::new(),
        )]
    },
};

/// The flavour's stages, in run order.
pub fn stages() -> Vec<Arc<dyn Stage>> {
    vec![
        Arc::new(Questions),
        Arc::new(answer::STAGE),
        Arc::new(judge::STAGE),
    ]
}

/// The bank: `mimic_cxr_vqa/questions.toml` of the templates folder `templates`
/// (`cxrlake.templates`) when it has one, else the embedded one.
pub fn bank_in(templates: &str) -> Result<Bank> {
    let folder = settings::path(templates)
        .map(|dir| dir.join("mimic_cxr_vqa"))
        .filter(|dir| dir.join(FILE).is_file());
    match folder {
        Some(dir) => Bank::load(&dir),
        None => Bank::embedded(),
    }
    .map_err(|e| PipelineError::Definitions(e.to_string()))
}

/// The bank of the pipeline's templates folder.
pub(crate) fn bank(pipeline: &Pipeline) -> Result<Arc<Bank>> {
    Ok(Arc::new(bank_in(&pipeline.config().templates)?))
}

/// The prompts: `mimic_cxr_vqa/` of `cxrlake.flavour_prompts` when set, else the embedded ones.
fn prompts(pipeline: &Pipeline) -> Result<Arc<PromptSet>> {
    flavour_prompts(pipeline, "mimic_cxr_vqa", crate::prompts, "MIMIC-CXR-VQA")
}

/// `cxrlake.vqa_lint`.
pub(crate) fn lint_policy(pipeline: &Pipeline) -> Result<LintPolicy> {
    let name = pipeline.config().vqa_lint.as_str();
    LintPolicy::parse(name).ok_or_else(|| {
        PipelineError::setting(
            "vqa_lint",
            format!(
                "cxrlake.vqa_lint = '{name}': use flag (keep and count), regenerate (ask the LLM \
             again) or drop (quarantine)"
            ),
        )
    })
}

/// What the answer and judge stages' fingerprints record: the bank's version and the generator.
pub(crate) fn definitions(pipeline: &Pipeline) -> Result<BTreeMap<String, String>> {
    Ok(BTreeMap::from([(
        "bank".into(),
        bank(pipeline)?.version().to_string(),
    )]))
}
