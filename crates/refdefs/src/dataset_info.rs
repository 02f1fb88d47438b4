//! The vocabularies as a `dataset_info.json` value: every possible tag value of the dataset.

use serde_json::{Value, json};

use crate::RefDefs;
use crate::load::FileKind;
use crate::model::{Certainty, Laterality, ModifierType, Positiveness};

/// Answer part types of the QA pairs (paper D.2, `answer_type`).
pub const ANSWER_TYPES: [&str; 3] = ["main_answer", "details", "related_information"];

/// Observation laterality values (paper D.1; `likely_bilateral` only occurs on observations).
pub const OBSERVATION_LATERALITIES: [&str; 5] =
    ["left", "right", "likely_bilateral", "bilateral", "unknown"];

pub(crate) fn dataset_info(defs: &RefDefs) -> Value {
    let regions: Vec<_> = defs.regions.regions.iter().map(|r| r.get_ref()).collect();
    let findings: Vec<_> = defs.findings.findings.iter().map(|f| f.get_ref()).collect();
    let names =
        |list: &[crate::model::Name]| list.iter().map(|n| n.get_ref().clone()).collect::<Vec<_>>();
    let mut modifiers = serde_json::Map::new();
    for t in ModifierType::ALL {
        let values: Vec<&str> = defs
            .modifiers
            .modifiers
            .iter()
            .map(|m| m.get_ref())
            .filter(|m| *m.modifier_type.get_ref() == t)
            .map(|m| m.name.get_ref().as_str())
            .collect();
        modifiers.insert(t.as_str().to_string(), json!(values));
    }
    let versions: serde_json::Map<String, Value> = FileKind::ALL
        .iter()
        .map(|f| (f.path().to_string(), json!(defs.version(*f))))
        .collect();
    json!({
        "refdefs_fingerprint": defs.fingerprint(),
        "refdefs_versions": versions,
        "region_names": regions.iter().map(|r| r.name.get_ref()).collect::<Vec<_>>(),
        "localized_region_names": regions.iter().filter(|r| r.is_localized()).map(|r| r.name.get_ref()).collect::<Vec<_>>(),
        "region_lateralities": Laterality::ALL.map(Laterality::as_str),
        "observation_lateralities": OBSERVATION_LATERALITIES,
        "finding_entities": findings.iter().map(|f| f.name.get_ref()).collect::<Vec<_>>(),
        "finding_categories": names(&defs.findings.categories),
        "finding_subcategories": names(&defs.findings.subcategories),
        "modifier_types": ModifierType::ALL.map(ModifierType::as_str),
        "modifiers": modifiers,
        "probabilities": defs.modifiers.probabilities.iter().map(|p| p.get_ref().name.get_ref()).collect::<Vec<_>>(),
        "certainties": Certainty::ALL.map(Certainty::as_str),
        "positiveness": Positiveness::ALL.map(Positiveness::as_str),
        "changes": defs.changes.changes.iter().map(|c| c.get_ref().name.get_ref()).collect::<Vec<_>>(),
        "answer_types": ANSWER_TYPES,
    })
}
