//! The ReXVQA flavour's functions (paper 003) over crate `cxrlake-rexvqa`. The bullets, MCQ and
//! judge functions, `rexvqa_bullets`, `rexvqa_generate` and `rexvqa_judge`, are the generation
//! operator (`crate::generate`) bound to the flavour's tasks by the pipeline; near-duplicates
//! are `near_duplicates` (`crate::generate`).

mod rexvqa_phi;
mod rexvqa_taxonomy;

pub use rexvqa_phi::RexvqaPhiFunc;
pub use rexvqa_taxonomy::{RexvqaTaxonomyFunc, taxonomy_type};
