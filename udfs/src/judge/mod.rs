//! Judge functions (paper 000, E.3), bound to one judge by the `judge` and `grade` stages:
//!
//! | function | what |
//! |---|---|
//! | `judge_requests(question_strategy, question, answers, report)` | per QA pair, the five criteria's inputs and content hashes |
//! | `judge_verdict(criterion, input, parts)` | the verdict on one distinct input: heuristic ([`HeuristicVerdictFunc`]) or LLM ([`LlmVerdictFunc`]) |

mod answers;
mod heuristic_verdict;
mod judge_requests;
mod llm_verdict;
mod verdict;

pub(crate) use answers::{Answers, text_at};
pub use heuristic_verdict::HeuristicVerdictFunc;
pub use judge_requests::{JudgeRequestsFunc, requests_type};
pub use llm_verdict::LlmVerdictFunc;
pub use verdict::verdict_type;
