//! Dataset flavours: the other seed datasets cxrlake builds over the same lake, each a named
//! set of stages (SQL under `sql/<flavour>/`, functions under `udfs/src/<flavour>/`, prompts
//! under `prompts/<flavour>/`, tables `<flavour>_*`) added to the pipeline graph when
//! `cxrlake.flavours` names it (`cxrlake run --flavour gemex`). A flavour's stages are stages
//! like the others: one runner, incremental, with their fingerprints.

use std::sync::Arc;

use cxrlake_lake::{Lake, Settings};

use crate::error::{PipelineError, Result};
use crate::stage::Stage;

/// One flavour.
#[derive(Debug, Clone, Copy)]
pub struct Flavour {
    /// Its name (`cxrlake.flavours`, table and stage prefix).
    pub name: &'static str,
    /// What it builds.
    pub doc: &'static str,
    /// Its stages, in run order (after the built-in ones).
    pub stages: fn() -> Vec<Arc<dyn Stage>>,
}

/// Every flavour cxrlake builds.
pub const FLAVOURS: &[Flavour] = &[
    Flavour {
        name: "gemex",
        doc: "GEMeX (paper 004): report sentences re-grounded onto 30 regions, 11 grounded and \
          explainable QA pairs per frontal image",
        stages: crate::gemex::stages,
    },
    Flavour {
        name: "mimic_cxr_vqa",
        doc: "MIMIC-CXR-VQA (paper 001, Aas-Alas et al.): the 90-question bank sampled per study \
          from its CheXpert labels, free-text answers from the report (paper prompt or offline), \
          linter, four-rubric judge on a QC sample of reports",
        stages: crate::mimic_cxr_vqa::stages,
    },
    Flavour {
        name: "rexvqa",
        doc: "ReXVQA (paper 003): each report as a bullet list, four-option MCQs with explanations \
          over five task types, structural (v1-v4) and content (c1-c3) validators, PHI check, \
          near-duplicate removal, balanced answer positions, stratified QC sample",
        stages: crate::rexvqa::stages,
    },
    Flavour {
        name: "givcxr",
        doc: "GIV-CXR (paper 002): region contexts per frontal image over 36 anatomical regions, \
          region-specific questions and answers (prompts P1/P2 or offline), hallucination judge \
          (P3, reverse negation), rejects, review queue, patient-disjoint split",
        stages: crate::givcxr::stages,
    },
];

/// The flavours `names` (comma separated) selects; an unknown name lists the flavours.
pub fn selected(names: &str) -> Result<Vec<&'static Flavour>> {
    let mut out: Vec<&'static Flavour> = Vec::new();
    for name in names.split(',').map(str::trim).filter(|n| !n.is_empty()) {
        let flavour = FLAVOURS.iter().find(|f| f.name == name).ok_or_else(|| {
            PipelineError::Config(format!(
                "unknown flavour '{name}'; the flavours are: {}",
                FLAVOURS
                    .iter()
                    .map(|f| f.name)
                    .collect::<Vec<_>>()
                    .join(", ")
            ))
        })?;
        if !out.iter().any(|f| f.name == name) {
            out.push(flavour);
        }
    }
    Ok(out)
}

/// Applies `--flavour` (`add`) and `--no-flavour` (`remove`) to the kept list
/// (`cxrlake.flavours`, the lake's stored one unless given): a flavour is added or removed, the
/// others stay. Unknown names list the flavours.
pub fn keep(settings: &mut Settings, add: &[String], remove: &[String]) -> Result<()> {
    if add.is_empty() && remove.is_empty() {
        return Ok(());
    }
    let mut kept: Vec<&str> = selected(&settings.cxrlake.flavours)?
        .iter()
        .map(|f| f.name)
        .collect();
    for flavour in selected(&add.join(","))? {
        if !kept.contains(&flavour.name) {
            kept.push(flavour.name);
        }
    }
    if remove.iter().any(|name| name.trim() == "all") {
        kept.clear();
    } else {
        let removed = selected(&remove.join(","))?;
        kept.retain(|name| !removed.iter().any(|f| f.name == *name));
    }
    // In FLAVOURS order, so that the same set is stored as the same text.
    let text = FLAVOURS
        .iter()
        .filter(|f| kept.contains(&f.name))
        .map(|f| f.name)
        .collect::<Vec<_>>()
        .join(",");
    settings.set("flavours", &text)?;
    Ok(())
}

/// Whether the lake holds a table that one of `flavour`'s stages wrote (its own first output).
pub async fn built(lake: &Lake, flavour: &Flavour) -> Result<bool> {
    for stage in (flavour.stages)() {
        if let Some(table) = stage.def().outputs.first() {
            let history = match lake.history(table, Some(2_000)).await {
                Ok(history) => history,
                Err(cxrlake_lake::LakeError::NoSuchTable { .. }) => continue,
                Err(e) => return Err(e.into()),
            };
            let name = stage.def().name;
            if history
                .iter()
                .any(|c| c.stage.as_ref().is_some_and(|s| s.stage == name))
            {
                return Ok(true);
            }
        }
    }
    Ok(false)
}

/// The flavour whose stages include `stage`, if any.
pub fn owning(stage: &str) -> Option<&'static Flavour> {
    FLAVOURS
        .iter()
        .find(|f| (f.stages)().iter().any(|s| s.def().name == stage))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flavours_are_selected_by_name() {
        let names: Vec<&str> = selected(" gemex, gemex ,")
            .expect("gemex")
            .iter()
            .map(|f| f.name)
            .collect();
        assert_eq!(names, ["gemex"]);
        assert!(selected("").expect("none").is_empty());
        let err = selected("gemex,vqa_rad").expect_err("unknown").to_string();
        assert!(
            err.contains("unknown flavour 'vqa_rad'") && err.contains("rexvqa"),
            "{err}"
        );
        assert_eq!(owning("gemex_generate").map(|f| f.name), Some("gemex"));
        assert!(owning("qa").is_none());
    }
}
