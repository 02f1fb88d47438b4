//! The generation operator of dataset flavours (`cxrlake-generate`) as SQL functions, and the
//! linters every flavour's generated QA pairs go through:
//!
//! | function | what it does |
//! |---|---|
//! | `<task>(input)`, LLM ([`LlmGenerateFunc`]) | asks, checks, asks again with the reason |
//! | `<task>(input)`, offline ([`GenerateFunc`]) | the task's deterministic generator |
//! | `lint_banned_terms(text)` | the banned terms a text uses |
//! | `check_choices(type, choices, answer)` | why choices and answer are malformed |
//! | `near_duplicates(texts, threshold)` | per text, the earlier text it nearly repeats |
//!
//! Both generation functions take one struct (the input row, read as a JSON object) and return
//! `cxrlake_schemas::gemex::generated_type(record fields)`: `struct<records, error, raw,
//! attempts, generator>`. A flavour's stage registers one of them under the task's name.

mod check_choices;
#[expect(
    clippy::module_inception,
    reason = "one file per function: generate.rs is the offline `<task>` function"
)]
mod generate;
mod lint_banned_terms;
mod llm_generate;
mod near_duplicates;
mod output;

pub use check_choices::CheckChoicesFunc;
pub use generate::GenerateFunc;
pub use lint_banned_terms::LintBannedTermsFunc;
pub use llm_generate::LlmGenerateFunc;
pub use near_duplicates::NearDuplicatesFunc;
