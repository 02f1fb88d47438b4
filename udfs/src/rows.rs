//! Row conversion between Arrow values and Rust structs through JSON, for functions whose
//! inputs or outputs are nested (lists of structs): `decode_rows` reads each row of an array
//! into a `Deserialize` type, `encode_rows` builds an array of any type from `Serialize` values.

use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, RecordBatch, new_empty_array};
use datafusion::arrow::compute::concat;
use datafusion::arrow::datatypes::{DataType, Field, Schema};
use datafusion::common::{Result, exec_datafusion_err};
use rayon::prelude::*;
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
pub fn decode_rows<T: DeserializeOwned + Send>(
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
    let lines: Vec<&[u8]> = buffer
        .split(|&b| b == b'\n')
        .filter(|l| !l.is_empty())
        .collect();
    // Parsing dominates; rows are independent.
    let rows = lines
        .par_iter()
        .enumerate()
        .map(|(index, line)| {
            serde_json::from_slice::<Wrapped<T>>(line)
                .map(|row| row.v)
                .map_err(|e| exec_datafusion_err!("{function}: row {index}: {e}"))
        })
        .collect::<Result<Vec<_>>>()?;
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
pub fn encode_rows<S: Serialize + Sync>(rows: &[S], data_type: &DataType) -> Result<ArrayRef> {
    if rows.is_empty() {
        return Ok(new_empty_array(data_type));
    }
    // Encode slices on every core, then concatenate.
    let per_thread = rows.len().div_ceil(rayon::current_num_threads()).max(64);
    let parts = rows
        .par_chunks(per_thread)
        .map(|chunk| encode_slice(chunk, data_type))
        .collect::<Result<Vec<_>>>()?;
    if parts.len() == 1 {
        return Ok(parts
            .into_iter()
            .next()
            .unwrap_or_else(|| new_empty_array(data_type)));
    }
    let refs: Vec<&dyn Array> = parts.iter().map(|a| a.as_ref()).collect();
    Ok(concat(&refs)?)
}

fn encode_slice<S: Serialize>(rows: &[S], data_type: &DataType) -> Result<ArrayRef> {
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
