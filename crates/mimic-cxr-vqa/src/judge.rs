//! The judge (paper 001, section 4.1, table 3): each QA pair rated on four rubrics — correctness,
//! consistency with the report, completeness, clinical relevance — by the LLM with our prompt
//! (the paper's DeepSeek-R1 prompt is not published), or by an offline heuristic that reads the
//! report itself (never the labels the question came from).
//!
//! ```text
//!  question + answer + report ── LLM ──► {correctness, consistency, completeness, relevance}
//!                             └─ offline: what the report says of the category (negation,
//!                                hedging) vs what the answer says; details covered; words the
//!                                report does not support
//! ```

use std::sync::Arc;

use cxrlake_generate::{GenerationTask, PromptSet, TaskPrompt, nullable};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::Result;
use crate::bank::{Bank, Category};
use crate::text::{STOPWORDS, Stance, position, report_placeholders, sentences, stance, words};

/// The SQL function name of the judge task.
pub const TASK_NAME: &str = "mimic_cxr_vqa_judge";

/// The offline judge's id.
pub const OFFLINE_ID: &str = "offline-mimic-cxr-vqa-judge-1";

/// The four rubrics and their levels, best first (table 3).
pub const RUBRICS: [(&str, &[&str]); 4] = [
    ("correctness", &["Correct", "Incorrect"]),
    (
        "consistency",
        &["Fully Consistent", "Partially Consistent", "Inconsistent"],
    ),
    (
        "completeness",
        &["Complete", "Partially Complete", "Incomplete"],
    ),
    (
        "relevance",
        &[
            "Essential",
            "Non-essential but Correct",
            "Incorrect and Misleading",
        ],
    ),
];

/// One verdict, as the `mimic_cxr_vqa_judge` function returns it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Verdict {
    /// `Correct` or `Incorrect`.
    pub correctness: String,
    /// `Fully Consistent`, `Partially Consistent` or `Inconsistent`.
    pub consistency: String,
    /// `Complete`, `Partially Complete` or `Incomplete`.
    pub completeness: String,
    /// `Essential`, `Non-essential but Correct` or `Incorrect and Misleading`.
    pub relevance: String,
    /// Why, in a sentence or two.
    pub rationale: String,
}

/// A judge input row.
#[derive(Debug, Deserialize)]
struct JudgeInput {
    #[serde(default, deserialize_with = "nullable")]
    category: String,
    #[serde(default, deserialize_with = "nullable")]
    question: String,
    #[serde(default, deserialize_with = "nullable")]
    answer: String,
    #[serde(default, deserialize_with = "nullable")]
    indication: String,
    #[serde(default, deserialize_with = "nullable")]
    findings: String,
}

impl JudgeInput {
    fn parse(input: &Value) -> std::result::Result<JudgeInput, String> {
        let row: JudgeInput = serde_json::from_value(input.clone())
            .map_err(|e| format!("invalid judge input row: {e}"))?;
        if row.question.trim().is_empty() || row.answer.trim().is_empty() {
            return Err("the input row has no question or no answer".into());
        }
        if row.findings.trim().is_empty() {
            return Err("the report has no FINDINGS or IMPRESSION text to judge against".into());
        }
        Ok(row)
    }
}

/// The judge task over the prompts' `judge` task and the bank.
#[derive(Debug)]
pub struct JudgeTask {
    prompts: Arc<PromptSet>,
    prompt: TaskPrompt,
    bank: Arc<Bank>,
    lexicon: Lexicon,
}

impl JudgeTask {
    /// The task (prompt task `judge`).
    pub fn new(prompts: Arc<PromptSet>, bank: Arc<Bank>) -> Result<JudgeTask> {
        let prompt = prompts.require("judge")?.clone();
        let lexicon = Lexicon::new(&bank);
        Ok(JudgeTask {
            prompts,
            prompt,
            bank,
            lexicon,
        })
    }
}

/// The level of `rubric` that `given` names (case and spacing ignored), as table 3 spells it.
pub fn level(rubric: &str, given: &str) -> Option<&'static str> {
    let key = |s: &str| words(s).join(" ");
    let given = key(given);
    RUBRICS
        .iter()
        .find(|(name, _)| *name == rubric)?
        .1
        .iter()
        .find(|level| key(level) == given)
        .copied()
}

impl GenerationTask for JudgeTask {
    fn name(&self) -> &str {
        TASK_NAME
    }

    fn prompt(&self) -> &TaskPrompt {
        &self.prompt
    }

    fn prompt_version(&self) -> &str {
        self.prompts.version()
    }

    /// `INDICATION`, `FINDINGS`, `QUESTION`, `ANSWER`.
    fn placeholders(
        &self,
        input: &Value,
    ) -> std::result::Result<Vec<(&'static str, String)>, String> {
        let row = JudgeInput::parse(input)?;
        let mut values = report_placeholders(&row.indication, &row.findings, &row.question);
        values.push(("ANSWER", row.answer.trim().to_string()));
        Ok(values)
    }

    /// An answer with a level of each rubric (normalised to table 3's spelling).
    fn check(&self, _input: &Value, answer: &Value) -> std::result::Result<Vec<Value>, String> {
        let mut levels = Vec::with_capacity(4);
        for (rubric, allowed) in RUBRICS {
            let given = answer
                .get(rubric)
                .and_then(Value::as_str)
                .unwrap_or_default();
            let Some(found) = level(rubric, given) else {
                return Err(format!(
                    "\"{rubric}\" is \"{given}\", not one of: {}",
                    allowed.join(", ")
                ));
            };
            levels.push(found.to_string());
        }
        let rationale = answer
            .get("rationale")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .trim()
            .to_string();
        let [correctness, consistency, completeness, relevance] =
            <[String; 4]>::try_from(levels).map_err(|_| "four rubrics".to_string())?;
        serde_json::to_value(Verdict {
            correctness,
            consistency,
            completeness,
            relevance,
            rationale,
        })
        .map(|v| vec![v])
        .map_err(|e| e.to_string())
    }

    fn offline(&self, input: &Value) -> std::result::Result<Vec<Value>, String> {
        let row = JudgeInput::parse(input)?;
        let category = self
            .bank
            .category(&row.category)
            .ok_or_else(|| format!("unknown category '{}'", row.category))?;
        let verdict = heuristic_verdict(
            &self.lexicon,
            category,
            &row.question,
            &row.answer,
            &row.findings,
        );
        serde_json::to_value(verdict)
            .map(|v| vec![v])
            .map_err(|e| e.to_string())
    }

    fn offline_id(&self) -> &str {
        OFFLINE_ID
    }
}

/// What a text says of a category: the strongest stance of any term in any sentence (present
/// over uncertain over absent), `None` when no term occurs; with the words of the sentences
/// that say it.
fn what_is_said(text: &str, terms: &[String]) -> (Option<Stance>, Vec<String>) {
    let mut best: Option<Stance> = None;
    let mut details = Vec::new();
    for sentence in sentences(text) {
        let w = words(sentence);
        for term in terms {
            if let Some(at) = position(&w, term) {
                let found = stance(&w, at, term.split(' ').count());
                if found == Stance::Present {
                    details.extend(w.iter().cloned());
                }
                best = Some(best.map_or(found, |b| b.min(found)));
            }
        }
    }
    (best, details)
}

/// Heart size: `Present` = enlarged, `Absent` = normal.
fn heart_said(text: &str, cardiomegaly: &[String]) -> Option<Stance> {
    let (enlarged, _) = what_is_said(text, cardiomegaly);
    if enlarged == Some(Stance::Present) || enlarged == Some(Stance::Uncertain) {
        return enlarged;
    }
    for sentence in sentences(text) {
        let w = words(sentence);
        let about_heart = w.iter().any(|x| x == "heart" || x == "cardiac");
        if !about_heart {
            continue;
        }
        if let Some(at) = w.iter().position(|x| x.starts_with("enlarg")) {
            return Some(stance(&w, at, 1));
        }
        if w.iter()
            .any(|x| x == "normal" || x == "unremarkable" || x == "upper")
        {
            return Some(Stance::Absent);
        }
    }
    enlarged
}

/// Whether two words share a stem: their first six letters (`terminates`, `terminating`), or
/// one is the other with a plural or past ending.
fn same_stem(a: &str, b: &str) -> bool {
    let (short, long) = if a.len() <= b.len() { (a, b) } else { (b, a) };
    (short.len() >= 6 && long.get(..6) == short.get(..6))
        || (short.len() >= 4 && long.starts_with(short) && long.len() - short.len() <= 2)
}

/// Words of location and anatomy a normalised answer may use for the report's own wording.
const ANATOMY: &[&str] = &[
    "zone",
    "zones",
    "angle",
    "angles",
    "lobe",
    "lobes",
    "lung",
    "lungs",
    "base",
    "bases",
    "field",
    "fields",
    "region",
    "hemithorax",
    "costophrenic",
    "lower",
    "upper",
    "mid",
    "middle",
    "apical",
    "apex",
    "following",
    "support",
    "devices",
    "device",
    "heart",
    "normal",
    "enlarged",
    "abnormalities",
    "abnormal",
    "excluded",
    "cannot",
    "represent",
    "possibly",
    "mildly",
    "moderately",
    "severely",
];

/// The report words the offline judge reads beyond a category's own terms, gathered once from
/// the bank: the cardiomegaly terms (heart size) and every abnormality's terms (No Finding).
#[derive(Debug, Clone)]
pub struct Lexicon {
    cardiomegaly: Vec<String>,
    abnormal: Vec<String>,
}

impl Lexicon {
    /// The lexicon of `bank`.
    pub fn new(bank: &Bank) -> Lexicon {
        Lexicon {
            cardiomegaly: bank
                .category("cardiomegaly")
                .map(|c| c.terms.clone())
                .unwrap_or_default(),
            abnormal: bank
                .categories()
                .iter()
                .filter(|c| !matches!(c.id.as_str(), "heart" | "no_finding" | "support_devices"))
                .flat_map(|c| c.terms.iter().cloned())
                .collect(),
        }
    }
}

/// The offline verdict.
pub fn heuristic_verdict(
    lexicon: &Lexicon,
    category: &Category,
    question: &str,
    answer: &str,
    report: &str,
) -> Verdict {
    let answer_words = words(answer);
    let first = answer_words.first().map(String::as_str);
    let polar_answer = match first {
        Some("yes") => Some(Stance::Present),
        Some("no") => Some(Stance::Absent),
        Some("possibly") => Some(Stance::Uncertain),
        _ => None,
    };
    let asks_normal = words(question)
        .iter()
        .any(|w| w == "normal" || w == "expected");
    let cardiomegaly = &lexicon.cardiomegaly;
    let (report_says, details, answer_says) = match category.id.as_str() {
        "heart" => {
            let report = heart_said(report, cardiomegaly);
            let mut said = heart_said(answer, cardiomegaly);
            if said.is_none() || polar_answer.is_some() && asks_normal {
                // "Is the heart size normal?" — "Yes" means normal (absent enlargement).
                said = polar_answer.map(|p| match (p, asks_normal) {
                    (Stance::Present, true) => Stance::Absent,
                    (Stance::Absent, true) => Stance::Present,
                    (p, _) => p,
                });
            }
            (report, Vec::new(), said)
        }
        "no_finding" => {
            let abnormal = &lexicon.abnormal;
            let (report, details) = what_is_said(report, abnormal);
            let said = polar_answer
                .or_else(|| what_is_said(answer, abnormal).0)
                .or_else(|| {
                    answer_words
                        .iter()
                        .any(|w| w == "abnormalities" || w == "findings")
                        .then_some(if answer_words.iter().any(|w| w == "no") {
                            Stance::Absent
                        } else {
                            Stance::Present
                        })
                });
            (report, details, said)
        }
        "cardiomegaly" => {
            // "The heart is mildly enlarged" is cardiomegaly; "heart size is normal" is not.
            let said = match polar_answer {
                Some(p) => Some(p),
                None => heart_said(answer, &category.terms),
            };
            (heart_said(report, &category.terms), Vec::new(), said)
        }
        _ => {
            let (report, details) = what_is_said(report, &category.terms);
            let (said, _) = what_is_said(answer, &category.terms);
            // A polar answer's first word decides, unless it hedges.
            let said = match (polar_answer, said) {
                (Some(Stance::Uncertain), _) | (_, Some(Stance::Uncertain)) => {
                    Some(Stance::Uncertain)
                }
                (Some(p), _) => Some(p),
                (None, s) => s,
            };
            (report, details, said)
        }
    };
    // Not mentioned counts as absent (paper 001: "any finding not mentioned in the report is
    // considered negative").
    let expected = report_says.unwrap_or(Stance::Absent);
    let addressed = answer_says.is_some();
    let given = answer_says.unwrap_or(Stance::Absent);
    let hedge_gap = matches!(
        (expected, given),
        (Stance::Uncertain, Stance::Present) | (Stance::Present, Stance::Uncertain)
    );
    let correct = addressed && (expected == given || hedge_gap);

    let report_words = words(report);
    let supported = |w: &String| report_words.iter().any(|r| r == w || same_stem(r, w));
    let category_words: Vec<String> = category
        .terms
        .iter()
        .chain(category.findings.iter())
        .flat_map(|t| words(t))
        .chain(words(&category.name))
        .collect();
    let unsupported: Vec<String> = answer_words
        .iter()
        .filter(|w| w.len() >= 3 && !w.chars().all(|c| c.is_ascii_digit()))
        .filter(|w| !STOPWORDS.contains(&w.as_str()) && !ANATOMY.contains(&w.as_str()))
        .filter(|w| !category_words.contains(w))
        .filter(|w| !supported(w))
        .cloned()
        .collect();
    let consistency = if !correct {
        "Inconsistent"
    } else if hedge_gap || !unsupported.is_empty() {
        "Partially Consistent"
    } else {
        "Fully Consistent"
    };

    let detail_words: Vec<&String> = details
        .iter()
        .filter(|w| w.len() >= 3 && !STOPWORDS.contains(&w.as_str()))
        .filter(|w| !category_words.contains(w))
        .collect();
    let covered = detail_words
        .iter()
        .filter(|d| {
            answer_words
                .iter()
                .any(|a| a == **d || (a.len() >= 5 && d.starts_with(a.as_str())))
        })
        .count();
    let completeness = if !addressed {
        "Incomplete"
    } else if expected != Stance::Present || covered * 2 >= detail_words.len() {
        // Nothing to detail (absent), or at least half the report's details given.
        "Complete"
    } else if covered > 0 || answer_words.len() > 3 {
        "Partially Complete"
    } else {
        "Incomplete"
    };
    let relevance = if !correct {
        "Incorrect and Misleading"
    } else if answer_words.len() <= 3 {
        "Non-essential but Correct"
    } else {
        "Essential"
    };
    let name = |s: Option<Stance>| match s {
        Some(Stance::Present) => "present",
        Some(Stance::Uncertain) => "uncertain",
        Some(Stance::Absent) => "absent",
        None => "not mentioned",
    };
    let mut rationale = format!(
        "the report: {}; the answer: {}",
        name(report_says),
        if addressed {
            name(answer_says)
        } else {
            "does not address the question"
        }
    );
    if !unsupported.is_empty() {
        rationale.push_str(&format!("; not in the report: {}", unsupported.join(", ")));
    }
    if expected == Stance::Present && !detail_words.is_empty() {
        rationale.push_str(&format!(
            "; {covered} of {} report details given",
            detail_words.len()
        ));
    }
    Verdict {
        correctness: if correct { "Correct" } else { "Incorrect" }.into(),
        consistency: consistency.into(),
        completeness: completeness.into(),
        relevance: relevance.into(),
        rationale,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn task() -> JudgeTask {
        JudgeTask::new(
            Arc::new(crate::prompts().expect("prompts")),
            Arc::new(Bank::embedded().expect("bank")),
        )
        .expect("task")
    }

    fn judge(category: &str, question: &str, answer: &str, report: &str) -> Verdict {
        let bank = Bank::embedded().expect("bank");
        let category = bank.category(category).expect("category");
        heuristic_verdict(&Lexicon::new(&bank), category, question, answer, report)
    }

    /// Real-style MIMIC report language (written for this test, in the style of MIMIC-CXR
    /// reports: terse, negated lists, hedges, no labels).
    const REPORT: &str = "PA and lateral views of the chest provided. There is a small right \
        pleural effusion with adjacent basilar atelectasis. No focal consolidation or \
        pneumothorax. The heart is mildly enlarged. The cardiomediastinal silhouette is within \
        normal limits otherwise. \
        Right-sided PICC terminates in the low SVC. Possible small nodule in the left upper \
        lobe, cannot exclude.";

    #[test]
    fn correct_answers_on_real_style_reports() {
        let v = judge(
            "pleural_effusion",
            "Is Pleural Effusion present?",
            "Yes, a small right pleural effusion is seen.",
            REPORT,
        );
        assert_eq!(
            (
                v.correctness.as_str(),
                v.consistency.as_str(),
                v.relevance.as_str()
            ),
            ("Correct", "Fully Consistent", "Essential"),
            "{v:?}"
        );
        let v = judge(
            "consolidation",
            "Are there signs of Consolidation?",
            "No, there is no focal consolidation in the radiograph.",
            REPORT,
        );
        assert_eq!(v.correctness, "Correct", "{v:?}");
        assert_eq!(v.completeness, "Complete", "{v:?}");
        // Not mentioned counts as absent.
        let v = judge(
            "fracture",
            "Is a Fracture visible?",
            "No fracture is seen.",
            REPORT,
        );
        assert_eq!(v.correctness, "Correct", "{v:?}");
        let v = judge(
            "heart",
            "Is the heart size normal?",
            "No, the heart is mildly enlarged.",
            REPORT,
        );
        assert_eq!(v.correctness, "Correct", "{v:?}");
        let v = judge(
            "lung_lesion",
            "Is a Lung Lesion observed?",
            "Possibly; a small nodule may be present in the left upper lobe.",
            REPORT,
        );
        assert_eq!(v.correctness, "Correct", "{v:?}");
        let v = judge(
            "cardiomegaly",
            "Can Cardiomegaly be detected?",
            "Yes, mild cardiomegaly is seen.",
            REPORT,
        );
        assert_eq!(v.correctness, "Correct", "{v:?}");
        let v = judge(
            "enlarged_cardiomediastinum",
            "Is the Cardiomedistinum enlarged?",
            "No, there are no signs of enlarged cardiomediastinum in the radiograph.",
            REPORT,
        );
        assert_eq!(v.correctness, "Correct", "{v:?}");
        let v = judge(
            "no_finding",
            "Are there any findings?",
            "No, no abnormalities are seen in the radiograph.",
            "Lungs are clear. Normal cardiomediastinal contours. No pneumothorax.",
        );
        assert_eq!(v.correctness, "Correct", "{v:?}");
        let v = judge(
            "support_devices",
            "Which Support Devices are found?",
            "A right-sided PICC is seen, terminating in the low SVC.",
            REPORT,
        );
        assert_eq!(v.correctness, "Correct", "{v:?}");
        assert_eq!(v.consistency, "Fully Consistent", "{v:?}");
    }

    #[test]
    fn contradictions_and_hallucinations_are_caught() {
        // The report negates pneumothorax; the answer affirms it.
        let v = judge(
            "pneumothorax",
            "Is Pneumothorax present?",
            "Yes, a small pneumothorax is seen.",
            REPORT,
        );
        assert_eq!(
            (
                v.correctness.as_str(),
                v.consistency.as_str(),
                v.relevance.as_str()
            ),
            ("Incorrect", "Inconsistent", "Incorrect and Misleading"),
            "{v:?}"
        );
        // The report has an effusion; the answer denies it.
        let v = judge(
            "pleural_effusion",
            "What evidence of Pleural Effusion is visible?",
            "No evidence of pleural effusion is seen in the radiograph.",
            REPORT,
        );
        assert_eq!(v.correctness, "Incorrect", "{v:?}");
        // The right side is the report's; "left" and "loculated" are not.
        let v = judge(
            "pleural_effusion",
            "Is Pleural Effusion present?",
            "Yes, a loculated left pleural effusion is seen.",
            REPORT,
        );
        assert_eq!(v.correctness, "Correct");
        assert_eq!(v.consistency, "Partially Consistent", "{v:?}");
        assert!(v.rationale.contains("loculated"), "{v:?}");
        // A bare yes is correct but not what matters clinically, and misses the details.
        let v = judge(
            "pleural_effusion",
            "Is Pleural Effusion present?",
            "Yes.",
            REPORT,
        );
        assert_eq!(v.relevance, "Non-essential but Correct", "{v:?}");
        assert_eq!(v.completeness, "Incomplete", "{v:?}");
        // Heart: the report says enlarged, the answer normal.
        let v = judge(
            "heart",
            "Does the radiograph suggest a normal heart size?",
            "Yes, the heart size is normal.",
            REPORT,
        );
        assert_eq!(v.correctness, "Incorrect", "{v:?}");
        // An answer about something else does not address the question.
        let v = judge(
            "edema",
            "Is Edema observed?",
            "The PICC terminates in the low SVC.",
            REPORT,
        );
        assert_eq!(v.completeness, "Incomplete", "{v:?}");
    }

    /// Real-style report sentences (MIMIC-CXR phrasing, written for this test) with a right and
    /// a wrong answer each: the heuristic must call the first correct and the second incorrect.
    const PHRASES: &[(&str, &str, &str, &str, &str)] = &[
        (
            "no_finding",
            "No acute cardiopulmonary process. Lungs are clear.",
            "Are there any findings?",
            "No, no abnormalities are seen in the radiograph.",
            "Yes, consolidation is seen.",
        ),
        (
            "pleural_effusion",
            "Small bilateral pleural effusions, left greater than right.",
            "Is Pleural Effusion present?",
            "Yes, small bilateral pleural effusions are seen.",
            "No, there are no signs of pleural effusion in the radiograph.",
        ),
        (
            "pleural_effusion",
            "Previously seen pleural effusions have resolved.",
            "Is Pleural Effusion present?",
            "No, there are no signs of pleural effusion.",
            "Yes, pleural effusions are seen.",
        ),
        (
            "atelectasis",
            "Bibasilar opacities likely reflect atelectasis.",
            "Are there signs of Atelectasis?",
            "Possibly; atelectasis may be present at the bases.",
            "No, there are no signs of atelectasis in the radiograph.",
        ),
        (
            "pneumothorax",
            "There is no evidence of pneumothorax.",
            "Is Pneumothorax present?",
            "No, there are no signs of pneumothorax.",
            "Yes, a pneumothorax is seen.",
        ),
        (
            "heart",
            "The cardiac silhouette is enlarged.",
            "Does the heart appear enlarged?",
            "Yes, the heart is enlarged.",
            "No, the heart size is normal.",
        ),
        (
            "heart",
            "Heart size is top normal.",
            "Is the heart size normal?",
            "Yes, the heart size is normal.",
            "No, the heart is enlarged.",
        ),
        (
            "support_devices",
            "Left-sided PICC line tip in the mid SVC. Sternotomy wires are intact.",
            "Are there any support devices observed?",
            "Yes, a left-sided PICC line and sternotomy wires are seen.",
            "No, no support devices are seen in the radiograph.",
        ),
        (
            "edema",
            "Moderate pulmonary edema.",
            "Is Edema observed?",
            "Yes, moderate pulmonary edema is seen.",
            "No, there are no signs of edema in the radiograph.",
        ),
        (
            "consolidation",
            "Right lower lobe consolidation concerning for pneumonia.",
            "Is Consolidation observed?",
            "Yes, consolidation in the right lower lobe is seen.",
            "No, there are no signs of consolidation in the radiograph.",
        ),
        (
            "fracture",
            "Old healed left rib fractures.",
            "Is a Fracture visible?",
            "Yes, healed left rib fractures are seen.",
            "No, there are no signs of a fracture in the radiograph.",
        ),
        (
            "lung_lesion",
            "A 1.2 cm nodule in the right upper lobe.",
            "Is a Lung Lesion observed?",
            "Yes, a 1.2 cm nodule in the right upper lobe is seen.",
            "No, there are no signs of a lung lesion in the radiograph.",
        ),
        (
            "enlarged_cardiomediastinum",
            "The mediastinum is widened.",
            "Is the Cardiomedistinum enlarged?",
            "Yes, the mediastinum is widened.",
            "No, there are no signs of enlarged cardiomediastinum in the radiograph.",
        ),
        (
            "cardiomegaly",
            "Mild cardiomegaly.",
            "Is Cardiomegaly present?",
            "Yes, mild cardiomegaly is seen.",
            "No, there are no signs of cardiomegaly in the radiograph.",
        ),
    ];

    #[test]
    fn real_style_phrases_right_and_wrong_answers() {
        for (category, report, question, right, wrong) in PHRASES {
            let v = judge(category, question, right, report);
            assert_eq!(
                v.correctness, "Correct",
                "{category}: {right} | {report}: {v:?}"
            );
            let v = judge(category, question, wrong, report);
            assert_eq!(
                v.correctness, "Incorrect",
                "{category}: {wrong} | {report}: {v:?}"
            );
            assert_eq!(v.relevance, "Incorrect and Misleading");
        }
    }

    #[test]
    fn llm_verdicts_are_parsed_and_normalised() {
        let input = json!({"category": "edema", "question": "Is Edema observed?",
                           "answer": "No.", "findings": "No edema.", "indication": null});
        let records = task()
            .check(
                &input,
                &json!({"correctness": "correct", "consistency": "fully  consistent",
                        "completeness": "Complete", "relevance": "non-essential but correct",
                        "rationale": "fine"}),
            )
            .expect("valid");
        assert_eq!(records[0]["consistency"], json!("Fully Consistent"));
        assert_eq!(records[0]["relevance"], json!("Non-essential but Correct"));
        let err = task()
            .check(
                &input,
                &json!({"correctness": "Mostly", "consistency": "Inconsistent"}),
            )
            .expect_err("malformed");
        assert!(err.contains("\"correctness\" is \"Mostly\""), "{err}");
        let values = task().placeholders(&input).expect("placeholders");
        let (_, user) = task().prompt().render(&values).expect("render");
        assert_eq!(
            user,
            "indication: none\nreport findings: No edema.\nquestion: Is Edema observed?\nanswer: No."
        );
    }
}
