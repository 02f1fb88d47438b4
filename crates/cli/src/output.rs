//! Renders query results as a terminal table, CSV, JSON (an array of objects) or Parquet.

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};

use arrow::array::RecordBatch;
use arrow::datatypes::SchemaRef;
use clap::ValueEnum;
use cxrlake_export::release::{portable_batch, portable_schema};
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

/// Writes `batches` as one Parquet file at `path`, with types pandas and duckdb read (no view
/// types: [`cxrlake_export::release::portable_type`]).
pub fn write_parquet(schema: SchemaRef, batches: &[RecordBatch], path: &Path) -> Result<()> {
    let portable = portable_schema(&schema);
    let file = File::create(path).map_err(|e| output_error(path, e))?;
    let mut writer =
        ArrowWriter::try_new(file, portable.clone(), None).map_err(|e| output_error(path, e))?;
    for batch in batches {
        let batch = portable_batch(batch, &portable).map_err(|e| output_error(path, e))?;
        writer.write(&batch).map_err(|e| output_error(path, e))?;
    }
    writer.close().map_err(|e| output_error(path, e))?;
    Ok(())
}

/// Writes one line of user-facing output.
pub fn say(out: &mut dyn Write, text: std::fmt::Arguments<'_>) -> Result<()> {
    out.write_fmt(text)
        .and_then(|()| out.write_all(b"\n"))
        .map_err(|e| CliError::Output {
            path: PathBuf::from("stdout"),
            source: Box::new(e),
        })
}
