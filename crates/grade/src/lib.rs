//! Ratings from quality levels (paper 000, D.3): every level has a rating (tables 11 and 12);
//! a part's text rating is the worst of its entailment, relevance and answer clarity, the
//! question's text rating the worst of question clarity, completeness and its parts', and the
//! QA pair's rating the worst of that and the scene-graph aspects of its observations. A level
//! that is missing (no usable verdict) or unknown makes the result `not rated`.

use cxrlake_schemas::Rating;
use cxrlake_schemas::quality::{self, Aspect, relevance_rating};

/// The rating of level `name` of `aspect` (`not rated` when it is none of its levels).
pub fn level_rating(aspect: &Aspect, name: &str) -> Rating {
    aspect
        .level(name)
        .map_or(Rating::NotRated, |level| level.rating)
}

/// The text rating of one answer part of `answer_type` from its three per-part levels.
pub fn part_rating(
    answer_type: &str,
    entailment: Option<&str>,
    relevance: Option<&str>,
    answer_clarity: Option<&str>,
) -> Rating {
    let (Some(entailment), Some(relevance), Some(answer_clarity)) =
        (entailment, relevance, answer_clarity)
    else {
        return Rating::NotRated;
    };
    let relevance = quality::RELEVANCE
        .level(relevance)
        .map_or(Rating::NotRated, |level| {
            relevance_rating(level, answer_type)
        });
    level_rating(&quality::ENTAILMENT, entailment)
        .min(relevance)
        .min(level_rating(&quality::ANSWER_CLARITY, answer_clarity))
}

/// The question's text rating: question clarity, completeness and every part's text rating.
pub fn text_rating(
    question_clarity: Option<&str>,
    completeness: Option<&str>,
    parts: &[Rating],
) -> Rating {
    let (Some(clarity), Some(completeness)) = (question_clarity, completeness) else {
        return Rating::NotRated;
    };
    parts.iter().copied().fold(
        level_rating(&quality::QUESTION_CLARITY, clarity)
            .min(level_rating(&quality::COMPLETENESS, completeness)),
        Rating::min,
    )
}

/// The scene-graph rating: the five extraction levels (in [`quality::EXTRACTION`] order;
/// `None` where the question has no observation to rate) and the localization levels of the
/// images that count. `A++` when nothing is rated.
pub fn scene_graph_rating<'a>(
    extraction: [Option<&str>; 5],
    localization: impl IntoIterator<Item = &'a str>,
) -> Rating {
    let extraction = quality::EXTRACTION
        .iter()
        .zip(extraction)
        .filter_map(|(aspect, level)| level.map(|name| level_rating(aspect, name)));
    let localization = localization
        .into_iter()
        .map(|name| level_rating(&quality::LOCALIZATION, name));
    extraction
        .chain(localization)
        .fold(Rating::APlusPlus, Rating::min)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn part_ratings_take_the_worst_and_the_answer_type_rule() {
        assert_eq!(
            part_rating(
                "details",
                Some("ALIGNED_MENTIONED"),
                Some("RELEVANT_MAIN_ANSWER"),
                Some("OPTIMAL")
            ),
            Rating::APlusPlus
        );
        assert_eq!(
            part_rating(
                "related_information",
                Some("ALIGNED_MENTIONED"),
                Some("RELEVANT_MAIN_ANSWER"),
                Some("OPTIMAL")
            ),
            Rating::A
        );
        assert_eq!(
            part_rating(
                "related_information",
                Some("ALIGNED_NEGATIVE_NOT_MENTIONED"),
                Some("RELATED_INFO"),
                Some("OPTIMAL")
            ),
            Rating::APlus
        );
        assert_eq!(
            part_rating("details", Some("ALIGNED_MENTIONED"), None, Some("OPTIMAL")),
            Rating::NotRated
        );
        assert_eq!(
            part_rating(
                "details",
                Some("ALIGNED"),
                Some("RELATED_INFO"),
                Some("OPTIMAL")
            ),
            Rating::NotRated
        );
    }

    #[test]
    fn question_and_scene_graph_ratings() {
        assert_eq!(
            text_rating(
                Some("OPTIMAL"),
                Some("DETAILS_MISSING"),
                &[Rating::APlusPlus]
            ),
            Rating::APlus
        );
        assert_eq!(
            text_rating(Some("OPTIMAL"), None, &[Rating::APlusPlus]),
            Rating::NotRated
        );
        assert_eq!(
            text_rating(Some("OPTIMAL"), Some("FULLY_COMPLETE"), &[Rating::B]),
            Rating::B
        );
        let resolved = [
            Some("RESOLVED_REGIONS_ONLY"),
            Some("RESOLVED_ENTITIES_ONLY"),
            Some("NO_ISSUES"),
            Some("NO_ISSUES"),
            Some("NO_ISSUES"),
        ];
        assert_eq!(
            scene_graph_rating(resolved, ["BOX_AND_MASK_LOCALIZATION"]),
            Rating::APlusPlus
        );
        assert_eq!(
            scene_graph_rating(resolved, ["BOX_LOCALIZATION", "FALLBACK_LOCALIZATION"]),
            Rating::B
        );
        let mut defaults = resolved;
        defaults[0] = Some("CONTAINS_DEFAULT_REGIONS");
        defaults[4] = Some("FIXABLE");
        assert_eq!(scene_graph_rating(defaults, []), Rating::A);
        assert_eq!(scene_graph_rating([None; 5], []), Rating::APlusPlus);
        defaults[4] = Some("DISCARDED");
        assert_eq!(scene_graph_rating(defaults, []), Rating::D);
    }
}
