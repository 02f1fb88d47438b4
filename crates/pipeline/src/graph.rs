//! The `graph` stage (`sql/graph.sql`): `scene_graphs`, one nested row per study, from
//! `sentences`, `observations`, `indications`, `region_boxes` and `images` (paper 000, E.1.3
//! "Graph Construction", D.1). Runs chunk by chunk of patients, so memory is bounded by the
//! chunk.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

use cxrlake_lake::Lake;
use cxrlake_map::Reference;
use cxrlake_refdefs::RefDefs;
use cxrlake_udfs::graph::{BuildSceneGraphFunc, GraphRegionsFunc};
use datafusion::logical_expr::ScalarUDF;
use datafusion::scalar::ScalarValue;
use serde_json::json;

use crate::error::Result;
use crate::scope::Scope;
use crate::stage::{ChunkedStage, count, sql_hash};

/// Stage name (= SQL file name = module name).
pub const STAGE: &str = "graph";
/// The stage's SQL.
pub const SQL: &str = include_str!("../../../sql/graph.sql");

/// Tables the stage reads; the first lists the patients.
const INPUTS: [&str; 5] = [
    "sentences",
    "observations",
    "indications",
    "region_boxes",
    "images",
];

/// Options of the graph stage.
#[derive(Debug, Clone)]
pub struct GraphOptions {
    /// Patients per chunk.
    pub chunk_patients: usize,
}

impl Default for GraphOptions {
    fn default() -> Self {
        Self {
            chunk_patients: 2000,
        }
    }
}

/// What a graph run did.
#[derive(Debug, Clone, PartialEq)]
pub struct GraphSummary {
    /// Scene graphs written.
    pub studies: usize,
    /// Observations in them.
    pub observations: usize,
    /// Table version committed last.
    pub version: u64,
    /// Wall time in seconds.
    pub seconds: f64,
}

impl std::fmt::Display for GraphSummary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "graph: {} scene graphs ({} observations) in {:.1} s ({:.0} studies/s), scene_graphs v{}",
            self.studies,
            self.observations,
            self.seconds,
            self.studies as f64 / self.seconds.max(1e-9),
            self.version
        )
    }
}

/// Runs the stage over the whole lake and replaces `scene_graphs`.
pub async fn run(lake: &Lake, defs: &RefDefs, options: &GraphOptions) -> Result<GraphSummary> {
    Ok(run_scoped(lake, defs, options, &Scope::All, false).await?.0)
}

/// Runs the stage over `scope`'s studies and replaces their scene graphs; returns the studies
/// whose scene graphs changed (with `detect`, else the scope).
pub async fn run_scoped(
    lake: &Lake,
    defs: &RefDefs,
    options: &GraphOptions,
    scope: &Scope,
    detect: bool,
) -> Result<(GraphSummary, Scope)> {
    let started = Instant::now();
    let reference = Arc::new(Reference::new(defs));
    let stage = ChunkedStage {
        stage: STAGE,
        sql: SQL,
        inputs: &INPUTS,
        functions: vec![
            ScalarUDF::from(GraphRegionsFunc::new(reference.clone(), defs.fingerprint())),
            ScalarUDF::from(BuildSceneGraphFunc::new(reference, defs.fingerprint())),
        ],
        params: vec![("embedder", ScalarValue::from("none"))],
        chunk_patients: options.chunk_patients,
    };
    let fingerprint = json!({
        "inputs": stage.input_versions(lake).await?,
        "refdefs": defs.fingerprint(),
        "sql": sql_hash(SQL),
        "code": env!("CARGO_PKG_VERSION"),
    });
    let run = stage
        .run_scoped(lake, &HashMap::new(), &fingerprint, scope, detect)
        .await?;
    let (rows, version) = (run.rows, run.version);
    let ctx = lake.session().await?;
    let observations = count(&ctx, STAGE, "SELECT count(*) FROM observations").await?;
    let summary = GraphSummary {
        studies: rows.iter().map(|(_, n)| n).sum(),
        observations,
        version,
        seconds: started.elapsed().as_secs_f64(),
    };
    Ok((summary, run.changed))
}
