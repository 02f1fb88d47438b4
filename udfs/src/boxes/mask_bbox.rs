//! `mask_bbox(counts, height, width) -> fixed_size_list<f32, 4>`: tight box `[x1, y1, x2, y2]` of a
//! COCO RLE mask with exclusive `x2`/`y2` (rightmost column + 1), computed from the runs.
//! NULL for an empty mask or NULL input.

use cxrlake_schemas::types::bbox_type;

use datafusion::arrow::datatypes::DataType;
use datafusion::common::Result;
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDFImpl, Signature, Volatility,
};

use super::kernel::{Arg, MaskReader, Rows, box_array, coerce};

/// The `mask_bbox` scalar function.
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct MaskBboxFunc {
    signature: Signature,
}

impl Default for MaskBboxFunc {
    fn default() -> Self {
        Self::new()
    }
}

impl MaskBboxFunc {
    /// Creates the function; argument types are coerced in `coerce_types`.
    pub fn new() -> Self {
        Self {
            signature: Signature::user_defined(Volatility::Immutable),
        }
    }
}

impl ScalarUDFImpl for MaskBboxFunc {
    fn name(&self) -> &str {
        "mask_bbox"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        coerce(self.name(), &[Arg::Counts, Arg::Size, Arg::Size], arg_types)
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(bbox_type())
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let rows = Rows::new(&args)?;
        let masks = MaskReader::new(self.name(), &rows.arrays)?;
        let boxes = (0..masks.len())
            .map(|row| Ok(masks.summary(row)?.and_then(|mask| mask.bbox)))
            .collect::<Result<Vec<_>>>()?;
        rows.finish(box_array(boxes)?)
    }
}
