//! The `balance` stage (`sql/balance.sql`): `qa_balance`, how often each region and finding is
//! mentioned positively and negatively over all scene graphs, with the QA strategies' sampling
//! probabilities and each finding's correlated findings (paper 000, E.2.2). Runs over the whole
//! lake at once: the counts are dataset-wide.

use std::time::Instant;

use cxrlake_lake::Lake;
use cxrlake_templates::Templates;
use datafusion::scalar::ScalarValue;
use serde_json::json;

use crate::error::Result;
use crate::stage::{ChunkedStage, sql_hash};

/// Stage name (= SQL file name = module name).
pub const STAGE: &str = "balance";
/// The stage's SQL.
pub const SQL: &str = include_str!("../../../sql/balance.sql");

const INPUTS: [&str; 1] = ["scene_graphs"];

/// What a balance run did.
#[derive(Debug, Clone, PartialEq)]
pub struct BalanceSummary {
    /// `qa_balance` rows (regions and findings).
    pub rows: usize,
    /// Table version.
    pub version: u64,
    /// Wall time in seconds.
    pub seconds: f64,
}

impl std::fmt::Display for BalanceSummary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "balance: {} regions and findings counted in {:.1} s, qa_balance v{}",
            self.rows, self.seconds, self.version
        )
    }
}

/// Runs the stage and replaces `qa_balance`.
pub async fn run(lake: &Lake, templates: &Templates) -> Result<BalanceSummary> {
    let started = Instant::now();
    let settings = &templates.strategies;
    let stage = ChunkedStage {
        stage: STAGE,
        sql: SQL,
        inputs: &INPUTS,
        functions: Vec::new(),
        params: vec![
            (
                "region_rate",
                ScalarValue::from(settings.region_abnormal.rate),
            ),
            ("finding_rate", ScalarValue::from(settings.finding.rate)),
            (
                "correlated_per_finding",
                ScalarValue::from(settings.finding.correlated_per_finding as i64),
            ),
            (
                "normal_findings",
                ScalarValue::from(settings.normal_findings.join("|")),
            ),
        ],
        chunk_patients: usize::MAX,
    };
    let fingerprint = json!({
        "inputs": stage.input_versions(lake).await?,
        "templates": templates.version(),
        "sql": sql_hash(SQL),
        "code": env!("CARGO_PKG_VERSION"),
    });
    let (rows, version) = stage.run(lake, &fingerprint).await?;
    Ok(BalanceSummary {
        rows: rows.iter().map(|(_, n)| n).sum(),
        version,
        seconds: started.elapsed().as_secs_f64(),
    })
}
