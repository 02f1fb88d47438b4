//! The quality aspects of paper 000, tables 11 and 12: every level of every aspect with its value
//! (the paper's "Value" column, used as the release's integer code) and its resulting rating.
//! The one place these tables are written down: grading, the exports' integer codes,
//! `quality_mappings.csv` and the validators all read them from here.

use crate::rating::Rating;

/// One quality level of an aspect.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Level {
    /// Level name as in the paper (`RESOLVED_REGIONS_ONLY`).
    pub name: &'static str,
    /// The paper's value (the release's integer code): `-3..=4`, larger is better; 9 for
    /// [`NOT_APPLICABLE`].
    pub value: i8,
    /// The rating this level results in.
    pub rating: Rating,
}

/// What a quality aspect rates.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// A scene-graph aspect (table 11), of observations or of the study.
    SceneGraph,
    /// A text aspect rated per answer part (table 12).
    AnswerPart,
    /// A text aspect rated per question (table 12).
    Question,
}

/// One quality aspect: its key in the lake and the release, its levels worst first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Aspect {
    /// Key in `obs_quality`, `study_quality`, `extraction_quality`, `answer_quality` or
    /// `question_quality` (`region_extract_quality`, `entailment`, …).
    pub key: &'static str,
    /// The paper's name of the aspect.
    pub title: &'static str,
    /// What it rates.
    pub scope: Scope,
    /// Levels, worst first (ascending value).
    pub levels: &'static [Level],
}

impl Aspect {
    /// The level named `name` (exact, upper case).
    pub fn level(&self, name: &str) -> Option<&'static Level> {
        self.levels.iter().find(|level| level.name == name)
    }

    /// The level whose value is `value`.
    pub fn level_of_value(&self, value: i64) -> Option<&'static Level> {
        self.levels
            .iter()
            .find(|level| i64::from(level.value) == value)
    }

    /// Level names, worst first.
    pub fn names(&self) -> impl Iterator<Item = &'static str> + '_ {
        self.levels.iter().map(|level| level.name)
    }
}

const fn level(name: &'static str, value: i8, rating: Rating) -> Level {
    Level {
        name,
        value,
        rating,
    }
}

use Rating::{A, APlus, APlusPlus, B, C, D};

/// The level of a scene-graph aspect that does not apply, written by the release exports (not
/// in the paper): extraction aspects of a question without observations, the localization of
/// a question on an image it localizes nothing on. Its value (9) is above every level and its
/// rating A++, so a reader that grades by the worst value or the worst mapped rating gets the
/// rating cxrlake stored (which ignores aspects that do not apply).
pub const NOT_APPLICABLE: &str = "NOT_APPLICABLE";

/// Region extraction (table 11, attribute `regions`).
pub const REGION_EXTRACT: Aspect = Aspect {
    key: "region_extract_quality",
    title: "Region extraction",
    scope: Scope::SceneGraph,
    levels: &[
        level("NO_REGIONS", 0, B),
        level("DEFAULT_REGIONS_ONLY", 1, B),
        level("CONTAINS_DEFAULT_REGIONS", 2, A),
        level("CONTAINS_NON_RESOLVED_REGIONS", 3, A),
        level("RESOLVED_REGIONS_ONLY", 4, APlusPlus),
        level(NOT_APPLICABLE, 9, APlusPlus),
    ],
};

/// Finding (entity) extraction (table 11, attribute `obs_entities`).
pub const ENTITY_EXTRACT: Aspect = Aspect {
    key: "entity_extract_quality",
    title: "Finding extraction",
    scope: Scope::SceneGraph,
    levels: &[
        level("NO_ENTITIES", 0, B),
        level("CONTAINS_NON_RESOLVED_ENTITIES", 1, A),
        level("RESOLVED_ENTITIES_ONLY", 2, APlusPlus),
        level(NOT_APPLICABLE, 9, APlusPlus),
    ],
};

/// Description (sentence/name) extraction (table 11, `summary_sentence` and `name`).
pub const SENTENCE_NAME: Aspect = Aspect {
    key: "sentence_name_quality",
    title: "Description extraction",
    scope: Scope::SceneGraph,
    levels: &[
        level("CHANGE_IN_SENTENCE_OR_NAME", 0, B),
        level("UNDERSCORES_IN_SENTENCE_OR_NAME", 1, A),
        level("NO_ISSUES", 2, APlusPlus),
        level(NOT_APPLICABLE, 9, APlusPlus),
    ],
};

/// Change extraction (table 11, `change_sentence` and `change`).
pub const CHANGE: Aspect = Aspect {
    key: "change_quality",
    title: "Change extraction",
    scope: Scope::SceneGraph,
    levels: &[
        level("CHANGE_SENTENCE_REMOVED", 0, B),
        level("UNDERSCORES_IN_CHANGE_SENTENCE", 1, A),
        level("CONTAINS_NON_RESOLVED_CHANGES", 2, A),
        level("NO_ISSUES", 3, APlusPlus),
        level(NOT_APPLICABLE, 9, APlusPlus),
    ],
};

/// Extraction and construction issues (table 11).
pub const GENERAL_ISSUE: Aspect = Aspect {
    key: "general_issue_level",
    title: "Extraction issues",
    scope: Scope::SceneGraph,
    levels: &[
        level("DISCARDED", -1, D),
        level("NON_INTERPRETABLE", 0, C),
        level("MOSTLY_INTERPRETABLE", 1, B),
        level("IGNORABLE", 2, A),
        level("FIXABLE", 3, APlus),
        level("NO_ISSUES", 4, APlusPlus),
        level(NOT_APPLICABLE, 9, APlusPlus),
    ],
};

/// Localization (table 11, attribute `localization`; per image).
pub const LOCALIZATION: Aspect = Aspect {
    key: "localization_quality",
    title: "Localization",
    scope: Scope::SceneGraph,
    levels: &[
        level("NO_LOCALIZATION", 0, B),
        level("FALLBACK_LOCALIZATION", 1, B),
        level("INCOMPLETE_LOCALIZATION", 2, A),
        level("BOX_LOCALIZATION", 3, APlusPlus),
        level("BOX_AND_MASK_LOCALIZATION", 4, APlusPlus),
        level(NOT_APPLICABLE, 9, APlusPlus),
    ],
};

/// Entailment (table 12; per answer part, given the question and the report).
pub const ENTAILMENT: Aspect = Aspect {
    key: "entailment",
    title: "Entailment",
    scope: Scope::AnswerPart,
    levels: &[
        level("NON_ALIGNED_CONTRADICTING", -3, D),
        level("NON_ALIGNED_MISLEADING", -2, C),
        level("NON_ALIGNED_NON_INFERRABLE", -1, B),
        level("ALIGNED_GENERAL_STATEMENT", 0, A),
        level("ALIGNED_NEGATIVE_NOT_MENTIONED", 1, APlus),
        level("ALIGNED_INFERRABLE", 2, APlusPlus),
        level("ALIGNED_MENTIONED", 3, APlusPlus),
    ],
};

/// Relevance (table 12; per answer part, given the question). Two levels rate differently for
/// `related_information` parts: see [`relevance_rating`].
pub const RELEVANCE: Aspect = Aspect {
    key: "relevance",
    title: "Relevance",
    scope: Scope::AnswerPart,
    levels: &[
        level("IRRELEVANT_INFO", -2, A),
        level("REDUNDANT_INFO", -1, A),
        level("RELATED_INFO", 0, APlus),
        level("RELEVANT_MAIN_ANSWER", 1, APlusPlus),
    ],
};

/// Completeness (table 12; the whole answer, given the question and the report).
pub const COMPLETENESS: Aspect = Aspect {
    key: "completeness",
    title: "Completeness",
    scope: Scope::Question,
    levels: &[
        level("INCOMPLETE_MISLEADING", -2, C),
        level("INCOMPLETE_NON_MISLEADING", -1, B),
        level("NOT_ANSWERED", 0, B),
        level("DETAILS_MISSING", 1, APlus),
        level("FULLY_COMPLETE", 2, APlusPlus),
    ],
};

/// Question clarity (table 12; the question alone).
pub const QUESTION_CLARITY: Aspect = Aspect {
    key: "question_clarity",
    title: "Question clarity",
    scope: Scope::Question,
    levels: &[
        level("UNANSWERABLE", -3, C),
        level("UNRELATED_TO_CHEST_XRAY", -2, B),
        level("UNCLEAR_QUESTION", -1, B),
        level("GRAMMATICAL_ERRORS", 0, A),
        level("UNUSUAL_SENTENCE_STRUCTURE", 1, A),
        level("OPTIMAL", 2, APlusPlus),
    ],
};

/// Answer clarity (table 12; per answer part, alone).
pub const ANSWER_CLARITY: Aspect = Aspect {
    key: "answer_clarity",
    title: "Answer clarity",
    scope: Scope::AnswerPart,
    levels: &[
        level("NOT_UNDERSTANDABLE", -2, C),
        level("UNCLEAR_ANSWER", -1, B),
        level("GRAMMATICAL_ERRORS", 0, A),
        level("UNUSUAL_SENTENCE_STRUCTURE", 1, A),
        level("OPTIMAL", 2, APlusPlus),
    ],
};

/// The five extraction aspects of table 11 (localization is per image: [`LOCALIZATION`]), in
/// the order of the `obs_quality` / `study_quality` / `extraction_quality` structs.
pub const EXTRACTION: [&Aspect; 5] = [
    &REGION_EXTRACT,
    &ENTITY_EXTRACT,
    &SENTENCE_NAME,
    &CHANGE,
    &GENERAL_ISSUE,
];

/// The six scene-graph aspects of table 11.
pub const SCENE_GRAPH: [&Aspect; 6] = [
    &REGION_EXTRACT,
    &ENTITY_EXTRACT,
    &SENTENCE_NAME,
    &CHANGE,
    &GENERAL_ISSUE,
    &LOCALIZATION,
];

/// The five text aspects of table 12, in the paper's order.
pub const TEXT: [&Aspect; 5] = [
    &ENTAILMENT,
    &RELEVANCE,
    &COMPLETENESS,
    &QUESTION_CLARITY,
    &ANSWER_CLARITY,
];

/// Every aspect of tables 11 and 12.
pub const ALL: [&Aspect; 11] = [
    &REGION_EXTRACT,
    &ENTITY_EXTRACT,
    &SENTENCE_NAME,
    &CHANGE,
    &GENERAL_ISSUE,
    &LOCALIZATION,
    &ENTAILMENT,
    &RELEVANCE,
    &COMPLETENESS,
    &QUESTION_CLARITY,
    &ANSWER_CLARITY,
];

/// The aspect with this key.
pub fn aspect(key: &str) -> Option<&'static Aspect> {
    ALL.into_iter().find(|aspect| aspect.key == key)
}

/// The rating of a relevance level for a part of `answer_type` (table 12): for
/// `related_information` parts, `RELATED_INFO` is A++ and `RELEVANT_MAIN_ANSWER` is A.
pub fn relevance_rating(level: &Level, answer_type: &str) -> Rating {
    match (level.name, answer_type) {
        ("RELATED_INFO", "related_information") => APlusPlus,
        ("RELEVANT_MAIN_ANSWER", "related_information") => A,
        _ => level.rating,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_ascend_and_keys_are_unique() {
        for aspect in ALL {
            let values: Vec<i8> = aspect.levels.iter().map(|l| l.value).collect();
            assert!(values.windows(2).all(|w| w[0] < w[1]), "{}", aspect.key);
            assert!(
                aspect.levels.windows(2).all(|w| w[0].rating <= w[1].rating),
                "{}: ratings must not fall as levels improve",
                aspect.key
            );
        }
        let mut keys: Vec<_> = ALL.iter().map(|a| a.key).collect();
        keys.sort_unstable();
        keys.dedup();
        assert_eq!(keys.len(), ALL.len());
    }

    #[test]
    fn tables_11_and_12_spot_checks() {
        assert_eq!(GENERAL_ISSUE.level("DISCARDED").map(|l| l.rating), Some(D));
        assert_eq!(GENERAL_ISSUE.level("FIXABLE").map(|l| l.value), Some(3));
        assert_eq!(
            ENTAILMENT.level_of_value(-3).map(|l| l.name),
            Some("NON_ALIGNED_CONTRADICTING")
        );
        assert_eq!(
            LOCALIZATION
                .level("FALLBACK_LOCALIZATION")
                .map(|l| l.rating),
            Some(B)
        );
        assert_eq!(aspect("answer_clarity"), Some(&ANSWER_CLARITY));
        let related = RELEVANCE.level("RELATED_INFO").expect("level");
        let main = RELEVANCE.level("RELEVANT_MAIN_ANSWER").expect("level");
        assert_eq!(relevance_rating(related, "details"), APlus);
        assert_eq!(relevance_rating(related, "related_information"), APlusPlus);
        assert_eq!(relevance_rating(main, "main_answer"), APlusPlus);
        assert_eq!(relevance_rating(main, "related_information"), A);
    }
}
