//! The bullets task (paper 003, appendix A, generation layer): the report as a structured
//! bullet list that keeps every finding, normal and abnormal, anatomical descriptions and
//! interpretations, in the hierarchy of the observations, from the LLM; offline, the report's
//! own FINDINGS and IMPRESSION statements, one bullet each.
//!
//! ```text
//!  INDICATION, REPORT ──LLM──► {"bullets": [{section, text, level}, …]} ──check──► bullets
//!  sentences ──offline──► one bullet per statement (level 0)
//! ```

use std::sync::Arc;

use cxrlake_generate::{GenerationTask, PromptSet, TaskPrompt, nullable};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::Result;

/// The SQL function name of the bullets task.
pub const TASK_NAME: &str = "rexvqa_bullets";

/// The offline generator's id.
pub const OFFLINE_ID: &str = "offline-rexvqa-bullets-1";

/// The report sections the bullets come from, in report order.
pub const SECTIONS: [&str; 2] = ["findings", "impression"];

/// One sentence of the report.
#[derive(Debug, Clone, Deserialize)]
struct Sentence {
    #[serde(default, deserialize_with = "nullable")]
    section: String,
    #[serde(default, deserialize_with = "nullable")]
    text: String,
}

/// A bullets input row: the study's indication and its FINDINGS and IMPRESSION sentences.
#[derive(Debug, Deserialize)]
struct BulletsInput {
    #[serde(default, deserialize_with = "nullable")]
    indication: String,
    #[serde(default, deserialize_with = "nullable")]
    sentences: Vec<Sentence>,
}

impl BulletsInput {
    fn parse(input: &Value) -> std::result::Result<BulletsInput, String> {
        let row: BulletsInput = serde_json::from_value(input.clone())
            .map_err(|e| format!("invalid bullets input row: {e}"))?;
        if row.sentences.iter().all(|s| s.text.trim().is_empty()) {
            return Err("the report has no FINDINGS or IMPRESSION text".into());
        }
        Ok(row)
    }
}

/// One bullet, as the `rexvqa_bullets` function returns it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BulletRecord {
    /// `findings`, `impression` or `other`.
    pub section: String,
    /// The statement.
    pub text: String,
    /// Depth in the hierarchy (0: top level).
    pub level: i32,
}

/// The report as the user prompt shows it: `FINDINGS: …` then `IMPRESSION: …`.
fn report(sentences: &[Sentence]) -> String {
    SECTIONS
        .iter()
        .filter_map(|section| {
            let text: Vec<&str> = sentences
                .iter()
                .filter(|s| s.section.eq_ignore_ascii_case(section))
                .map(|s| s.text.trim())
                .filter(|t| !t.is_empty())
                .collect();
            (!text.is_empty()).then(|| format!("{}: {}", section.to_uppercase(), text.join(" ")))
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The bullets task over the prompts' `bullets` task.
#[derive(Debug)]
pub struct BulletsTask {
    prompts: Arc<PromptSet>,
    prompt: TaskPrompt,
}

impl BulletsTask {
    /// The task (prompt task `bullets`).
    pub fn new(prompts: Arc<PromptSet>) -> Result<BulletsTask> {
        let prompt = prompts.require("bullets")?.clone();
        Ok(BulletsTask { prompts, prompt })
    }
}

impl GenerationTask for BulletsTask {
    fn name(&self) -> &str {
        TASK_NAME
    }

    fn prompt(&self) -> &TaskPrompt {
        &self.prompt
    }

    fn prompt_version(&self) -> &str {
        self.prompts.version()
    }

    /// `INDICATION` (`none` when the report has none) and `REPORT`.
    fn placeholders(
        &self,
        input: &Value,
    ) -> std::result::Result<Vec<(&'static str, String)>, String> {
        let row = BulletsInput::parse(input)?;
        let indication = match row.indication.trim() {
            "" => "none".to_string(),
            text => text.to_string(),
        };
        Ok(vec![
            ("INDICATION", indication),
            ("REPORT", report(&row.sentences)),
        ])
    }

    /// At least one bullet with text; sections are lower-cased (`other` when not a report
    /// section), levels 0 to 2.
    fn check(&self, _input: &Value, answer: &Value) -> std::result::Result<Vec<Value>, String> {
        let items = answer
            .get("bullets")
            .and_then(Value::as_array)
            .ok_or("the answer has no bullets array")?;
        let mut records = Vec::new();
        for item in items {
            let text = item
                .get("text")
                .and_then(Value::as_str)
                .map(str::trim)
                .unwrap_or_default();
            if text.is_empty() {
                continue;
            }
            let section = item
                .get("section")
                .and_then(Value::as_str)
                .map(|s| s.trim().to_lowercase())
                .filter(|s| SECTIONS.contains(&s.as_str()))
                .unwrap_or_else(|| "other".into());
            let level = item.get("level").and_then(Value::as_i64).unwrap_or(0);
            records.push(BulletRecord {
                section,
                text: text.to_string(),
                level: level.clamp(0, 2) as i32,
            });
        }
        if records.is_empty() {
            return Err(
                "the answer has no bullet with text; list every finding of the report".into(),
            );
        }
        records
            .into_iter()
            .map(|r| serde_json::to_value(r).map_err(|e| e.to_string()))
            .collect()
    }

    fn offline(&self, input: &Value) -> std::result::Result<Vec<Value>, String> {
        let row = BulletsInput::parse(input)?;
        row.sentences
            .iter()
            .filter(|s| !s.text.trim().is_empty())
            .map(|s| {
                let section = s.section.to_lowercase();
                serde_json::to_value(BulletRecord {
                    section: if SECTIONS.contains(&section.as_str()) {
                        section
                    } else {
                        "other".into()
                    },
                    text: s.text.trim().to_string(),
                    level: 0,
                })
                .map_err(|e| e.to_string())
            })
            .collect()
    }

    fn offline_id(&self) -> &str {
        OFFLINE_ID
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn task() -> BulletsTask {
        BulletsTask::new(Arc::new(crate::prompts().expect("prompts"))).expect("task")
    }

    fn input() -> Value {
        json!({
            "indication": null,
            "sentences": [
                {"section": "FINDINGS", "text": "Small left pleural effusion."},
                {"section": "FINDINGS", "text": "No pneumothorax."},
                {"section": "IMPRESSION", "text": "Left effusion."}
            ]
        })
    }

    #[test]
    fn the_prompt_shows_the_report_by_section() {
        let values = task().placeholders(&input()).expect("placeholders");
        assert_eq!(values[0], ("INDICATION", "none".to_string()));
        assert_eq!(
            values[1].1,
            "FINDINGS: Small left pleural effusion. No pneumothorax.\nIMPRESSION: Left effusion."
        );
        let error = task()
            .placeholders(&json!({"sentences": []}))
            .expect_err("no text");
        assert!(error.contains("no FINDINGS or IMPRESSION"), "{error}");
    }

    #[test]
    fn answers_are_checked_and_offline_bullets_are_the_statements() {
        let task = task();
        let records = task
            .check(
                &input(),
                &json!({"bullets": [
                    {"section": "Findings", "text": " Small left pleural effusion ", "level": 0},
                    {"section": "notes", "text": "Costophrenic angle blunted", "level": 7},
                    {"section": "findings", "text": ""}
                ]}),
            )
            .expect("valid");
        assert_eq!(records.len(), 2);
        assert_eq!(records[0]["text"], "Small left pleural effusion");
        assert_eq!(records[1]["section"], "other");
        assert_eq!(records[1]["level"], 2);
        assert!(task.check(&input(), &json!({"bullets": []})).is_err());
        assert!(task.check(&input(), &json!({"items": []})).is_err());
        let offline = task.offline(&input()).expect("offline");
        assert_eq!(offline.len(), 3);
        assert_eq!(offline[2]["section"], "impression");
    }
}
