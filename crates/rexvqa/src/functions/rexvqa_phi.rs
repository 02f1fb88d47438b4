//! `rexvqa_phi(text) -> list<utf8>`: the protected health information a text contains
//! (`crate::phi`), as `kind: matched text`; an empty list for clean text, NULL for NULL.
//!
//! ```sql
//! SELECT rexvqa_phi('Discussed with Dr. Hartley on 03/14/2021.');
//! -- [date: 03/14/2021, name: Dr. Hartley]
//! ```

use crate::phi::phi;
use datafusion::arrow::datatypes::DataType;
use datafusion::common::Result;
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDFImpl, Signature, Volatility,
};

use cxrlake_schemas::types::list_of;
use cxrlake_udfs::args::text_to_list;

/// The `rexvqa_phi` scalar function.
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct RexvqaPhiFunc {
    signature: Signature,
}

impl Default for RexvqaPhiFunc {
    fn default() -> Self {
        Self::new()
    }
}

impl RexvqaPhiFunc {
    /// Creates the function: one text argument.
    pub fn new() -> Self {
        Self {
            signature: Signature::any(1, Volatility::Immutable),
        }
    }
}

impl ScalarUDFImpl for RexvqaPhiFunc {
    fn name(&self) -> &str {
        "rexvqa_phi"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _args: &[DataType]) -> Result<DataType> {
        Ok(list_of(DataType::Utf8))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        text_to_list(&args.args, "rexvqa_phi", phi)
    }
}
