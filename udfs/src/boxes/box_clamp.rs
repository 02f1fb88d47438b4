//! `box_clamp(box, width, height) -> fixed_size_list<f32, 4>`: the box clipped to an image of
//! `width` × `height` pixels (`0 <= x <= width`, `0 <= y <= height`). NULL if any argument is NULL;
//! a negative or oversized width/height is an error.

use cxrlake_masks::box_clamp;
use cxrlake_schemas::types::bbox_type;
use datafusion::arrow::array::Array;
use datafusion::common::cast::as_int64_array;

use datafusion::arrow::datatypes::DataType;
use datafusion::common::{Result, exec_datafusion_err, exec_err};
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDFImpl, Signature, Volatility,
};

use super::kernel::{Arg, BoxReader, Rows, box_array, coerce};

/// The `box_clamp` scalar function.
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct BoxClampFunc {
    signature: Signature,
}

impl Default for BoxClampFunc {
    fn default() -> Self {
        Self::new()
    }
}

impl BoxClampFunc {
    /// Creates the function; argument types are coerced in `coerce_types`.
    pub fn new() -> Self {
        Self {
            signature: Signature::user_defined(Volatility::Immutable),
        }
    }
}

impl ScalarUDFImpl for BoxClampFunc {
    fn name(&self) -> &str {
        "box_clamp"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        coerce(self.name(), &[Arg::Box, Arg::Size, Arg::Size], arg_types)
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(bbox_type())
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let rows = Rows::new(&args)?;
        let [boxes, widths, heights] = rows.arrays.as_slice() else {
            return exec_err!("box_clamp takes a box, a width and a height");
        };
        let boxes = BoxReader::new(self.name(), boxes)?;
        let (widths, heights) = (as_int64_array(widths)?, as_int64_array(heights)?);
        let size = |what: &str, value: i64| {
            u32::try_from(value).map_err(|_| {
                exec_datafusion_err!(
                    "box_clamp: {what} must be between 0 and {}, got {value}",
                    u32::MAX
                )
            })
        };
        let clamped = (0..boxes.len())
            .map(|row| {
                let Some(bbox) = boxes.get(row)? else {
                    return Ok(None);
                };
                if widths.is_null(row) || heights.is_null(row) {
                    return Ok(None);
                }
                let width = size("width", widths.value(row))?;
                let height = size("height", heights.value(row))?;
                Ok(Some(box_clamp(bbox, width, height).0))
            })
            .collect::<Result<Vec<_>>>()?;
        rows.finish(box_array(clamped)?)
    }
}
