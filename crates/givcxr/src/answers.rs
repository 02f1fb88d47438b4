//! Prompt P2 (answer generation) as a generation task: a region context and its questions in,
//! `{"answers": […]}` out, one answer per question in the same order. An answer list of another
//! length is invalid (asked again, then rejected with the counts): answers are never matched to
//! questions by position when the counts differ.

use std::sync::Arc;

use cxrlake_generate::{GenerationTask, PromptSet, TaskPrompt, nullable};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::Result;
use crate::context::Context;
use crate::offline;
use crate::text::answer_lint;

/// The SQL function name of the task.
pub const TASK_NAME: &str = "givcxr_answers";

/// The offline generator's id.
pub const OFFLINE_ID: &str = "offline-givcxr-answers-1";

#[derive(Debug, Deserialize)]
struct Asked {
    #[serde(default, deserialize_with = "nullable")]
    questions: Vec<String>,
}

fn asked(input: &Value) -> std::result::Result<(Context, Vec<String>), String> {
    let context = Context::from_row(input)?;
    let asked: Asked =
        serde_json::from_value(input.clone()).map_err(|e| format!("invalid questions: {e}"))?;
    if asked.questions.is_empty() {
        return Err("the region context has no questions to answer".into());
    }
    Ok((context, asked.questions))
}

fn records(answers: &[String]) -> Vec<Value> {
    answers
        .iter()
        .enumerate()
        .map(|(i, a)| json!({"position": i + 1, "answer": a.trim(), "lint": answer_lint(a)}))
        .collect()
}

/// Answer generation over the prompts' `answers` task.
#[derive(Debug)]
pub struct AnswersTask {
    prompts: Arc<PromptSet>,
    prompt: TaskPrompt,
}

impl AnswersTask {
    /// The task (prompt task `answers`).
    pub fn new(prompts: Arc<PromptSet>) -> Result<AnswersTask> {
        let prompt = prompts.require("answers")?.clone();
        Ok(AnswersTask { prompts, prompt })
    }
}

impl GenerationTask for AnswersTask {
    fn name(&self) -> &str {
        TASK_NAME
    }

    fn prompt(&self) -> &TaskPrompt {
        &self.prompt
    }

    fn prompt_version(&self) -> &str {
        self.prompts.version()
    }

    /// The context's placeholders and `QUESTIONS` (`1. …` lines).
    fn placeholders(
        &self,
        input: &Value,
    ) -> std::result::Result<Vec<(&'static str, String)>, String> {
        let (context, questions) = asked(input)?;
        let mut values = context.placeholders();
        let numbered: Vec<String> = questions
            .iter()
            .enumerate()
            .map(|(i, q)| format!("{}. {q}", i + 1))
            .collect();
        values.push(("QUESTIONS", numbered.join("\n")));
        Ok(values)
    }

    fn check(&self, input: &Value, answer: &Value) -> std::result::Result<Vec<Value>, String> {
        let (_, questions) = asked(input)?;
        let answers: Vec<String> = answer
            .get("answers")
            .and_then(Value::as_array)
            .ok_or("the answer has no answers array")?
            .iter()
            .map(|a| {
                a.as_str()
                    .map(str::trim)
                    .filter(|a| !a.is_empty())
                    .map(str::to_string)
                    .ok_or("every answer must be a non-empty string")
            })
            .collect::<std::result::Result<_, _>>()?;
        if answers.len() != questions.len() {
            return Err(format!(
                "{} answers for {} questions: give exactly one answer per question, in the \
                 questions' order",
                answers.len(),
                questions.len()
            ));
        }
        Ok(records(&answers))
    }

    fn offline(&self, input: &Value) -> std::result::Result<Vec<Value>, String> {
        let (context, questions) = asked(input)?;
        let answers: Vec<String> = questions
            .iter()
            .map(|q| offline::answer(&context, q))
            .collect();
        Ok(records(&answers))
    }

    fn offline_id(&self) -> &str {
        OFFLINE_ID
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn task() -> AnswersTask {
        AnswersTask::new(Arc::new(crate::prompts().expect("fixture"))).expect("fixture")
    }

    fn row() -> Value {
        json!({"region": "left_lung", "region_name": "left lung", "bbox": [1.0, 2.0, 30.0, 40.0],
               "attributes": ["anatomicalfinding|no|pneumothorax"], "texture": [], "phrases": [],
               "questions": ["Is there a pneumothorax in the left lung?", "Is the left lung normal?"]})
    }

    #[test]
    fn answers_must_match_the_questions_one_to_one() {
        let err = task()
            .check(&row(), &json!({"answers": ["No."]}))
            .expect_err("an error");
        assert!(err.starts_with("1 answers for 2 questions"), "{err}");
        let records = task()
            .check(
                &row(),
                &json!({"answers": ["No.", "As the report states, yes."]}),
            )
            .expect("fixture");
        assert_eq!(records[1]["position"], 2);
        assert_eq!(records[1]["lint"], json!(["answer_mentions_report"]));
        let values = task().placeholders(&row()).expect("fixture");
        assert!(
            values
                .iter()
                .any(|(k, v)| *k == "QUESTIONS" && v.starts_with("1. Is there"))
        );
    }

    #[test]
    fn offline_answers_one_per_question() {
        let records = task().offline(&row()).expect("fixture");
        assert_eq!(records.len(), 2);
        assert_eq!(
            records[0]["answer"],
            "No, there is no pneumothorax in the left lung."
        );
    }
}
