//! Release tables as files: a query's result streamed into Parquet (types pandas and duckdb
//! read: no view types) and, for the flat metadata tables, also into `.csv.gz`, laid out as
//! pandas writes a frame with a MultiIndex.
//!
//! ```text
//! query ─stream─▶ batch ─portable types─▶ Parquet (data columns, then index columns,
//!                                          schema metadata `pandas` naming the index)
//!                              └─index first─▶ CSV ─gzip─▶ .csv.gz (pandas' to_csv order)
//! ```
//!
//! Files are written under a hidden temporary name and renamed when complete.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow::datatypes::{DataType, Schema};
use cxrlake_lake::{portable_batch, portable_schema};
use datafusion::dataframe::DataFrame;
use datafusion::execution::SendableRecordBatchStream;
use flate2::Compression;
use flate2::write::GzEncoder;
use futures::StreamExt;
use parquet::arrow::ArrowWriter;
use parquet::basic::Compression as ParquetCompression;
use parquet::file::properties::WriterProperties;
use serde_json::json;

use super::csv;
use crate::error::{ExportError, Result};
use crate::files::{DEFLATE_LEVEL, hidden_temp};

/// The columns pandas reads back as the index of a metadata table, in index order.
pub(crate) const INDEX_COLUMNS: [&str; 5] = [
    "patient_id",
    "study_id",
    "question_id",
    "answer_id",
    "image_id",
];

/// pandas' dtype names of an Arrow type: `(pandas_type, numpy_type)`.
fn pandas_types(data_type: &DataType) -> (&'static str, &'static str) {
    match data_type {
        DataType::Utf8 | DataType::LargeUtf8 => ("unicode", "object"),
        DataType::Boolean => ("bool", "bool"),
        DataType::Int8 => ("int8", "int8"),
        DataType::Int16 => ("int16", "int16"),
        DataType::Int32 => ("int32", "int32"),
        DataType::Int64 => ("int64", "int64"),
        DataType::Float32 => ("float32", "float32"),
        DataType::Float64 => ("float64", "float64"),
        _ => ("object", "object"),
    }
}

/// The `pandas` schema metadata of a frame whose index is the `index` columns (stored last).
fn pandas_metadata(schema: &Schema, index: &[String]) -> String {
    let columns: Vec<_> = schema
        .fields()
        .iter()
        .map(|field| {
            let (pandas_type, numpy_type) = pandas_types(field.data_type());
            json!({
                "name": field.name(), "field_name": field.name(),
                "pandas_type": pandas_type, "numpy_type": numpy_type, "metadata": null
            })
        })
        .collect();
    json!({
        "index_columns": index,
        "column_indexes": [{
            "name": null, "field_name": null, "pandas_type": "unicode",
            "numpy_type": "object", "metadata": {"encoding": "UTF-8"}
        }],
        "columns": columns,
        "creator": {"library": "cxrlake", "version": env!("CARGO_PKG_VERSION")},
        "pandas_version": "2.2.3"
    })
    .to_string()
}

/// A file being written under a hidden temporary name.
struct Pending {
    temp: PathBuf,
    target: PathBuf,
}

impl Pending {
    fn new(target: &Path) -> Result<Self> {
        Ok(Self {
            temp: hidden_temp(target)?,
            target: target.to_path_buf(),
        })
    }

    fn create(&self) -> Result<BufWriter<File>> {
        File::create(&self.temp)
            .map(BufWriter::new)
            .map_err(|source| ExportError::Io {
                path: self.temp.clone(),
                source,
            })
    }

    fn commit(self) -> Result<u64> {
        std::fs::rename(&self.temp, &self.target).map_err(|source| ExportError::Io {
            path: self.target.clone(),
            source,
        })?;
        let size = std::fs::metadata(&self.target).map_or(0, |m| m.len());
        std::mem::forget(self);
        Ok(size)
    }
}

impl Drop for Pending {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.temp);
    }
}

/// What writing a table produced.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TableFiles {
    /// Rows written.
    pub rows: u64,
    /// Bytes on disk (every file written).
    pub bytes: u64,
}

fn parquet_error(path: &Path) -> impl Fn(parquet::errors::ParquetError) -> ExportError + '_ {
    move |source| ExportError::Parquet {
        path: path.to_path_buf(),
        source,
    }
}

fn io_error(path: &Path) -> impl Fn(std::io::Error) -> ExportError + '_ {
    move |source| ExportError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// Streams `frame` into `parquet` and, with `csv`, into a gzipped CSV too. With `pandas_index`,
/// the frame's columns named in [`INDEX_COLUMNS`] (which its query puts last) are the pandas
/// index: recorded in the Parquet file's `pandas` metadata and written first in the CSV.
pub(crate) async fn write_table(
    frame: DataFrame,
    parquet: &Path,
    csv: Option<&Path>,
    pandas_index: bool,
) -> Result<TableFiles> {
    let rows = crate::scan::ordered_stream(frame).await?;
    write_stream(rows, parquet, csv, pandas_index).await
}

/// [`write_table`] of a query already started.
pub(crate) async fn write_stream(
    mut stream: SendableRecordBatchStream,
    parquet: &Path,
    csv: Option<&Path>,
    pandas_index: bool,
) -> Result<TableFiles> {
    let mut schema = portable_schema(&stream.schema());
    let index: Vec<String> = schema
        .fields()
        .iter()
        .map(|f| f.name().clone())
        .filter(|name| pandas_index && INDEX_COLUMNS.contains(&name.as_str()))
        .collect();
    if pandas_index {
        let mut metadata = schema.metadata().clone();
        metadata.insert("pandas".into(), pandas_metadata(&schema, &index));
        schema = Arc::new(Schema::new_with_metadata(schema.fields().clone(), metadata));
    }
    let pending = Pending::new(parquet)?;
    let properties = WriterProperties::builder()
        .set_compression(ParquetCompression::SNAPPY)
        .build();
    let mut writer = ArrowWriter::try_new(pending.create()?, Arc::clone(&schema), Some(properties))
        .map_err(parquet_error(parquet))?;
    // CSV columns: the index first, as pandas' to_csv writes them.
    let csv_order: Vec<usize> = {
        let names: Vec<&str> = schema.fields().iter().map(|f| f.name().as_str()).collect();
        let position = |name: &str| names.iter().position(|n| *n == name);
        let mut order: Vec<usize> = index.iter().filter_map(|n| position(n)).collect();
        let rest: Vec<usize> = (0..names.len()).filter(|i| !order.contains(i)).collect();
        order.extend(rest);
        order
    };
    let mut text = Vec::new();
    let mut csv_out = match csv {
        Some(path) => {
            let pending = Pending::new(path)?;
            let mut gzip = GzEncoder::new(pending.create()?, Compression::new(DEFLATE_LEVEL));
            csv::header(&schema.project(&csv_order)?, &mut text);
            gzip.write_all(&text).map_err(io_error(path))?;
            Some((pending, gzip, path))
        }
        None => None,
    };

    let mut rows = 0u64;
    while let Some(batch) = stream.next().await {
        let batch = portable_batch(&batch?, &schema)?;
        rows += batch.num_rows() as u64;
        writer.write(&batch).map_err(parquet_error(parquet))?;
        if let Some((_, gzip, path)) = csv_out.as_mut() {
            text.clear();
            csv::rows(&batch.project(&csv_order)?, &mut text)?;
            gzip.write_all(&text).map_err(io_error(path))?;
        }
    }
    writer.close().map_err(parquet_error(parquet))?;
    let mut bytes = pending.commit()?;
    if let Some((pending, gzip, path)) = csv_out {
        let mut file = gzip.finish().map_err(io_error(path))?;
        file.flush().map_err(io_error(path))?;
        drop(file);
        bytes += pending.commit()?;
    }
    tracing::info!(file = %parquet.display(), rows, bytes, "release table written");
    Ok(TableFiles { rows, bytes })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pandas_metadata_names_the_index() {
        let schema = Schema::new(vec![
            arrow::datatypes::Field::new("question.quality.rating_rank", DataType::Int8, true),
            arrow::datatypes::Field::new("patient_id", DataType::Utf8, false),
        ]);
        let metadata: serde_json::Value =
            serde_json::from_str(&pandas_metadata(&schema, &["patient_id".into()])).expect("json");
        assert_eq!(metadata["index_columns"], json!(["patient_id"]));
        assert_eq!(metadata["columns"][0]["pandas_type"], "int8");
        assert_eq!(metadata["columns"][1]["field_name"], "patient_id");
    }
}
