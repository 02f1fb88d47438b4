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
use datafusion::arrow::array::RecordBatch;
use datafusion::logical_expr::ScalarUDF;
use datafusion::prelude::SessionContext;
use serde_json::json;

use crate::error::Result;
use crate::stage::{chunk_context, collect, conform, count, patient_ranges, sql_hash};

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
    let patients = patient_ranges(&ctx, STAGE, "images", options.chunk_patients).await?;
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

/// Runs the stage SQL over the patients `first..=last`.
async fn localize_chunk(
    lake_ctx: &SessionContext,
    udf: &ScalarUDF,
    first: &str,
    last: &str,
) -> Result<Vec<RecordBatch>> {
    let functions = [udf.clone()];
    let ctx = chunk_context(lake_ctx, STAGE, &INPUTS, Some((first, last)), &functions).await?;
    let batches = collect(&ctx, STAGE, SQL).await?;
    batches
        .iter()
        .filter(|b| b.num_rows() > 0)
        .map(|b| conform(STAGE, "region_boxes", b))
        .collect()
}
