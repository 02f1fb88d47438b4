//! The content validators of paper 003 (appendix A): c1 domain specificity (not answerable by a
//! general internet search), c2 cognitive depth (interpretation, not recall) and c3 clinical
//! alignment (the answer and explanation agree with the report), as booleans from the LLM judge
//! (`prompts/rexvqa/judge.md`) or the offline heuristic, which reads the study's bullets.
//!
//! The heuristic, per MCQ:
//! - c1 fails when the question has the form of a general-knowledge question ("What is the
//!   most common cause of …", "… is defined as", "in general") or names nothing of this study
//!   (no "this radiograph", "seen", "located", …);
//! - c2 fails when the question gives the answer away (the correct option's words are in the
//!   question), the options are yes/no, or it asks what the report says rather than what the
//!   image shows;
//! - c3 fails when the bullets do not support the correct option, or affirm a distractor (two
//!   right answers). Options are read against the bullets that share the question's finding
//!   words (all bullets when it names none); "No X", "None of …", "Neither …" options and
//!   questions asking what is absent are read as negations. A differential diagnosis need not
//!   be stated: its question's finding must be.

use std::sync::Arc;

use cxrlake_generate::{GenerationTask, PromptSet, TaskPrompt, nullable};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::Result;
use crate::offline::Bullet;
use crate::text::{ANATOMY_NOUNS, BOTH_SIDES, words};

/// The SQL function name of the judge.
pub const TASK_NAME: &str = "rexvqa_judge";

/// The offline heuristic's id.
pub const OFFLINE_ID: &str = "heuristic-rexvqa-judge-1";

/// Words that say nothing about a finding (question scaffolding, sides as such).
const STOP: &[&str] = &[
    "which",
    "what",
    "where",
    "following",
    "findings",
    "finding",
    "present",
    "chest",
    "radiograph",
    "image",
    "seen",
    "shown",
    "visible",
    "located",
    "statement",
    "correct",
    "about",
    "there",
    "their",
    "these",
    "this",
    "that",
    "with",
    "from",
    "most",
    "consistent",
    "diagnosis",
    "side",
    "sides",
    "only",
    "both",
    "neither",
    "none",
    "absent",
    "on",
    "the",
    "of",
    "is",
    "are",
    "in",
    "a",
    "an",
    "and",
    "or",
    "for",
    "to",
    "no",
    "be",
];

/// Words that negate what follows them in a bullet.
const NEGATIONS: &[&str] = &[
    "no", "not", "without", "negative", "free", "clear", "absent", "resolved",
];

/// Question forms of general knowledge.
const GENERIC: &[&str] = &[
    "most common cause",
    "is defined as",
    "definition of",
    "stand for",
    "in general",
    "generally",
    "typically",
    "which of the following is true about",
    "what is the normal",
    "first line treatment",
    "treatment of choice",
];

/// Phrases that tie a question to the study at hand.
const ANCHORS: &[&str] = &[
    "this",
    "seen",
    "shown",
    "visible",
    "located",
    "present",
    "absent",
    "radiograph",
    "image",
    "study",
    "patient",
];

/// Questions about the report instead of the image.
const RECALL: &[&str] = &[
    "according to the report",
    "the report says",
    "the report state",
    "does the report mention",
    "which word",
    "is mentioned",
];

/// A judge input row.
#[derive(Debug, Deserialize)]
struct JudgeInput {
    #[serde(default, deserialize_with = "nullable")]
    question: String,
    #[serde(default, deserialize_with = "nullable")]
    options: Vec<String>,
    #[serde(default)]
    answer_index: Option<i64>,
    #[serde(default, deserialize_with = "nullable")]
    explanation: String,
    #[serde(default, deserialize_with = "nullable")]
    task_type: String,
    #[serde(default, deserialize_with = "nullable")]
    bullets: Vec<Bullet>,
}

impl JudgeInput {
    fn parse(input: &Value) -> std::result::Result<JudgeInput, String> {
        let row: JudgeInput = serde_json::from_value(input.clone())
            .map_err(|e| format!("invalid judge input row: {e}"))?;
        let index = row.answer_index.unwrap_or(-1);
        if row.question.trim().is_empty() || !(0..row.options.len() as i64).contains(&index) {
            return Err("the MCQ has no question or no valid answer index".into());
        }
        Ok(row)
    }

    fn correct(&self) -> &str {
        &self.options[self.answer_index.unwrap_or(0) as usize]
    }
}

/// One verdict, as the `rexvqa_judge` function returns it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ContentRecord {
    /// c1.
    pub c1_domain: bool,
    /// c2.
    pub c2_depth: bool,
    /// c3.
    pub c3_alignment: bool,
    /// Why (the failing checks' reasons, or the LLM's rationale).
    pub rationale: String,
}

/// The judge over the prompts' `judge` task.
#[derive(Debug)]
pub struct JudgeTask {
    prompts: Arc<PromptSet>,
    prompt: TaskPrompt,
}

impl JudgeTask {
    /// The task (prompt task `judge`).
    pub fn new(prompts: Arc<PromptSet>) -> Result<JudgeTask> {
        let prompt = prompts.require("judge")?.clone();
        Ok(JudgeTask { prompts, prompt })
    }
}

const LETTERS: [char; 4] = ['A', 'B', 'C', 'D'];

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

    /// `BULLETS`, `QUESTION`, `OPTIONS` (`A. …` lines), `ANSWER` (`B. …`), `EXPLANATION`.
    fn placeholders(
        &self,
        input: &Value,
    ) -> std::result::Result<Vec<(&'static str, String)>, String> {
        let row = JudgeInput::parse(input)?;
        let options: Vec<String> = row
            .options
            .iter()
            .zip(LETTERS)
            .map(|(o, l)| format!("{l}. {o}"))
            .collect();
        let index = row.answer_index.unwrap_or(0) as usize;
        let bullets: Vec<String> = row
            .bullets
            .iter()
            .map(|b| format!("- {}", b.text))
            .collect();
        Ok(vec![
            ("BULLETS", bullets.join("\n")),
            ("QUESTION", row.question.clone()),
            ("OPTIONS", options.join("\n")),
            (
                "ANSWER",
                format!("{}. {}", LETTERS[index.min(3)], row.correct()),
            ),
            ("EXPLANATION", row.explanation.clone()),
        ])
    }

    fn check(&self, _input: &Value, answer: &Value) -> std::result::Result<Vec<Value>, String> {
        let flag = |name: &str| {
            answer
                .get(name)
                .and_then(Value::as_bool)
                .ok_or_else(|| format!("the verdict has no true/false {name}"))
        };
        let record = ContentRecord {
            c1_domain: flag("domain_specific")?,
            c2_depth: flag("cognitive_depth")?,
            c3_alignment: flag("clinical_alignment")?,
            rationale: answer
                .get("rationale")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .trim()
                .to_string(),
        };
        serde_json::to_value(record)
            .map(|v| vec![v])
            .map_err(|e| e.to_string())
    }

    fn offline(&self, input: &Value) -> std::result::Result<Vec<Value>, String> {
        let row = JudgeInput::parse(input)?;
        serde_json::to_value(heuristic(&row))
            .map(|v| vec![v])
            .map_err(|e| e.to_string())
    }

    fn offline_id(&self) -> &str {
        OFFLINE_ID
    }
}

/// The content words of `text`: not scaffolding nor anatomy nouns, three letters or more.
fn content(text: &str) -> Vec<String> {
    words(text)
        .into_iter()
        .filter(|w| {
            w.len() >= 3 && !STOP.contains(&w.as_str()) && !ANATOMY_NOUNS.contains(&w.as_str())
        })
        .collect()
}

/// How a bullet speaks of `terms`: `Some(true)` affirmed, `Some(false)` negated, `None` silent.
/// A term matches a word it starts or that starts it (both of five letters or more).
fn stance(bullet: &[String], terms: &[String]) -> Option<bool> {
    if terms.is_empty() {
        return None;
    }
    let matches = |w: &String, t: &String| {
        w == t
            || (w.len() >= 5
                && t.len() >= 5
                && (w.starts_with(t.as_str()) || t.starts_with(w.as_str())))
    };
    let first = terms
        .iter()
        .map(|t| bullet.iter().position(|w| matches(w, t)))
        .collect::<Option<Vec<usize>>>()?
        .into_iter()
        .min()?;
    let negated = bullet[..first]
        .iter()
        .any(|w| NEGATIONS.contains(&w.as_str()));
    Some(!negated)
}

/// An option read as a claim: the alternative sets of terms it speaks of (any one set said is
/// the claim said) and whether it affirms them.
fn claim(option: &str) -> (Vec<Vec<String>>, bool) {
    let lower = option.to_lowercase();
    let negative = ["no ", "none", "neither", "not "]
        .iter()
        .any(|n| lower.starts_with(n) || lower.contains(&format!(" {n}")));
    let terms = content(option);
    let alternatives = if !terms.is_empty() {
        vec![terms]
    } else if words(option).first().is_some_and(|w| w == "both") {
        // "Both sides": bilateral, both, bibasilar, …
        BOTH_SIDES.iter().map(|w| vec![w.to_string()]).collect()
    } else {
        Vec::new()
    };
    (alternatives, !negative)
}

/// The offline verdict on one MCQ.
fn heuristic(row: &JudgeInput) -> ContentRecord {
    let question = row.question.to_lowercase();
    let question_words = words(&row.question);
    let mut reasons = Vec::new();

    let generic = GENERIC.iter().find(|g| question.contains(*g));
    let anchored = ANCHORS
        .iter()
        .any(|a| question_words.iter().any(|w| w == a));
    let c1_domain = generic.is_none() && anchored;
    if let Some(generic) = generic {
        reasons.push(format!("c1: a general-knowledge question ('{generic}')"));
    } else if !anchored {
        reasons.push("c1: the question names nothing of this radiograph".into());
    }

    // The correct option's distinguishing words (not in every other option) all in the question.
    let index = row.answer_index.unwrap_or(0) as usize;
    let others: Vec<Vec<String>> = row
        .options
        .iter()
        .enumerate()
        .filter(|(i, _)| *i != index)
        .map(|(_, o)| content(o))
        .collect();
    let distinguishing: Vec<String> = content(row.correct())
        .into_iter()
        .filter(|t| !others.iter().all(|o| o.contains(t)))
        .collect();
    let gives_away = !distinguishing.is_empty()
        && distinguishing.iter().all(|t| question_words.contains(t))
        && !question.contains("absent");
    let yes_no = row.options.iter().all(|o| {
        let w = words(o);
        w.len() == 1 && matches!(w[0].as_str(), "yes" | "no")
    });
    let recall = RECALL.iter().find(|r| question.contains(*r));
    let c2_depth = !gives_away && !yes_no && recall.is_none();
    if gives_away {
        reasons.push("c2: the question contains its answer".into());
    }
    if yes_no {
        reasons.push("c2: yes/no options".into());
    }
    if let Some(recall) = recall {
        reasons.push(format!("c2: asks about the report text ('{recall}')"));
    }

    // The bullets that share the question's finding words (all when it names none).
    let bullets: Vec<Vec<String>> = row.bullets.iter().map(|b| words(&b.text)).collect();
    let anchor = content(&row.question);
    let relevant: Vec<&Vec<String>> = {
        let sharing: Vec<&Vec<String>> = bullets
            .iter()
            .filter(|b| anchor.iter().any(|a| b.contains(a)))
            .collect();
        if sharing.is_empty() {
            bullets.iter().collect()
        } else {
            sharing
        }
    };
    let asks_absent = ["absent", " not ", "except", "excluded", "ruled out"]
        .iter()
        .any(|n| question.contains(n));
    let affirmed = |alternatives: &[Vec<String>]| {
        alternatives
            .iter()
            .any(|terms| relevant.iter().any(|b| stance(b, terms) == Some(true)))
    };
    // Holds: what the option claims is what the bullets say.
    let holds = |option: &str| {
        let (terms, positive) = claim(option);
        if positive {
            affirmed(&terms)
        } else {
            !affirmed(&terms)
        }
    };
    let correct_holds = if asks_absent {
        !affirmed(&claim(row.correct()).0)
    } else if row.task_type == "differential_diagnosis" {
        holds(row.correct()) || (!anchor.is_empty() && affirmed(std::slice::from_ref(&anchor)))
    } else {
        holds(row.correct())
    };
    let rival = row
        .options
        .iter()
        .enumerate()
        .filter(|(i, _)| *i != index)
        .map(|(_, o)| o)
        .find(|o| {
            if asks_absent {
                !affirmed(&claim(o).0)
            } else {
                let (terms, positive) = claim(o);
                positive && !terms.is_empty() && affirmed(&terms)
            }
        });
    let c3_alignment = correct_holds && rival.is_none();
    if !correct_holds {
        reasons.push(format!(
            "c3: the bullets do not support the answer '{}'",
            row.correct()
        ));
    }
    if let Some(rival) = rival {
        reasons.push(format!(
            "c3: the bullets also support the distractor '{rival}'"
        ));
    }
    ContentRecord {
        c1_domain,
        c2_depth,
        c3_alignment,
        rationale: if reasons.is_empty() {
            "all three content checks pass".into()
        } else {
            reasons.join("; ")
        },
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn verdict(question: &str, options: [&str; 4], answer: i64, task: &str) -> ContentRecord {
        let row = json!({
            "question": question,
            "options": options,
            "answer_index": answer,
            "explanation": "Small left pleural effusion; the lungs are otherwise clear.",
            "task_type": task,
            "bullets": [
                {"section": "findings", "text": "Small left pleural effusion."},
                {"section": "findings", "text": "No pneumothorax or consolidation."},
                {"section": "findings", "text": "The heart size is normal."}
            ]
        });
        heuristic(&JudgeInput::parse(&row).expect("row"))
    }

    fn flags(r: &ContentRecord) -> (bool, bool, bool) {
        (r.c1_domain, r.c2_depth, r.c3_alignment)
    }

    #[test]
    fn a_supported_mcq_passes() {
        let r = verdict(
            "Which of the following findings is present on this chest radiograph?",
            [
                "Pneumothorax",
                "Pleural effusion",
                "Consolidation",
                "Cardiomegaly",
            ],
            1,
            "presence",
        );
        assert_eq!(flags(&r), (true, true, true), "{}", r.rationale);
        let r = verdict(
            "On which side of the chest is the pleural effusion seen?",
            ["Right", "Both sides", "Left", "Neither side"],
            2,
            "geometric",
        );
        assert_eq!(flags(&r), (true, true, true), "{}", r.rationale);
        let r = verdict(
            "Which of the following findings is absent on this chest radiograph?",
            [
                "Pleural effusion",
                "Pneumothorax",
                "Left effusion",
                "Small effusion",
            ],
            1,
            "negation",
        );
        assert_eq!(flags(&r), (true, true, true), "{}", r.rationale);
    }

    #[test]
    fn each_content_check_can_fail_alone() {
        let r = verdict(
            "What is the most common cause of a pleural effusion?",
            ["Heart failure", "Trauma", "Asbestos", "Lupus"],
            0,
            "differential_diagnosis",
        );
        assert!(!flags(&r).0, "{}", r.rationale);
        assert!(r.rationale.contains("most common cause"));
        let r = verdict(
            "Is a pleural effusion seen on this radiograph?",
            ["Yes", "No", "Yes", "No"],
            0,
            "presence",
        );
        assert!(!flags(&r).1, "{}", r.rationale);
        let r = verdict(
            "Which of the following findings is present on this chest radiograph?",
            [
                "Pneumothorax",
                "Pleural effusion",
                "Consolidation",
                "Cardiomegaly",
            ],
            0,
            "presence",
        );
        assert_eq!(flags(&r), (true, true, false), "{}", r.rationale);
        assert!(
            r.rationale
                .contains("do not support the answer 'Pneumothorax'")
        );
        assert!(r.rationale.contains("distractor 'Pleural effusion'"));
    }

    #[test]
    fn real_style_report_language_is_read_with_its_negations() {
        let judge = |options: [&str; 4], answer: i64, question: &str| {
            let row = json!({
                "question": question,
                "options": options,
                "answer_index": answer,
                "explanation": "From the report.",
                "task_type": "presence",
                "bullets": [
                    {"section": "findings", "text": "The lungs are clear of focal airspace disease, pneumothorax, or pleural effusion."},
                    {"section": "findings", "text": "Mild cardiomegaly without pulmonary edema."},
                    {"section": "findings", "text": "Left ___-a-___ in place with the tip in the mid SVC."}
                ]
            });
            heuristic(&JudgeInput::parse(&row).expect("row"))
        };
        let present = "Which of the following findings is present on this chest radiograph?";
        let options = [
            "Cardiomegaly",
            "Pulmonary edema",
            "Pneumothorax",
            "Pleural effusion",
        ];
        let right = judge(options, 0, present);
        assert!(right.c3_alignment, "{}", right.rationale);
        // Edema is negated ("without"), cardiomegaly stated: wrong answer and a true distractor.
        let wrong = judge(options, 1, present);
        assert!(!wrong.c3_alignment);
        assert!(
            wrong
                .rationale
                .contains("do not support the answer 'Pulmonary edema'")
        );
        assert!(wrong.rationale.contains("distractor 'Cardiomegaly'"));
        // A negated list: each of its items is absent.
        let absent = "Which of the following findings is absent on this chest radiograph?";
        let listed = judge(
            [
                "Cardiomegaly",
                "Pleural effusion",
                "Mild cardiomegaly",
                "Cardiomegaly without edema",
            ],
            1,
            absent,
        );
        assert!(listed.c3_alignment, "{}", listed.rationale);
    }

    #[test]
    fn llm_verdicts_need_three_booleans() {
        let task = JudgeTask::new(Arc::new(crate::prompts().expect("prompts"))).expect("task");
        let input = json!({"question": "q?", "options": ["a", "b", "c", "d"], "answer_index": 1});
        let records = task
            .check(
                &input,
                &json!({"domain_specific": true, "cognitive_depth": false,
                        "clinical_alignment": true, "rationale": " recall "}),
            )
            .expect("verdict");
        assert_eq!(records[0]["c2_depth"], false);
        assert_eq!(records[0]["rationale"], "recall");
        let error = task
            .check(&input, &json!({"domain_specific": "yes"}))
            .expect_err("not a boolean");
        assert!(error.contains("domain_specific"), "{error}");
        let values = task.placeholders(&input).expect("placeholders");
        assert_eq!(values[2].1, "A. a\nB. b\nC. c\nD. d");
        assert_eq!(values[3].1, "B. b");
    }
}
