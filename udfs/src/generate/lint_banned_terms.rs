//! `lint_banned_terms(text) -> list<utf8>`: the banned terms a generated question or answer
//! uses (comparisons with earlier studies, references to the report, staff notifications,
//! other views), each as `kind: term` (`cxrlake_generate::lint::BANNED_TERMS`); empty when
//! clean, NULL for a NULL text.
//!
//! ```sql
//! SELECT lint_banned_terms('Is the effusion unchanged?');  -- ['comparison: unchanged']
//! ```

use std::sync::Arc;

use cxrlake_generate::lint::banned_terms;
use cxrlake_schemas::types::list_of;
use datafusion::arrow::array::{Array, AsArray, ListBuilder, StringBuilder};
use datafusion::arrow::datatypes::DataType;
use datafusion::common::{Result, exec_err};
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDFImpl, Signature, Volatility,
};

use crate::args::utf8_arg;

/// The `lint_banned_terms` scalar function.
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct LintBannedTermsFunc {
    signature: Signature,
}

impl Default for LintBannedTermsFunc {
    fn default() -> Self {
        Self::new()
    }
}

impl LintBannedTermsFunc {
    /// Creates the function: one text argument.
    pub fn new() -> Self {
        Self {
            signature: Signature::any(1, Volatility::Immutable),
        }
    }
}

impl ScalarUDFImpl for LintBannedTermsFunc {
    fn name(&self) -> &str {
        "lint_banned_terms"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _args: &[DataType]) -> Result<DataType> {
        Ok(list_of(DataType::Utf8))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let args = ColumnarValue::values_to_arrays(&args.args)?;
        if args.len() != 1 {
            return exec_err!("lint_banned_terms takes one argument, the text");
        }
        let texts = utf8_arg(&args, 0, "lint_banned_terms")?;
        let texts = texts.as_string::<i32>();
        let mut out = ListBuilder::new(StringBuilder::new());
        for row in 0..texts.len() {
            if texts.is_null(row) {
                out.append_null();
                continue;
            }
            for term in banned_terms(texts.value(row)) {
                out.values().append_value(term);
            }
            out.append(true);
        }
        Ok(ColumnarValue::Array(Arc::new(out.finish())))
    }
}
