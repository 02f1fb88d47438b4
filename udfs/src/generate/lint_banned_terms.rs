//! `lint_banned_terms(text) -> list<utf8>`: the banned terms a generated question or answer
//! uses (comparisons with earlier studies, references to the report, staff notifications,
//! other views), each as `kind: term` (`cxrlake_generate::lint::BANNED_TERMS`); empty when
//! clean, NULL for a NULL text.
//!
//! ```sql
//! SELECT lint_banned_terms('Is the effusion unchanged?');  -- ['comparison: unchanged']
//! ```

use cxrlake_generate::lint::banned_terms;
use cxrlake_schemas::types::list_of;
use datafusion::arrow::datatypes::DataType;
use datafusion::common::Result;
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDFImpl, Signature, Volatility,
};

use crate::args::text_to_list;

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
        text_to_list(&args.args, "lint_banned_terms", banned_terms)
    }
}
