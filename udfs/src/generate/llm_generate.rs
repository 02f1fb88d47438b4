//! `<task>(input)` on an LLM: a flavour's generation task asked per input row through an
//! OpenAI-compatible server, each answer parsed tolerantly, validated against the task's JSON
//! schema and checked by the task, and asked again with the reason when it fails.
//!
//! ```text
//!  input row ──placeholders──► system + user ──► request (guided JSON, temperature, max_tokens)
//!                                                   │ client: cache (llm_calls), concurrency
//!        ┌──────────────────────────────────────────┘
//!        ▼
//!  answer ──parse_json──validate──check──fit──► records, attempts, llm:<model>@<prompts version>
//!        │ invalid, retries left: + assistant (the answer) + user ("Your answer is not valid:
//!        │ <reason>. Answer again with JSON only.") ──► request again
//!        └ invalid, none left: error = the reason, raw = the answer; every attempt rejected
//!          in the cache (asked afresh by the next run)
//!  call failed ──► error "LLM call failed: …"        budget spent / cache broken ──► query fails
//! ```
//!
//! Every attempt goes through the client, so a rerun is answered from the cache and sends
//! nothing, except the rows that ended unusable. All pending rows of a batch are asked together,
//! attempt by attempt.

use std::hash::{Hash, Hasher};
use std::sync::Arc;

use async_trait::async_trait;
use cxrlake_generate::{GenerationTask, parse_json, validate};
use cxrlake_llm::{ChatMessage, LlmClient, LlmRequest};
use cxrlake_schemas::gemex::generated_type;
use datafusion::arrow::datatypes::{DataType, Field, Fields};
use datafusion::common::{Result, exec_datafusion_err, exec_err, internal_err};
use datafusion::logical_expr::async_udf::AsyncScalarUDFImpl;
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDFImpl, Signature, Volatility,
};
use serde_json::Value;

use super::output::{Generated, misfit};
use crate::llm_ask::{BATCH_ROWS, complete};
use crate::rows::{decode_rows, encode_rows};

/// Schema violations quoted in a reason (the rest are counted).
const MAX_VIOLATIONS: usize = 5;

/// An LLM generation task as an async scalar function named after the task.
#[derive(Debug)]
pub struct LlmGenerateFunc {
    task: Arc<dyn GenerationTask>,
    client: Arc<LlmClient>,
    record: Fields,
    return_type: DataType,
    generator: String,
    signature: Signature,
}

impl LlmGenerateFunc {
    /// The function asking `task` through `client`, returning records of a struct of `record`
    /// fields (e.g. `cxrlake_schemas::gemex::qa_record_fields()`).
    pub fn new(task: Arc<dyn GenerationTask>, client: Arc<LlmClient>, record: Vec<Field>) -> Self {
        let generator = format!("llm:{}@{}", client.config().model, task.prompt_version());
        Self {
            return_type: generated_type(record.clone()),
            record: record.into(),
            task,
            client,
            generator,
            signature: Signature::any(1, Volatility::Immutable),
        }
    }

    /// The records of one answer, or why it is not valid.
    fn accept(&self, input: &Value, answer: &str) -> Result<Vec<Value>, String> {
        let parsed = parse_json(answer).map_err(|reason| format!("not JSON ({reason})"))?;
        let mut violations = validate(&parsed, self.task.prompt().schema());
        if !violations.is_empty() {
            if violations.len() > MAX_VIOLATIONS {
                let more = violations.len() - MAX_VIOLATIONS;
                violations.truncate(MAX_VIOLATIONS);
                violations.push(format!("{more} more"));
            }
            return Err(format!(
                "it does not follow the JSON schema: {}",
                violations.join("; ")
            ));
        }
        let records = self.task.check(input, &parsed)?;
        match misfit(&records, &self.record) {
            Some(reason) => Err(reason),
            None => Ok(records),
        }
    }

    /// The first request's messages for `input`, or why the row cannot be asked.
    fn messages(&self, input: &Value) -> Result<Result<Vec<ChatMessage>, String>> {
        let values = match self.task.placeholders(input) {
            Ok(values) => values,
            Err(reason) => return Ok(Err(format!("cannot ask: {reason}"))),
        };
        let (system, user) = self
            .task
            .prompt()
            .render(&values)
            .map_err(|e| exec_datafusion_err!("{}: {e}", self.task.name()))?;
        Ok(Ok(vec![
            ChatMessage::system(system),
            ChatMessage::user(user),
        ]))
    }
}

impl PartialEq for LlmGenerateFunc {
    fn eq(&self, other: &Self) -> bool {
        self.task.name() == other.task.name()
            && self.task.prompt_version() == other.task.prompt_version()
            && self.client.config() == other.client.config()
            && self.return_type == other.return_type
    }
}

impl Eq for LlmGenerateFunc {}

impl Hash for LlmGenerateFunc {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.task.name().hash(state);
        self.task.prompt_version().hash(state);
        self.client.config().model.hash(state);
        self.client.config().endpoint.as_str().hash(state);
        self.return_type.hash(state);
    }
}

impl ScalarUDFImpl for LlmGenerateFunc {
    fn name(&self) -> &str {
        self.task.name()
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _args: &[DataType]) -> Result<DataType> {
        Ok(self.return_type.clone())
    }

    fn invoke_with_args(&self, _args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        exec_err!("{} is async and runs only inside a query plan", self.name())
    }
}

/// Where a row stands.
enum Row {
    /// A NULL input: a NULL result.
    Null,
    /// Waiting for an answer to this conversation.
    Asking(Vec<ChatMessage>),
    /// Finished.
    Done(Generated),
}

#[async_trait]
impl AsyncScalarUDFImpl for LlmGenerateFunc {
    fn ideal_batch_size(&self) -> Option<usize> {
        Some(BATCH_ROWS)
    }

    async fn invoke_async_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let name = self.task.name();
        let args = ColumnarValue::values_to_arrays(&args.args)?;
        let [input] = args.as_slice() else {
            return exec_err!("{name} takes one argument, the input row as a struct");
        };
        let inputs: Vec<Option<Value>> = decode_rows(input, name)?;
        let mut rows = inputs
            .iter()
            .map(|input| {
                Ok(match input {
                    None => Row::Null,
                    Some(input) => match self.messages(input)? {
                        Ok(messages) => Row::Asking(messages),
                        Err(reason) => {
                            Row::Done(Generated::failed(reason, None, 0, &self.generator))
                        }
                    },
                })
            })
            .collect::<Result<Vec<Row>>>()?;

        let prompt = self.task.prompt();
        // Per row, the requests sent (its attempts) and, when none gave a usable answer, why.
        let mut sent: Vec<Vec<LlmRequest>> = vec![Vec::new(); rows.len()];
        let mut unusable: Vec<(usize, String)> = Vec::new();
        for attempt in 1..=prompt.retries() + 1 {
            let asking: Vec<usize> = (0..rows.len())
                .filter(|&index| matches!(rows[index], Row::Asking(_)))
                .collect();
            if asking.is_empty() {
                break;
            }
            let requests: Vec<LlmRequest> = asking
                .iter()
                .filter_map(|&index| match &rows[index] {
                    Row::Asking(messages) => Some(
                        LlmRequest::chat(messages.clone())
                            .with_guided_json(prompt.schema().clone())
                            .with_temperature(prompt.temperature())
                            .with_max_tokens(prompt.max_tokens()),
                    ),
                    _ => None,
                })
                .collect();
            let answers = complete(&self.client, &requests).await?;
            for (&index, request) in asking.iter().zip(&requests) {
                sent[index].push(request.clone());
            }
            for (index, answer) in asking.into_iter().zip(answers) {
                let (Row::Asking(messages), Some(input)) = (&mut rows[index], &inputs[index])
                else {
                    continue;
                };
                let text = match answer {
                    Ok(text) => text,
                    Err(reason) => {
                        rows[index] =
                            Row::Done(Generated::failed(reason, None, attempt, &self.generator));
                        continue;
                    }
                };
                match self.accept(input, &text) {
                    Ok(records) => {
                        rows[index] =
                            Row::Done(Generated::records(records, attempt, &self.generator));
                    }
                    Err(reason) if attempt <= prompt.retries() => {
                        messages.push(ChatMessage::assistant(text));
                        messages.push(ChatMessage::user(format!(
                            "Your answer is not valid: {reason}. Answer again with JSON only."
                        )));
                    }
                    Err(reason) => {
                        unusable.push((index, reason.clone()));
                        rows[index] = Row::Done(Generated::failed(
                            reason,
                            Some(text),
                            attempt,
                            &self.generator,
                        ));
                    }
                }
            }
        }
        // Every attempt of a row that ended unusable is asked afresh by the next run.
        let rejected: Vec<(&LlmRequest, String)> = unusable
            .iter()
            .flat_map(|(index, reason)| sent[*index].iter().map(|r| (r, reason.clone())))
            .collect();
        self.client.reject_all(&rejected).await;
        let results = rows
            .into_iter()
            .map(|row| match row {
                Row::Done(generated) => Ok(Some(generated)),
                Row::Null => Ok(None),
                Row::Asking(_) => internal_err!("{name}: a row was left unanswered"),
            })
            .collect::<Result<Vec<Option<Generated>>>>()?;
        Ok(ColumnarValue::Array(encode_rows(
            &results,
            &self.return_type,
        )?))
    }
}
