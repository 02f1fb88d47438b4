//! OpenAI-compatible LLM client for cxrlake (vLLM, llama.cpp server, Ollama).
//!
//! - [`LlmClient::complete_all`] answers a batch of [`LlmRequest`]s with bounded concurrency,
//!   retries (exponential backoff with full jitter; `Retry-After` honoured), per-request
//!   timeouts and a total budget, one `Result` per request.
//! - Every outcome is stored in a [`ResponseCache`] under a typed [`CacheKey`], so re-runs and
//!   resumes send nothing for requests already answered.
//! - [`check_endpoint`] refuses endpoints outside loopback/private networks unless
//!   `--allow-remote-llm` (`cxrlake.allow_remote_llm`) is set: report text is PHI.
//! - API keys are read from the environment variable named in the config and never logged.

mod cache;
mod client;
mod config;
mod error;
mod guard;
mod request;
mod retry;
mod stats;

pub use cache::{
    CACHE_KEY_FORMAT, CacheKey, CachedOutcome, InMemoryCache, ResponseCache, request_hash,
};
pub use client::LlmClient;
pub use config::{ALLOW_REMOTE_CONFIG_KEY, ALLOW_REMOTE_FLAG, ApiKey, Budget, LlmConfig};
pub use error::{LlmError, Result};
pub use guard::{check_endpoint, is_private};
pub use request::{ChatMessage, LlmRequest, LlmResponse, RequestKind};
pub use retry::{Backoff, MALFORMED_RETRIES};
pub use stats::CallStats;
