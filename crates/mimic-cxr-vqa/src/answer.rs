//! The answer task (paper 001, section 3.2, appendices B and C): one answer per question from
//! the study's indication and findings, as `{question, answer}` JSON from the LLM, or composed
//! offline from the study's scene graph in the paper's style, with the echoed-question check and
//! the linter.
//!
//! ```text
//!  input row ── INDICATION, FINDINGS, QUESTION ──► LLM ──► {question, answer}
//!            │                         echo check (flag) · linter (flag | ask again)
//!            └── category, label value, facts ──► offline answer (linter-clean)
//! ```

use std::sync::Arc;

use cxrlake_generate::{GenerationTask, PromptSet, TaskPrompt, nullable};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::Result;
use crate::bank::{Bank, Category, LabelValue};
use crate::lint::{PROHIBITED_TERMS, REPORT_REFERENCES, lint};
use crate::text::{report_placeholders, words};

/// The SQL function name of the answer task.
pub const TASK_NAME: &str = "mimic_cxr_vqa_answer";

/// The offline answerer's id.
pub const OFFLINE_ID: &str = "offline-mimic-cxr-vqa-answer-1";

/// What the linter does with an answer that uses a prohibited term or refers to the report
/// (`cxrlake.vqa_lint`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LintPolicy {
    /// Keep it; the counts are columns of the QA table (the paper's behaviour: the prompt is
    /// the only enforcement).
    Flag,
    /// Ask the LLM again with the reason; an answer still failing after the retries is
    /// quarantined.
    Regenerate,
    /// Quarantine it without asking again.
    Drop,
}

impl LintPolicy {
    /// The policy named `flag`, `regenerate` or `drop`.
    pub fn parse(name: &str) -> Option<LintPolicy> {
        match name {
            "flag" => Some(Self::Flag),
            "regenerate" => Some(Self::Regenerate),
            "drop" => Some(Self::Drop),
            _ => None,
        }
    }
}

/// One study fact the offline answerer may describe: a top-level scene-graph observation.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct Fact {
    /// Its finding tag (or its name when it has none).
    #[serde(default, deserialize_with = "nullable")]
    pub finding: String,
    /// The finding's parent tags.
    #[serde(default, deserialize_with = "nullable")]
    pub parents: Vec<String>,
    /// Its categories (`ANATOMICAL_FINDING`, `DISEASE`, `DEVICE`, `TECHNICAL`).
    #[serde(default, deserialize_with = "nullable")]
    pub categories: Vec<String>,
    /// `pos`, `neg`, …
    #[serde(default, deserialize_with = "nullable")]
    pub positiveness: String,
    /// `certain`, `likely`, `uncertain`, …
    #[serde(default, deserialize_with = "nullable")]
    pub certainty: String,
    /// Its regions (names, or the scene graph's `{region, distances}`).
    #[serde(default, deserialize_with = "nullable")]
    pub regions: Vec<RegionName>,
    /// Its severity words.
    #[serde(default, deserialize_with = "nullable")]
    pub severity: String,
}

/// A region of a fact: its name, or the scene graph's `{region, distances}`.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum RegionName {
    /// The name.
    Name(String),
    /// A scene-graph region reference.
    Ref {
        /// The name.
        region: String,
    },
}

impl RegionName {
    /// The region's name.
    pub fn name(&self) -> &str {
        match self {
            Self::Name(name) | Self::Ref { region: name } => name,
        }
    }
}

impl From<&str> for RegionName {
    fn from(name: &str) -> Self {
        Self::Name(name.to_string())
    }
}

/// An answer input row.
#[derive(Debug, Deserialize)]
pub struct AnswerInput {
    /// The category's id.
    #[serde(default, deserialize_with = "nullable")]
    pub category: String,
    /// The label value (`1.0`, `0.0`, `-1.0`, `NaN`).
    #[serde(default, deserialize_with = "nullable")]
    pub value: String,
    /// The question.
    #[serde(default, deserialize_with = "nullable")]
    pub question: String,
    /// The report's indication.
    #[serde(default, deserialize_with = "nullable")]
    pub indication: String,
    /// The report's findings (else its impression).
    #[serde(default, deserialize_with = "nullable")]
    pub findings: String,
    /// The study's top-level observations.
    #[serde(default, deserialize_with = "nullable")]
    pub facts: Vec<Fact>,
}

impl AnswerInput {
    fn parse(input: &Value) -> std::result::Result<AnswerInput, String> {
        let row: AnswerInput = serde_json::from_value(input.clone())
            .map_err(|e| format!("invalid answer input row: {e}"))?;
        if row.question.trim().is_empty() {
            return Err("the input row has no question".into());
        }
        Ok(row)
    }
}

/// One answer record, as the `mimic_cxr_vqa_answer` function returns it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AnswerRecord {
    /// The answer.
    pub answer: String,
    /// `open` or `closed` ([`Bank::answer_type`]).
    pub answer_type: String,
    /// The question the answer repeats (the LLM's `question`; the question itself offline).
    pub echoed_question: String,
    /// Whether the echoed question is the question (compared word by word, without case).
    pub question_echoed: bool,
    /// The prohibited comparison terms the answer uses.
    pub prohibited_terms: Vec<String>,
    /// The report references the answer uses.
    pub report_references: Vec<String>,
}

impl AnswerRecord {
    fn new(bank: &Bank, question: &str, echoed: &str, answer: &str) -> AnswerRecord {
        let found = lint(answer);
        AnswerRecord {
            answer: answer.trim().to_string(),
            answer_type: bank.answer_type(answer).to_string(),
            echoed_question: echoed.trim().to_string(),
            question_echoed: words(question) == words(echoed),
            prohibited_terms: found.prohibited,
            report_references: found.report_references,
        }
    }
}

/// The answer task over the prompts' `answer` task and the bank.
#[derive(Debug)]
pub struct AnswerTask {
    prompts: Arc<PromptSet>,
    prompt: TaskPrompt,
    bank: Arc<Bank>,
    policy: LintPolicy,
}

impl AnswerTask {
    /// The task (prompt task `answer`).
    pub fn new(prompts: Arc<PromptSet>, bank: Arc<Bank>, policy: LintPolicy) -> Result<AnswerTask> {
        let prompt = prompts.require("answer")?.clone();
        Ok(AnswerTask {
            prompts,
            prompt,
            bank,
            policy,
        })
    }
}

impl GenerationTask for AnswerTask {
    fn name(&self) -> &str {
        TASK_NAME
    }

    fn prompt(&self) -> &TaskPrompt {
        &self.prompt
    }

    fn prompt_version(&self) -> &str {
        self.prompts.version()
    }

    /// `INDICATION` (`none` when the report has none), `FINDINGS`, `QUESTION`.
    fn placeholders(
        &self,
        input: &Value,
    ) -> std::result::Result<Vec<(&'static str, String)>, String> {
        let row = AnswerInput::parse(input)?;
        if row.findings.trim().is_empty() {
            return Err("the report has no FINDINGS or IMPRESSION text to answer from".into());
        }
        Ok(report_placeholders(
            &row.indication,
            &row.findings,
            &row.question,
        ))
    }

    /// An answer `{question, answer}`: the answer non-empty; the echoed question compared
    /// with the question (a mismatch is flagged, not refused); the linter's hits kept as
    /// columns, or (policy `regenerate`) the reason to ask again.
    fn check(&self, input: &Value, answer: &Value) -> std::result::Result<Vec<Value>, String> {
        let row = AnswerInput::parse(input)?;
        let text = answer
            .get("answer")
            .and_then(Value::as_str)
            .map(str::trim)
            .unwrap_or_default();
        if text.is_empty() {
            return Err("the answer is empty".into());
        }
        let echoed = answer
            .get("question")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let record = AnswerRecord::new(&self.bank, &row.question, echoed, text);
        if self.policy == LintPolicy::Regenerate {
            let found = lint(text);
            if !found.is_clean() {
                return Err(format!(
                    "the answer {}; rephrase it as observations of this radiograph alone",
                    found.reason()
                ));
            }
        }
        serde_json::to_value(record)
            .map(|v| vec![v])
            .map_err(|e| e.to_string())
    }

    fn offline(&self, input: &Value) -> std::result::Result<Vec<Value>, String> {
        let row = AnswerInput::parse(input)?;
        let category = self
            .bank
            .category(&row.category)
            .ok_or_else(|| format!("unknown category '{}'", row.category))?;
        let value = LabelValue::parse(&row.value)
            .ok_or_else(|| format!("unknown label value '{}'", row.value))?;
        let text = offline_answer(category, value, &row.question, &row.facts);
        serde_json::to_value(AnswerRecord::new(
            &self.bank,
            &row.question,
            &row.question,
            &text,
        ))
        .map(|v| vec![v])
        .map_err(|e| e.to_string())
    }

    fn offline_id(&self) -> &str {
        OFFLINE_ID
    }
}

/// Whether a question asks yes or no (it starts with an auxiliary verb).
fn is_polar(question: &str) -> bool {
    matches!(
        words(question).first().map(String::as_str),
        Some("is" | "are" | "can" | "does" | "do" | "has" | "have" | "was" | "were")
    )
}

/// `text` without the words the linter flags (scene-graph words are the report's, which may
/// compare with a prior study).
fn clean(text: &str) -> String {
    text.split_whitespace()
        .filter(|w| {
            let w = w.to_lowercase();
            let w = w.trim_matches(|c: char| !c.is_alphanumeric() && c != '-');
            !PROHIBITED_TERMS
                .iter()
                .chain(REPORT_REFERENCES.iter())
                .any(|b| *b == w)
                && w != "follow"
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// `a`, `a and b`, `a, b and c`.
fn join(items: &[String]) -> String {
    match items {
        [] => String::new(),
        [one] => one.clone(),
        [init @ .., last] => format!("{} and {last}", init.join(", ")),
    }
}

/// `text` with its first letter in upper case.
fn capitalize(text: &str) -> String {
    let mut chars = text.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

/// A fact as a phrase: `mild atelectasis in the left lower lung zone`.
fn phrase(fact: &Fact) -> String {
    let mut text = String::new();
    let severity = fact.severity.trim();
    if !severity.is_empty() {
        text.push_str(severity);
        text.push(' ');
    }
    text.push_str(fact.finding.trim());
    let regions: Vec<String> = fact
        .regions
        .iter()
        .map(|r| r.name().trim())
        .filter(|r| !r.is_empty())
        .map(str::to_string)
        .collect();
    if !regions.is_empty() {
        text.push_str(" in the ");
        text.push_str(&join(&regions));
    }
    clean(&text)
}

/// Whether `fact` is about `category`'s findings (its tag or a parent tag).
fn about(fact: &Fact, category: &Category) -> bool {
    category
        .findings
        .iter()
        .any(|f| *f == fact.finding || fact.parents.contains(f))
}

fn is_device(fact: &Fact) -> bool {
    fact.categories.iter().any(|c| c == "DEVICE")
}

/// The distinct phrases of the facts `keep` selects, positive ones only.
fn phrases(facts: &[Fact], keep: impl Fn(&Fact) -> bool) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for fact in facts.iter().filter(|f| f.positiveness == "pos" && keep(f)) {
        let text = phrase(fact);
        if !text.is_empty() && !out.contains(&text) {
            out.push(text);
        }
    }
    out
}

fn be(items: &[String]) -> &'static str {
    if items.len() > 1 { "are" } else { "is" }
}

/// The offline answer (paper 001's style: a full sentence that answers the question and gives
/// the details the study holds; NaN answers state absence; no comparison terms, no reference to
/// the report).
pub fn offline_answer(
    category: &Category,
    value: LabelValue,
    question: &str,
    facts: &[Fact],
) -> String {
    let polar = is_polar(question);
    let name = category.name.to_lowercase();
    match category.id.as_str() {
        "heart" => heart_answer(question, facts, category),
        "no_finding" => {
            let abnormal = phrases(facts, |f| {
                !is_device(f) && !f.categories.iter().any(|c| c == "TECHNICAL")
            });
            if value == LabelValue::Positive
                || abnormal.is_empty() && value != LabelValue::Uncertain
            {
                let text = "no abnormalities are seen in the radiograph.";
                if polar {
                    format!("No, {text}")
                } else {
                    capitalize(text)
                }
            } else if abnormal.is_empty() {
                "Abnormal findings cannot be excluded in the radiograph.".to_string()
            } else {
                let text = format!(
                    "{} {} seen in the radiograph.",
                    join(&abnormal),
                    be(&abnormal)
                );
                if polar {
                    format!("Yes, {text}")
                } else {
                    capitalize(&text)
                }
            }
        }
        "support_devices" => {
            let devices = phrases(facts, is_device);
            match value {
                LabelValue::Positive | LabelValue::Uncertain if !devices.is_empty() => {
                    let text = format!(
                        "the following support devices are seen: {}.",
                        join(&devices)
                    );
                    if polar {
                        format!("Yes, {text}")
                    } else {
                        capitalize(&text)
                    }
                }
                LabelValue::Positive | LabelValue::Uncertain => {
                    let text = "support devices are seen in the radiograph.";
                    if polar {
                        format!("Yes, {text}")
                    } else {
                        capitalize(text)
                    }
                }
                _ => {
                    if polar {
                        "No, no support devices are seen in the radiograph.".to_string()
                    } else {
                        "No support devices are seen in the radiograph.".to_string()
                    }
                }
            }
        }
        _ => {
            let seen = phrases(facts, |f| about(f, category));
            match value {
                LabelValue::Positive => {
                    let text = if seen.is_empty() {
                        format!("signs of {name} are seen in the radiograph.")
                    } else {
                        format!("{} {} seen.", join(&seen), be(&seen))
                    };
                    if polar {
                        format!("Yes, {text}")
                    } else {
                        capitalize(&text)
                    }
                }
                LabelValue::Uncertain => {
                    if seen.is_empty() {
                        format!(
                            "Possibly; findings in the radiograph may represent {name}, which \
                             cannot be excluded."
                        )
                    } else {
                        format!(
                            "Possibly; {} may be present, and {name} cannot be excluded.",
                            join(&seen)
                        )
                    }
                }
                LabelValue::Negative | LabelValue::NotMentioned => {
                    if polar {
                        format!("No, there are no signs of {name} in the radiograph.")
                    } else {
                        format!("No evidence of {name} is seen in the radiograph.")
                    }
                }
            }
        }
    }
}

/// Heart questions: the size from the study's cardiomegaly observations (enlarged when one is
/// positive, else normal), phrased after the question (normal-phrased or enlarged-phrased).
fn heart_answer(question: &str, facts: &[Fact], category: &Category) -> String {
    let enlarged = phrases(facts, |f| about(f, category));
    let severity = facts
        .iter()
        .filter(|f| f.positiveness == "pos" && about(f, category))
        .map(|f| clean(f.severity.trim()))
        .find(|s| !s.is_empty());
    let size = match (&enlarged.is_empty(), &severity) {
        (true, _) => "the heart size is normal".to_string(),
        (false, Some(severity)) if !severity.contains(' ') && !severity.ends_with("ly") => {
            format!("the heart is {severity}ly enlarged")
        }
        (false, Some(severity)) => format!("the heart is enlarged ({severity})"),
        (false, None) => "the heart is enlarged".to_string(),
    };
    let q = words(question);
    let asks_normal = q.iter().any(|w| w == "normal" || w == "expected");
    if !is_polar(question) {
        return format!("{}.", capitalize(&size));
    }
    let yes = if asks_normal {
        enlarged.is_empty()
    } else {
        !enlarged.is_empty()
    };
    format!("{}, {size}.", if yes { "Yes" } else { "No" })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn task(policy: LintPolicy) -> AnswerTask {
        AnswerTask::new(
            Arc::new(crate::prompts().expect("prompts")),
            Arc::new(Bank::embedded().expect("bank")),
            policy,
        )
        .expect("task")
    }

    fn row(category: &str, value: &str, question: &str) -> Value {
        json!({
            "category": category,
            "value": value,
            "question": question,
            "indication": "___-year-old man with shortness of breath.",
            "findings": "Moderate left pleural effusion with adjacent atelectasis. Heart size is normal. \
                         Endotracheal tube terminates 4 cm above the carina.",
            "facts": [
                {"finding": "pleural effusion", "parents": [], "categories": ["ANATOMICAL_FINDING"],
                 "positiveness": "pos", "certainty": "certain", "regions": ["left costophrenic angle"],
                 "severity": "moderate"},
                {"finding": "atelectasis", "parents": [], "categories": ["ANATOMICAL_FINDING"],
                 "positiveness": "pos", "certainty": "certain", "regions": ["left lower lung zone"],
                 "severity": null},
                {"finding": "endotracheal tube", "parents": [], "categories": ["DEVICE"],
                 "positiveness": "pos", "certainty": "certain", "regions": null, "severity": ""},
                {"finding": "pneumothorax", "parents": [], "categories": ["ANATOMICAL_FINDING"],
                 "positiveness": "neg", "certainty": "certain", "regions": [], "severity": ""}
            ]
        })
    }

    fn answer_of(category: &str, value: &str, question: &str) -> String {
        let records = task(LintPolicy::Flag)
            .offline(&row(category, value, question))
            .expect("offline");
        records[0]["answer"].as_str().expect("answer").to_string()
    }

    #[test]
    fn offline_answers_follow_the_label_and_describe_the_study() {
        assert_eq!(
            answer_of("pleural_effusion", "1.0", "Is Pleural Effusion present?"),
            "Yes, moderate pleural effusion in the left costophrenic angle is seen."
        );
        assert_eq!(
            answer_of(
                "pleural_effusion",
                "1.0",
                "What evidence of Pleural Effusion is visible?"
            ),
            "Moderate pleural effusion in the left costophrenic angle is seen."
        );
        assert_eq!(
            answer_of("pneumothorax", "NaN", "Is Pneumothorax present?"),
            "No, there are no signs of pneumothorax in the radiograph."
        );
        assert_eq!(
            answer_of(
                "pneumothorax",
                "0.0",
                "What evidence of Pneumothorax is visible?"
            ),
            "No evidence of pneumothorax is seen in the radiograph."
        );
        assert!(
            answer_of("pneumonia", "-1.0", "Is Pneumonia observed?").contains("cannot be excluded")
        );
        assert_eq!(
            answer_of("support_devices", "1.0", "Which Support Devices are found?"),
            "The following support devices are seen: endotracheal tube."
        );
        assert_eq!(
            answer_of("no_finding", "NaN", "Are there any findings?"),
            "Yes, moderate pleural effusion in the left costophrenic angle and atelectasis in \
             the left lower lung zone are seen in the radiograph."
        );
        assert_eq!(
            answer_of("heart", "1.0", "Is the heart size normal?"),
            "Yes, the heart size is normal."
        );
        assert_eq!(
            answer_of("heart", "1.0", "Does the heart appear enlarged?"),
            "No, the heart size is normal."
        );
        assert_eq!(
            answer_of("heart", "1.0", "How is the size of the heart?"),
            "The heart size is normal."
        );
    }

    #[test]
    fn offline_answers_are_linter_clean_even_when_the_scene_graph_compares() {
        let category = Bank::embedded().expect("bank");
        let category = category.category("atelectasis").expect("atelectasis");
        let facts = [Fact {
            finding: "atelectasis".into(),
            positiveness: "pos".into(),
            severity: "new stable".into(),
            regions: vec!["left lower lung zone".into()],
            ..Fact::default()
        }];
        let text = offline_answer(
            category,
            LabelValue::Positive,
            "Is Atelectasis observed?",
            &facts,
        );
        assert!(lint(&text).is_clean(), "{text}");
        assert_eq!(
            text,
            "Yes, atelectasis in the left lower lung zone is seen."
        );
    }

    #[test]
    fn llm_answers_are_checked_for_the_echo_and_linted() {
        let input = row("edema", "0.0", "Is Edema observed?");
        let flag = task(LintPolicy::Flag);
        let records = flag
            .check(
                &input,
                &json!({"question": "is edema observed", "answer": "No edema is seen."}),
            )
            .expect("valid");
        assert_eq!(records[0]["question_echoed"], json!(true));
        let records = flag
            .check(
                &input,
                &json!({"question": "Is there edema?", "answer": "Edema is unchanged, as mentioned."}),
            )
            .expect("flagged, kept");
        assert_eq!(records[0]["question_echoed"], json!(false));
        assert_eq!(records[0]["prohibited_terms"], json!(["unchanged"]));
        assert_eq!(records[0]["report_references"], json!(["mentioned"]));
        let err = task(LintPolicy::Regenerate)
            .check(
                &input,
                &json!({"question": "Is Edema observed?", "answer": "Stable edema."}),
            )
            .expect_err("asked again");
        assert!(err.contains("prohibited comparison terms: stable"), "{err}");
        assert!(
            flag.check(&input, &json!({"question": "q", "answer": "  "}))
                .is_err()
        );
    }

    #[test]
    fn the_prompt_renders_as_the_paper_prints_it() {
        let task = task(LintPolicy::Flag);
        let values = task
            .placeholders(&row("edema", "0.0", "Is Edema observed?"))
            .expect("placeholders");
        let (system, user) = task.prompt().render(&values).expect("render");
        assert!(system.starts_with(
            "Task Definition: You are an assistant that, given a medical report about a chest \
             radiograph, an indication for the imaging study and a related question, will \
             return a JSON response"
        ));
        for heading in [
            "Response Format:",
            "Strict Evidence-based Approach:",
            "Prohibited Terms and Constraints:",
            "Terminology Guidelines:",
            "Neutrality and Objectivity:",
        ] {
            assert!(system.contains(heading), "{heading}");
        }
        for term in PROHIBITED_TERMS {
            assert!(system.contains(&format!("*{term}*")), "{term}");
        }
        assert_eq!(
            user,
            "indication: ___-year-old man with shortness of breath.\nreport findings: Moderate \
             left pleural effusion with adjacent atelectasis. Heart size is normal. Endotracheal \
             tube terminates 4 cm above the carina.\nquestion: Is Edema observed?"
        );
        let mut empty = row("edema", "0.0", "Is Edema observed?");
        empty["findings"] = json!("");
        assert!(task.placeholders(&empty).is_err());
    }
}
