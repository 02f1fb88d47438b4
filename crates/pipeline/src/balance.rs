//! The `balance` stage (`sql/balance.sql`): `qa_balance`, how often each region and finding is
//! mentioned positively and negatively over all scene graphs, with the QA strategies' sampling
//! probabilities and each finding's correlated findings (paper 000, E.2.2). Dataset-wide: any
//! change recounts everything.

use std::collections::BTreeMap;

use async_trait::async_trait;
use datafusion::scalar::ScalarValue;

use crate::error::Result;
use crate::pipeline::Pipeline;
use crate::stage::{Chunking, Coverage, Prepared, RunMode, Stage, StageDef, Writes};

/// The stage's declaration.
pub static DEF: StageDef = StageDef {
    name: "balance",
    doc: "qa_balance: positive/negative mentions, sampling probabilities, correlated findings",
    sql: include_str!("../../../sql/balance.sql"),
    file: "sql/balance.sql",
    inputs: &["scene_graphs"],
    side_inputs: &[],
    outputs: &["qa_balance"],
    settings: &["templates"],
    chunking: Chunking::Whole,
    writes: Writes::Replace,
    coverage: Coverage::Dataset,
    detects_changes: false,
    reads_synonyms: true,
};

/// The `balance` stage.
#[derive(Debug)]
pub struct Balance;

#[async_trait]
impl Stage for Balance {
    fn def(&self) -> &'static StageDef {
        &DEF
    }

    async fn definitions(&self, pipeline: &Pipeline) -> Result<BTreeMap<String, String>> {
        Ok(BTreeMap::from([(
            "templates".into(),
            pipeline.templates()?.version().to_string(),
        )]))
    }

    async fn prepare(&self, pipeline: &Pipeline, _mode: RunMode) -> Result<Prepared> {
        let templates = pipeline.templates()?;
        let settings = &templates.strategies;
        Ok(Prepared::new(
            Vec::new(),
            vec![
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
        ))
    }
}
