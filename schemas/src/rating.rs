//! The ordered quality rating of paper 000 (section D.3): `A++ > A+ > A > B > C > D > not rated`.
//!
//! Ratings are stored as plain UTF-8 text (`A++`, …, `not rated`) in a column whose Arrow field
//! carries the metadata `cxrlake.type = rating`. Inside cxrlake, the planner rule in
//! `cxrlake-udfs` makes comparisons, `BETWEEN`, `ORDER BY`, `MIN` and `MAX` on such columns follow
//! the rating order. Readers outside cxrlake use the numeric `rating_rank` column instead.

use std::fmt;
use std::str::FromStr;

use arrow::datatypes::{DataType, Field};

/// Field-metadata key that marks a column as holding [`Rating`] values.
pub const TYPE_METADATA_KEY: &str = "cxrlake.type";
/// Field-metadata value of [`TYPE_METADATA_KEY`] for rating columns.
pub const RATING_TYPE: &str = "rating";

/// One quality rating; the derived order is the rating order (`NotRated` lowest).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
)]
pub enum Rating {
    /// Quality could not be assessed (e.g. an unparseable judgement).
    #[serde(rename = "not rated")]
    NotRated,
    /// Incorrect content.
    D,
    /// Poor content.
    C,
    /// Good content (pre-training grade and better).
    B,
    /// Very good content (fine-tuning grade and better).
    A,
    /// Perfect and mostly complete content.
    #[serde(rename = "A+")]
    APlus,
    /// Perfect and complete content.
    #[serde(rename = "A++")]
    APlusPlus,
}

impl Rating {
    /// All ratings from worst to best.
    pub const ALL: [Rating; 7] = [
        Rating::NotRated,
        Rating::D,
        Rating::C,
        Rating::B,
        Rating::A,
        Rating::APlus,
        Rating::APlusPlus,
    ];

    /// The text form used in lake tables and JSON (`A++`, …, `not rated`).
    pub fn as_str(self) -> &'static str {
        match self {
            Rating::NotRated => "not rated",
            Rating::D => "D",
            Rating::C => "C",
            Rating::B => "B",
            Rating::A => "A",
            Rating::APlus => "A+",
            Rating::APlusPlus => "A++",
        }
    }

    /// Numeric rank: 0 = not rated, 1 = D, …, 6 = A++ (the `rating_rank` column).
    pub fn rank(self) -> i8 {
        self as i8
    }

    /// The rating of a rank, if the rank is in `0..=6`.
    pub fn from_rank(rank: i64) -> Option<Rating> {
        usize::try_from(rank)
            .ok()
            .and_then(|i| Rating::ALL.get(i).copied())
    }

    /// The release encoding `<rank>_<grade>` (`4_A`, `0_not rated`), which sorts correctly as text.
    pub fn release_code(self) -> String {
        format!("{}_{}", self.rank(), self.as_str())
    }

    /// A comma-separated list of the valid texts, best first, for error messages.
    pub fn valid_values() -> String {
        Rating::ALL
            .iter()
            .rev()
            .map(|r| format!("'{}'", r.as_str()))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

impl fmt::Display for Rating {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Error for text that is not one of the seven ratings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InvalidRating(pub String);

impl fmt::Display for InvalidRating {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "'{}' is not a rating; valid ratings are {}",
            self.0,
            Rating::valid_values()
        )
    }
}

impl std::error::Error for InvalidRating {}

impl FromStr for Rating {
    type Err = InvalidRating;

    /// Accepts the text form and the release code (`4_A`); surrounding spaces are ignored.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let t = s.trim();
        let grade = match t.split_once('_') {
            Some((rank, grade)) if rank.len() == 1 && rank.as_bytes()[0].is_ascii_digit() => grade,
            _ => t,
        };
        Rating::ALL
            .into_iter()
            .find(|r| r.as_str().eq_ignore_ascii_case(grade))
            .ok_or_else(|| InvalidRating(s.to_string()))
    }
}

/// A nullable UTF-8 field marked as a rating column.
pub fn rating_field(name: &str) -> Field {
    Field::new(name, DataType::Utf8, true).with_metadata(
        [(TYPE_METADATA_KEY.to_string(), RATING_TYPE.to_string())]
            .into_iter()
            .collect(),
    )
}

/// Whether an Arrow field is marked as a rating column.
pub fn is_rating_field(field: &Field) -> bool {
    field.metadata().get(TYPE_METADATA_KEY).map(String::as_str) == Some(RATING_TYPE)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn order_is_the_papers() {
        let mut shuffled = [
            Rating::B,
            Rating::APlusPlus,
            Rating::NotRated,
            Rating::A,
            Rating::D,
        ];
        shuffled.sort();
        assert_eq!(
            shuffled,
            [
                Rating::NotRated,
                Rating::D,
                Rating::B,
                Rating::A,
                Rating::APlusPlus
            ]
        );
        assert!(Rating::A > Rating::B, "A is better than B");
    }

    #[test]
    fn text_and_release_code_round_trip() {
        for r in Rating::ALL {
            assert_eq!(r.as_str().parse::<Rating>(), Ok(r));
            assert_eq!(r.release_code().parse::<Rating>(), Ok(r));
            assert_eq!(Rating::from_rank(i64::from(r.rank())), Some(r));
        }
        assert_eq!(Rating::APlus.release_code(), "5_A+");
    }

    #[test]
    fn invalid_text_lists_valid_values() {
        let err = "E".parse::<Rating>().expect_err("not a rating").to_string();
        assert!(
            err.contains("'A++', 'A+', 'A', 'B', 'C', 'D', 'not rated'"),
            "{err}"
        );
    }

    #[test]
    fn release_codes_sort_as_text() {
        let mut codes: Vec<String> = Rating::ALL.iter().rev().map(|r| r.release_code()).collect();
        codes.sort();
        let expected: Vec<String> = Rating::ALL.iter().map(|r| r.release_code()).collect();
        assert_eq!(codes, expected);
    }
}
