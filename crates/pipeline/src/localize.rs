//! The `localize` stage (`sql/localize.sql`): `region_boxes` from `images`, `cxas_masks` and
//! `imagenome_boxes`, one row per image × localized region of the reference definitions.
//!
//! The SQL runs once per chunk of patients (the inputs are views filtered to a `patient_id`
//! range, which Delta file statistics prune because ingest writes in patient order), so memory
//! is bounded by the chunk, not the lake: all of MIMIC's CXAS masks are ~100 GB of RLE. The
//! first chunk overwrites `region_boxes`, the others append ([`crate::stage::ChunkedStage`]).

use std::collections::HashMap;
use std::time::Instant;

use cxrlake_lake::Lake;
use cxrlake_refdefs::RefDefs;
use cxrlake_udfs::localize::LocalizeRegionsFunc;
use datafusion::logical_expr::ScalarUDF;
use serde_json::json;

use crate::error::Result;
use crate::scope::Scope;
use crate::stage::{ChunkedStage, count, sql_hash};

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
    Ok(run_scoped(lake, defs, options, &Scope::All, false).await?.0)
}

/// Runs the stage over `scope`'s studies and replaces their rows; returns the studies whose
/// boxes changed (with `detect`, else the scope).
pub async fn run_scoped(
    lake: &Lake,
    defs: &RefDefs,
    options: &LocalizeOptions,
    scope: &Scope,
    detect: bool,
) -> Result<(LocalizeSummary, Scope)> {
    let started = Instant::now();
    let ctx = lake.session().await?;
    let images = count(&ctx, STAGE, "SELECT count(*) FROM images").await?;
    let stage = ChunkedStage {
        stage: STAGE,
        sql: SQL,
        inputs: &INPUTS,
        functions: vec![ScalarUDF::from(LocalizeRegionsFunc::new(
            defs,
            options.min_area,
        ))],
        params: Vec::new(),
        chunk_patients: options.chunk_patients,
    };
    let fingerprint = json!({
        "inputs": stage.input_versions(lake).await?,
        "refdefs": defs.fingerprint(),
        "min_area": options.min_area,
        "sql": sql_hash(SQL),
        "code": env!("CARGO_PKG_VERSION"),
    });
    let run = stage
        .run_scoped(lake, &HashMap::new(), &fingerprint, scope, detect)
        .await?;
    let summary = LocalizeSummary {
        images,
        rows: run.rows.iter().map(|(_, n)| n).sum(),
        version: run.version,
        seconds: started.elapsed().as_secs_f64(),
    };
    Ok((summary, run.changed))
}
