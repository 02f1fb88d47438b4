//! QA generation (paper 000, section 3.2, appendix E.2): the template engine and the four
//! strategies over one scene graph, driven by the files of `templates/` (crate
//! `cxrlake-templates`) and the dataset-wide `qa_balance` table.
//!
//! `generate_qa(scene_graph)` returns one study's questions (`list<struct>` in the shape of the
//! `qa` table without study keys and judged columns); the `qa` stage unnests them.

mod arrays;
mod balance;
mod engine;
mod generate_qa;
mod scene;

pub use balance::{Balance, Fnv, unit_hash};
pub use engine::{AnswerPart, Engine, Question};
pub use generate_qa::{GenerateQaFunc, generated_type};
pub use scene::{Scene, SceneGraphIn};
