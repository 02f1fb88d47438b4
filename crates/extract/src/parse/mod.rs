//! Tolerant parsers of the three LLM outputs of extraction (paper 000, listings 2, 4 and 6).
//! They never panic: an output is either read, with small defects repaired, or rejected with
//! [`crate::ExtractError::Parse`].
//!
//! - [`sentences`]: the line format `[S01] SECTION(TYPE) - merge with [..]: text` (`lines.rs`).
//! - [`observations`] and [`indication`]: JSON, read through [`repair_json`] (`json.rs`).

mod fields;
mod indication;
mod json;
mod lines;
mod observations;

pub use indication::indication;
pub use json::repair_json;
pub use lines::sentences;
pub use observations::observations;
