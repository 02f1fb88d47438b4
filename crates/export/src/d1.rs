//! The fields and enumerations of the paper's appendix D.1 (scene graph structure), copied from
//! its text. `validate_scene_graph` and the tests check exported files against these lists; the
//! quality levels of table 11 are data in [`cxrlake_schemas::quality`].
//!
//! D.1 lists the relation attributes but not the keys naming their endpoints; those follow the
//! lake's `scene_graphs` columns (`obs_id`/`region`, `parent_obs_id`/`child_obs_id`,
//! `obs_id`/`sent_id`, `region`/`related_region`). D.1's "l laterality" is a PDF artefact for
//! `laterality`.

/// Keys of the root node (the "Report Graph"), without cxrlake's provenance keys.
pub const ROOT: &[&str] = &[
    "patient_id",
    "study_id",
    "study_quality",
    "study_img_localization_quality",
    "sentences",
    "observations",
    "top_level_obs_ids",
    "regions",
    "indication",
    "located_at_relations",
    "obs_relations",
    "obs_sent_relations",
    "region_region_relations",
];

/// cxrlake's provenance keys, the only keys allowed beyond D.1 (at the root only).
pub const CXRLAKE_ROOT: &[&str] = &["extractor", "embedder"];

/// Keys of a sentence node.
pub const SENTENCE: &[&str] = &["sent_id", "section", "section_type", "sentence"];

/// Keys of an observation node (also `indication.answer_for_indication`, obs_id `OIND`).
pub const OBSERVATION: &[&str] = &[
    "obs_id",
    "summary_sentence",
    "name",
    "child_level",
    "child_type",
    "regions",
    "non_resolved_regions",
    "laterality",
    "default_regions",
    "obs_entities",
    "obs_entities_parents",
    "non_resolved_obs_entities",
    "obs_categories",
    "obs_subcategories",
    "probability",
    "certainty",
    "positiveness",
    "modifiers",
    "change_sentence",
    "changes",
    "from_report",
    "obs_quality",
    "localization",
];

/// Keys of one entry of an observation's `regions` and `non_resolved_regions`.
pub const REGION_REF: &[&str] = &["region", "distances"];

/// Keys of a region node.
pub const REGION: &[&str] = &[
    "region",
    "laterality",
    "localization",
    "region_localization_quality",
];

/// Keys of the indication node.
pub const INDICATION: &[&str] = &[
    "indication_summary",
    "patient_info",
    "indication",
    "evaluation",
    "associated_sentence_ids",
    "associated_obs_ids",
    "answer_for_indication",
];

/// Keys of one image's localization (the values of a node's `localization` dict).
pub const LOCALIZATION: &[&str] = &[
    "image_id",
    "bboxes",
    "localization_reference_ids",
    "missing_localization",
    "is_fallback",
    "localization_quality",
];

/// Keys of a `located_at_relations` entry (observation ↔ region).
pub const LOCATED_AT: &[&str] = &["obs_id", "region", "distances", "where_specified"];

/// Keys of an `obs_relations` entry (parent ↔ child observation).
pub const OBS_RELATION: &[&str] = &["parent_obs_id", "child_obs_id", "child_type"];

/// Keys of an `obs_sent_relations` entry (observation ↔ sentence).
pub const OBS_SENT: &[&str] = &["obs_id", "sent_id"];

/// Keys of a `region_region_relations` entry.
pub const REGION_REGION: &[&str] = &["region", "related_region", "relation_type"];

/// The five extraction-quality aspects of `study_quality` and `obs_quality` (table 11; the sixth,
/// localization, is per image).
pub const QUALITY: &[&str] = &[
    "region_extract_quality",
    "entity_extract_quality",
    "sentence_name_quality",
    "change_quality",
    "general_issue_level",
];

/// Keys of an observation's `modifiers` dict.
pub const MODIFIER_TYPES: &[&str] = &["severity", "texture", "spread", "temporal"];

/// Observation `laterality` values.
pub const OBSERVATION_LATERALITY: &[&str] =
    &["left", "right", "likely bilateral", "bilateral", "unknown"];

/// Region `laterality` values.
pub const REGION_LATERALITY: &[&str] = &["left", "right", "bilateral", "unknown"];

/// Observation `certainty` values.
pub const CERTAINTY: &[&str] = &[
    "certain",
    "likely",
    "uncertain",
    "comparison_only",
    "recommendation",
];

/// Observation `positiveness` values.
pub const POSITIVENESS: &[&str] = &["pos", "neg", "comparison_only", "recommendation"];

/// `child_type` values (observation nodes and `obs_relations`).
pub const CHILD_TYPE: &[&str] = &[
    "regional_distinction",
    "related_region",
    "associated_with",
    "device_part",
    "recommendation",
    "comparison_only",
];

/// `located_at_relations.where_specified` values.
pub const WHERE_SPECIFIED: &[&str] = &["direct", "bilateral", "sub_region"];

/// `region_region_relations.relation_type` values.
pub const RELATION_TYPE: &[&str] = &["sub_region", "bilateral", "left", "right"];

/// Sentence `section_type` values (D.1 gives examples; the full list is listing 1's).
pub const SECTION_TYPE: &[&str] = &[
    "EXAM_TECHNIQUE",
    "INDICATION",
    "FINDINGS",
    "IMPRESSION",
    "PRE_FINAL_REPORT",
    "IGNORE",
];

/// The obs_id of the indication's answer node.
pub const INDICATION_OBS_ID: &str = "OIND";

/// Whether `id` is a D.1 observation id: `OIND`, or `O` and two digits, then `.` and two digits
/// per hierarchy level (`O01`, `O01.02`).
pub fn is_obs_id(id: &str) -> bool {
    if id == INDICATION_OBS_ID {
        return true;
    }
    let Some(rest) = id.strip_prefix('O') else {
        return false;
    };
    rest.split('.')
        .all(|part| part.len() == 2 && part.bytes().all(|b| b.is_ascii_digit()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn obs_ids_follow_the_d1_pattern() {
        for id in ["O01", "O01.02", "O10.01.03", "OIND"] {
            assert!(is_obs_id(id), "{id}");
        }
        for id in [
            "", "O", "O1", "O001", "O01.", "O01.2", "o01", "O01,02", "OIND.01", "S01",
        ] {
            assert!(!is_obs_id(id), "{id}");
        }
    }

    #[test]
    fn quality_keys_are_the_extraction_aspects() {
        let aspects: Vec<_> = cxrlake_schemas::quality::EXTRACTION
            .iter()
            .map(|aspect| aspect.key)
            .collect();
        assert_eq!(aspects, QUALITY);
    }
}
