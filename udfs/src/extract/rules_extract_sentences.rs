//! `rules_extract_sentences(report)`: the report's sentences with sections, types, merge links and
//! clusters (listing 1's output) from the rule-based backend.

use std::sync::Arc;

use cxrlake_extract::rules::RulesExtractor;
use datafusion::arrow::array::ArrayRef;
use datafusion::arrow::datatypes::DataType;
use datafusion::common::Result;
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDFImpl, Signature, Volatility,
};

use super::Naming;
use super::output::{Failure, SentencesRow, sentences_type, string_at, utf8_arg};
use crate::rows::encode_rows;

/// The `rules_extract_sentences` scalar function.
#[derive(Debug)]
pub struct RulesExtractSentencesFunc {
    rules: Arc<RulesExtractor>,
    name: &'static str,
    signature: Signature,
}

impl RulesExtractSentencesFunc {
    /// The function over these rules, named as `naming` says.
    pub fn new(rules: Arc<RulesExtractor>, naming: Naming) -> Self {
        Self {
            rules,
            name: naming.pick("rules_extract_sentences", 0),
            signature: Signature::any(1, Volatility::Immutable),
        }
    }
}

super::rules_identity!(RulesExtractSentencesFunc);

impl ScalarUDFImpl for RulesExtractSentencesFunc {
    fn name(&self) -> &str {
        self.name
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _args: &[DataType]) -> Result<DataType> {
        Ok(sentences_type())
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let args = ColumnarValue::values_to_arrays(&args.args)?;
        let reports: ArrayRef = utf8_arg(&args, 0, self.name)?;
        let sentences: Vec<_> = (0..reports.len())
            .map(|row| self.rules.sentences(string_at(&reports, row)))
            .collect();
        let rows: Vec<_> = sentences
            .iter()
            .map(|s| SentencesRow::new(s, Failure::default()))
            .collect();
        Ok(ColumnarValue::Array(encode_rows(&rows, &sentences_type())?))
    }
}
