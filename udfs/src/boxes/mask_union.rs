//! `mask_union(counts_a, counts_b, height, width) -> utf8`: the pixels in either mask, as a compressed COCO
//! RLE string, merged run by run. NULL if any argument is NULL.

use cxrlake_masks::Rle;

use datafusion::arrow::datatypes::DataType;
use datafusion::common::Result;
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDFImpl, Signature, Volatility,
};

use super::kernel::{Arg, Rows, coerce, combine_masks};

/// The `mask_union` scalar function.
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct MaskUnionFunc {
    signature: Signature,
}

impl Default for MaskUnionFunc {
    fn default() -> Self {
        Self::new()
    }
}

impl MaskUnionFunc {
    /// Creates the function; argument types are coerced in `coerce_types`.
    pub fn new() -> Self {
        Self {
            signature: Signature::user_defined(Volatility::Immutable),
        }
    }
}

impl ScalarUDFImpl for MaskUnionFunc {
    fn name(&self) -> &str {
        "mask_union"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        coerce(
            self.name(),
            &[Arg::Counts, Arg::Counts, Arg::Size, Arg::Size],
            arg_types,
        )
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(DataType::Utf8)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let rows = Rows::new(&args)?;
        rows.finish(combine_masks(self.name(), &rows, Rle::union)?)
    }
}
