//! cxrlake's pipeline: stage definitions and the one runner that executes them.
//!
//! A stage is a SQL file in `sql/` (stage name = file name = module name) with a
//! [`stage::StageDef`] and a small [`stage::Stage`] implementation; `runner.rs` runs every stage
//! (chunked, scoped, resumable, with progress), `stages.rs` declares the graph, `incremental.rs`
//! decides what is stale, and the lake remembers the settings of each run (`settings.rs`).
//!
//! ```text
//! Pipeline (lake + resolved settings + definitions) ──► stages::graph()
//!    plan / run ──► incremental::decide per stage ──► runner::run ──► commits with Fingerprint
//! ```

pub mod balance;
pub mod error;
pub mod evaluate;
pub mod extract;
pub mod fingerprint;
pub mod flavours;
pub mod generation;
pub mod grade;
pub mod graph;
pub mod incremental;
pub mod judge;
pub mod llm_calls;
pub mod localize;
pub mod map;
mod pipeline;
mod progress;
pub mod qa;
pub mod reading;
pub mod refdefs;
mod runner;
pub mod scope;
pub mod settings;
pub mod sql;
pub mod stage;
pub mod stages;
mod verdicts;

pub use error::{PipelineError, Result};
pub use fingerprint::{CommitMetrics, Fingerprint};
pub use incremental::{Plan, StagePlan};
pub use llm_calls::LakeCache;
pub use pipeline::{Pipeline, PipelineBuilder};
pub use runner::RUN_SCOPE_TABLE;
pub use scope::Scope;
pub use sql::{Statement, sql_hash, statements};
pub use stage::{
    ChunkInfo, Chunking, Coverage, HookTable, LlmRequests, Metrics, Prepared, RunHooks, RunMode,
    Stage, StageDef, StageReport, Writes,
};
