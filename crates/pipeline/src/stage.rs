//! What every stage module shares: running its SQL, casting results to the table schemas, and
//! the SQL hash of its fingerprint.

use datafusion::arrow::array::{AsArray, RecordBatch};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::Int64Type;
use datafusion::prelude::SessionContext;

use crate::error::{PipelineError, Result};

/// Casts a stage result to the table's schema (Delta reads strings as views, lists keep their
/// field names, …) so that every stage writes exactly the declared types.
pub(crate) fn conform(
    stage: &'static str,
    table: &'static str,
    batch: &RecordBatch,
) -> Result<RecordBatch> {
    let schema = cxrlake_schemas::table(table)
        .map(|t| (t.schema)())
        .ok_or_else(|| PipelineError::Schema {
            stage,
            table,
            reason: "unknown table".into(),
        })?;
    let columns = schema
        .fields()
        .iter()
        .map(|field| {
            let column =
                batch
                    .column_by_name(field.name())
                    .ok_or_else(|| PipelineError::Schema {
                        stage,
                        table,
                        reason: format!("missing column {}", field.name()),
                    })?;
            cast(column, field.data_type()).map_err(|e| PipelineError::Schema {
                stage,
                table,
                reason: format!("column {}: {e}", field.name()),
            })
        })
        .collect::<Result<Vec<_>>>()?;
    RecordBatch::try_new(schema, columns).map_err(|e| PipelineError::Schema {
        stage,
        table,
        reason: e.to_string(),
    })
}

/// Runs `sql` of `stage` to completion.
pub(crate) async fn collect(
    ctx: &SessionContext,
    stage: &'static str,
    sql: &str,
) -> Result<Vec<RecordBatch>> {
    ctx.sql(sql)
        .await
        .map_err(|e| PipelineError::query(stage, e))?
        .collect()
        .await
        .map_err(|e| PipelineError::query(stage, e))
}

/// The single integer `sql` of `stage` returns (a `count(*)`).
pub(crate) async fn count(ctx: &SessionContext, stage: &'static str, sql: &str) -> Result<usize> {
    let batches = collect(ctx, stage, sql).await?;
    Ok(batches
        .first()
        .and_then(|b| b.column(0).as_primitive_opt::<Int64Type>())
        .map(|a| a.value(0))
        .unwrap_or(0) as usize)
}

/// A short content hash of a stage's SQL, part of its fingerprint.
pub(crate) fn sql_hash(sql: &str) -> String {
    use sha2::Digest;
    hex::encode(&sha2::Sha256::digest(sql.as_bytes())[..8])
}
