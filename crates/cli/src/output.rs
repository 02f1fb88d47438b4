//! Renders query results as a terminal table, CSV, JSON (an array of objects) or Parquet.

use std::fs::File;
use std::io::Write;
use std::path::Path;

use std::sync::Arc;

use arrow::array::RecordBatch;
use arrow::compute::cast;
use arrow::datatypes::{DataType, FieldRef, Fields, Schema, SchemaRef};
use clap::ValueEnum;
use parquet::arrow::ArrowWriter;

use crate::error::{CliError, Result};

/// Output formats of `cxrlake sql`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// A table for the terminal.
    Table,
    /// Comma-separated values with a header.
    Csv,
    /// A JSON array of objects.
    Json,
    /// Apache Parquet (needs --out).
    Parquet,
}

fn output_error(path: &Path, source: impl std::error::Error + Send + Sync + 'static) -> CliError {
    CliError::Output {
        path: path.to_path_buf(),
        source: Box::new(source),
    }
}

/// Writes `batches` in `format` to `out` (`path` names it in errors).
pub fn write_batches(
    format: Format,
    schema: SchemaRef,
    batches: &[RecordBatch],
    out: &mut dyn Write,
    path: &Path,
) -> Result<()> {
    match format {
        Format::Table => {
            let table = arrow::util::pretty::pretty_format_batches(batches)
                .map_err(|e| output_error(path, e))?;
            writeln!(out, "{table}").map_err(|e| output_error(path, e))?;
            let rows: usize = batches.iter().map(RecordBatch::num_rows).sum();
            writeln!(out, "{rows} row{}", if rows == 1 { "" } else { "s" })
                .map_err(|e| output_error(path, e))
        }
        Format::Csv => {
            let mut writer = arrow::csv::WriterBuilder::new()
                .with_header(true)
                .build(out);
            for batch in batches {
                writer.write(batch).map_err(|e| output_error(path, e))?;
            }
            Ok(())
        }
        Format::Json => {
            let mut writer = arrow::json::ArrayWriter::new(out);
            for batch in batches {
                writer.write(batch).map_err(|e| output_error(path, e))?;
            }
            writer.finish().map_err(|e| output_error(path, e))?;
            writeln!(writer.into_inner()).map_err(|e| output_error(path, e))
        }
        Format::Parquet => Err(CliError::Usage(format!(
            "--format parquet writes a file: add --out FILE.parquet (schema has {} columns)",
            schema.fields().len()
        ))),
    }
}

/// The type readers outside Arrow-rs understand: view types become their plain forms
/// (pandas cannot convert `list<string_view>`), recursively through lists and structs.
fn portable_type(data_type: &DataType) -> DataType {
    let field = |f: &FieldRef| {
        Arc::new(
            f.as_ref()
                .clone()
                .with_data_type(portable_type(f.data_type())),
        )
    };
    match data_type {
        DataType::Utf8View => DataType::Utf8,
        DataType::BinaryView => DataType::Binary,
        DataType::List(item) | DataType::ListView(item) => DataType::List(field(item)),
        DataType::LargeList(item) | DataType::LargeListView(item) => {
            DataType::LargeList(field(item))
        }
        DataType::FixedSizeList(item, size) => DataType::FixedSizeList(field(item), *size),
        DataType::Struct(fields) => DataType::Struct(fields.iter().map(field).collect::<Fields>()),
        other => other.clone(),
    }
}

/// Writes `batches` as one Parquet file at `path`, with portable types (see [`portable_type`]).
pub fn write_parquet(schema: SchemaRef, batches: &[RecordBatch], path: &Path) -> Result<()> {
    let portable: SchemaRef = Arc::new(Schema::new_with_metadata(
        schema
            .fields()
            .iter()
            .map(|f| {
                f.as_ref()
                    .clone()
                    .with_data_type(portable_type(f.data_type()))
            })
            .collect::<Vec<_>>(),
        schema.metadata().clone(),
    ));
    let file = File::create(path).map_err(|e| output_error(path, e))?;
    let mut writer =
        ArrowWriter::try_new(file, portable.clone(), None).map_err(|e| output_error(path, e))?;
    for batch in batches {
        let columns = batch
            .columns()
            .iter()
            .zip(portable.fields())
            .map(|(column, field)| cast(column, field.data_type()))
            .collect::<std::result::Result<Vec<_>, _>>()
            .map_err(|e| output_error(path, e))?;
        let batch =
            RecordBatch::try_new(portable.clone(), columns).map_err(|e| output_error(path, e))?;
        writer.write(&batch).map_err(|e| output_error(path, e))?;
    }
    writer.close().map_err(|e| output_error(path, e))?;
    Ok(())
}
