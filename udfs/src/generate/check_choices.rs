//! `check_choices(question_type, choices, answer) -> utf8`: why a generated question's choices
//! and answer are malformed for its type (`cxrlake_generate::lint::check_choices`), NULL when
//! they are well formed. NULL arguments read as empty (an empty answer or type is reported, NULL
//! choices are no choices).
//!
//! ```sql
//! SELECT check_choices('single-choice', ['A: x', 'B: y', 'C: z', 'D: w'], 'B');  -- NULL
//! SELECT check_choices('closed-ended', [], 'Maybe');  -- 'a closed-ended answer is yes or no, …'
//! ```

use std::sync::Arc;

use cxrlake_generate::lint::check_choices;
use datafusion::arrow::array::{Array, StringBuilder};
use datafusion::arrow::datatypes::DataType;
use datafusion::common::{Result, exec_err};
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDFImpl, Signature, Volatility,
};

use crate::args::{list_strs, string_at, utf8_arg, utf8_list_arg};

/// The `check_choices` scalar function.
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct CheckChoicesFunc {
    signature: Signature,
}

impl Default for CheckChoicesFunc {
    fn default() -> Self {
        Self::new()
    }
}

impl CheckChoicesFunc {
    /// Creates the function: question type, list of choices, answer.
    pub fn new() -> Self {
        Self {
            signature: Signature::any(3, Volatility::Immutable),
        }
    }
}

impl ScalarUDFImpl for CheckChoicesFunc {
    fn name(&self) -> &str {
        "check_choices"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _args: &[DataType]) -> Result<DataType> {
        Ok(DataType::Utf8)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let args = ColumnarValue::values_to_arrays(&args.args)?;
        if args.len() != 3 {
            return exec_err!(
                "check_choices takes three arguments: question_type, choices, answer"
            );
        }
        let types = utf8_arg(&args, 0, "check_choices")?;
        let choices = utf8_list_arg(&args, 1, "check_choices")?;
        let answers = utf8_arg(&args, 2, "check_choices")?;
        let mut out = StringBuilder::new();
        for row in 0..types.len() {
            let row_choices: Vec<String> = list_strs(&choices, row)
                .into_iter()
                .map(str::to_string)
                .collect();
            let problem = check_choices(
                string_at(&types, row),
                &row_choices,
                string_at(&answers, row),
            );
            out.append_option(problem);
        }
        Ok(ColumnarValue::Array(Arc::new(out.finish())))
    }
}
