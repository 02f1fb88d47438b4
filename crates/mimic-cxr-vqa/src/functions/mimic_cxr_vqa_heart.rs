//! `mimic_cxr_vqa_heart(report) -> boolean`: paper 001's derived Heart label — the report has
//! the word "heart" (any section, any case, a whole word: `heart's` counts, `heartburn` does
//! not); NULL for a NULL report.
//!
//! ```sql
//! SELECT mimic_cxr_vqa_heart('The HEART size is normal.');  -- true
//! ```

use std::sync::Arc;

use crate::bank::mentions_heart;
use datafusion::arrow::array::{Array, AsArray, BooleanArray};
use datafusion::arrow::datatypes::DataType;
use datafusion::common::{Result, exec_err};
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDFImpl, Signature, Volatility,
};

use cxrlake_udfs::args::utf8_arg;

/// The `mimic_cxr_vqa_heart` scalar function.
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct MimicCxrVqaHeartFunc {
    signature: Signature,
}

impl Default for MimicCxrVqaHeartFunc {
    fn default() -> Self {
        Self::new()
    }
}

impl MimicCxrVqaHeartFunc {
    /// Creates the function: one text argument.
    pub fn new() -> Self {
        Self {
            signature: Signature::any(1, Volatility::Immutable),
        }
    }
}

impl ScalarUDFImpl for MimicCxrVqaHeartFunc {
    fn name(&self) -> &str {
        "mimic_cxr_vqa_heart"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _args: &[DataType]) -> Result<DataType> {
        Ok(DataType::Boolean)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let args = ColumnarValue::values_to_arrays(&args.args)?;
        if args.len() != 1 {
            return exec_err!("mimic_cxr_vqa_heart takes one argument, the report text");
        }
        let texts = utf8_arg(&args, 0, "mimic_cxr_vqa_heart")?;
        let texts = texts.as_string::<i32>();
        let out: BooleanArray = (0..texts.len())
            .map(|row| (!texts.is_null(row)).then(|| mentions_heart(texts.value(row))))
            .collect();
        Ok(ColumnarValue::Array(Arc::new(out)))
    }
}
