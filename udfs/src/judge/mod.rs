//! Judge functions (paper 000, E.3), bound to one judge by the `judge` and `grade` stages:
//!
//! | function | what |
//! |---|---|
//! | `judge_requests(question_strategy, question, answers, report)` | per QA pair, the five criteria's inputs and content hashes |
//! | `judge_hashes(question_strategy, question, answers, report)` | the same without the inputs: per QA pair, the five criteria and content hashes |
//! | `judge_verdicts(criterion, report, items)` | the verdicts on a group of distinct inputs of one study and criterion: heuristic ([`HeuristicVerdictFunc`], each input on its own) or LLM ([`LlmVerdictFunc`], one call per group) |

mod answers;
mod group;
mod heuristic_verdict;
mod judge_requests;
mod llm_verdict;
mod verdict;

pub(crate) use answers::{Answers, text_at};
pub use heuristic_verdict::HeuristicVerdictFunc;
pub use judge_requests::{JudgeRequestsFunc, hashes_type, requests_type};
pub use llm_verdict::LlmVerdictFunc;
pub use verdict::verdicts_type;
