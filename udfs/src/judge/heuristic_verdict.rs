//! `judge_verdict(criterion, input, parts)` of the heuristic judge: the verdict on one distinct
//! input of `judge_requests` (see `cxrlake_judge::heuristic` for the rules).

use cxrlake_judge::{Criterion, Verdict, heuristic};
use datafusion::arrow::datatypes::DataType;
use datafusion::common::{Result, exec_err};
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDFImpl, Signature, Volatility,
};
use rayon::prelude::*;

use super::verdict::{verdict_type, verdicts_array};
use crate::args::{string_at, utf8_arg};

/// The heuristic `judge_verdict` scalar function.
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct HeuristicVerdictFunc {
    signature: Signature,
}

impl Default for HeuristicVerdictFunc {
    fn default() -> Self {
        Self::new()
    }
}

impl HeuristicVerdictFunc {
    /// The function.
    pub fn new() -> Self {
        Self {
            signature: Signature::any(3, Volatility::Immutable),
        }
    }
}

impl ScalarUDFImpl for HeuristicVerdictFunc {
    fn name(&self) -> &str {
        "judge_verdict"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _args: &[DataType]) -> Result<DataType> {
        Ok(verdict_type())
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let args = ColumnarValue::values_to_arrays(&args.args)?;
        if args.len() != 3 {
            return exec_err!("judge_verdict(criterion, input, parts) takes 3 arguments");
        }
        let criteria = utf8_arg(&args, 0, self.name())?;
        let inputs = utf8_arg(&args, 1, self.name())?;
        let verdicts: Vec<Verdict> = (0..args[0].len())
            .into_par_iter()
            .map(|row| {
                let name = string_at(&criteria, row);
                match Criterion::from_key(name) {
                    Some(criterion) => heuristic::judge(criterion, string_at(&inputs, row)),
                    None => Verdict::unrated(format!("unknown criterion '{name}'"), ""),
                }
            })
            .collect();
        Ok(ColumnarValue::Array(verdicts_array(&verdicts)))
    }
}
