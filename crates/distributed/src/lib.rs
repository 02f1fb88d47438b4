//! cxrlake on Apache DataFusion Ballista: a scheduler and executors that know cxrlake's
//! functions, planner rules, lake tables and operators, and the session of a client whose
//! queries run on them.
//!
//! - [`codec`]: the logical and physical plan codecs (lake tables and their Delta scans,
//!   cxrlake's functions by name, the zero-copy unnest), each delegating everything else to
//!   Ballista's.
//! - [`scan`]: lake tables as the scheduler plans them and their scans as executors run them.
//! - [`cluster`]: [`run_scheduler`] and [`run_executor`], in this process.
//! - [`remote`]: [`Engine`] (`local` or `ballista://HOST:PORT`) and its session of a lake.

pub mod cluster;
pub mod codec;
mod error;
pub mod remote;
pub mod scan;

pub use cluster::{ExecutorOptions, run_executor, run_scheduler};
pub use codec::{CxrlakeLogicalCodec, CxrlakePhysicalCodec};
pub use error::{DistributedError, Result};
pub use remote::Engine;
