//! The arguments of `judge_verdicts(criterion, report, items)`: one row per group of distinct
//! inputs of one study and criterion (`sql/judge.sql`, step `groups`), `items` a list of
//! `struct<content_hash, input, item, parts>`. The group is read in content-hash order, so what
//! the judge sees does not depend on the order in which the plan aggregated it.

use cxrlake_judge::Criterion;
use datafusion::arrow::array::{Array, ArrayRef, AsArray, ListArray, StructArray};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Int32Type};
use datafusion::common::{Result, exec_err};

use crate::args::{Texts, string_at, utf8_arg};

/// The columns of a batch of groups.
pub(crate) struct Groups {
    criteria: ArrayRef,
    reports: Texts,
    /// `items`, whose offsets say which of the fields' values are a group's.
    list: ListArray,
    hashes: ArrayRef,
    inputs: ArrayRef,
    items: ArrayRef,
    parts: ArrayRef,
}

/// One group, borrowed from [`Groups`].
pub(crate) struct Group<'a> {
    /// The criterion (`Err`: the unknown name given).
    pub criterion: std::result::Result<Criterion, &'a str>,
    /// The study's report (empty when it has none).
    pub report: &'a str,
    /// The content hashes of the group's inputs, in order.
    pub hashes: Vec<&'a str>,
    /// The single-item inputs (the rendered prompt of the LLM judge).
    pub inputs: Vec<&'a str>,
    /// The blocks of a batched prompt (empty strings for the other judges).
    pub items: Vec<&'a str>,
    /// The answer parts each input rates.
    pub parts: Vec<usize>,
}

/// Field `name` of `values` cast to `to`; `function` names errors.
fn field(values: &StructArray, name: &str, to: &DataType, function: &str) -> Result<ArrayRef> {
    match values.column_by_name(name) {
        Some(column) => Ok(cast(column, to)?),
        None => exec_err!("{function}: the items have no field `{name}`"),
    }
}

impl Groups {
    /// Reads the three arguments; `function` names errors.
    pub(crate) fn new(args: &[ArrayRef], function: &str) -> Result<Self> {
        if args.len() != 3 {
            return exec_err!(
                "{function}(criterion, report, items) takes 3 arguments, items a list of \
                 struct<content_hash, input, item, parts>"
            );
        }
        let Some(list) = args[2].as_list_opt::<i32>() else {
            return exec_err!(
                "{function}: items must be a list of struct<content_hash, input, item, parts>, \
                 not {}",
                args[2].data_type()
            );
        };
        let Some(values) = list.values().as_struct_opt() else {
            return exec_err!("{function}: items must be a list of structs");
        };
        Ok(Groups {
            criteria: utf8_arg(args, 0, function)?,
            reports: Texts::of(args, 1, function)?,
            list: list.clone(),
            hashes: field(values, "content_hash", &DataType::Utf8, function)?,
            inputs: field(values, "input", &DataType::Utf8, function)?,
            items: field(values, "item", &DataType::Utf8, function)?,
            parts: field(values, "parts", &DataType::Int32, function)?,
        })
    }

    /// Number of groups.
    pub(crate) fn len(&self) -> usize {
        self.criteria.len()
    }

    /// Group `row`, its inputs in content-hash order.
    pub(crate) fn group(&self, row: usize) -> Group<'_> {
        let name = string_at(&self.criteria, row);
        let offsets = self.list.value_offsets();
        let mut members: Vec<usize> = if self.list.is_valid(row) {
            (offsets[row] as usize..offsets[row + 1] as usize).collect()
        } else {
            Vec::new()
        };
        members.sort_by_key(|&i| string_at(&self.hashes, i));
        let parts = self.parts.as_primitive::<Int32Type>();
        Group {
            criterion: Criterion::from_key(name).ok_or(name),
            report: self.reports.get(row),
            hashes: members
                .iter()
                .map(|&i| string_at(&self.hashes, i))
                .collect(),
            inputs: members
                .iter()
                .map(|&i| string_at(&self.inputs, i))
                .collect(),
            items: members.iter().map(|&i| string_at(&self.items, i)).collect(),
            parts: members
                .iter()
                .map(|&i| {
                    if parts.is_valid(i) {
                        parts.value(i).max(0) as usize
                    } else {
                        0
                    }
                })
                .collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use datafusion::arrow::array::{Int32Array, ListArray, StringArray};
    use datafusion::arrow::buffer::OffsetBuffer;
    use datafusion::arrow::datatypes::{Field, Fields};

    use super::*;

    fn strings(values: &[&str]) -> ArrayRef {
        Arc::new(StringArray::from(values.to_vec()))
    }

    #[test]
    fn a_group_is_read_in_content_hash_order_with_its_fields_aligned() -> Result<()> {
        let fields = Fields::from(vec![
            Field::new("content_hash", DataType::Utf8, true),
            Field::new("input", DataType::Utf8, true),
            Field::new("item", DataType::Utf8, true),
            Field::new("parts", DataType::Int32, true),
        ]);
        let values = StructArray::new(
            fields.clone(),
            vec![
                strings(&["c", "a", "b", "z"]),
                strings(&["input c", "input a", "input b", "input z"]),
                strings(&["", "", "", ""]),
                Arc::new(Int32Array::from(vec![3, 1, 2, 9])),
            ],
            None,
        );
        let items: ArrayRef = Arc::new(ListArray::new(
            Arc::new(Field::new("item", DataType::Struct(fields), true)),
            OffsetBuffer::from_lengths([3, 1]),
            Arc::new(values),
            None,
        ));
        let args = [
            strings(&["relevance", "no such criterion"]),
            strings(&["the report", ""]),
            items,
        ];
        let groups = Groups::new(&args, "judge_verdicts")?;
        assert_eq!(groups.len(), 2);
        let first = groups.group(0);
        assert_eq!(first.criterion, Ok(Criterion::Relevance));
        assert_eq!(first.report, "the report");
        assert_eq!(first.hashes, ["a", "b", "c"]);
        assert_eq!(first.inputs, ["input a", "input b", "input c"]);
        assert_eq!(first.parts, [1, 2, 3]);
        let second = groups.group(1);
        assert_eq!(second.criterion, Err("no such criterion"));
        assert_eq!(second.hashes, ["z"]);
        assert_eq!(second.parts, [9]);
        assert!(Groups::new(&args[..2], "judge_verdicts").is_err());
        Ok(())
    }
}
