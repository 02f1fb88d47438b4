//! `<task>(input)` offline: a flavour's generation task run by its deterministic offline
//! generator, with the same name and result as the LLM function (`attempts` 0, `generator` the
//! offline generator's id), so a stage's SQL does not depend on the backend.

use std::hash::{Hash, Hasher};
use std::sync::Arc;

use cxrlake_generate::GenerationTask;
use cxrlake_schemas::gemex::generated_type;
use datafusion::arrow::datatypes::{DataType, Field, Fields};
use datafusion::common::{Result, exec_err, internal_datafusion_err};
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDFImpl, Signature, Volatility,
};
use rayon::prelude::*;
use serde_json::Value;

use super::output::{Generated, misfit};
use crate::rows::{decode_rows, encode_rows};

/// An offline generation task as a scalar function named after the task.
#[derive(Debug)]
pub struct GenerateFunc {
    task: Arc<dyn GenerationTask>,
    record: Fields,
    return_type: DataType,
    signature: Signature,
}

impl GenerateFunc {
    /// The function running `task`'s offline generator, returning records of a struct of
    /// `record` fields (e.g. `cxrlake_schemas::gemex::qa_record_fields()`).
    pub fn new(task: Arc<dyn GenerationTask>, record: Vec<Field>) -> Self {
        Self {
            return_type: generated_type(record.clone()),
            record: record.into(),
            task,
            signature: Signature::any(1, Volatility::Immutable),
        }
    }

    /// The result of one input row. Records that do not fit the record type are a bug of the
    /// task's offline generator.
    fn generate(&self, input: &Value) -> Result<Generated> {
        let id = self.task.offline_id();
        match self.task.offline(input) {
            Ok(records) => match misfit(&records, &self.record) {
                Some(reason) => Err(internal_datafusion_err!(
                    "{}: offline generator {id}: {reason} (a bug of the task)",
                    self.task.name()
                )),
                None => Ok(Generated::records(records, 0, id)),
            },
            Err(reason) => Ok(Generated::failed(reason, None, 0, id)),
        }
    }
}

impl PartialEq for GenerateFunc {
    fn eq(&self, other: &Self) -> bool {
        self.task.name() == other.task.name()
            && self.task.offline_id() == other.task.offline_id()
            && self.return_type == other.return_type
    }
}

impl Eq for GenerateFunc {}

impl Hash for GenerateFunc {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.task.name().hash(state);
        self.task.offline_id().hash(state);
        self.return_type.hash(state);
    }
}

impl ScalarUDFImpl for GenerateFunc {
    fn name(&self) -> &str {
        self.task.name()
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _args: &[DataType]) -> Result<DataType> {
        Ok(self.return_type.clone())
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let name = self.task.name();
        let args = ColumnarValue::values_to_arrays(&args.args)?;
        let [input] = args.as_slice() else {
            return exec_err!("{name} takes one argument, the input row as a struct");
        };
        let inputs: Vec<Option<Value>> = decode_rows(input, name)?;
        let results = inputs
            .par_iter()
            .map(|input| input.as_ref().map(|input| self.generate(input)).transpose())
            .collect::<Result<Vec<Option<Generated>>>>()?;
        Ok(ColumnarValue::Array(encode_rows(
            &results,
            &self.return_type,
        )?))
    }
}
