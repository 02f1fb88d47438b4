//! `box_iop(pred, target) -> Float64`: intersection over the predicted box's area (paper 000,
//! section 4.1); 0 for an empty prediction. NULL in, NULL out.

use cxrlake_masks as masks;

use datafusion::arrow::datatypes::DataType;
use datafusion::common::Result;
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDFImpl, Signature, Volatility,
};

use super::kernel::{Arg, Rows, coerce, measure_boxes};

/// The `box_iop` scalar function.
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct BoxIopFunc {
    signature: Signature,
}

impl Default for BoxIopFunc {
    fn default() -> Self {
        Self::new()
    }
}

impl BoxIopFunc {
    /// Creates the function; argument types are coerced in `coerce_types`.
    pub fn new() -> Self {
        Self {
            signature: Signature::user_defined(Volatility::Immutable),
        }
    }
}

impl ScalarUDFImpl for BoxIopFunc {
    fn name(&self) -> &str {
        "box_iop"
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
        rows.finish(measure_boxes(self.name(), &rows, masks::box_iop)?)
    }
}
