//! `rules_extract_indication(indication, finding_ids, finding_sentences)`: the indication node
//! (listing 5's output) from the rule-based backend. `indication` is the text of the study's
//! INDICATION sentences; the lists hold the ids and texts of its FINDINGS/IMPRESSION sentences.

use std::sync::Arc;

use cxrlake_extract::rules::RulesExtractor;
use datafusion::arrow::datatypes::DataType;
use datafusion::common::Result;
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDFImpl, Signature, Volatility,
};

use super::Naming;
use super::output::{
    Failure, IndicationRow, findings_at, indication_type, string_at, utf8_arg, utf8_list_arg,
};
use crate::rows::encode_rows;

/// The `rules_extract_indication` scalar function.
#[derive(Debug)]
pub struct RulesExtractIndicationFunc {
    rules: Arc<RulesExtractor>,
    name: &'static str,
    signature: Signature,
}

impl RulesExtractIndicationFunc {
    /// The function over these rules, named as `naming` says.
    pub fn new(rules: Arc<RulesExtractor>, naming: Naming) -> Self {
        Self {
            rules,
            name: naming.pick("rules_extract_indication", 2),
            signature: Signature::any(3, Volatility::Immutable),
        }
    }
}

super::rules_identity!(RulesExtractIndicationFunc);

impl ScalarUDFImpl for RulesExtractIndicationFunc {
    fn name(&self) -> &str {
        self.name
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _args: &[DataType]) -> Result<DataType> {
        Ok(indication_type())
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let args = ColumnarValue::values_to_arrays(&args.args)?;
        let indications = utf8_arg(&args, 0, self.name)?;
        let ids = utf8_list_arg(&args, 1, self.name)?;
        let texts = utf8_list_arg(&args, 2, self.name)?;
        let extracted: Vec<_> = (0..indications.len())
            .map(|row| {
                let findings = findings_at(&ids, &texts, row);
                self.rules
                    .indication(string_at(&indications, row), &findings)
            })
            .collect();
        let rows: Vec<_> = extracted
            .iter()
            .map(|i| IndicationRow::new(i.as_ref(), Failure::default()))
            .collect();
        Ok(ColumnarValue::Array(encode_rows(
            &rows,
            &indication_type(),
        )?))
    }
}
