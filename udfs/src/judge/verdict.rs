//! The struct the `judge_verdict` functions return, one per distinct judge input:
//! `struct<levels: list<utf8>, explanation: utf8, error: utf8>`.

use std::sync::Arc;

use cxrlake_judge::Verdict;
use cxrlake_schemas::types::{text, text_list};
use datafusion::arrow::array::{ArrayRef, ListBuilder, StringBuilder, StructArray};
use datafusion::arrow::datatypes::{DataType, Fields};

fn verdict_fields() -> Fields {
    Fields::from(vec![
        text_list("levels"),
        text("explanation"),
        text("error"),
    ])
}

/// The Arrow type of a verdict.
pub fn verdict_type() -> DataType {
    DataType::Struct(verdict_fields())
}

/// One verdict struct per input row.
pub(crate) fn verdicts_array(verdicts: &[Verdict]) -> ArrayRef {
    let fields = verdict_fields();
    let DataType::List(item) = fields[0].data_type() else {
        unreachable!("levels is a list")
    };
    let mut levels = ListBuilder::new(StringBuilder::new()).with_field(Arc::clone(item));
    let mut explanation = StringBuilder::new();
    let mut error = StringBuilder::new();
    for verdict in verdicts {
        for level in &verdict.levels {
            levels.values().append_option(*level);
        }
        levels.append(true);
        explanation.append_value(&verdict.explanation);
        error.append_option(verdict.error.as_deref());
    }
    let columns: Vec<ArrayRef> = vec![
        Arc::new(levels.finish()),
        Arc::new(explanation.finish()),
        Arc::new(error.finish()),
    ];
    Arc::new(StructArray::new(fields, columns, None))
}
