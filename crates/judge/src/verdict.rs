//! A judge's verdict on one input: a level per answer part (or one for the question).

use crate::criterion::Criterion;

/// What the judge said about one input of one criterion.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verdict {
    /// Level names of the criterion's aspect: one per answer part for per-part criteria, one
    /// otherwise. `None` where the judge gave no usable level (the QA pair is then `not rated`).
    pub levels: Vec<Option<&'static str>>,
    /// The judge's reasoning or raw answer (the heuristic's rule, the LLM's text).
    pub explanation: String,
    /// Why the verdict is unusable, when it is (a parse error, a failed call).
    pub error: Option<String>,
}

impl Verdict {
    /// A verdict with these levels, all usable.
    pub fn rated(levels: Vec<&'static str>, explanation: impl Into<String>) -> Self {
        Verdict {
            levels: levels.into_iter().map(Some).collect(),
            explanation: explanation.into(),
            error: None,
        }
    }

    /// A verdict without usable levels.
    pub fn unrated(error: impl Into<String>, explanation: impl Into<String>) -> Self {
        Verdict {
            levels: Vec::new(),
            explanation: explanation.into(),
            error: Some(error.into()),
        }
    }

    /// The level of part `index` (per-part criteria) or of the question (`index` 0), if usable.
    pub fn level(&self, index: usize) -> Option<&'static str> {
        if self.error.is_some() {
            return None;
        }
        self.levels.get(index).copied().flatten()
    }

    /// Checks that every level is one of `criterion`'s (a defect of the judge otherwise).
    pub fn is_valid_for(&self, criterion: Criterion) -> bool {
        let aspect = criterion.aspect();
        self.levels
            .iter()
            .flatten()
            .all(|name| aspect.level(name).is_some())
    }
}
