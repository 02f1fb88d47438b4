//! The answer parts of `qa.answers` as the judge and the grade read them, borrowed from the
//! Arrow arrays (the flat `list<struct>` of `schemas::pipeline::answer_part_fields`).

use std::ops::Range;

use cxrlake_judge::Part;
use datafusion::arrow::array::{
    Array, ArrayRef, AsArray, BooleanArray, ListArray, StringArray, StructArray,
};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::DataType;
use datafusion::common::{Result, exec_datafusion_err};

/// The columns of the answer parts of a batch of questions.
#[derive(Debug)]
pub(crate) struct Answers {
    list: ListArray,
    answer_type: StringArray,
    text: StringArray,
    positiveness: StringArray,
    from_report: BooleanArray,
    obs_ids: Option<ListArray>,
}

/// Child `name` of `parts` as plain UTF-8.
fn utf8_child(parts: &StructArray, name: &str, function: &str) -> Result<StringArray> {
    let child = parts
        .column_by_name(name)
        .ok_or_else(|| exec_datafusion_err!("{function}: answer parts have no field {name}"))?;
    Ok(cast(child, &DataType::Utf8)?.as_string::<i32>().clone())
}

impl Answers {
    /// Reads `array`, a `qa.answers` column.
    pub(crate) fn new(array: &ArrayRef, function: &str) -> Result<Self> {
        let list = array
            .as_list_opt::<i32>()
            .ok_or_else(|| {
                exec_datafusion_err!(
                    "{function}: answers must be a list, not {}",
                    array.data_type()
                )
            })?
            .clone();
        let parts = list
            .values()
            .as_struct_opt()
            .ok_or_else(|| exec_datafusion_err!("{function}: answers must be a list of structs"))?;
        let from_report = parts
            .column_by_name("from_report")
            .and_then(|c| c.as_boolean_opt())
            .ok_or_else(|| {
                exec_datafusion_err!("{function}: answer parts need a boolean from_report")
            })?
            .clone();
        Ok(Answers {
            answer_type: utf8_child(parts, "answer_type", function)?,
            text: utf8_child(parts, "text", function)?,
            positiveness: utf8_child(parts, "positiveness", function)?,
            from_report,
            obs_ids: parts
                .column_by_name("obs_ids")
                .and_then(|c| c.as_list_opt::<i32>())
                .cloned(),
            list,
        })
    }

    /// The answers list itself.
    pub(crate) fn list(&self) -> &ListArray {
        &self.list
    }

    /// Indices of row `row`'s parts in the part arrays (a NULL row's range is empty as written).
    pub(crate) fn range(&self, row: usize) -> Range<usize> {
        let offsets = self.list.value_offsets();
        offsets[row] as usize..offsets[row + 1] as usize
    }

    /// `answer_type` of part `i`.
    pub(crate) fn answer_type(&self, i: usize) -> &str {
        text_at(&self.answer_type, i).unwrap_or("")
    }

    /// The parts of row `row`, in list order.
    pub(crate) fn parts(&self, row: usize) -> Vec<Part<'_>> {
        self.range(row)
            .map(|i| Part {
                answer_type: self.answer_type(i),
                text: text_at(&self.text, i).unwrap_or(""),
                from_report: self.from_report.is_valid(i) && self.from_report.value(i),
                positiveness: text_at(&self.positiveness, i),
                grounded: self
                    .obs_ids
                    .as_ref()
                    .is_some_and(|ids| ids.is_valid(i) && ids.value_length(i) > 0),
            })
            .collect()
    }
}

/// The string at `i`, `None` when NULL.
pub(crate) fn text_at(array: &StringArray, i: usize) -> Option<&str> {
    array.is_valid(i).then(|| array.value(i))
}
