//! cxrlake's pipeline stages. Each stage is a SQL file in `sql/` (stage name = file name = module
//! name) run by DataFusion over the lake with cxrlake's UDFs; its result is committed to the lake
//! with a fingerprint of what it was computed from.

pub mod balance;
pub mod error;
pub mod evaluate;
pub mod extract;
pub mod grade;
pub mod graph;
pub mod incremental;
pub mod judge;
mod llm_calls;
pub mod localize;
pub mod map;
pub mod qa;
pub mod scope;
mod stage;

pub use error::{PipelineError, Result};
pub use llm_calls::LakeCache;
pub use scope::Scope;
