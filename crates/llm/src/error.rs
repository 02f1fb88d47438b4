//! The one error type of `cxrlake-llm` and its `Result` alias.
//!
//! Errors are plain data (`Clone`, serde) so that a final per-request failure can be recorded in
//! the response cache and replayed on a re-run exactly as it happened.

use serde::{Deserialize, Serialize};

/// Result alias used throughout the crate.
pub type Result<T, E = LlmError> = std::result::Result<T, E>;

/// Everything that can go wrong when configuring the client or answering one request.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, Serialize, Deserialize)]
pub enum LlmError {
    /// The endpoint is not on loopback or a private network and remote use was not allowed.
    #[error(
        "refusing LLM endpoint {endpoint}: {reason}. Report text is PHI and must stay on this \
         network; use a loopback/private endpoint, or pass {flag} (config key {key} = true) \
         only if this endpoint is approved for PHI",
        flag = crate::config::ALLOW_REMOTE_FLAG,
        key = crate::config::ALLOW_REMOTE_CONFIG_KEY
    )]
    RemoteEndpoint {
        /// The refused endpoint.
        endpoint: String,
        /// Why it was refused (public address, unresolvable host, ...).
        reason: String,
    },
    /// The configuration is unusable.
    #[error("invalid LLM client configuration: {0}")]
    Config(String),
    /// `api_key_env` names an environment variable that is not set.
    #[error("environment variable {var} (api_key_env) is not set; export it or unset api_key_env")]
    MissingApiKey {
        /// Name of the missing variable (never its value).
        var: String,
    },
    /// The server answered with a status that retrying cannot fix (400, 401, 404, ...).
    #[error(
        "{endpoint} answered HTTP {status} (not retried): {body}; check the model name, \
         credentials and request parameters"
    )]
    Status {
        /// The URL that was called.
        endpoint: String,
        /// HTTP status code.
        status: u16,
        /// Start of the response body.
        body: String,
    },
    /// Retryable failures (429, 5xx, timeouts, resets) persisted through every allowed attempt.
    #[error(
        "{endpoint} still failing after {attempts} attempts, last: {last}; check the server, \
         or raise max_retries / request_timeout"
    )]
    RetriesExhausted {
        /// The URL that was called.
        endpoint: String,
        /// Number of HTTP attempts made.
        attempts: u32,
        /// Description of the last failure.
        last: String,
    },
    /// The body was truncated, not JSON, or not an OpenAI-shaped completion.
    #[error("malformed response from {endpoint} after {attempts} attempts: {detail}")]
    Malformed {
        /// The URL that was called.
        endpoint: String,
        /// Number of HTTP attempts made.
        attempts: u32,
        /// What could not be parsed.
        detail: String,
    },
    /// The server answered, but the caller could not use the answer (not the JSON it asked for,
    /// a verdict it cannot read). Recorded so the accounting keeps it; never replayed, so the
    /// next run asks again (a fixed server, another sample).
    #[error("the answer could not be used: {reason}; the next run asks again")]
    Unusable {
        /// Why the caller could not use it.
        reason: String,
    },
    /// The request was not sent because the total budget (requests or deadline) is spent.
    /// Not cached: a later run with a fresh budget sends it.
    #[error("LLM budget exhausted ({0}); answered requests are cached, re-run to resume")]
    BudgetExhausted(String),
    /// The response cache failed.
    #[error("LLM response cache failed: {0}")]
    Cache(String),
}

impl LlmError {
    /// Whether this error is the recorded outcome of calling the endpoint (and so belongs in the
    /// cache), as opposed to a request that was never attempted.
    pub fn is_call_outcome(&self) -> bool {
        matches!(
            self,
            Self::Status { .. }
                | Self::RetriesExhausted { .. }
                | Self::Malformed { .. }
                | Self::Unusable { .. }
        )
    }

    /// How a recorded failure is treated by the next run: `permanent` (the server refused the
    /// request itself: HTTP 400, 413, 422; replayed), `parse` (answered, but unusable; asked
    /// again), `transient` (everything else; asked again).
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Status {
                status: 400 | 413 | 422,
                ..
            } => "permanent",
            Self::Unusable { .. } => "parse",
            _ => "transient",
        }
    }
}
