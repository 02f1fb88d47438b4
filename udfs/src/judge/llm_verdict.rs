//! `judge_verdicts(criterion, report, items)` of the LLM judge:
//! one call per group of distinct inputs of one study and criterion (`sql/judge.sql`, step
//! `groups`), sent to an OpenAI-compatible server through the client (cache in `llm_calls`,
//! retries, PHI guard).
//!
//! ```text
//!  group of 1 ──► its single-item prompt (`input`) ──► parse::part_levels | single_level
//!  group of n ──► JudgePrompts::render_batch(report once, "Item 1:" … "Item n:" blocks)
//!                 ──► parse::batch_levels ──► one verdict per item, in the group's order
//! ```
//!
//! An item whose part of the answer cannot be parsed, or a call that failed, is a verdict with
//! `error` set: the QA pairs reading it are `not rated`, the run goes on. An answered call with
//! any unusable item is rejected in the cache, so the next run asks its pending items again.

use std::sync::Arc;

use async_trait::async_trait;
use cxrlake_judge::{Criterion, JudgePrompts, Verdict, parse};
use cxrlake_llm::LlmClient;
use datafusion::arrow::datatypes::DataType;
use datafusion::common::{Result, exec_err};
use datafusion::logical_expr::async_udf::AsyncScalarUDFImpl;
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDFImpl, Signature, Volatility,
};

use super::group::{Group, Groups};
use super::verdict::{verdicts_array, verdicts_type};
use crate::llm_ask::{BATCH_ROWS, ask_each, reject_prompts};

/// Tokens of an answer rating `parts` parts (a short line each), or an explanation and a label.
fn max_tokens(criterion: Criterion, parts: usize) -> u32 {
    if criterion.per_part() {
        64 + 24 * parts.min(64) as u32
    } else {
        160
    }
}

/// The LLM `judge_verdicts` async scalar function.
#[derive(Debug)]
pub struct LlmVerdictFunc {
    client: Arc<LlmClient>,
    judge_id: String,
    prompts: Arc<JudgePrompts>,
    signature: Signature,
}

impl LlmVerdictFunc {
    /// The function over this client; `judge_id` names the model, the prompts version and the
    /// batch size, `prompts` renders the batched prompts.
    pub fn new(client: Arc<LlmClient>, judge_id: String, prompts: Arc<JudgePrompts>) -> Self {
        Self {
            client,
            judge_id,
            prompts,
            signature: Signature::any(3, Volatility::Immutable),
        }
    }
}

impl PartialEq for LlmVerdictFunc {
    fn eq(&self, other: &Self) -> bool {
        self.judge_id == other.judge_id && self.client.config() == other.client.config()
    }
}

impl Eq for LlmVerdictFunc {}

impl std::hash::Hash for LlmVerdictFunc {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.judge_id.hash(state);
        self.client.config().endpoint.as_str().hash(state);
    }
}

impl ScalarUDFImpl for LlmVerdictFunc {
    fn name(&self) -> &str {
        "judge_verdicts"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _args: &[DataType]) -> Result<DataType> {
        Ok(verdicts_type())
    }

    fn invoke_with_args(&self, _args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        exec_err!("{} is async and runs only inside a query plan", self.name())
    }
}

/// The levels of each item of a group from the answer `text`.
fn levels(
    criterion: Criterion,
    group: &Group<'_>,
    text: &str,
) -> Vec<Result<Vec<Option<&'static str>>, String>> {
    if group.hashes.len() > 1 {
        return parse::batch_levels(criterion, text, &group.parts);
    }
    let parts = group.parts.first().copied().unwrap_or(0);
    vec![if criterion.per_part() {
        parse::part_levels(criterion, text, parts)
    } else {
        parse::single_level(criterion, text).map(|level| vec![Some(level)])
    }]
}

impl LlmVerdictFunc {
    /// The prompt of a group and its token budget (a function of the group alone).
    fn prompt(&self, criterion: Criterion, group: &Group<'_>) -> (String, u32) {
        if let [input] = group.inputs.as_slice() {
            let parts = group.parts.first().copied().unwrap_or(0);
            return (input.to_string(), max_tokens(criterion, parts));
        }
        let budget = group
            .parts
            .iter()
            .map(|&parts| 16 + max_tokens(criterion, parts))
            .sum();
        (
            self.prompts
                .render_batch(criterion, group.report, &group.items),
            budget,
        )
    }
}

#[async_trait]
impl AsyncScalarUDFImpl for LlmVerdictFunc {
    fn ideal_batch_size(&self) -> Option<usize> {
        Some(BATCH_ROWS)
    }

    async fn invoke_async_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let args = ColumnarValue::values_to_arrays(&args.args)?;
        let groups = Groups::new(&args, self.name())?;
        let groups: Vec<Group<'_>> = (0..groups.len()).map(|row| groups.group(row)).collect();
        let asked: Vec<Option<(String, u32)>> = groups
            .iter()
            .map(|group| {
                group
                    .criterion
                    .ok()
                    .map(|criterion| self.prompt(criterion, group))
            })
            .collect();
        let answers = ask_each(&self.client, &asked).await?;
        let mut unusable = Vec::new();
        let mut verdicts = Vec::with_capacity(groups.len());
        for ((group, answer), asked) in groups.iter().zip(answers).zip(&asked) {
            let items: Vec<Verdict> = match (group.criterion, answer) {
                (Ok(_), Some(Err(reason))) => group
                    .hashes
                    .iter()
                    .map(|_| Verdict::unrated(reason.clone(), ""))
                    .collect(),
                (Ok(criterion), Some(Ok(text))) => {
                    let items: Vec<Verdict> = levels(criterion, group, &text)
                        .into_iter()
                        .map(|levels| match levels {
                            Ok(levels) => Verdict {
                                levels,
                                explanation: text.clone(),
                                error: None,
                            },
                            Err(reason) => Verdict::unrated(reason, text.clone()),
                        })
                        .collect();
                    let reasons: Vec<&str> =
                        items.iter().filter_map(|v| v.error.as_deref()).collect();
                    if let (false, Some((prompt, max_tokens))) = (reasons.is_empty(), asked) {
                        unusable.push((prompt.as_str(), *max_tokens, reasons.join("; ")));
                    }
                    items
                }
                _ => group
                    .hashes
                    .iter()
                    .map(|_| {
                        Verdict::unrated(
                            format!("unknown criterion '{}'", criterion_name(group)),
                            "",
                        )
                    })
                    .collect(),
            };
            verdicts.push(group.hashes.iter().copied().zip(items).collect());
        }
        reject_prompts(&self.client, unusable).await;
        Ok(ColumnarValue::Array(verdicts_array(&verdicts)))
    }
}

/// The criterion name of `group` as given.
fn criterion_name<'a>(group: &Group<'a>) -> &'a str {
    match group.criterion {
        Ok(criterion) => criterion.key(),
        Err(name) => name,
    }
}
