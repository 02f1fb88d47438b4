//! The fields and enumerations of the paper's appendix D.2 (question–answer structure), copied
//! from its text, with the file shape of the release (`{patient_id, study_id, questions: [...]}`,
//! question keys in release order). `validate_qa` and the tests check exported files against
//! these lists; the QA text quality levels of table 12 are data in [`cxrlake_schemas::quality`].
//!
//! Where D.2 and the release differ from the lake, the lists follow the files:
//! - an answer part lists its children under `sub_answers` (the lake's flat `parent_answer_id`
//!   is not written);
//! - an answer part's `localization` is keyed by image id, so its values drop `image_id`;
//! - `extraction_quality` has a sixth key, `localization_quality`: the worst per-image level of
//!   the question (`question_img_localization_quality`) or of the answer part (its `localization`);
//! - `laterality` is spelled as in D.2 (`likely_bilateral`; the lake and D.1 write
//!   `likely bilateral`).

use crate::d1;

/// Keys of a `*.qa.json` file.
pub const FILE: &[&str] = &["patient_id", "study_id", "questions"];

/// Keys of a question (QA pair), in release order, without cxrlake's provenance keys.
pub const QUESTION: &[&str] = &[
    "question_id",
    "question_type",
    "question_strategy",
    "variables",
    "obs_ids",
    "contains_report_answers",
    "contains_template_answers",
    "extraction_quality",
    "question_img_localization_quality",
    "question",
    "answers",
    "question_quality",
];

/// cxrlake's provenance keys of a question, the only keys allowed beyond D.2 (optional).
pub const CXRLAKE_QUESTION: &[&str] = d1::CXRLAKE_ROOT;

/// Keys of an answer part.
pub const ANSWER: &[&str] = &[
    "answer_id",
    "answer_type",
    "answer_level",
    "text",
    "name_tag",
    "laterality",
    "regions",
    "obs_entities",
    "obs_entities_parents",
    "obs_categories",
    "obs_subcategories",
    "certainty",
    "positiveness",
    "modifiers",
    "localization",
    "from_report",
    "obs_ids",
    "extraction_quality",
    "answer_quality",
    "sub_answers",
];

/// Keys of one image's localization of an answer part (the values of its `localization` dict,
/// keyed by image id).
pub const LOCALIZATION: &[&str] = &[
    "bboxes",
    "localization_reference_ids",
    "missing_localization",
    "is_fallback",
    "localization_quality",
];

/// Keys of `extraction_quality` (question and answer part): table 11's five extraction aspects
/// and the worst localization level.
pub const EXTRACTION_QUALITY: &[&str] = &[
    "region_extract_quality",
    "entity_extract_quality",
    "sentence_name_quality",
    "change_quality",
    "general_issue_level",
    "localization_quality",
];

/// Keys of `question_quality` (table 12's aspects rated per question, and the QA pair's rating).
pub const QUESTION_QUALITY: &[&str] = &["question_clarity", "completeness", "rating"];

/// Keys of an answer part's `answer_quality` (table 12's aspects rated per part, and its rating).
pub const ANSWER_QUALITY: &[&str] = &["entailment", "relevance", "answer_clarity", "rating"];

/// `answer_type` values.
pub const ANSWER_TYPES: &[&str] = &["main_answer", "details", "related_information"];

/// The answer type every question has at least one part of.
pub const MAIN_ANSWER: &str = "main_answer";

/// `question_strategy` values (sections 3.2 and E.2.2).
pub const STRATEGIES: &[&str] = &["indication", "abnormal", "region_abnormal", "finding"];

/// Answer part `laterality` values.
pub const LATERALITY: &[&str] = &["left", "right", "likely_bilateral", "bilateral", "unknown"];

/// Answer part `certainty` values.
pub const CERTAINTY: &[&str] = d1::CERTAINTY;

/// Answer part `positiveness` values.
pub const POSITIVENESS: &[&str] = d1::POSITIVENESS;

/// Modifier types (the first element of each `[type, value]` pair of `modifiers`).
pub const MODIFIER_TYPES: &[&str] = d1::MODIFIER_TYPES;

/// Whether `question_id` is `<question_type>_<NNN>` (three digits, e.g.
/// `B09_describe_abnormal_subcat_006`).
pub fn is_question_id(question_id: &str, question_type: &str) -> bool {
    question_id
        .strip_prefix(question_type)
        .and_then(|rest| rest.strip_prefix('_'))
        .is_some_and(|n| n.len() == 3 && n.bytes().all(|b| b.is_ascii_digit()))
}

#[cfg(test)]
mod tests {
    use cxrlake_schemas::quality::Scope;

    use super::*;

    #[test]
    fn question_ids_are_the_type_and_three_digits() {
        assert!(is_question_id("D02_has_finding_001", "D02_has_finding"));
        assert!(is_question_id(
            "B09_describe_abnormal_subcat_006",
            "B09_describe_abnormal_subcat"
        ));
        for bad in [
            "D02_has_finding_01",
            "D02_has_finding_0001",
            "D02_has_finding001",
            "D02_has_finding_00a",
            "D03_has_finding_001",
            "",
        ] {
            assert!(!is_question_id(bad, "D02_has_finding"), "{bad}");
        }
    }

    #[test]
    fn quality_keys_are_table_12_aspects() {
        for key in QUESTION_QUALITY.iter().chain(ANSWER_QUALITY) {
            if *key != "rating" {
                let aspect = cxrlake_schemas::quality::aspect(key);
                assert!(
                    aspect.is_some_and(|a| a.scope != Scope::SceneGraph),
                    "{key}"
                );
            }
        }
    }
}
