//! The arguments of `judge_verdicts(criterion, report, content_hashes, inputs, items, parts)`:
//! one row per group of distinct inputs of one study and criterion (`sql/judge.sql`, step
//! `groups`), its lists aligned and ordered by content hash.

use cxrlake_judge::Criterion;
use datafusion::arrow::array::{Array, ArrayRef, AsArray};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Field, Int32Type};
use datafusion::common::{Result, exec_err};

use crate::args::{list_strs, string_at, utf8_arg, utf8_list_arg};

/// The columns of a batch of groups.
pub(crate) struct Groups {
    criteria: ArrayRef,
    reports: ArrayRef,
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
    /// The content hashes of the group's inputs.
    pub hashes: Vec<&'a str>,
    /// The single-item inputs (the rendered prompt of the LLM judge).
    pub inputs: Vec<&'a str>,
    /// The blocks of a batched prompt (empty strings for the other judges).
    pub items: Vec<&'a str>,
    /// The answer parts each input rates.
    pub parts: Vec<usize>,
}

impl Groups {
    /// Reads the six arguments; `function` names errors.
    pub(crate) fn new(args: &[ArrayRef], function: &str) -> Result<Self> {
        if args.len() != 6 {
            return exec_err!(
                "{function}(criterion, report, content_hashes, inputs, items, parts) takes 6 \
                 arguments"
            );
        }
        let int_list = DataType::List(std::sync::Arc::new(Field::new(
            "item",
            DataType::Int32,
            true,
        )));
        Ok(Groups {
            criteria: utf8_arg(args, 0, function)?,
            reports: utf8_arg(args, 1, function)?,
            hashes: utf8_list_arg(args, 2, function)?,
            inputs: utf8_list_arg(args, 3, function)?,
            items: utf8_list_arg(args, 4, function)?,
            parts: cast(&args[5], &int_list)?,
        })
    }

    /// Number of groups.
    pub(crate) fn len(&self) -> usize {
        self.criteria.len()
    }

    /// Group `row`.
    pub(crate) fn group(&self, row: usize) -> Group<'_> {
        let name = string_at(&self.criteria, row);
        let hashes = list_strs(&self.hashes, row);
        let parts = self.parts.as_list::<i32>();
        let counts: Vec<usize> = if parts.is_null(row) {
            Vec::new()
        } else {
            let values = parts.value(row);
            let values = values.as_primitive::<Int32Type>();
            (0..values.len())
                .map(|i| {
                    if values.is_valid(i) {
                        values.value(i).max(0) as usize
                    } else {
                        0
                    }
                })
                .collect()
        };
        let mut items = list_strs(&self.items, row);
        items.resize(hashes.len(), "");
        let mut inputs = list_strs(&self.inputs, row);
        inputs.resize(hashes.len(), "");
        let mut counts = counts;
        counts.resize(hashes.len(), 0);
        Group {
            criterion: Criterion::from_key(name).ok_or(name),
            report: string_at(&self.reports, row),
            hashes,
            inputs,
            items,
            parts: counts,
        }
    }
}
