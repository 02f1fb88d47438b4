//! The generation operator of cxrlake's dataset flavours, without DataFusion: what a flavour
//! implements ([`GenerationTask`]: the prompt of a task, its placeholders, the checks of an
//! answer, and the deterministic offline generator) and what every flavour shares. The SQL
//! functions that run a task over rows (LLM or offline) are in `cxrlake-udfs` (`generate/`).
//!
//! ```text
//!  input row (JSON) ──placeholders──► prompt (system + user) ──LLM──► answer text
//!        │                                                     parse_json (tolerant)
//!        │                                                     validate (task's JSON schema)
//!        │                                                     check (task rules) ──► records
//!        │                     invalid: asked again with the reason, `retries` times
//!        └──offline──► records (deterministic, no LLM)
//! ```

mod error;
mod json;
pub mod lint;
mod prompts;
mod schema;

pub use error::{GenerateError, Result};
pub use json::{parse_json, repair_json};
pub use prompts::{ChangelogEntry, PromptSet, TaskPrompt};
pub use schema::{check_schema, validate};

use std::fmt::Debug;

use serde::{Deserialize, Deserializer};
use serde_json::Value;

/// A field of an input row that may be missing or JSON `null` (Arrow's NULL list or text), read
/// as its default: `#[serde(default, deserialize_with = "nullable")]`.
pub fn nullable<'de, D, T>(deserializer: D) -> std::result::Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Default + Deserialize<'de>,
{
    Ok(Option::<T>::deserialize(deserializer)?.unwrap_or_default())
}

/// One generation task of a flavour (e.g. GEMeX's re-grounding or its QA generation), run by
/// the LLM operator or offline. Input rows and output records are JSON objects; the records'
/// fields are those of the task's record type (declared in `cxrlake-schemas`).
pub trait GenerationTask: Send + Sync + Debug {
    /// The SQL function name that runs it (e.g. `gemex_generate`).
    fn name(&self) -> &str;

    /// The task's prompt: templates, sampling settings, answer schema, retries.
    fn prompt(&self) -> &TaskPrompt;

    /// The version of the prompts folder the prompt comes from ([`PromptSet::version`]), recorded
    /// in the generator id of every row the LLM writes.
    fn prompt_version(&self) -> &str;

    /// The values of the prompt's placeholders (system and user) for one input row, or why the
    /// row cannot be asked (then it is rejected without a call).
    fn placeholders(&self, input: &Value) -> Result<Vec<(&'static str, String)>, String>;

    /// The records of a parsed answer that passed the task's JSON schema, or why it is invalid
    /// (then the operator asks again, and finally rejects the row with this reason).
    fn check(&self, input: &Value, answer: &Value) -> Result<Vec<Value>, String>;

    /// The records the offline generator writes for one input row (deterministic).
    fn offline(&self, input: &Value) -> Result<Vec<Value>, String>;

    /// The offline generator's id, recorded in every row it writes (e.g. `offline-gemex-1`).
    fn offline_id(&self) -> &str;
}
