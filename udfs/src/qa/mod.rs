//! QA generation (paper 000, section 3.2, appendix E.2) over the template engine of crate
//! `cxrlake-qa`.
//!
//! `generate_qa(scene_graph)` returns one study's questions (`list<struct>` in the shape of the
//! `qa` table without study keys and judged columns); the `qa` stage unnests them.

mod arrays;
mod generate_qa;

pub use generate_qa::{GenerateQaFunc, generated_type};
