//! `release_rating(rating) -> Utf8`: the release encoding `<rank>_<grade>` of a rating (`4_A`,
//! `0_not rated`), which sorts correctly as text; NULL (not judged) stays NULL.

use std::sync::Arc;

use cxrlake_schemas::Rating;
use datafusion::arrow::array::{Array, ArrayRef, StringArray};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::DataType;
use datafusion::common::cast::as_string_array;
use datafusion::common::{Result, ScalarValue, exec_err};
use datafusion::logical_expr::{ColumnarValue, ScalarFunctionArgs, ScalarUDFImpl, Signature};

/// The release code of a rating text; errors name the bad value and list the valid ones.
fn code_of(text: &str) -> Result<String> {
    match text.parse::<Rating>() {
        Ok(rating) => Ok(rating.release_code()),
        Err(err) => exec_err!("release_rating: {err}"),
    }
}

/// The `release_rating` scalar function.
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct ReleaseRatingFunc {
    signature: Signature,
}

impl Default for ReleaseRatingFunc {
    fn default() -> Self {
        Self::new()
    }
}

impl ReleaseRatingFunc {
    /// Creates the function; it accepts any string type.
    pub fn new() -> Self {
        Self {
            signature: super::string_signature(),
        }
    }
}

impl ScalarUDFImpl for ReleaseRatingFunc {
    fn name(&self) -> &str {
        "release_rating"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(DataType::Utf8)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let [arg] = args.args.as_slice() else {
            return exec_err!("release_rating takes exactly one argument");
        };
        match arg {
            ColumnarValue::Scalar(scalar) => {
                let code = match scalar.try_as_str() {
                    Some(Some(text)) => Some(code_of(text)?),
                    Some(None) => None,
                    None => return exec_err!("release_rating expects a string, got {scalar:?}"),
                };
                Ok(ColumnarValue::Scalar(ScalarValue::Utf8(code)))
            }
            ColumnarValue::Array(array) => Ok(ColumnarValue::Array(code_array(array)?)),
        }
    }
}

fn code_array(array: &ArrayRef) -> Result<ArrayRef> {
    let utf8 = cast(array, &DataType::Utf8)?;
    let strings = as_string_array(&utf8)?;
    let mut codes = Vec::with_capacity(strings.len());
    for value in strings.iter() {
        codes.push(value.map(code_of).transpose()?);
    }
    Ok(Arc::new(StringArray::from(codes)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_each_rating_and_keeps_nulls() -> Result<()> {
        let input: ArrayRef = Arc::new(StringArray::from(vec![
            Some("A++"),
            Some("B"),
            None,
            Some("not rated"),
        ]));
        let codes = code_array(&input)?;
        let codes = as_string_array(&codes)?;
        assert_eq!(
            codes.iter().collect::<Vec<_>>(),
            vec![Some("6_A++"), Some("3_B"), None, Some("0_not rated")]
        );
        let err = code_array(&(Arc::new(StringArray::from(vec!["E"])) as ArrayRef))
            .expect_err("invalid")
            .to_string();
        assert!(err.contains("'E' is not a rating"), "{err}");
        Ok(())
    }
}
