//! The `localize` stage (`sql/localize.sql`): `region_boxes` from `images`, `cxas_masks` and
//! `imagenome_boxes`, one row per image × localized region of the reference definitions.

use std::time::Instant;

use cxrlake_lake::{Lake, StageCommit};
use cxrlake_refdefs::RefDefs;
use cxrlake_udfs::localize::LocalizeRegionsFunc;
use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::compute::cast;
use datafusion::logical_expr::ScalarUDF;
use serde_json::json;

use crate::error::{PipelineError, Result};

/// Stage name (= SQL file name = module name).
pub const STAGE: &str = "localize";
/// The stage's SQL.
pub const SQL: &str = include_str!("../../../sql/localize.sql");

/// Options of the localize stage.
#[derive(Debug, Clone)]
pub struct LocalizeOptions {
    /// Boxes smaller than this many square pixels are dropped.
    pub min_area: f64,
}

impl Default for LocalizeOptions {
    fn default() -> Self {
        Self { min_area: 16.0 }
    }
}

/// What a localize run did.
#[derive(Debug, Clone, PartialEq)]
pub struct LocalizeSummary {
    /// Images localized.
    pub images: usize,
    /// `region_boxes` rows written.
    pub rows: usize,
    /// Table version committed.
    pub version: u64,
    /// Wall time in seconds.
    pub seconds: f64,
}

impl std::fmt::Display for LocalizeSummary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "localize: {} images, {} region boxes rows in {:.1} s ({:.0} images/s), region_boxes v{}",
            self.images,
            self.rows,
            self.seconds,
            self.images as f64 / self.seconds.max(1e-9),
            self.version
        )
    }
}

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

/// Runs the stage over the whole lake and replaces `region_boxes`.
pub async fn run(
    lake: &Lake,
    defs: &RefDefs,
    options: &LocalizeOptions,
) -> Result<LocalizeSummary> {
    let started = Instant::now();
    let ctx = lake.session().await?;
    ctx.register_udf(ScalarUDF::from(LocalizeRegionsFunc::new(
        defs,
        options.min_area,
    )));
    let batches = ctx
        .sql(SQL)
        .await
        .map_err(|e| PipelineError::query(STAGE, e))?
        .collect()
        .await
        .map_err(|e| PipelineError::query(STAGE, e))?;
    let batches = batches
        .iter()
        .filter(|b| b.num_rows() > 0)
        .map(|b| conform(STAGE, "region_boxes", b))
        .collect::<Result<Vec<_>>>()?;
    let batches = if batches.is_empty() {
        vec![RecordBatch::new_empty(
            (cxrlake_schemas::pipeline::region_boxes)(),
        )]
    } else {
        batches
    };
    let rows: usize = batches.iter().map(RecordBatch::num_rows).sum();
    let images = count(&ctx, "SELECT count(*) FROM images").await?;
    let tables = ["images", "cxas_masks", "imagenome_boxes"];
    let mut inputs = serde_json::Map::new();
    for table in tables {
        let version = lake.table(table).await?.version();
        inputs.insert(table.to_string(), json!(version));
    }
    let commit = StageCommit::new(STAGE)
        .with_fingerprint(json!({
            "inputs": inputs,
            "refdefs": defs.fingerprint(),
            "min_area": options.min_area,
            "sql": sql_hash(),
            "code": env!("CARGO_PKG_VERSION"),
        }))
        .with_metrics(json!({ "images": images, "rows": rows }));
    let version = lake
        .write("region_boxes")
        .overwrite()
        .commit(commit)
        .execute(batches)
        .await?;
    Ok(LocalizeSummary {
        images,
        rows,
        version,
        seconds: started.elapsed().as_secs_f64(),
    })
}

async fn count(ctx: &datafusion::prelude::SessionContext, sql: &str) -> Result<usize> {
    let batches = ctx
        .sql(sql)
        .await
        .map_err(|e| PipelineError::query(STAGE, e))?
        .collect()
        .await
        .map_err(|e| PipelineError::query(STAGE, e))?;
    Ok(batches
        .first()
        .and_then(|b| {
            datafusion::arrow::array::AsArray::as_primitive_opt::<
                datafusion::arrow::datatypes::Int64Type,
            >(b.column(0))
            .map(|a| a.value(0))
        })
        .unwrap_or(0) as usize)
}

/// A short content hash of the stage SQL, part of the fingerprint.
fn sql_hash() -> String {
    use std::hash::{Hash, Hasher};
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    SQL.hash(&mut hasher);
    format!("{:016x}", hasher.finish())
}
