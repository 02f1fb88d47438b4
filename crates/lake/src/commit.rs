//! Stage provenance written into every Delta commit: stage name, fingerprint and metrics.
//!
//! ```text
//! _delta_log/000…N.json  commitInfo { operation, …, "cxrlake": { format_version, stage,
//!                                                               fingerprint, metrics } }
//! ```
//! The fingerprint says what the commit was computed from (input versions, definition hashes,
//! model ids, code version), so `status` can tell stale tables and reruns can be idempotent.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Key of cxrlake's entry in Delta's `commitInfo`.
pub const COMMIT_INFO_KEY: &str = "cxrlake";

/// What a stage records in the commit it makes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StageCommit {
    /// Lake format version of the writer.
    pub format_version: u32,
    /// The stage (= SQL file = module) that wrote the commit.
    pub stage: String,
    /// What the result was computed from.
    pub fingerprint: Value,
    /// Row counts, timings and other figures of the run.
    pub metrics: Value,
}

impl StageCommit {
    /// A commit record for `stage` with empty fingerprint and metrics.
    pub fn new(stage: impl Into<String>) -> Self {
        Self {
            format_version: cxrlake_schemas::FORMAT_VERSION,
            stage: stage.into(),
            fingerprint: Value::Object(Default::default()),
            metrics: Value::Object(Default::default()),
        }
    }

    /// Sets the fingerprint.
    pub fn with_fingerprint(mut self, fingerprint: Value) -> Self {
        self.fingerprint = fingerprint;
        self
    }

    /// Sets the metrics.
    pub fn with_metrics(mut self, metrics: Value) -> Self {
        self.metrics = metrics;
        self
    }
}

/// One entry of a table's history.
#[derive(Debug, Clone, PartialEq)]
pub struct CommitRecord {
    /// Table version this commit produced.
    pub version: u64,
    /// Commit time, milliseconds since the epoch.
    pub timestamp_ms: Option<i64>,
    /// Delta operation (`WRITE`, `CREATE TABLE`, …).
    pub operation: Option<String>,
    /// cxrlake's provenance, when cxrlake wrote the commit.
    pub stage: Option<StageCommit>,
}
