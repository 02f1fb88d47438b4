//! The cxrlake command-line interface as a library: `cli` parses and dispatches, `output` renders
//! query results, `distributed` runs Ballista schedulers and executors and picks the engine of
//! `sql`, `error` is the one error enum, `reference` renders the
//! configuration reference of the user guide. The binary's `main.rs` only calls [`cli::main`].

pub mod cli;
pub mod distributed;
pub mod error;
pub mod evaluate;
mod folders;
pub mod output;
pub mod refdefs;
pub mod reference;
