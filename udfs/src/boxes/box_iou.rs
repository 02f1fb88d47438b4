//! `box_iou(a, b) -> Float64`: intersection over union of two boxes; 0 when both are empty. NULL in, NULL out.

use cxrlake_masks as masks;

use datafusion::arrow::datatypes::DataType;
use datafusion::common::Result;
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDFImpl, Signature, Volatility,
};

use super::kernel::{Arg, Rows, coerce, measure_boxes};

/// The `box_iou` scalar function.
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct BoxIouFunc {
    signature: Signature,
}

impl Default for BoxIouFunc {
    fn default() -> Self {
        Self::new()
    }
}

impl BoxIouFunc {
    /// Creates the function; argument types are coerced in `coerce_types`.
    pub fn new() -> Self {
        Self {
            signature: Signature::user_defined(Volatility::Immutable),
        }
    }
}

impl ScalarUDFImpl for BoxIouFunc {
    fn name(&self) -> &str {
        "box_iou"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        coerce(self.name(), &[Arg::Box, Arg::Box], arg_types)
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(DataType::Float64)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let rows = Rows::new(&args)?;
        rows.finish(measure_boxes(self.name(), &rows, masks::box_iou)?)
    }
}
