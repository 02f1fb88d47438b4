//! Runs every `tests/slt/*.slt` file of the repository against a cxrlake `SessionContext`.

use std::path::{Path, PathBuf};

use async_trait::async_trait;
use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::datatypes::DataType;
use datafusion::arrow::util::display::{ArrayFormatter, FormatOptions};
use datafusion::error::DataFusionError;
use datafusion::prelude::{SessionConfig, SessionContext};
use sqllogictest::{AsyncDB, DBOutput, DefaultColumnType};

struct CxrlakeDb {
    ctx: SessionContext,
}

fn column_type(data_type: &DataType) -> DefaultColumnType {
    match data_type {
        t if t.is_integer() => DefaultColumnType::Integer,
        t if t.is_floating() => DefaultColumnType::FloatingPoint,
        DataType::Utf8 | DataType::Utf8View | DataType::LargeUtf8 => DefaultColumnType::Text,
        _ => DefaultColumnType::Any,
    }
}

fn rows(batches: &[RecordBatch]) -> Result<Vec<Vec<String>>, DataFusionError> {
    let options = FormatOptions::default().with_null("NULL");
    let mut rows = Vec::new();
    for batch in batches {
        let formatters = batch
            .columns()
            .iter()
            .map(|c| ArrayFormatter::try_new(c.as_ref(), &options))
            .collect::<Result<Vec<_>, _>>()?;
        for row in 0..batch.num_rows() {
            rows.push(
                formatters
                    .iter()
                    .map(|f| {
                        let cell = f.value(row).to_string();
                        if cell.is_empty() {
                            "(empty)".to_string()
                        } else {
                            cell
                        }
                    })
                    .collect(),
            );
        }
    }
    Ok(rows)
}

#[async_trait]
impl AsyncDB for CxrlakeDb {
    type Error = DataFusionError;
    type ColumnType = DefaultColumnType;

    async fn run(&mut self, sql: &str) -> Result<DBOutput<Self::ColumnType>, Self::Error> {
        let df = self.ctx.sql(sql).await?;
        let types = df
            .schema()
            .fields()
            .iter()
            .map(|f| column_type(f.data_type()))
            .collect::<Vec<_>>();
        let is_query = !df.schema().fields().is_empty();
        let batches = df.collect().await?;
        if !is_query {
            return Ok(DBOutput::StatementComplete(0));
        }
        Ok(DBOutput::Rows {
            types,
            rows: rows(&batches)?,
        })
    }

    async fn shutdown(&mut self) {}

    fn engine_name(&self) -> &str {
        "cxrlake"
    }
}

fn slt_files() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/slt");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()))
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|path| path.extension().is_some_and(|ext| ext == "slt"))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no .slt files in {}", dir.display());
    files
}

#[tokio::test]
async fn sqllogictest_files() {
    let mut failures = Vec::new();
    for file in slt_files() {
        let mut runner = sqllogictest::Runner::new(|| async {
            Ok(CxrlakeDb {
                ctx: cxrlake_udfs::session_context(SessionConfig::new().with_target_partitions(2)),
            })
        });
        if let Err(err) = runner.run_file_async(&file).await {
            failures.push(format!("{}: {err}", file.display()));
        }
    }
    assert!(
        failures.is_empty(),
        "sqllogictest failures:\n{}",
        failures.join("\n")
    );
}
