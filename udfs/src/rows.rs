//! Row conversion between Arrow values and Rust structs through JSON, for functions whose
//! inputs or outputs are nested (lists of structs): `decode_rows` reads each row of an array
//! into a `Deserialize` type, `encode_rows` builds an array of any type from `Serialize` values.

use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, RecordBatch, new_empty_array};
use datafusion::arrow::datatypes::{DataType, Field, Schema};
use datafusion::common::{Result, exec_datafusion_err};
use serde::Serialize;
use serde::de::DeserializeOwned;

#[derive(serde::Deserialize)]
struct Wrapped<T> {
    v: Option<T>,
}

#[derive(Serialize)]
struct WrappedRef<'a, T> {
    v: &'a T,
}

/// Each row of `array` as a `T` (`None` for NULL rows); `function` names errors.
pub(crate) fn decode_rows<T: DeserializeOwned>(
    array: &ArrayRef,
    function: &str,
) -> Result<Vec<Option<T>>> {
    let field = Field::new("v", array.data_type().clone(), true);
    let batch = RecordBatch::try_new(Arc::new(Schema::new(vec![field])), vec![array.clone()])?;
    let mut buffer = Vec::with_capacity(array.len() * 256);
    {
        let mut writer = arrow_json::LineDelimitedWriter::new(&mut buffer);
        writer.write(&batch)?;
        writer.finish()?;
    }
    let mut rows = Vec::with_capacity(array.len());
    for (index, line) in buffer
        .split(|&b| b == b'\n')
        .filter(|l| !l.is_empty())
        .enumerate()
    {
        let row: Wrapped<T> = serde_json::from_slice(line)
            .map_err(|e| exec_datafusion_err!("{function}: row {index}: {e}"))?;
        rows.push(row.v);
    }
    if rows.len() != array.len() {
        return Err(exec_datafusion_err!(
            "{function}: decoded {} rows of {}",
            rows.len(),
            array.len()
        ));
    }
    Ok(rows)
}

/// An array of `data_type` with one row per value.
pub(crate) fn encode_rows<S: Serialize>(rows: &[S], data_type: &DataType) -> Result<ArrayRef> {
    if rows.is_empty() {
        return Ok(new_empty_array(data_type));
    }
    let schema = Arc::new(Schema::new(vec![Field::new("v", data_type.clone(), true)]));
    let mut decoder = arrow_json::ReaderBuilder::new(schema)
        .with_batch_size(rows.len())
        .build_decoder()?;
    let wrapped: Vec<_> = rows.iter().map(|v| WrappedRef { v }).collect();
    decoder.serialize(&wrapped)?;
    match decoder.flush()? {
        Some(batch) => Ok(batch.column(0).clone()),
        None => Ok(new_empty_array(data_type)),
    }
}
