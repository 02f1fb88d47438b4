//! Client configuration (`LlmConfig`), the total budget, and the redacted API key.
//!
//! The API key is never part of the configuration: the config names the environment variable
//! that holds it (`api_key_env`), and the value lives only in an [`ApiKey`], whose `Debug` is
//! redacted and which is sent as a sensitive `Authorization: Bearer` header.

use std::fmt;
use std::time::Duration;

use url::Url;

use crate::error::{LlmError, Result};

/// Config key that allows non-private LLM endpoints.
pub const ALLOW_REMOTE_CONFIG_KEY: &str = "cxrlake.allow_remote_llm";

/// CLI flag that allows non-private LLM endpoints.
pub const ALLOW_REMOTE_FLAG: &str = "--allow-remote-llm";

/// Limits on the total work one client may do, across all of its batches.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Budget {
    /// Most HTTP requests (first attempts and retries) the client may send.
    pub max_requests: Option<u64>,
    /// Wall-clock time from client creation after which no request is sent.
    pub deadline: Option<Duration>,
}

/// Settings of an [`crate::LlmClient`] for one OpenAI-compatible server.
#[derive(Debug, Clone, PartialEq)]
pub struct LlmConfig {
    /// Base URL of the server, e.g. `http://127.0.0.1:8000/v1`; `chat/completions` and
    /// `completions` are resolved against it.
    pub endpoint: Url,
    /// Model name sent in every request (part of the cache key).
    pub model: String,
    /// Name of the environment variable holding the API key, if the server needs one.
    pub api_key_env: Option<String>,
    /// Requests kept in flight at once.
    pub concurrency: usize,
    /// Timeout of one HTTP attempt, body included.
    pub request_timeout: Duration,
    /// Retries after the first attempt for 429, 5xx, timeouts and connection failures.
    pub max_retries: u32,
    /// First backoff step; step `n` is `backoff_base * 2^n`, capped, with full jitter.
    pub backoff_base: Duration,
    /// Cap of one backoff step (a server's `Retry-After` is honoured up to `retry_after_max`).
    pub backoff_max: Duration,
    /// Longest `Retry-After` honoured.
    pub retry_after_max: Duration,
    /// Total budget of the client.
    pub total_budget: Budget,
    /// Allow endpoints outside loopback/private networks (`--allow-remote-llm`).
    pub allow_remote: bool,
}

impl LlmConfig {
    /// A configuration with the defaults for a local vLLM/llama.cpp/Ollama server.
    pub fn new(endpoint: Url, model: impl Into<String>) -> Self {
        Self {
            endpoint,
            model: model.into(),
            api_key_env: None,
            concurrency: 16,
            request_timeout: Duration::from_secs(120),
            max_retries: 5,
            backoff_base: Duration::from_millis(250),
            backoff_max: Duration::from_secs(30),
            retry_after_max: Duration::from_secs(120),
            total_budget: Budget::default(),
            allow_remote: false,
        }
    }

    /// Checks the values that would make the client misbehave.
    pub fn validate(&self) -> Result<()> {
        if !matches!(self.endpoint.scheme(), "http" | "https") {
            return Err(LlmError::Config(format!(
                "endpoint {} must be http or https",
                self.endpoint
            )));
        }
        if self.model.trim().is_empty() {
            return Err(LlmError::Config("model must not be empty".into()));
        }
        if self.concurrency == 0 {
            return Err(LlmError::Config("concurrency must be at least 1".into()));
        }
        if self.request_timeout.is_zero() {
            return Err(LlmError::Config("request_timeout must be positive".into()));
        }
        Ok(())
    }

    /// The URL of `path` (`chat/completions`, `completions`) under the endpoint.
    pub(crate) fn url_for(&self, path: &str) -> Result<Url> {
        let mut base = self.endpoint.clone();
        if !base.path().ends_with('/') {
            base.set_path(&format!("{}/", base.path()));
        }
        base.join(path)
            .map_err(|error| LlmError::Config(format!("bad endpoint {}: {error}", self.endpoint)))
    }
}

/// An API key value. `Debug` and `Display` never show it.
#[derive(Clone)]
pub struct ApiKey(String);

impl ApiKey {
    /// Looks up the key named by `var` through `lookup` (the process environment in
    /// [`crate::LlmClient::new`]).
    pub fn lookup(var: &str, lookup: impl Fn(&str) -> Option<String>) -> Result<Self> {
        match lookup(var) {
            Some(value) if !value.is_empty() => Ok(Self(value)),
            _ => Err(LlmError::MissingApiKey {
                var: var.to_owned(),
            }),
        }
    }

    /// The header value `Bearer <key>`.
    pub(crate) fn bearer(&self) -> String {
        format!("Bearer {}", self.0)
    }
}

impl fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ApiKey(<redacted>)")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(endpoint: &str) -> LlmConfig {
        LlmConfig::new(Url::parse(endpoint).expect("url"), "m")
    }

    #[test]
    fn url_for_keeps_the_base_path() {
        let chat = config("http://127.0.0.1:8000/v1").url_for("chat/completions");
        assert_eq!(
            chat.expect("url").as_str(),
            "http://127.0.0.1:8000/v1/chat/completions"
        );
        let completion = config("http://127.0.0.1:8000/v1/").url_for("completions");
        assert_eq!(
            completion.expect("url").as_str(),
            "http://127.0.0.1:8000/v1/completions"
        );
    }

    #[test]
    fn validate_rejects_unusable_values() {
        assert!(config("ftp://127.0.0.1/").validate().is_err());
        let mut zero = config("http://127.0.0.1/");
        zero.concurrency = 0;
        assert!(zero.validate().is_err());
        assert!(config("http://127.0.0.1/").validate().is_ok());
    }

    #[test]
    fn api_key_debug_is_redacted() {
        let key = ApiKey::lookup("K", |_| Some("sk-secret-123".into())).expect("key");
        assert!(!format!("{key:?}").contains("sk-secret-123"));
        let missing = ApiKey::lookup("K", |_| None).expect_err("missing");
        assert!(missing.to_string().contains("K"));
    }
}
