//! The `localize` stage (`sql/localize.sql`): `region_boxes` from `images`, `cxas_masks` and
//! `imagenome_boxes`, one row per image × localized region of the reference definitions.
//!
//! The SQL runs once per chunk of patients (the inputs are views filtered to a `patient_id`
//! range, which Delta file statistics prune because ingest writes in patient order), so memory
//! is bounded by the chunk, not the lake: all of MIMIC's CXAS masks are ~100 GB of RLE. The
//! first chunk overwrites `region_boxes`, the others append; every commit carries the same
//! fingerprint and `chunk`/`chunks` metrics, so an interrupted run is visible and a rerun
//! replaces it.

use std::time::Instant;

use cxrlake_lake::{Lake, StageCommit};
use cxrlake_refdefs::RefDefs;
use cxrlake_udfs::localize::LocalizeRegionsFunc;
use datafusion::arrow::array::{AsArray, RecordBatch};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::DataType;
use datafusion::logical_expr::ScalarUDF;
use datafusion::prelude::{SessionContext, col, lit};
use serde_json::json;

use crate::error::{PipelineError, Result};
use crate::stage::{collect, conform, count, sql_hash};

/// Stage name (= SQL file name = module name).
pub const STAGE: &str = "localize";
/// The stage's SQL.
pub const SQL: &str = include_str!("../../../sql/localize.sql");

/// The tables the stage reads; each has a `patient_id` column.
const INPUTS: [&str; 3] = ["images", "cxas_masks", "imagenome_boxes"];

/// Options of the localize stage.
#[derive(Debug, Clone)]
pub struct LocalizeOptions {
    /// Boxes smaller than this many square pixels are dropped.
    pub min_area: f64,
    /// Patients per chunk (MIMIC averages ~6 images per patient and ~300 KB of RLE per image).
    pub chunk_patients: usize,
}

impl Default for LocalizeOptions {
    fn default() -> Self {
        Self {
            min_area: 16.0,
            chunk_patients: 500,
        }
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

/// Runs the stage over the whole lake and replaces `region_boxes`.
pub async fn run(
    lake: &Lake,
    defs: &RefDefs,
    options: &LocalizeOptions,
) -> Result<LocalizeSummary> {
    let started = Instant::now();
    let ctx = lake.session().await?;
    let images = count(&ctx, STAGE, "SELECT count(*) FROM images").await?;
    let patients = patient_ranges(&ctx, options.chunk_patients.max(1)).await?;
    let mut inputs = serde_json::Map::new();
    for table in INPUTS {
        let version = lake.table(table).await?.version();
        inputs.insert(table.to_string(), json!(version));
    }
    let fingerprint = json!({
        "inputs": inputs,
        "refdefs": defs.fingerprint(),
        "min_area": options.min_area,
        "sql": sql_hash(SQL),
        "code": env!("CARGO_PKG_VERSION"),
    });
    let udf = ScalarUDF::from(LocalizeRegionsFunc::new(defs, options.min_area));
    let chunks = patients.len().max(1);
    let (mut rows, mut version) = (0, 0);
    for chunk in 0..chunks {
        let batches = match patients.get(chunk) {
            Some((first, last)) => localize_chunk(&ctx, &udf, first, last).await?,
            None => Vec::new(),
        };
        let batches = if batches.is_empty() {
            vec![RecordBatch::new_empty(
                (cxrlake_schemas::pipeline::region_boxes)(),
            )]
        } else {
            batches
        };
        let chunk_rows: usize = batches.iter().map(RecordBatch::num_rows).sum();
        rows += chunk_rows;
        let commit = StageCommit::new(STAGE)
            .with_fingerprint(fingerprint.clone())
            .with_metrics(json!({
                "images": images,
                "rows": chunk_rows,
                "chunk": chunk + 1,
                "chunks": chunks,
            }));
        let write = lake.write("region_boxes").commit(commit);
        let write = if chunk == 0 {
            write.overwrite()
        } else {
            write.append()
        };
        version = write.execute(batches).await?;
    }
    Ok(LocalizeSummary {
        images,
        rows,
        version,
        seconds: started.elapsed().as_secs_f64(),
    })
}

/// `(first, last)` patient ids of consecutive chunks of `per_chunk` patients, in id order.
async fn patient_ranges(ctx: &SessionContext, per_chunk: usize) -> Result<Vec<(String, String)>> {
    let batches = collect(
        ctx,
        STAGE,
        "SELECT DISTINCT patient_id FROM images ORDER BY patient_id",
    )
    .await?;
    let mut ids = Vec::new();
    for batch in &batches {
        let column = cast(batch.column(0), &DataType::Utf8)
            .map_err(|e| PipelineError::query(STAGE, e.into()))?;
        ids.extend(
            column
                .as_string::<i32>()
                .iter()
                .flatten()
                .map(str::to_string),
        );
    }
    Ok(ids
        .chunks(per_chunk)
        .map(|chunk| (chunk[0].clone(), chunk[chunk.len() - 1].clone()))
        .collect())
}

/// Runs the stage SQL over the patients `first..=last`: a session whose input tables are views
/// of the lake's tables filtered to that range.
async fn localize_chunk(
    lake_ctx: &SessionContext,
    udf: &ScalarUDF,
    first: &str,
    last: &str,
) -> Result<Vec<RecordBatch>> {
    let ctx = cxrlake_udfs::session_context(lake_ctx.copied_config());
    ctx.register_udf(udf.clone());
    for table in INPUTS {
        let view = lake_ctx
            .table(table)
            .await
            .and_then(|frame| {
                frame.filter(
                    col("patient_id")
                        .gt_eq(lit(first))
                        .and(col("patient_id").lt_eq(lit(last))),
                )
            })
            .map_err(|e| PipelineError::query(STAGE, e))?;
        ctx.register_table(table, view.into_view())
            .map_err(|e| PipelineError::query(STAGE, e))?;
    }
    let batches = collect(&ctx, STAGE, SQL).await?;
    batches
        .iter()
        .filter(|b| b.num_rows() > 0)
        .map(|b| conform(STAGE, "region_boxes", b))
        .collect()
}
