//! `mask_area(counts, height, width) -> Int64`: foreground pixels of a COCO RLE mask, from its
//! runs (no decoding to pixels). NULL in, NULL out.

use std::sync::Arc;

use datafusion::arrow::array::Int64Array;

use datafusion::arrow::datatypes::DataType;
use datafusion::common::Result;
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDFImpl, Signature, Volatility,
};

use super::kernel::{Arg, MaskReader, Rows, coerce};

/// The `mask_area` scalar function.
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct MaskAreaFunc {
    signature: Signature,
}

impl Default for MaskAreaFunc {
    fn default() -> Self {
        Self::new()
    }
}

impl MaskAreaFunc {
    /// Creates the function; argument types are coerced in `coerce_types`.
    pub fn new() -> Self {
        Self {
            signature: Signature::user_defined(Volatility::Immutable),
        }
    }
}

impl ScalarUDFImpl for MaskAreaFunc {
    fn name(&self) -> &str {
        "mask_area"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        coerce(self.name(), &[Arg::Counts, Arg::Size, Arg::Size], arg_types)
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(DataType::Int64)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let rows = Rows::new(&args)?;
        let masks = MaskReader::new(self.name(), &rows.arrays)?;
        let areas = (0..masks.len())
            .map(|row| Ok(masks.summary(row)?.map(|mask| mask.area as i64)))
            .collect::<Result<Int64Array>>()?;
        rows.finish(Arc::new(areas))
    }
}

#[cfg(test)]
mod tests {
    use datafusion::arrow::array::{ArrayRef, StringArray};

    use super::*;

    #[test]
    fn bad_counts_name_the_function_and_value() {
        let arrays: Vec<ArrayRef> = vec![
            Arc::new(StringArray::from(vec!["41~"])),
            Arc::new(Int64Array::from(vec![3])),
            Arc::new(Int64Array::from(vec![3])),
        ];
        let masks = MaskReader::new("mask_area", &arrays).expect("columns");
        let err = masks.get(0).expect_err("bad character").to_string();
        assert!(err.contains("mask_area: bad mask counts '41~'"), "{err}");
    }
}
