//! `judge_verdict(criterion, input, parts)` of the LLM judge: the rendered prompt (`input`) sent
//! to an OpenAI-compatible server through the client (cache in `llm_calls`, retries, PHI guard),
//! its answer parsed per part (`[01] LABEL`) or as one `explanation -> LABEL`. An answer that
//! cannot be parsed, or a call that failed, is a verdict with `error` set: the QA pairs reading
//! it are `not rated`, the run goes on.

use std::sync::Arc;

use async_trait::async_trait;
use cxrlake_judge::{Criterion, Verdict, parse};
use cxrlake_llm::LlmClient;
use datafusion::arrow::array::{Array, AsArray};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Int32Type};
use datafusion::common::{Result, exec_err};
use datafusion::logical_expr::async_udf::AsyncScalarUDFImpl;
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDFImpl, Signature, Volatility,
};

use super::verdict::{verdict_type, verdicts_array};
use crate::args::{string_at, utf8_arg};
use crate::llm_ask::{BATCH_ROWS, ask_each, reject_prompts};

/// Tokens of an answer rating `parts` parts (a short line each), or an explanation and a label.
fn max_tokens(criterion: Criterion, parts: usize) -> u32 {
    if criterion.per_part() {
        64 + 24 * parts.min(64) as u32
    } else {
        160
    }
}

/// The LLM `judge_verdict` async scalar function.
#[derive(Debug)]
pub struct LlmVerdictFunc {
    client: Arc<LlmClient>,
    judge_id: String,
    signature: Signature,
}

impl LlmVerdictFunc {
    /// The function over this client; `judge_id` names the model and prompts version.
    pub fn new(client: Arc<LlmClient>, judge_id: String) -> Self {
        Self {
            client,
            judge_id,
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
        "judge_verdict"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _args: &[DataType]) -> Result<DataType> {
        Ok(verdict_type())
    }

    fn invoke_with_args(&self, _args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        exec_err!("{} is async and runs only inside a query plan", self.name())
    }
}

/// The verdict of one answered prompt.
fn verdict(criterion: Criterion, parts: usize, answer: Result<String, String>) -> Verdict {
    let text = match answer {
        Ok(text) => text,
        Err(reason) => return Verdict::unrated(reason, ""),
    };
    let levels = if criterion.per_part() {
        parse::part_levels(criterion, &text, parts)
    } else {
        parse::single_level(criterion, &text).map(|level| vec![Some(level)])
    };
    match levels {
        Ok(levels) => Verdict {
            levels,
            explanation: text,
            error: None,
        },
        Err(reason) => Verdict::unrated(reason, text),
    }
}

#[async_trait]
impl AsyncScalarUDFImpl for LlmVerdictFunc {
    fn ideal_batch_size(&self) -> Option<usize> {
        Some(BATCH_ROWS)
    }

    async fn invoke_async_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let args = ColumnarValue::values_to_arrays(&args.args)?;
        if args.len() != 3 {
            return exec_err!("judge_verdict(criterion, input, parts) takes 3 arguments");
        }
        let criteria = utf8_arg(&args, 0, self.name())?;
        let prompts = utf8_arg(&args, 1, self.name())?;
        let parts = cast(&args[2], &DataType::Int32)?;
        let parts = parts.as_primitive::<Int32Type>();
        let rows: Vec<(Option<Criterion>, usize)> = (0..args[0].len())
            .map(|row| {
                let count = if parts.is_valid(row) {
                    parts.value(row).max(0) as usize
                } else {
                    0
                };
                (Criterion::from_key(string_at(&criteria, row)), count)
            })
            .collect();
        let asked: Vec<Option<(String, u32)>> = rows
            .iter()
            .enumerate()
            .map(|(row, (criterion, parts))| {
                criterion.map(|c| (string_at(&prompts, row).to_string(), max_tokens(c, *parts)))
            })
            .collect();
        let answers = ask_each(&self.client, asked.clone()).await?;
        let mut unusable = Vec::new();
        let mut verdicts = Vec::with_capacity(rows.len());
        for (row, ((criterion, parts), answer)) in rows.iter().zip(answers).enumerate() {
            let (Some(criterion), Some(answer)) = (criterion, answer) else {
                verdicts.push(Verdict::unrated(
                    format!("unknown criterion '{}'", string_at(&criteria, row)),
                    "",
                ));
                continue;
            };
            let answered = answer.is_ok();
            let verdict = verdict(*criterion, *parts, answer);
            if let (true, Some(reason), Some((prompt, max_tokens))) =
                (answered, &verdict.error, &asked[row])
            {
                unusable.push((prompt.as_str(), *max_tokens, reason.clone()));
            }
            verdicts.push(verdict);
        }
        reject_prompts(&self.client, unusable).await;
        Ok(ColumnarValue::Array(verdicts_array(&verdicts)))
    }
}
