//! The cxrlake command-line interface as a library: `cli` parses the command line and
//! dispatches, `commands` holds one module per command (its arguments and what it runs),
//! `output` renders user-facing lines and query results, `error` is the one error enum,
//! `reference` renders the configuration reference of the user guide. The binary's `main.rs`
//! only calls [`cli::main`].

pub mod cli;
pub mod commands;
pub mod error;
mod folders;
pub mod output;
pub mod reference;
