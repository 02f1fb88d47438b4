//! The QA judge of cxrlake (paper 000, section 3.3, appendices D.3 and E.3): the five text
//! criteria, what a judge reads of a QA pair (its content-addressed requests), the heuristic
//! judge (the offline default), the LLM-judge prompts of listings 7–11 with tolerant parsers
//! of their answers. The ratings of tables 11 and 12 are crate `cxrlake-grade`'s.
//!
//! ```text
//!  qa row ──► QaItem {strategy, question, parts, report}
//!     │
//!     ▼  Judge::request, per criterion
//!  Request {input = exactly what the judge reads, content_hash = sha256(judge, criterion, input)}
//!     │  equal hashes judged once (sql/judge.sql groups by content_hash)
//!     ▼
//!  heuristic::judge(input) | LLM(prompt) → parse::part_levels / parse::single_level
//!     │
//!     ▼
//!  Verdict {levels, explanation, error} ──► qa_judgements
//!     │  sql/grade.sql joins them back by content_hash
//!     ▼
//!  cxrlake-grade: part_rating → text_rating → scene_graph_rating → qa.rating
//! ```

mod criterion;
pub mod error;

pub mod heuristic;
mod item;
mod judge;
pub mod parse;
pub mod prompts;
pub mod reading;
mod verdict;

pub use criterion::Criterion;
pub use error::{JudgeError, Result};
pub use heuristic::HEURISTIC_JUDGE;
pub use item::{Part, QaItem};
pub use judge::{Judge, Request};
pub use prompts::JudgePrompts;
pub use reading::{Claim, READING_JUDGE, ReportReader};
pub use verdict::Verdict;
