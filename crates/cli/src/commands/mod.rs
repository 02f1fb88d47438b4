//! One module per `cxrlake` command (or family of commands): its clap arguments and what it
//! runs. `crate::cli` parses the command line and dispatches here.

pub mod demo;
pub mod distributed;
pub mod evaluate;
pub mod export;
pub mod import;
pub mod ingest;
pub mod ratings;
pub mod refdefs;
pub mod report;
pub mod run;
pub mod settings;
pub mod sql;
pub mod tables;
pub mod templates;
