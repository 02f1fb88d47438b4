//! `judge_requests(question_strategy, question, answers, report)`: per QA pair, what the judge
//! reads for each of the five criteria and its content hash, as
//! `list<struct<criterion, content_hash, input, item, parts>>` (`parts`: the answer parts rated;
//! `item`: a batched LLM judge's block of the item in its batched prompt, else empty).
//! Equal hashes are judged once (`sql/judge.sql`) and joined back by hash (`sql/grade.sql`).
//!
//! `judge_hashes(question_strategy, question, answers, report)`, its narrow form, gives only
//! `list<struct<criterion, content_hash>>`: what grade joins verdicts by, without copying the
//! inputs it does not read.

use std::sync::Arc;

use cxrlake_judge::{Criterion, Judge, QaItem, Request};
use cxrlake_schemas::types::key;
use datafusion::arrow::array::{ArrayRef, Int32Builder, ListArray, StringBuilder, StructArray};
use datafusion::arrow::buffer::OffsetBuffer;
use datafusion::arrow::datatypes::{DataType, Field, Fields};
use datafusion::common::{Result, exec_err};
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDFImpl, Signature, Volatility,
};
use rayon::prelude::*;

use super::answers::Answers;
use crate::args::{Texts, string_at, utf8_arg};

fn request_fields() -> Fields {
    Fields::from(vec![
        key("criterion"),
        key("content_hash"),
        key("input"),
        key("item"),
        Field::new("parts", DataType::Int32, false),
    ])
}

/// The Arrow type `judge_requests` returns.
pub fn requests_type() -> DataType {
    DataType::List(Arc::new(Field::new(
        "item",
        DataType::Struct(request_fields()),
        true,
    )))
}

fn hash_fields() -> Fields {
    Fields::from(vec![key("criterion"), key("content_hash")])
}

/// The Arrow type `judge_hashes` returns.
pub fn hashes_type() -> DataType {
    DataType::List(Arc::new(Field::new(
        "item",
        DataType::Struct(hash_fields()),
        true,
    )))
}

/// The `judge_requests` scalar function of one judge, or its narrow form `judge_hashes`.
#[derive(Debug)]
pub struct JudgeRequestsFunc {
    judge: Arc<Judge>,
    id: String,
    cache_id: String,
    /// `judge_hashes`: criteria and content hashes only.
    narrow: bool,
    signature: Signature,
}

impl JudgeRequestsFunc {
    /// `judge_requests` of `judge`.
    pub fn new(judge: Arc<Judge>) -> Self {
        Self {
            id: judge.id(),
            cache_id: judge.cache_id(),
            judge,
            narrow: false,
            signature: Signature::any(4, Volatility::Immutable),
        }
    }

    /// `judge_hashes` of `judge`.
    pub fn hashes(judge: Arc<Judge>) -> Self {
        Self {
            narrow: true,
            ..Self::new(judge)
        }
    }
}

impl PartialEq for JudgeRequestsFunc {
    fn eq(&self, other: &Self) -> bool {
        (&self.id, self.narrow) == (&other.id, other.narrow)
    }
}

impl Eq for JudgeRequestsFunc {}

impl std::hash::Hash for JudgeRequestsFunc {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        (&self.id, self.narrow).hash(state);
    }
}

impl ScalarUDFImpl for JudgeRequestsFunc {
    fn name(&self) -> &str {
        if self.narrow {
            "judge_hashes"
        } else {
            "judge_requests"
        }
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _args: &[DataType]) -> Result<DataType> {
        Ok(if self.narrow {
            hashes_type()
        } else {
            requests_type()
        })
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let args = ColumnarValue::values_to_arrays(&args.args)?;
        let (requests, parts) = requests_of(&self.judge, &self.cache_id, &args, self.name())?;
        Ok(ColumnarValue::Array(if self.narrow {
            hashes_array(&requests)
        } else {
            requests_array(&requests, &parts)
        }))
    }
}

/// Per row of `args` (`question_strategy, question, answers, report`), the requests of the five
/// criteria of `judge` under `cache_id`, and the number of answer parts.
pub(super) fn requests_of(
    judge: &Judge,
    cache_id: &str,
    args: &[ArrayRef],
    name: &str,
) -> Result<(Vec<Vec<Request>>, Vec<i32>)> {
    if args.len() != 4 {
        return exec_err!("{name}(question_strategy, question, answers, report) takes 4 arguments");
    }
    let strategies = utf8_arg(args, 0, name)?;
    let questions = utf8_arg(args, 1, name)?;
    let answers = Answers::new(&args[2], name)?;
    let reports = Texts::of(args, 3, name)?;
    let rows = args[0].len();
    // Questions are independent: build and hash their requests on every core.
    let requests: Vec<Vec<Request>> = (0..rows)
        .into_par_iter()
        .map(|row| {
            let report = reports.get(row);
            let item = QaItem {
                strategy: string_at(&strategies, row),
                question: string_at(&questions, row),
                parts: answers.parts(row),
                report: (!report.is_empty()).then_some(report),
            };
            Criterion::ALL
                .iter()
                .map(|&criterion| judge.request(cache_id, criterion, &item))
                .collect()
        })
        .collect();
    let parts = (0..rows)
        .map(|row| answers.range(row).len() as i32)
        .collect();
    Ok((requests, parts))
}

fn hashes_array(rows: &[Vec<Request>]) -> ArrayRef {
    let mut criterion = StringBuilder::new();
    let mut hash = StringBuilder::new();
    for request in rows.iter().flatten() {
        criterion.append_value(request.criterion.key());
        hash.append_value(&request.content_hash);
    }
    let values = StructArray::new(
        hash_fields(),
        vec![Arc::new(criterion.finish()), Arc::new(hash.finish())],
        None,
    );
    per_row(rows, hashes_type(), values)
}

/// `values` as a list of `list_type`, one list of each row's requests.
fn per_row(rows: &[Vec<Request>], list_type: DataType, values: StructArray) -> ArrayRef {
    let DataType::List(item) = list_type else {
        unreachable!("the requests' types are lists")
    };
    Arc::new(ListArray::new(
        item,
        OffsetBuffer::from_lengths(rows.iter().map(Vec::len)),
        Arc::new(values),
        None,
    ))
}

fn requests_array(rows: &[Vec<Request>], parts: &[i32]) -> ArrayRef {
    let mut criterion = StringBuilder::new();
    let mut hash = StringBuilder::new();
    let mut input = StringBuilder::new();
    let mut item = StringBuilder::new();
    let mut rated = Int32Builder::new();
    for (requests, &parts) in rows.iter().zip(parts) {
        for request in requests {
            criterion.append_value(request.criterion.key());
            hash.append_value(&request.content_hash);
            input.append_value(&request.input);
            item.append_value(&request.item);
            rated.append_value(if request.criterion.per_part() {
                parts
            } else {
                1
            });
        }
    }
    let values = StructArray::new(
        request_fields(),
        vec![
            Arc::new(criterion.finish()),
            Arc::new(hash.finish()),
            Arc::new(input.finish()),
            Arc::new(item.finish()),
            Arc::new(rated.finish()),
        ],
        None,
    );
    per_row(rows, requests_type(), values)
}
