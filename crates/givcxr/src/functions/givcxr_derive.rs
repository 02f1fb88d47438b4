//! `givcxr_derive(question, answer, findings list<utf8>, abnormal bool) -> struct<
//! reasoning_aspect, clinical_finding, question_length, answer_length>`: the derived fields of a
//! GIV-CXR QA pair in a region context with the clinical findings `findings` present (and
//! findings present at all when `abnormal`): the reasoning aspect of the question, one clinical
//! finding of the 28 or `normal` (NULL when the pair is about findings outside the vocabulary),
//! and the lengths in words.
//!
//! ```sql
//! SELECT givcxr_derive('Where is the effusion?', 'In the left costophrenic angle.',
//!                      ['pleural_effusion'], true);
//! -- {reasoning_aspect: localization, clinical_finding: pleural_effusion, question_length: 4, …}
//! ```

use std::sync::Arc;

use crate::text::{aspect, words};
use crate::vocab::Vocabulary;
use cxrlake_schemas::types::{key, text};
use datafusion::arrow::array::{Array, AsArray};
use datafusion::arrow::datatypes::{DataType, Field, Fields};
use datafusion::common::{Result, exec_err};
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDFImpl, Signature, Volatility,
};
use serde::Serialize;

use super::by_version;
use cxrlake_udfs::args::{list_strs, string_at, utf8_arg, utf8_list_arg};
use cxrlake_udfs::rows::encode_rows;

/// The type the function returns.
pub fn derived_type() -> DataType {
    DataType::Struct(Fields::from(vec![
        key("reasoning_aspect"),
        text("clinical_finding"),
        Field::new("question_length", DataType::Int32, false),
        Field::new("answer_length", DataType::Int32, false),
    ]))
}

#[derive(Serialize)]
struct Derived<'a> {
    reasoning_aspect: &'static str,
    clinical_finding: Option<&'a str>,
    question_length: i32,
    answer_length: i32,
}

/// The `givcxr_derive` scalar function over one vocabulary.
#[derive(Debug)]
pub struct GivcxrDeriveFunc {
    vocabulary: Arc<Vocabulary>,
    version: String,
    signature: Signature,
}

impl GivcxrDeriveFunc {
    /// The function over `vocabulary`.
    pub fn new(vocabulary: Arc<Vocabulary>) -> Self {
        Self {
            version: vocabulary.version().to_string(),
            vocabulary,
            signature: Signature::any(4, Volatility::Immutable),
        }
    }
}

by_version!(GivcxrDeriveFunc);

impl ScalarUDFImpl for GivcxrDeriveFunc {
    fn name(&self) -> &str {
        "givcxr_derive"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _args: &[DataType]) -> Result<DataType> {
        Ok(derived_type())
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let args = ColumnarValue::values_to_arrays(&args.args)?;
        if args.len() != 4 {
            return exec_err!(
                "givcxr_derive takes four arguments: question, answer, findings, abnormal"
            );
        }
        let questions = utf8_arg(&args, 0, "givcxr_derive")?;
        let answers = utf8_arg(&args, 1, "givcxr_derive")?;
        let findings = utf8_list_arg(&args, 2, "givcxr_derive")?;
        let Some(abnormal) = args[3].as_boolean_opt() else {
            return exec_err!("givcxr_derive: abnormal must be a boolean");
        };
        let rows: Vec<Derived> = (0..questions.len())
            .map(|row| {
                let question = string_at(&questions, row);
                let answer = string_at(&answers, row);
                let present = list_strs(&findings, row);
                let abnormal = !abnormal.is_null(row) && abnormal.value(row);
                Derived {
                    reasoning_aspect: aspect(question),
                    clinical_finding: self
                        .vocabulary
                        .clinical_finding(question, answer, &present, abnormal),
                    question_length: words(question) as i32,
                    answer_length: words(answer) as i32,
                }
            })
            .collect();
        Ok(ColumnarValue::Array(encode_rows(&rows, &derived_type())?))
    }
}
