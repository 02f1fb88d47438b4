//! `givcxr_split(patient_id, official_split) -> utf8`: the patient's GIV-CXR split (`train`,
//! `val` or `test`) under `cxrlake.givcxr_split`: a seeded draw per patient with the configured
//! shares, or MIMIC-CXR-JPG's official split (`official_split`, `validate` written `val`).
//!
//! ```sql
//! SELECT givcxr_split(patient_id, split) FROM images;
//! ```

use std::sync::Arc;

use crate::split::Split;
use datafusion::arrow::array::{Array, StringBuilder};
use datafusion::arrow::datatypes::DataType;
use datafusion::common::{Result, exec_err};
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDFImpl, Signature, Volatility,
};

use cxrlake_udfs::args::{string_at, utf8_arg};

/// The `givcxr_split` scalar function for one split setting and seed.
#[derive(Debug)]
pub struct GivcxrSplitFunc {
    split: Split,
    seed: u64,
    version: String,
    signature: Signature,
}

impl GivcxrSplitFunc {
    /// The function drawing with `split` and `seed`.
    pub fn new(split: Split, seed: u64) -> Self {
        Self {
            version: format!("{split:?}/{seed}"),
            split,
            seed,
            signature: Signature::any(2, Volatility::Immutable),
        }
    }
}

super::by_version!(GivcxrSplitFunc);

impl ScalarUDFImpl for GivcxrSplitFunc {
    fn name(&self) -> &str {
        "givcxr_split"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _args: &[DataType]) -> Result<DataType> {
        Ok(DataType::Utf8)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let args = ColumnarValue::values_to_arrays(&args.args)?;
        if args.len() != 2 {
            return exec_err!("givcxr_split takes two arguments: patient_id, official split");
        }
        let patients = utf8_arg(&args, 0, "givcxr_split")?;
        let official = utf8_arg(&args, 1, "givcxr_split")?;
        let mut out = StringBuilder::new();
        for row in 0..patients.len() {
            if patients.is_null(row) {
                out.append_null();
                continue;
            }
            out.append_value(self.split.of(
                string_at(&patients, row),
                self.seed,
                string_at(&official, row),
            ));
        }
        Ok(ColumnarValue::Array(Arc::new(out.finish())))
    }
}
