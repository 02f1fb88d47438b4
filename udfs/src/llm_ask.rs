//! The LLM side shared by the `llm_extract_*`, LLM `judge_verdicts` and LLM generation functions:
//! one chat request per prompt (or conversation), answered through the client (cache,
//! concurrency, retries), with per-row failures.

use cxrlake_llm::{ChatMessage, LlmClient, LlmError, LlmRequest};
use datafusion::common::{DataFusionError, Result};

/// How the `error` of a row whose LLM call failed begins (as opposed to a parse error).
pub const CALL_FAILED: &str = "LLM call failed";

/// Rows per call of an async function: enough to keep the client's concurrency busy, few enough
/// that progress is committed often.
pub(crate) const BATCH_ROWS: usize = 256;

/// The answers to `prompts` (`None`: nothing to ask for that row), in order, each allowed
/// `max_tokens`. A failed call is a row failure (its reason, starting with [`CALL_FAILED`]); a
/// spent budget or a broken cache fails the query, since re-running resumes it.
pub(crate) async fn ask(
    client: &LlmClient,
    prompts: &[Option<String>],
    max_tokens: u32,
) -> Result<Vec<Option<Result<String, String>>>> {
    let prompts: Vec<Option<(&str, u32)>> = prompts
        .iter()
        .map(|prompt| prompt.as_deref().map(|p| (p, max_tokens)))
        .collect();
    ask_each(client, &prompts).await
}

/// Like [`ask`], with a token budget per prompt. The budget is part of the cached request, so it
/// must depend on the row alone, never on the batch it happens to be in.
pub(crate) async fn ask_each<P: AsRef<str>>(
    client: &LlmClient,
    prompts: &[Option<(P, u32)>],
) -> Result<Vec<Option<Result<String, String>>>> {
    let requests: Vec<LlmRequest> = prompts
        .iter()
        .flatten()
        .map(|(prompt, max_tokens)| prompt_request(prompt.as_ref(), *max_tokens))
        .collect();
    let mut answers = complete(client, &requests).await?.into_iter();
    let mut out = Vec::with_capacity(prompts.len());
    for prompt in prompts {
        if prompt.is_none() {
            out.push(None);
            continue;
        }
        let answer = answers
            .next()
            .unwrap_or_else(|| Err("LLM client returned fewer answers than requests".to_string()));
        out.push(Some(answer));
    }
    Ok(out)
}

/// The answer texts to `requests`, in order, sent concurrently through the client. A failed call
/// is a row failure (its reason, starting with [`CALL_FAILED`]); a spent budget or a broken
/// cache fails the query, since re-running resumes it.
pub(crate) async fn complete(
    client: &LlmClient,
    requests: &[LlmRequest],
) -> Result<Vec<Result<String, String>>> {
    let mut answers = client.complete_all(requests).await.into_iter();
    let mut out = Vec::with_capacity(requests.len());
    for _ in requests {
        let answer = match answers.next() {
            Some(Ok(response)) => Ok(response.text),
            Some(Err(error @ (LlmError::BudgetExhausted(_) | LlmError::Cache(_)))) => {
                return Err(DataFusionError::External(Box::new(error)));
            }
            Some(Err(error)) => Err(format!("{CALL_FAILED}: {error}")),
            None => Err("LLM client returned fewer answers than requests".to_string()),
        };
        out.push(answer);
    }
    Ok(out)
}

/// The request [`ask`] sends for one prompt.
pub(crate) fn prompt_request(prompt: &str, max_tokens: u32) -> LlmRequest {
    LlmRequest::chat(vec![ChatMessage::user(prompt.to_string())])
        .with_temperature(0.0)
        .with_max_tokens(max_tokens)
}

/// Records that the answers to these prompts (with their token budgets, as asked) could not be
/// used, each with its reason, so the next run asks them again instead of replaying them.
pub(crate) async fn reject_prompts(client: &LlmClient, rejected: Vec<(&str, u32, String)>) {
    let requests: Vec<(LlmRequest, String)> = rejected
        .into_iter()
        .map(|(prompt, max_tokens, reason)| (prompt_request(prompt, max_tokens), reason))
        .collect();
    let rejected: Vec<(&LlmRequest, String)> = requests
        .iter()
        .map(|(r, reason)| (r, reason.clone()))
        .collect();
    client.reject_all(&rejected).await;
}
