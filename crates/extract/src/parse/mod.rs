//! Tolerant parsers of the three LLM outputs of extraction (paper 000, listings 2, 4 and 6).
//! They never panic: an output is either read, with small defects repaired, or rejected with
//! [`crate::ExtractError::Parse`].
//!
//! - [`sentences`]: the line format `[S01] SECTION(TYPE) - merge with [..]: text` (`lines.rs`).
//! - [`observations`] and [`indication`]: JSON, read through [`repair_json`] (the tolerant
//!   parser of `cxrlake-generate`, which the generation operator shares).

mod fields;
mod indication;
mod lines;
mod observations;

pub use cxrlake_generate::repair_json;
pub use indication::indication;
pub use lines::sentences;
pub use observations::observations;
