//! The qa stage's domain logic (paper 000, section 3.2, appendix E.2): the template engine and
//! the four strategies over one scene graph ([`Engine`]), driven by the files of `templates/`
//! (crate `cxrlake-templates`) and the dataset-wide `qa_balance` table ([`Balance`]), with the
//! hash-based sampling every run reproduces ([`unit_hash`]). The `generate_qa` SQL function
//! (crate `cxrlake-udfs`) wraps it.

mod balance;
mod engine;
mod scene;

pub use balance::{Balance, Fnv, unit_hash};
pub use engine::{AnswerPart, Engine, ModifierPair, Question, Texts, Variable};
pub use scene::{Localization, Obs, ObsKind, Scene, SceneGraphIn};
