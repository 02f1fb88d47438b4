//! `box_union(list<box>) -> fixed_size_list<f32, 4>`: the super-box of a list of boxes (min of
//! `x1`/`y1`, max of `x2`/`y2`). NULL boxes in the list are skipped; NULL for a NULL or empty
//! list, or one of only NULL boxes.

use cxrlake_masks::box_union;
use cxrlake_schemas::types::bbox_type;
use datafusion::arrow::array::Array;
use datafusion::common::cast::as_list_array;

use datafusion::arrow::datatypes::DataType;
use datafusion::common::{Result, exec_err};
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDFImpl, Signature, Volatility,
};

use super::kernel::{Arg, BoxReader, Rows, box_array, coerce};

/// The `box_union` scalar function.
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct BoxUnionFunc {
    signature: Signature,
}

impl Default for BoxUnionFunc {
    fn default() -> Self {
        Self::new()
    }
}

impl BoxUnionFunc {
    /// Creates the function; argument types are coerced in `coerce_types`.
    pub fn new() -> Self {
        Self {
            signature: Signature::user_defined(Volatility::Immutable),
        }
    }
}

impl ScalarUDFImpl for BoxUnionFunc {
    fn name(&self) -> &str {
        "box_union"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        coerce(self.name(), &[Arg::BoxList], arg_types)
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(bbox_type())
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let rows = Rows::new(&args)?;
        let [lists] = rows.arrays.as_slice() else {
            return exec_err!("box_union takes one list of boxes");
        };
        let lists = as_list_array(lists)?;
        let unions = (0..lists.len())
            .map(|row| {
                if lists.is_null(row) {
                    return Ok(None);
                }
                let boxes = lists.value(row);
                let boxes = BoxReader::new(self.name(), &boxes)?;
                let boxes = (0..boxes.len())
                    .filter_map(|i| boxes.get(i).transpose())
                    .collect::<Result<Vec<_>>>()?;
                Ok(box_union(boxes))
            })
            .collect::<Result<Vec<_>>>()?;
        rows.finish(box_array(unions)?)
    }
}
