//! Prompt P1 (question generation) as a generation task: a region context in, a variable-length
//! list `{"questions": […]}` out. Each question keeps its guideline breaches (a reference to
//! the report, a temporal comparison, subjective phrasing, not region-specific) as lint codes:
//! it is answered and judged like the others, and the filter rejects it with its codes, so
//! nothing is lost and the breaches stay queryable.

use std::sync::Arc;

use cxrlake_generate::{GenerationTask, PromptSet, TaskPrompt};
use serde_json::{Value, json};

use crate::Result;
use crate::context::Context;
use crate::offline;
use crate::text::question_lint;

/// The SQL function name of the task.
pub const TASK_NAME: &str = "givcxr_questions";

/// The offline generator's id.
pub const OFFLINE_ID: &str = "offline-givcxr-questions-1";

/// Question generation over the prompts' `questions` task.
#[derive(Debug)]
pub struct QuestionsTask {
    prompts: Arc<PromptSet>,
    prompt: TaskPrompt,
}

impl QuestionsTask {
    /// The task (prompt task `questions`).
    pub fn new(prompts: Arc<PromptSet>) -> Result<QuestionsTask> {
        let prompt = prompts.require("questions")?.clone();
        Ok(QuestionsTask { prompts, prompt })
    }
}

/// The records of a list of questions: position (1-based), text and lint codes.
fn records(context: &Context, questions: &[String]) -> Vec<Value> {
    questions
        .iter()
        .enumerate()
        .map(|(i, q)| {
            json!({
                "position": i + 1,
                "question": q.trim(),
                "lint": question_lint(q, &context.region_name),
            })
        })
        .collect()
}

impl GenerationTask for QuestionsTask {
    fn name(&self) -> &str {
        TASK_NAME
    }

    fn prompt(&self) -> &TaskPrompt {
        &self.prompt
    }

    fn prompt_version(&self) -> &str {
        self.prompts.version()
    }

    /// `BBOX`, `ATTRIBUTES`, `TEXTURE`, `PHRASES`.
    fn placeholders(
        &self,
        input: &Value,
    ) -> std::result::Result<Vec<(&'static str, String)>, String> {
        Ok(Context::from_row(input)?.placeholders())
    }

    fn check(&self, input: &Value, answer: &Value) -> std::result::Result<Vec<Value>, String> {
        let context = Context::from_row(input)?;
        let questions: Vec<String> = answer
            .get("questions")
            .and_then(Value::as_array)
            .ok_or("the answer has no questions array")?
            .iter()
            .map(|q| {
                q.as_str()
                    .map(str::trim)
                    .filter(|q| !q.is_empty())
                    .map(str::to_string)
                    .ok_or("every question must be a non-empty string")
            })
            .collect::<std::result::Result<_, _>>()?;
        if questions.is_empty() {
            return Err("the questions array is empty: ask at least one question".into());
        }
        Ok(records(&context, &questions))
    }

    fn offline(&self, input: &Value) -> std::result::Result<Vec<Value>, String> {
        let context = Context::from_row(input)?;
        Ok(records(&context, &offline::questions(&context)))
    }

    fn offline_id(&self) -> &str {
        OFFLINE_ID
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn task() -> QuestionsTask {
        QuestionsTask::new(Arc::new(crate::prompts().expect("fixture"))).expect("fixture")
    }

    fn row() -> Value {
        json!({"region": "right_lung", "region_name": "right lung", "bbox": [1.0, 2.0, 30.0, 40.0],
               "attributes": ["anatomicalfinding|yes|atelectasis"], "texture": [], "phrases": ["Right basilar atelectasis."]})
    }

    #[test]
    fn questions_are_numbered_and_linted() {
        let records = task()
            .check(
                &row(),
                &json!({"questions": ["What is seen in the right lung?", "What did the report say?"]}),
            )
            .expect("fixture");
        assert_eq!(records.len(), 2);
        assert_eq!(records[1]["position"], 2);
        assert_eq!(
            records[1]["lint"],
            json!(["mentions_report", "not_region_specific"])
        );
        assert!(task().check(&row(), &json!({"questions": []})).is_err());
        assert!(task().check(&row(), &json!({"questions": [1]})).is_err());
        assert!(task().check(&row(), &json!({"answers": ["x"]})).is_err());
    }

    #[test]
    fn the_prompt_carries_the_context() {
        let values = task().placeholders(&row()).expect("fixture");
        assert_eq!(
            values[0],
            ("BBOX", "[1, 2, 30, 40] (right lung)".to_string())
        );
        let (_, user) = task().prompt().render(&values).expect("fixture");
        assert!(user.contains("anatomicalfinding|yes|atelectasis"), "{user}");
    }

    #[test]
    fn offline_questions_pass_their_own_lint() {
        let records = task().offline(&row()).expect("fixture");
        assert!(!records.is_empty());
        for r in records {
            assert_eq!(r["lint"], json!([]), "{r}");
        }
    }
}
