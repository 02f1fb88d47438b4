//! Report extraction functions (paper 000, E.1.2), two backends with the same outputs:
//!
//! | step | rules (default, no LLM) | LLM (async, OpenAI-compatible) |
//! |---|---|---|
//! | sentences of a report | `rules_extract_sentences(text)` | `llm_extract_sentences(text)` |
//! | observations of a cluster | `rules_extract_observations(sentences)` | `llm_extract_observations(sentences)` |
//! | indication of a study | `rules_extract_indication(ind, ids, texts)` | `llm_extract_indication(ind, ids, texts)` |
//!
//! Each returns one struct per row with the extracted values, an `error` (the parse or call
//! error; NULL when fine) and `raw` (the LLM output that could not be parsed). The `extract`
//! stage registers one backend's functions under the backend-neutral names `extract_sentences`,
//! `extract_observations` and `extract_indication` that `sql/extract.sql` calls
//! ([`Naming::Step`]).

/// Plan identity of a rules function: its name and the definitions its rules were compiled
/// from.
macro_rules! rules_identity {
    ($func:ty) => {
        impl PartialEq for $func {
            fn eq(&self, other: &Self) -> bool {
                self.name == other.name
                    && self.rules.defs_fingerprint() == other.rules.defs_fingerprint()
            }
        }

        impl Eq for $func {}

        impl std::hash::Hash for $func {
            fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
                self.name.hash(state);
                self.rules.defs_fingerprint().hash(state);
            }
        }
    };
}

/// Plan identity of an LLM function: its name, model, endpoint and prompt version.
macro_rules! llm_identity {
    ($func:ty) => {
        impl PartialEq for $func {
            fn eq(&self, other: &Self) -> bool {
                self.name == other.name
                    && self.client.config() == other.client.config()
                    && self.prompts.version() == other.prompts.version()
            }
        }

        impl Eq for $func {}

        impl std::hash::Hash for $func {
            fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
                self.name.hash(state);
                self.client.config().model.hash(state);
                self.client.config().endpoint.as_str().hash(state);
                self.prompts.version().hash(state);
            }
        }
    };
}

use {llm_identity, rules_identity};

mod llm_extract_indication;
mod llm_extract_observations;
mod llm_extract_sentences;
mod output;
mod rules_extract_indication;
mod rules_extract_observations;
mod rules_extract_sentences;

pub use crate::llm_ask::CALL_FAILED;
pub use llm_extract_indication::LlmExtractIndicationFunc;
pub use llm_extract_observations::LlmExtractObservationsFunc;
pub use llm_extract_sentences::LlmExtractSentencesFunc;
pub use output::{indication_type, observations_type, sentences_type};
pub use rules_extract_indication::RulesExtractIndicationFunc;
pub use rules_extract_observations::RulesExtractObservationsFunc;
pub use rules_extract_sentences::RulesExtractSentencesFunc;

use std::sync::Arc;

use cxrlake_extract::prompts::Prompts;
use cxrlake_extract::rules::RulesExtractor;
use cxrlake_llm::LlmClient;
use datafusion::logical_expr::ScalarUDF;
use datafusion::logical_expr::async_udf::{AsyncScalarUDF, AsyncScalarUDFImpl};

/// The backend-neutral names the `extract` stage calls, in step order.
pub const STEP_NAMES: [&str; 3] = [
    "extract_sentences",
    "extract_observations",
    "extract_indication",
];

/// Which names the functions are registered under.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Naming {
    /// The backend's own names (`rules_extract_sentences`, `llm_extract_sentences`, …).
    Backend,
    /// The backend-neutral [`STEP_NAMES`] that `sql/extract.sql` calls.
    Step,
}

impl Naming {
    fn pick(self, backend: &'static str, step: usize) -> &'static str {
        match self {
            Naming::Backend => backend,
            Naming::Step => STEP_NAMES[step],
        }
    }
}

/// The rules backend's three functions, in step order.
pub fn rules_functions(rules: &Arc<RulesExtractor>, naming: Naming) -> [ScalarUDF; 3] {
    [
        ScalarUDF::from(RulesExtractSentencesFunc::new(rules.clone(), naming)),
        ScalarUDF::from(RulesExtractObservationsFunc::new(rules.clone(), naming)),
        ScalarUDF::from(RulesExtractIndicationFunc::new(rules.clone(), naming)),
    ]
}

/// The LLM backend's three functions, in step order.
pub fn llm_functions(
    client: &Arc<LlmClient>,
    prompts: &Arc<Prompts>,
    naming: Naming,
) -> [ScalarUDF; 3] {
    let wrap = |inner: Arc<dyn AsyncScalarUDFImpl>| AsyncScalarUDF::new(inner).into_scalar_udf();
    [
        wrap(Arc::new(LlmExtractSentencesFunc::new(
            client.clone(),
            prompts.clone(),
            naming,
        ))),
        wrap(Arc::new(LlmExtractObservationsFunc::new(
            client.clone(),
            prompts.clone(),
            naming,
        ))),
        wrap(Arc::new(LlmExtractIndicationFunc::new(
            client.clone(),
            prompts.clone(),
            naming,
        ))),
    ]
}
