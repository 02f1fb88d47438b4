//! The five text criteria of the judge (paper 000, table 12 and listings 7–11).

use cxrlake_schemas::quality::{self, Aspect};

/// One criterion the judge rates.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Criterion {
    /// Does each answer part align with the report? (per part; report, question, answer)
    Entailment,
    /// Is each answer part relevant to the question? (per part; question, answer)
    Relevance,
    /// Does the answer cover what the report says about the question? (report, question, answer)
    Completeness,
    /// Is the question clear? (the question alone)
    QuestionClarity,
    /// Is each answer part clear? (per part; the answer alone)
    AnswerClarity,
}

impl Criterion {
    /// All five, in table 12's order.
    pub const ALL: [Criterion; 5] = [
        Criterion::Entailment,
        Criterion::Relevance,
        Criterion::Completeness,
        Criterion::QuestionClarity,
        Criterion::AnswerClarity,
    ];

    /// The name used in `qa_judgements.criterion`, the quality structs and the prompt files.
    pub fn key(self) -> &'static str {
        self.aspect().key
    }

    /// Table 12's aspect of this criterion.
    pub fn aspect(self) -> &'static Aspect {
        match self {
            Criterion::Entailment => &quality::ENTAILMENT,
            Criterion::Relevance => &quality::RELEVANCE,
            Criterion::Completeness => &quality::COMPLETENESS,
            Criterion::QuestionClarity => &quality::QUESTION_CLARITY,
            Criterion::AnswerClarity => &quality::ANSWER_CLARITY,
        }
    }

    /// Whether it rates each answer part (else the question as a whole).
    pub fn per_part(self) -> bool {
        matches!(
            self,
            Criterion::Entailment | Criterion::Relevance | Criterion::AnswerClarity
        )
    }

    /// The criterion named `key`.
    pub fn from_key(key: &str) -> Option<Criterion> {
        Criterion::ALL.into_iter().find(|c| c.key() == key)
    }
}

impl std::fmt::Display for Criterion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.key())
    }
}
