//! What is judged: one QA pair as the judge sees it, borrowed from a `qa` row.

/// One answer part, in the order of the question's `answers` list (parents before children).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Part<'a> {
    /// `main_answer`, `details` or `related_information`.
    pub answer_type: &'a str,
    /// The answer text.
    pub text: &'a str,
    /// Derived from an observation node (else filled from a template).
    pub from_report: bool,
    /// `pos`, `neg`, … (`None` when unset).
    pub positiveness: Option<&'a str>,
    /// Whether the part names the observations it was derived from (`obs_ids` not empty).
    pub grounded: bool,
}

/// One QA pair with its report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QaItem<'a> {
    /// `indication`, `abnormal`, `region_abnormal` or `finding`.
    pub strategy: &'a str,
    /// The question text.
    pub question: &'a str,
    /// The answer parts.
    pub parts: Vec<Part<'a>>,
    /// The study's report (`None` when the lake has none for the study).
    pub report: Option<&'a str>,
}
