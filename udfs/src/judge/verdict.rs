//! What the `judge_verdicts` functions return, one list per group of distinct judge inputs:
//! `list<struct<content_hash: utf8, levels: list<utf8>, explanation: utf8, error: utf8>>`, one
//! verdict per input of the group, in the group's order.

use std::sync::Arc;

use cxrlake_judge::Verdict;
use cxrlake_schemas::types::{key, text, text_list};
use datafusion::arrow::array::{ArrayRef, ListArray, ListBuilder, StringBuilder, StructArray};
use datafusion::arrow::buffer::OffsetBuffer;
use datafusion::arrow::datatypes::{DataType, Field, Fields};

fn verdict_fields() -> Fields {
    Fields::from(vec![
        key("content_hash"),
        text_list("levels"),
        text("explanation"),
        text("error"),
    ])
}

/// The Arrow type of the verdicts of one group.
pub fn verdicts_type() -> DataType {
    DataType::List(Arc::new(Field::new(
        "item",
        DataType::Struct(verdict_fields()),
        true,
    )))
}

/// One list of `(content_hash, verdict)` per group row.
pub(crate) fn verdicts_array(groups: &[Vec<(&str, Verdict)>]) -> ArrayRef {
    let fields = verdict_fields();
    let DataType::List(item) = fields[1].data_type() else {
        unreachable!("levels is a list")
    };
    let mut hashes = StringBuilder::new();
    let mut levels = ListBuilder::new(StringBuilder::new()).with_field(Arc::clone(item));
    let mut explanation = StringBuilder::new();
    let mut error = StringBuilder::new();
    for (hash, verdict) in groups.iter().flatten() {
        hashes.append_value(hash);
        for level in &verdict.levels {
            levels.values().append_option(*level);
        }
        levels.append(true);
        explanation.append_value(&verdict.explanation);
        error.append_option(verdict.error.as_deref());
    }
    let columns: Vec<ArrayRef> = vec![
        Arc::new(hashes.finish()),
        Arc::new(levels.finish()),
        Arc::new(explanation.finish()),
        Arc::new(error.finish()),
    ];
    let DataType::List(list_item) = verdicts_type() else {
        unreachable!("verdicts_type is a list")
    };
    Arc::new(ListArray::new(
        list_item,
        OffsetBuffer::from_lengths(groups.iter().map(Vec::len)),
        Arc::new(StructArray::new(fields, columns, None)),
        None,
    ))
}
