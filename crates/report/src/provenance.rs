//! Per-table provenance, as `cxrlake tables` and `status` show it: the stage of the last commit,
//! the table version, when it was written, the code version and run of its fingerprint, and the
//! rows (by SQL). Tables that no stage has written since `cxrlake init` are left out.

use std::sync::Arc;

use arrow::array::{ArrayRef, AsArray, Int64Array, RecordBatch, StringArray, UInt64Array};
use arrow::datatypes::{DataType, Field, Int64Type, Schema};
use cxrlake_lake::{CommitRecord, Lake};
use datafusion::prelude::SessionContext;

use crate::error::{ReportError, Result};
use crate::table::Table;

/// One row of the provenance table.
#[derive(Debug)]
struct Row {
    table: String,
    stage: String,
    version: u64,
    last_commit: String,
    code: String,
    run: String,
    rows: i64,
}

/// The provenance table of the lake's written tables, sorted by name.
pub async fn provenance(lake: &Lake, ctx: &SessionContext) -> Result<Table> {
    let mut rows = Vec::new();
    for name in lake.table_names().await? {
        let Some(commit) = lake.history(&name, Some(1)).await?.into_iter().next() else {
            continue;
        };
        let stage = commit
            .stage
            .as_ref()
            .map_or("(not written by cxrlake)", |s| s.stage.as_str());
        if stage == "init" {
            continue;
        }
        rows.push(row(&name, &commit, count_rows(ctx, &name).await?));
    }
    to_table(&rows)
}

fn row(name: &str, commit: &CommitRecord, rows: i64) -> Row {
    let fingerprint = |key: &str| {
        commit
            .stage
            .as_ref()
            .and_then(|s| s.fingerprint.get(key))
            .and_then(|v| v.as_str())
            .unwrap_or_default()
            .to_string()
    };
    Row {
        table: name.to_string(),
        stage: commit
            .stage
            .as_ref()
            .map_or_else(|| "(not written by cxrlake)".into(), |s| s.stage.clone()),
        version: commit.version,
        last_commit: commit
            .timestamp_ms
            .and_then(chrono::DateTime::from_timestamp_millis)
            .map(|t| t.format("%Y-%m-%d %H:%M:%S UTC").to_string())
            .unwrap_or_default(),
        code: fingerprint("code"),
        run: fingerprint("run"),
        rows,
    }
}

async fn count_rows(ctx: &SessionContext, table: &str) -> Result<i64> {
    let query_error = |source| ReportError::Query {
        name: format!("provenance ({table})"),
        source,
    };
    let batches = ctx
        .sql(&format!("SELECT count(*) FROM \"{table}\""))
        .await
        .map_err(query_error)?
        .collect()
        .await
        .map_err(query_error)?;
    Ok(batches
        .first()
        .filter(|b| b.num_rows() > 0)
        .map_or(0, |b| b.column(0).as_primitive::<Int64Type>().value(0)))
}

fn to_table(rows: &[Row]) -> Result<Table> {
    let text = |f: fn(&Row) -> &str| -> ArrayRef {
        Arc::new(StringArray::from_iter_values(rows.iter().map(f)))
    };
    let schema = Arc::new(Schema::new(vec![
        Field::new("table", DataType::Utf8, false),
        Field::new("stage", DataType::Utf8, false),
        Field::new("version", DataType::UInt64, false),
        Field::new("last_commit", DataType::Utf8, false),
        Field::new("code", DataType::Utf8, false),
        Field::new("run", DataType::Utf8, false),
        Field::new("rows", DataType::Int64, false),
    ]));
    let batch = RecordBatch::try_new(
        schema.clone(),
        vec![
            text(|r| &r.table),
            text(|r| &r.stage),
            Arc::new(UInt64Array::from_iter_values(
                rows.iter().map(|r| r.version),
            )),
            text(|r| &r.last_commit),
            text(|r| &r.code),
            text(|r| &r.run),
            Arc::new(Int64Array::from_iter_values(rows.iter().map(|r| r.rows))),
        ],
    )?;
    Table::new("provenance", schema, vec![batch])
}
