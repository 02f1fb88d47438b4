//! `rating_rank(rating) -> Int8`: 0 = not rated, 1 = D, …, 6 = A++; NULL stays NULL.

use std::sync::Arc;

use cxrlake_schemas::Rating;
use datafusion::arrow::array::{Array, ArrayRef, Int8Array};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::DataType;
use datafusion::common::cast::as_string_array;
use datafusion::common::{Result, ScalarValue, exec_err};
use datafusion::logical_expr::{ColumnarValue, ScalarFunctionArgs, ScalarUDFImpl, Signature};

/// Rank of a rating text; errors name the bad value and list the valid ones.
pub(crate) fn rank_of(text: &str) -> Result<i8> {
    match text.parse::<Rating>() {
        Ok(rating) => Ok(rating.rank()),
        Err(err) => exec_err!("rating_rank: {err}"),
    }
}

/// The `rating_rank` scalar function.
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct RatingRankFunc {
    signature: Signature,
}

impl Default for RatingRankFunc {
    fn default() -> Self {
        Self::new()
    }
}

impl RatingRankFunc {
    /// Creates the function; it accepts any string type.
    pub fn new() -> Self {
        Self {
            signature: super::string_signature(),
        }
    }
}

impl ScalarUDFImpl for RatingRankFunc {
    fn name(&self) -> &str {
        "rating_rank"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(DataType::Int8)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let [arg] = args.args.as_slice() else {
            return exec_err!("rating_rank takes exactly one argument");
        };
        match arg {
            ColumnarValue::Scalar(scalar) => {
                let rank = match scalar.try_as_str() {
                    Some(Some(text)) => Some(rank_of(text)?),
                    Some(None) => None,
                    None => return exec_err!("rating_rank expects a string, got {scalar:?}"),
                };
                Ok(ColumnarValue::Scalar(ScalarValue::Int8(rank)))
            }
            ColumnarValue::Array(array) => Ok(ColumnarValue::Array(rank_array(array)?)),
        }
    }
}

fn rank_array(array: &ArrayRef) -> Result<ArrayRef> {
    let utf8 = cast(array, &DataType::Utf8)?;
    let strings = as_string_array(&utf8)?;
    let mut ranks = Vec::with_capacity(strings.len());
    for value in strings.iter() {
        ranks.push(value.map(rank_of).transpose()?);
    }
    Ok(Arc::new(Int8Array::from(ranks)))
}

#[cfg(test)]
mod tests {
    use datafusion::arrow::array::StringArray;

    use super::*;

    #[test]
    fn ranks_each_rating_and_keeps_nulls() -> Result<()> {
        let input: ArrayRef = Arc::new(StringArray::from(vec![
            Some("A++"),
            Some("B"),
            None,
            Some("not rated"),
        ]));
        let ranks = rank_array(&input)?;
        let ranks = ranks.as_any().downcast_ref::<Int8Array>().expect("int8");
        assert_eq!(
            ranks.iter().collect::<Vec<_>>(),
            vec![Some(6), Some(3), None, Some(0)]
        );
        Ok(())
    }

    #[test]
    fn invalid_value_is_an_error_listing_valid_values() {
        let input: ArrayRef = Arc::new(StringArray::from(vec!["A", "excellent"]));
        let err = rank_array(&input).expect_err("invalid").to_string();
        assert!(err.contains("'excellent' is not a rating"), "{err}");
        assert!(err.contains("'not rated'"), "{err}");
    }
}
