//! Prompt P3 (hallucination detection) as a generation task, batched per region context: the
//! context's facts and its QA pairs in, a JSON array of `{is_hallucination, explanation, score}`
//! out in the pairs' order. An array of another length is invalid (asked again, then rejected):
//! verdicts are never matched to pairs by position when the counts differ.
//!
//! Two rules of the prompt hold whatever the judge says:
//! - reverse negation: a question asking why a finding is absent or a region normal is a
//!   hallucination (`rule = reverse_negation`; an LLM verdict of 0 is overridden);
//! - multiple facts: a pair supported by any fact of the context is not a hallucination, unless
//!   it contradicts one.
//!
//! The offline heuristic reads the pair against the context: contradiction (a finding stated
//! present is denied, one stated absent affirmed, or a region with findings called normal) →
//! hallucination, score 0.9; supported by a fact (a finding named with the context's polarity,
//! normality of a normal region, a report phrase's finding) → not, 0.9; a finding affirmed that
//! no fact supports → hallucination, 0.8; no claim about a finding → not, 0.5 (moderate: for
//! review first).

use std::sync::Arc;

use cxrlake_generate::{GenerationTask, PromptSet, TaskPrompt, nullable};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::Result;
use crate::context::Context;
use crate::text::reverse_negation;
use crate::vocab::Vocabulary;

/// The SQL function name of the judge.
pub const TASK_NAME: &str = "givcxr_judge";

/// The offline heuristic's id.
pub const OFFLINE_ID: &str = "heuristic-givcxr-judge-1";

/// One QA pair of a batch.
#[derive(Debug, Clone, Deserialize, Serialize)]
pub struct Pair {
    /// The question.
    #[serde(default, deserialize_with = "nullable")]
    pub question: String,
    /// The answer.
    #[serde(default, deserialize_with = "nullable")]
    pub answer: String,
}

#[derive(Debug, Deserialize)]
struct Batch {
    #[serde(default, deserialize_with = "nullable")]
    pairs: Vec<Pair>,
}

fn batch(input: &Value) -> std::result::Result<(Context, Vec<Pair>), String> {
    let context = Context::from_row(input)?;
    let batch: Batch =
        serde_json::from_value(input.clone()).map_err(|e| format!("invalid QA pairs: {e}"))?;
    if batch.pairs.is_empty() {
        return Err("the region context has no QA pairs to judge".into());
    }
    Ok((context, batch.pairs))
}

/// One verdict, as the `givcxr_judge` function returns it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Verdict {
    /// The pair's 1-based position in the batch.
    pub position: usize,
    /// Flagged.
    pub is_hallucination: bool,
    /// Confidence in the decision, 0–1.
    pub score: f64,
    /// Why.
    pub explanation: String,
    /// `reverse_negation`, `contradiction`, `unsupported`, `supported`, `no_claim` or `llm`.
    pub rule: String,
}

impl Verdict {
    fn new(position: usize, flagged: bool, score: f64, rule: &str, explanation: String) -> Verdict {
        Verdict {
            position,
            is_hallucination: flagged,
            score,
            explanation,
            rule: rule.to_string(),
        }
    }

    fn reverse_negation(position: usize) -> Verdict {
        Verdict::new(
            position,
            true,
            0.95,
            "reverse_negation",
            "The question asks for the reason of an absent finding or a normal region (reverse \
             negation), which is not clinically useful."
                .into(),
        )
    }
}

/// The hallucination judge over the prompts' `judge` task.
#[derive(Debug)]
pub struct JudgeTask {
    prompts: Arc<PromptSet>,
    prompt: TaskPrompt,
    vocabulary: Arc<Vocabulary>,
}

impl JudgeTask {
    /// The task (prompt task `judge`); `vocabulary` names findings in the heuristic's reading.
    pub fn new(prompts: Arc<PromptSet>, vocabulary: Arc<Vocabulary>) -> Result<JudgeTask> {
        let prompt = prompts.require("judge")?.clone();
        Ok(JudgeTask {
            prompts,
            prompt,
            vocabulary,
        })
    }

    /// The heuristic verdict of one pair.
    pub fn heuristic(&self, context: &Context, position: usize, pair: &Pair) -> Verdict {
        if reverse_negation(&pair.question) {
            return Verdict::reverse_negation(position);
        }
        let answer = pair.answer.to_lowercase();
        let question = pair.question.to_lowercase();
        let facts: Vec<_> = context
            .facts()
            .into_iter()
            .filter(|a| a.is_finding() || a.category == "texture")
            .collect();
        let abnormal = facts.iter().any(|a| a.present && a.is_finding());
        let mut supported = Vec::new();
        for fact in &facts {
            let in_answer = answer.find(&fact.value);
            match in_answer {
                Some(at) => {
                    let denied = negated_at(&answer, at);
                    if denied == fact.present {
                        return Verdict::new(
                            position,
                            true,
                            0.9,
                            "contradiction",
                            format!(
                                "The answer {} {}, which the region's facts state {}.",
                                if denied { "denies" } else { "affirms" },
                                fact.value,
                                if fact.present { "present" } else { "absent" }
                            ),
                        );
                    }
                    supported.push(fact.value.clone());
                }
                None if question.contains(&fact.value) => supported.push(fact.value.clone()),
                None => {}
            }
        }
        let calls_normal = NORMAL_CLAIMS.iter().any(|c| answer.contains(c));
        if calls_normal && abnormal && supported.is_empty() {
            return Verdict::new(
                position,
                true,
                0.9,
                "contradiction",
                format!(
                    "The answer calls the {} normal, but the facts state {} present.",
                    context.region_name,
                    crate::context::join_and(&context.positives())
                ),
            );
        }
        let known: Vec<&str> = facts
            .iter()
            .filter_map(|a| self.vocabulary.finding_for([a.value.as_str()]))
            .chain(
                context
                    .phrases
                    .iter()
                    .flat_map(|p| self.vocabulary.findings_in_text(p)),
            )
            .collect();
        let claimed: Vec<&str> = self
            .vocabulary
            .findings_in_text(&answer)
            .into_iter()
            .filter(|id| {
                self.vocabulary.findings().iter().any(|f| {
                    f.id == *id
                        && f.words
                            .iter()
                            .filter_map(|w| answer.find(&w.to_lowercase()))
                            .any(|at| !negated_at(&answer, at))
                })
            })
            .collect();
        let unsupported: Vec<&str> = claimed
            .iter()
            .copied()
            .filter(|id| !known.contains(id))
            .collect();
        if !supported.is_empty() || (calls_normal && !abnormal) {
            let reason = if supported.is_empty() {
                format!(
                    "The {} is described as normal, as its facts say.",
                    context.region_name
                )
            } else {
                format!("Supported by the facts: {}.", supported.join(", "))
            };
            return Verdict::new(position, false, 0.9, "supported", reason);
        }
        if claimed.iter().any(|id| known.contains(id)) {
            return Verdict::new(
                position,
                false,
                0.8,
                "supported",
                "Supported by a report phrase about the region.".into(),
            );
        }
        if !unsupported.is_empty() {
            return Verdict::new(
                position,
                true,
                0.8,
                "unsupported",
                format!(
                    "The answer states {} for the {}, which no fact supports.",
                    unsupported.join(", ").replace('_', " "),
                    context.region_name
                ),
            );
        }
        Verdict::new(
            position,
            false,
            0.5,
            "no_claim",
            "The pair makes no claim about a finding that the facts could contradict.".into(),
        )
    }
}

/// What an answer says when it calls a region normal.
const NORMAL_CLAIMS: [&str; 5] = [
    "appears normal",
    "no abnormality",
    "no abnormalities",
    "is normal",
    "unremarkable",
];

/// Whether the mention at byte `at` of `text` is negated in its sentence ("no", "not",
/// "without", "absence of", "free of", "negative for" before it).
fn negated_at(text: &str, at: usize) -> bool {
    let start = text[..at].rfind(['.', ';', '?', '!']).map_or(0, |i| i + 1);
    let before = format!(" {} ", &text[start..at]);
    [
        " no ",
        " not ",
        " without ",
        "absence of",
        "free of",
        "negative for",
        " nor ",
        "no evidence",
    ]
    .iter()
    .any(|cue| before.contains(cue))
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

    /// `REGION`, `ATTRIBUTES_JSON`, `TEXTURE_JSON`, `PHRASES_JSON` and `PAIRS_JSON` (the
    /// pairs, indented as the paper's `json.dumps(qa_pairs, indent=2)`).
    fn placeholders(
        &self,
        input: &Value,
    ) -> std::result::Result<Vec<(&'static str, String)>, String> {
        let (context, pairs) = batch(input)?;
        let dump = |v: &Vec<String>| serde_json::to_string(v).unwrap_or_else(|_| "[]".into());
        Ok(vec![
            ("REGION", context.region_name.clone()),
            ("ATTRIBUTES_JSON", dump(&context.attributes)),
            ("TEXTURE_JSON", dump(&context.texture)),
            ("PHRASES_JSON", dump(&context.phrases)),
            (
                "PAIRS_JSON",
                serde_json::to_string_pretty(&pairs).map_err(|e| e.to_string())?,
            ),
        ])
    }

    fn check(&self, input: &Value, answer: &Value) -> std::result::Result<Vec<Value>, String> {
        let (_, pairs) = batch(input)?;
        let verdicts = answer
            .as_array()
            .or_else(|| answer.as_object()?.values().find_map(Value::as_array))
            .ok_or("the answer is not a JSON array of verdicts")?;
        if verdicts.len() != pairs.len() {
            return Err(format!(
                "{} verdicts for {} QA pairs: give exactly one verdict per pair, in the pairs' \
                 order",
                verdicts.len(),
                pairs.len()
            ));
        }
        let mut out = Vec::with_capacity(pairs.len());
        for (i, (verdict, pair)) in verdicts.iter().zip(&pairs).enumerate() {
            let position = i + 1;
            let flagged = match verdict.get("is_hallucination") {
                Some(Value::Bool(b)) => *b,
                Some(Value::Number(n)) if n.as_f64() == Some(0.0) => false,
                Some(Value::Number(n)) if n.as_f64() == Some(1.0) => true,
                Some(Value::String(s)) if s.trim() == "0" => false,
                Some(Value::String(s)) if s.trim() == "1" => true,
                _ => {
                    return Err(format!(
                        "verdict {position}: is_hallucination must be 0 or 1"
                    ));
                }
            };
            let score = verdict
                .get("score")
                .and_then(Value::as_f64)
                .filter(|s| (0.0..=1.0).contains(s))
                .ok_or_else(|| format!("verdict {position}: score must be a number from 0 to 1"))?;
            let explanation = verdict
                .get("explanation")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .trim()
                .to_string();
            let verdict = if reverse_negation(&pair.question) && !flagged {
                Verdict::reverse_negation(position)
            } else {
                Verdict::new(position, flagged, score, "llm", explanation)
            };
            out.push(json!(verdict));
        }
        Ok(out)
    }

    fn offline(&self, input: &Value) -> std::result::Result<Vec<Value>, String> {
        let (context, pairs) = batch(input)?;
        Ok(pairs
            .iter()
            .enumerate()
            .map(|(i, pair)| json!(self.heuristic(&context, i + 1, pair)))
            .collect())
    }

    fn offline_id(&self) -> &str {
        OFFLINE_ID
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn task() -> JudgeTask {
        JudgeTask::new(
            Arc::new(crate::prompts().expect("fixture")),
            Arc::new(Vocabulary::embedded().expect("fixture")),
        )
        .expect("fixture")
    }

    fn row(attributes: &[&str], pairs: &[(&str, &str)]) -> Value {
        let pairs: Vec<Value> = pairs
            .iter()
            .map(|(q, a)| json!({"question": q, "answer": a}))
            .collect();
        json!({"region": "right_lung", "region_name": "right lung", "bbox": [1, 2, 3, 4],
               "attributes": attributes, "texture": [], "phrases": ["Right lower lobe atelectasis."],
               "pairs": pairs})
    }

    fn verdicts(attributes: &[&str], pairs: &[(&str, &str)]) -> Vec<(bool, String)> {
        task()
            .offline(&row(attributes, pairs))
            .expect("fixture")
            .iter()
            .map(|v| {
                (
                    v["is_hallucination"].as_bool().expect("fixture"),
                    v["rule"].as_str().expect("fixture").to_string(),
                )
            })
            .collect()
    }

    #[test]
    fn the_heuristic_reads_pairs_against_the_facts() {
        let facts = [
            "anatomicalfinding|yes|atelectasis",
            "anatomicalfinding|no|pneumothorax",
            "texture|yes|opacity",
        ];
        let got = verdicts(
            &facts,
            &[
                (
                    "What is seen in the right lung?",
                    "The right lung shows atelectasis.",
                ),
                (
                    "Is there a pneumothorax in the right lung?",
                    "No, there is no pneumothorax.",
                ),
                (
                    "Is there a pneumothorax in the right lung?",
                    "Yes, a small pneumothorax is seen.",
                ),
                (
                    "Is the right lung normal?",
                    "The right lung appears normal.",
                ),
                (
                    "What else is seen in the right lung?",
                    "A large pleural effusion is seen.",
                ),
                (
                    "What might be the reason for the absence of pneumothorax in the right lung?",
                    "It was drained.",
                ),
                (
                    "Describe the right lung.",
                    "The right lung is visible on the image.",
                ),
                (
                    "What is the texture of the right lung?",
                    "An area of opacity texture.",
                ),
            ],
        );
        let expected = [
            (false, "supported"),
            (false, "supported"),
            (true, "contradiction"),
            (true, "contradiction"),
            (true, "unsupported"),
            (true, "reverse_negation"),
            (false, "no_claim"),
            (false, "supported"),
        ];
        for (i, (got, want)) in got.iter().zip(expected).enumerate() {
            assert_eq!((got.0, got.1.as_str()), want, "pair {}", i + 1);
        }
    }

    #[test]
    fn llm_verdicts_must_align_with_the_pairs() {
        let input = row(
            &[],
            &[("Is the right lung clear?", "Yes."), ("Where?", "Here.")],
        );
        let err = task()
            .check(
                &input,
                &json!([{"is_hallucination": 0, "explanation": "", "score": 0.9}]),
            )
            .expect_err("an error");
        assert!(err.starts_with("1 verdicts for 2 QA pairs"), "{err}");
        let ok = task()
            .check(
                &input,
                &json!({"verdicts": [{"is_hallucination": 0, "score": 0.9},
                                     {"is_hallucination": true, "explanation": "x", "score": 1}]}),
            )
            .expect("fixture");
        assert_eq!(ok[1]["is_hallucination"], true);
        assert_eq!(ok[1]["position"], 2);
        assert!(task()
            .check(&input, &json!([{"is_hallucination": 0, "score": 1.5}, {"is_hallucination": 0, "score": 1}]))
            .is_err());
    }

    #[test]
    fn a_reverse_negation_passed_by_the_llm_is_flagged_anyway() {
        let input = row(
            &[],
            &[(
                "Why is there no effusion in the right lung?",
                "Because it is healthy.",
            )],
        );
        let out = task()
            .check(
                &input,
                &json!([{"is_hallucination": 0, "explanation": "fine", "score": 0.7}]),
            )
            .expect("fixture");
        assert_eq!(out[0]["is_hallucination"], true);
        assert_eq!(out[0]["rule"], "reverse_negation");
    }

    #[test]
    fn the_prompt_gets_the_pairs_as_indented_json() {
        let values = task()
            .placeholders(&row(&["nlp|yes|normal"], &[("Q?", "A.")]))
            .expect("fixture");
        let pairs = &values
            .iter()
            .find(|(k, _)| *k == "PAIRS_JSON")
            .expect("fixture")
            .1;
        assert!(pairs.contains("\n  {\n    \"question\": \"Q?\""), "{pairs}");
        assert_eq!(values[1].1, "[\"nlp|yes|normal\"]");
    }
}
