//! `judge_verdicts(criterion, report, items)` of the judges
//! without an LLM (heuristic, reading): each input of the group judged on its own (see
//! `cxrlake_judge::heuristic` for the rules), so the grouping never changes a verdict.

use cxrlake_judge::{Verdict, heuristic};
use datafusion::arrow::datatypes::DataType;
use datafusion::common::Result;
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDFImpl, Signature, Volatility,
};
use rayon::prelude::*;

use super::group::Groups;
use super::verdict::{verdicts_array, verdicts_type};

/// The heuristic `judge_verdicts` scalar function.
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
        "judge_verdicts"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _args: &[DataType]) -> Result<DataType> {
        Ok(verdicts_type())
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let args = ColumnarValue::values_to_arrays(&args.args)?;
        let groups = Groups::new(&args, self.name())?;
        let verdicts: Vec<Vec<(&str, Verdict)>> = (0..groups.len())
            .into_par_iter()
            .map(|row| {
                let group = groups.group(row);
                group
                    .hashes
                    .iter()
                    .zip(&group.inputs)
                    .map(|(hash, input)| {
                        let verdict = match group.criterion {
                            Ok(criterion) => heuristic::judge(criterion, input),
                            Err(name) => {
                                Verdict::unrated(format!("unknown criterion '{name}'"), "")
                            }
                        };
                        (*hash, verdict)
                    })
                    .collect()
            })
            .collect();
        Ok(ColumnarValue::Array(verdicts_array(&verdicts)))
    }
}
