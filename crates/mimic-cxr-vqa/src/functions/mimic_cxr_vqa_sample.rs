//! `mimic_cxr_vqa_sample(cell) -> list<struct<template_id, question>>`: the questions paper
//! 001's bank asks of one (study, category, label value) cell, `cell` being
//! `struct<study_id, category, value>` (value 1.0, 0.0, -1.0 or NULL for not mentioned): as
//! many as the bank's sampling gives the value (floor and a seeded hash for the fraction), in a
//! seeded hash order of the six phrasings (`crate::bank::Bank::sample`). An
//! unknown category or value is an error naming it.
//!
//! ```sql
//! SELECT mimic_cxr_vqa_sample(named_struct('study_id', 's1', 'category', 'edema', 'value', 1.0));
//! ```

use std::hash::{Hash, Hasher};
use std::sync::Arc;

use crate::bank::{Bank, LabelValue};
use cxrlake_schemas::types::{key, list_of};
use datafusion::arrow::datatypes::{DataType, Fields};
use datafusion::common::{Result, exec_err};
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDFImpl, Signature, Volatility,
};
use serde::{Deserialize, Serialize};

use cxrlake_udfs::rows::{decode_rows, encode_rows};

/// `list<struct<template_id, question>>`.
pub fn sampled_type() -> DataType {
    list_of(DataType::Struct(Fields::from(vec![
        key("template_id"),
        key("question"),
    ])))
}

#[derive(Deserialize)]
struct Cell {
    study_id: String,
    category: String,
    value: Option<f64>,
}

#[derive(Serialize)]
struct Sampled<'a> {
    template_id: String,
    question: &'a str,
}

/// The `mimic_cxr_vqa_sample` scalar function.
#[derive(Debug)]
pub struct MimicCxrVqaSampleFunc {
    bank: Arc<Bank>,
    seed: u64,
    paper_typos: bool,
    signature: Signature,
}

impl MimicCxrVqaSampleFunc {
    /// The function over this bank, seed and spelling.
    pub fn new(bank: Arc<Bank>, seed: u64, paper_typos: bool) -> Self {
        Self {
            bank,
            seed,
            paper_typos,
            signature: Signature::any(1, Volatility::Immutable),
        }
    }
}

impl PartialEq for MimicCxrVqaSampleFunc {
    fn eq(&self, other: &Self) -> bool {
        self.bank.version() == other.bank.version()
            && self.seed == other.seed
            && self.paper_typos == other.paper_typos
    }
}

impl Eq for MimicCxrVqaSampleFunc {}

impl Hash for MimicCxrVqaSampleFunc {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.bank.version().hash(state);
        self.seed.hash(state);
        self.paper_typos.hash(state);
    }
}

impl ScalarUDFImpl for MimicCxrVqaSampleFunc {
    fn name(&self) -> &str {
        "mimic_cxr_vqa_sample"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _args: &[DataType]) -> Result<DataType> {
        Ok(sampled_type())
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let args = ColumnarValue::values_to_arrays(&args.args)?;
        let cells: Vec<Option<Cell>> = decode_rows(&args[0], self.name())?;
        let mut rows: Vec<Vec<Sampled<'_>>> = Vec::with_capacity(cells.len());
        for cell in &cells {
            let Some(cell) = cell else {
                rows.push(Vec::new());
                continue;
            };
            let Some(category) = self.bank.category(&cell.category) else {
                return exec_err!(
                    "mimic_cxr_vqa_sample: unknown category '{}' (study {}); the bank's are: {}",
                    cell.category,
                    cell.study_id,
                    self.bank
                        .categories()
                        .iter()
                        .map(|c| c.id.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                );
            };
            let Some(value) = LabelValue::of(cell.value) else {
                return exec_err!(
                    "mimic_cxr_vqa_sample: label value {:?} of {} in study {} is not 1.0, 0.0, \
                     -1.0 or blank",
                    cell.value,
                    cell.category,
                    cell.study_id
                );
            };
            rows.push(
                self.bank
                    .sample(self.seed, &cell.study_id, category, value)
                    .into_iter()
                    .map(|index| Sampled {
                        template_id: category.template_id(index),
                        question: category.question(index, self.paper_typos),
                    })
                    .collect(),
            );
        }
        Ok(ColumnarValue::Array(encode_rows(&rows, &sampled_type())?))
    }
}
