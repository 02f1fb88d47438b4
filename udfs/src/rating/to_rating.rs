//! `to_rating(text) -> rating`: checks the values and marks the result as a rating column,
//! so text from anywhere (a CSV, a VALUES list, an external Parquet file) gets rating order.

use std::sync::Arc;

use cxrlake_schemas::{Rating, rating_field};
use datafusion::arrow::array::{ArrayRef, StringArray};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, FieldRef};
use datafusion::common::cast::as_string_array;
use datafusion::common::{Result, ScalarValue, exec_err};
use datafusion::logical_expr::{
    ColumnarValue, ReturnFieldArgs, ScalarFunctionArgs, ScalarUDFImpl, Signature,
};

/// The `to_rating` scalar function.
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct ToRatingFunc {
    signature: Signature,
}

impl Default for ToRatingFunc {
    fn default() -> Self {
        Self::new()
    }
}

impl ToRatingFunc {
    /// Creates the function; it accepts any string type.
    pub fn new() -> Self {
        Self {
            signature: super::string_signature(),
        }
    }
}

fn canonical(text: &str) -> Result<String> {
    match text.parse::<Rating>() {
        Ok(rating) => Ok(rating.as_str().to_string()),
        Err(err) => exec_err!("to_rating: {err}"),
    }
}

impl ScalarUDFImpl for ToRatingFunc {
    fn name(&self) -> &str {
        "to_rating"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(DataType::Utf8)
    }

    fn return_field_from_args(&self, _args: ReturnFieldArgs) -> Result<FieldRef> {
        Ok(Arc::new(rating_field(self.name())))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let [arg] = args.args.as_slice() else {
            return exec_err!("to_rating takes exactly one argument");
        };
        match arg {
            ColumnarValue::Scalar(scalar) => match scalar.try_as_str() {
                Some(text) => Ok(ColumnarValue::Scalar(ScalarValue::Utf8(
                    text.map(canonical).transpose()?,
                ))),
                None => exec_err!("to_rating expects a string, got {scalar:?}"),
            },
            ColumnarValue::Array(array) => {
                let utf8 = cast(array, &DataType::Utf8)?;
                let values = as_string_array(&utf8)?
                    .iter()
                    .map(|v| v.map(canonical).transpose())
                    .collect::<Result<Vec<_>>>()?;
                Ok(ColumnarValue::Array(
                    Arc::new(StringArray::from(values)) as ArrayRef
                ))
            }
        }
    }
}
