//! `givcxr_finding(names list<utf8>) -> utf8`: the GIV-CXR clinical finding of an observation
//! from its entity followed by its parents, nearest first (the first name a finding of
//! `refdefs/givcxr/vocabulary.toml` lists); NULL when none does.
//!
//! ```sql
//! SELECT givcxr_finding(['plate-like atelectasis', 'atelectasis', 'lung opacity']);  -- atelectasis
//! ```

use std::sync::Arc;

use crate::vocab::Vocabulary;
use datafusion::arrow::array::{Array, StringBuilder};
use datafusion::arrow::datatypes::DataType;
use datafusion::common::{Result, exec_err};
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDFImpl, Signature, Volatility,
};

use super::by_version;
use cxrlake_udfs::args::{list_strs, utf8_list_arg};

/// The `givcxr_finding` scalar function over one vocabulary.
#[derive(Debug)]
pub struct GivcxrFindingFunc {
    vocabulary: Arc<Vocabulary>,
    version: String,
    signature: Signature,
}

impl GivcxrFindingFunc {
    /// The function over `vocabulary`.
    pub fn new(vocabulary: Arc<Vocabulary>) -> Self {
        Self {
            version: vocabulary.version().to_string(),
            vocabulary,
            signature: Signature::any(1, Volatility::Immutable),
        }
    }
}

by_version!(GivcxrFindingFunc);

impl ScalarUDFImpl for GivcxrFindingFunc {
    fn name(&self) -> &str {
        "givcxr_finding"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _args: &[DataType]) -> Result<DataType> {
        Ok(DataType::Utf8)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let args = ColumnarValue::values_to_arrays(&args.args)?;
        if args.len() != 1 {
            return exec_err!("givcxr_finding takes one argument, a list of names");
        }
        let names = utf8_list_arg(&args, 0, "givcxr_finding")?;
        let mut out = StringBuilder::new();
        for row in 0..names.len() {
            out.append_option(self.vocabulary.finding_for(list_strs(&names, row)));
        }
        Ok(ColumnarValue::Array(Arc::new(out.finish())))
    }
}
