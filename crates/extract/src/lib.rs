//! Report extraction for cxrlake (paper 000, E.1.2): sentences with sections and clusters, the
//! indication, and raw observations, from either backend.
//!
//! - [`rules::RulesExtractor`]: the embedded default, no LLM. A MIMIC section parser, sentence
//!   splitting, ConText negation, uncertainty and pseudo-trigger scopes (the triggers of the
//!   reference definitions' `context.toml`), and mention detection of findings, regions,
//!   modifiers and changes from the reference definitions' synonyms.
//! - [`prompts::Prompts`] and [`parse`]: the paper's three prompts (listings 1, 3, 5) with our own
//!   few-shot examples from the top-level `prompts/` folder, and tolerant parsers of the LLM
//!   outputs (line format and JSON with code fences, prose and small defects).
//!
//! Both produce the same [`model`] types, so the stage and the tables do not care which ran.

mod error;
pub mod model;
pub mod parse;
pub mod prompts;
pub mod rules;

pub use error::{ExtractError, Result};
pub use model::{Indication, RawObservation, SectionType, Sentence, clusters};
