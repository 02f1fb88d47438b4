//! `box_area(box) -> Float64`: area `(x2 - x1) * (y2 - y1)` in square pixels, 0 for an empty box.
//! NULL in, NULL out.

use std::sync::Arc;

use cxrlake_masks::box_area;
use datafusion::arrow::array::Float64Array;

use datafusion::arrow::datatypes::DataType;
use datafusion::common::{Result, exec_err};
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDFImpl, Signature, Volatility,
};

use super::kernel::{Arg, BoxReader, Rows, coerce};

/// The `box_area` scalar function.
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct BoxAreaFunc {
    signature: Signature,
}

impl Default for BoxAreaFunc {
    fn default() -> Self {
        Self::new()
    }
}

impl BoxAreaFunc {
    /// Creates the function; argument types are coerced in `coerce_types`.
    pub fn new() -> Self {
        Self {
            signature: Signature::user_defined(Volatility::Immutable),
        }
    }
}

impl ScalarUDFImpl for BoxAreaFunc {
    fn name(&self) -> &str {
        "box_area"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        coerce(self.name(), &[Arg::Box], arg_types)
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(DataType::Float64)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let rows = Rows::new(&args)?;
        let [boxes] = rows.arrays.as_slice() else {
            return exec_err!("box_area takes one box");
        };
        let boxes = BoxReader::new(self.name(), boxes)?;
        let areas = (0..boxes.len())
            .map(|row| Ok(boxes.get(row)?.map(box_area)))
            .collect::<Result<Float64Array>>()?;
        rows.finish(Arc::new(areas))
    }
}
