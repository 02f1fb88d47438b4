//! `rules_extract_observations(sentences)`: the observations of one sentence cluster (listing 3's
//! output) from the rule-based backend; `sentences` is the cluster's `list<utf8>` in order.

use std::sync::Arc;

use cxrlake_extract::rules::RulesExtractor;
use datafusion::arrow::datatypes::DataType;
use datafusion::common::Result;
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDFImpl, Signature, Volatility,
};

use super::Naming;
use super::output::{Failure, ObservationsRow, list_strs, observations_type, utf8_list_arg};
use crate::rows::encode_rows;

/// The `rules_extract_observations` scalar function.
#[derive(Debug)]
pub struct RulesExtractObservationsFunc {
    rules: Arc<RulesExtractor>,
    name: &'static str,
    signature: Signature,
}

impl RulesExtractObservationsFunc {
    /// The function over these rules, named as `naming` says.
    pub fn new(rules: Arc<RulesExtractor>, naming: Naming) -> Self {
        Self {
            rules,
            name: naming.pick("rules_extract_observations", 1),
            signature: Signature::any(1, Volatility::Immutable),
        }
    }
}

super::rules_identity!(RulesExtractObservationsFunc);

impl ScalarUDFImpl for RulesExtractObservationsFunc {
    fn name(&self) -> &str {
        self.name
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _args: &[DataType]) -> Result<DataType> {
        Ok(observations_type())
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let args = ColumnarValue::values_to_arrays(&args.args)?;
        let clusters = utf8_list_arg(&args, 0, self.name)?;
        let observations: Vec<_> = (0..clusters.len())
            .map(|row| {
                let sentences = list_strs(&clusters, row);
                self.rules.observations(&sentences)
            })
            .collect();
        let rows: Vec<_> = observations
            .iter()
            .map(|o| ObservationsRow::new(o, Failure::default()))
            .collect();
        Ok(ColumnarValue::Array(encode_rows(
            &rows,
            &observations_type(),
        )?))
    }
}
