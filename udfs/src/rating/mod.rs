//! The ordered `rating` type in SQL: `to_rating`, `rating_rank`, `release_rating`, `rating_min`/`rating_max`, and the rule that
//! makes comparisons, `BETWEEN`, `ORDER BY`, `MIN` and `MAX` on rating columns follow the order
//! `A++ > A+ > A > B > C > D > not rated`.

mod order_rule;
mod rating_extremum;
mod rating_rank;
mod release_rating;
mod to_rating;

pub use order_rule::RatingOrderRule;
pub use rating_extremum::RatingExtremumFunc;
pub use rating_rank::RatingRankFunc;
pub use release_rating::ReleaseRatingFunc;
pub use to_rating::ToRatingFunc;

use datafusion::arrow::datatypes::DataType;
use datafusion::logical_expr::{Signature, TypeSignature, Volatility};

/// The signature of every rating function: one argument of any string type.
fn string_signature() -> Signature {
    Signature::one_of(
        [DataType::Utf8, DataType::Utf8View, DataType::LargeUtf8]
            .into_iter()
            .map(|t| TypeSignature::Exact(vec![t]))
            .collect(),
        Volatility::Immutable,
    )
}
