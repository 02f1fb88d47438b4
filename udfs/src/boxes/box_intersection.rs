//! `box_intersection(a, b) -> fixed_size_list<f32, 4>`: the overlap of two boxes; NULL when they
//! are disjoint or only touch, or when either is NULL.

use cxrlake_masks::box_intersection;
use cxrlake_schemas::types::bbox_type;

use datafusion::arrow::datatypes::DataType;
use datafusion::common::{Result, exec_err};
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDFImpl, Signature, Volatility,
};

use super::kernel::{Arg, BoxReader, Rows, box_array, coerce};

/// The `box_intersection` scalar function.
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct BoxIntersectionFunc {
    signature: Signature,
}

impl Default for BoxIntersectionFunc {
    fn default() -> Self {
        Self::new()
    }
}

impl BoxIntersectionFunc {
    /// Creates the function; argument types are coerced in `coerce_types`.
    pub fn new() -> Self {
        Self {
            signature: Signature::user_defined(Volatility::Immutable),
        }
    }
}

impl ScalarUDFImpl for BoxIntersectionFunc {
    fn name(&self) -> &str {
        "box_intersection"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        coerce(self.name(), &[Arg::Box, Arg::Box], arg_types)
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(bbox_type())
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let rows = Rows::new(&args)?;
        let [a, b] = rows.arrays.as_slice() else {
            return exec_err!("box_intersection takes two boxes");
        };
        let (a, b) = (
            BoxReader::new(self.name(), a)?,
            BoxReader::new(self.name(), b)?,
        );
        let overlaps = (0..a.len())
            .map(|row| {
                Ok(a.get(row)?
                    .zip(b.get(row)?)
                    .and_then(|(a, b)| box_intersection(a, b)))
            })
            .collect::<Result<Vec<_>>>()?;
        rows.finish(box_array(overlaps)?)
    }
}
