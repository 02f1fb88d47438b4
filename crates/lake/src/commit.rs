//! Stage provenance written into every Delta commit: stage name, fingerprint and metrics.
//!
//! ```text
//! _delta_log/000…N.json  commitInfo { operation, …, "cxrlake": { format_version, stage,
//!                                                               fingerprint, metrics } }
//! ```
//! The fingerprint says what the commit was computed from (input versions, definition hashes,
//! model ids, code version), so `status` can tell stale tables and reruns can be idempotent.
//!
//! **Fault injection (for tests only).** With the environment variable
//! `CXRLAKE_FAULT_KILL_AFTER_COMMITS=N` set, the process aborts (`std::process::abort()`: no
//! destructors, no flush, as abrupt as SIGKILL) right after its N-th successful Delta commit.
//! Every commit of the lake (`Lake::create_table`, `TableWrite::execute`, a replace) reports to
//! `committed`; the variable is read once per process (a `OnceLock`), so when it is unset the
//! knob costs one load per commit. It is no `cxrlake.*` setting (`config.rs` skips
//! `CXRLAKE_FAULT_*`). `crates/cli/tests/it/kill_matrix.rs` kills `cxrlake run` at every commit
//! this way and checks that a rerun ends with the tables of an uninterrupted run.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The fault-injection knob: abort the process right after this many successful commits.
pub const FAULT_KILL_AFTER_COMMITS: &str = "CXRLAKE_FAULT_KILL_AFTER_COMMITS";

/// Counts a successful Delta commit of this process; with [`FAULT_KILL_AFTER_COMMITS`]`=N` set,
/// aborts the process at the N-th (fault injection for the kill-matrix test).
pub(crate) fn committed() {
    static KILL_AFTER: OnceLock<Option<u64>> = OnceLock::new();
    static COMMITS: AtomicU64 = AtomicU64::new(0);
    let kill_after = KILL_AFTER.get_or_init(|| {
        std::env::var(FAULT_KILL_AFTER_COMMITS)
            .ok()
            .and_then(|n| n.trim().parse().ok())
    });
    if let Some(limit) = *kill_after {
        let done = COMMITS.fetch_add(1, Ordering::SeqCst) + 1;
        if done >= limit {
            tracing::error!("{FAULT_KILL_AFTER_COMMITS}={limit}: aborting after commit {done}");
            std::process::abort();
        }
    }
}

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
