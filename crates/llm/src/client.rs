//! `LlmClient`: cached, bounded-concurrency batches of OpenAI-compatible completions.
//!
//! ```text
//!  complete_all(requests)
//!    ├─ keys = CacheKey(model, request, prompt_version)    one per request
//!    ├─ cache.get_many(keys) ──► hits: replayed (answers and recorded errors)
//!    ├─ misses, de-duplicated by key
//!    │     └─ buffer_unordered(concurrency) + semaphore ──► call(): budget → POST → retry loop
//!    │           └─ cache.put(key, outcome)   right after each call, so a kill loses nothing
//!    └─ cache.flush(); results in request order, one Result per request
//! ```
//!
//! A failing request never fails the batch: its error is its result. Requests refused by the
//! budget are not cached, so a later run sends them.

use std::collections::HashMap;
use std::error::Error as _;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use futures::{StreamExt, stream};
use indicatif::{ProgressBar, ProgressStyle};
use reqwest::header::{AUTHORIZATION, CONTENT_TYPE, HeaderValue, RETRY_AFTER};
use tokio::sync::Semaphore;
use url::Url;

use crate::cache::{CacheKey, CachedOutcome, InMemoryCache, ResponseCache};
use crate::config::{ApiKey, LlmConfig};
use crate::error::{LlmError, Result};
use crate::guard::checked_addresses;
use crate::request::{LlmRequest, LlmResponse, ParsedCompletion, RequestKind, parse_completion};
use crate::retry::{Backoff, Failure, MALFORMED_RETRIES, is_retryable_status, parse_retry_after};
use crate::stats::{CallStats, StatsRecorder};

/// Longest error-body excerpt kept in an error.
const ERROR_BODY_CHARS: usize = 300;

/// The largest completion body read (a few thousand tokens are some kilobytes).
const MAX_BODY_BYTES: usize = 4 << 20;

/// Client for one OpenAI-compatible endpoint and model. `Debug` never shows the API key.
#[derive(Debug)]
pub struct LlmClient {
    config: LlmConfig,
    chat_url: Url,
    completion_url: Url,
    http: reqwest::Client,
    /// `Bearer <key>`, marked sensitive (its `Debug` prints `Sensitive`).
    authorization: Option<HeaderValue>,
    cache: Arc<dyn ResponseCache>,
    prompt_version: String,
    show_progress: bool,
    in_flight: Semaphore,
    stats: StatsRecorder,
    requests_used: AtomicU64,
    created: Instant,
}

impl LlmClient {
    /// A client for `config`, reading the API key from the process environment.
    pub fn new(config: LlmConfig) -> Result<Self> {
        Self::with_key_lookup(config, |var| std::env::var(var).ok())
    }

    /// A client for `config`, reading the variable named by `api_key_env` through `lookup`.
    ///
    /// Checks the configuration and the PHI guard (see [`crate::check_endpoint`]).
    pub fn with_key_lookup(
        config: LlmConfig,
        lookup: impl Fn(&str) -> Option<String>,
    ) -> Result<Self> {
        config.validate()?;
        let pinned = checked_addresses(&config.endpoint, config.allow_remote)?;
        let authorization = match &config.api_key_env {
            Some(var) => {
                let key = ApiKey::lookup(var, lookup)?;
                let mut value = HeaderValue::from_str(&key.bearer()).map_err(|_| {
                    LlmError::Config(format!(
                        "the API key in {var} contains characters not allowed in a header"
                    ))
                })?;
                value.set_sensitive(true);
                Some(value)
            }
            None => None,
        };
        // No proxies: the guard checked the endpoint, so traffic must go to it directly. For the
        // same reason a redirect is followed only to the endpoint's own scheme, host and port;
        // anything else would send the report to an address the guard never saw.
        let origin = config.endpoint.origin();
        let redirects = reqwest::redirect::Policy::custom(move |attempt| {
            if attempt.previous().len() >= 5 {
                attempt.error("too many redirects")
            } else if attempt.url().origin() == origin {
                attempt.follow()
            } else {
                let target = attempt.url().to_string();
                attempt.error(RedirectRefused(target))
            }
        });
        let mut builder = reqwest::Client::builder()
            .no_proxy()
            .redirect(redirects)
            .connect_timeout(config.request_timeout)
            .pool_max_idle_per_host(config.concurrency)
            .tcp_nodelay(true);
        if let Some((host, addresses)) = &pinned {
            builder = builder.resolve_to_addrs(host, addresses);
        }
        let http = builder
            .build()
            .map_err(|error| LlmError::Config(format!("cannot build the HTTP client: {error}")))?;
        Ok(Self {
            chat_url: config.url_for("chat/completions")?,
            completion_url: config.url_for("completions")?,
            in_flight: Semaphore::new(config.concurrency),
            config,
            http,
            authorization,
            cache: Arc::new(InMemoryCache::new()),
            prompt_version: String::new(),
            show_progress: false,
            stats: StatsRecorder::default(),
            requests_used: AtomicU64::new(0),
            created: Instant::now(),
        })
    }

    /// Uses `cache` for lookups and for storing every outcome.
    pub fn with_cache(mut self, cache: Arc<dyn ResponseCache>) -> Self {
        self.cache = cache;
        self
    }

    /// Sets the prompt-template version that is part of every cache key.
    pub fn with_prompt_version(mut self, prompt_version: impl Into<String>) -> Self {
        self.prompt_version = prompt_version.into();
        self
    }

    /// Shows a progress bar on stderr during batches.
    pub fn with_progress(mut self, show_progress: bool) -> Self {
        self.show_progress = show_progress;
        self
    }

    /// The configuration.
    pub fn config(&self) -> &LlmConfig {
        &self.config
    }

    /// The cache key of `request` under this client's model and prompt version.
    pub fn cache_key(&self, request: &LlmRequest) -> CacheKey {
        CacheKey::new(&self.config.model, request, &self.prompt_version)
    }

    /// Totals of all batches of this client so far.
    pub fn stats(&self) -> CallStats {
        self.stats.snapshot()
    }

    /// Answers every request, from the cache where possible, one result per request in order.
    pub async fn complete_all(&self, requests: &[LlmRequest]) -> Vec<Result<LlmResponse>> {
        let started = Instant::now();
        let keys: Vec<CacheKey> = requests.iter().map(|r| self.cache_key(r)).collect();
        StatsRecorder::add(&self.stats.requested, count(requests.len()));
        let cached = self.cache.get_many(&keys).await.unwrap_or_else(|error| {
            tracing::warn!(%error, "LLM cache lookup failed; sending every request");
            vec![None; keys.len()]
        });

        let mut results: Vec<Option<Result<LlmResponse>>> = vec![None; requests.len()];
        let mut misses: Vec<(CacheKey, usize, Vec<usize>)> = Vec::new();
        let mut miss_of_key: HashMap<&CacheKey, usize> = HashMap::new();
        for (index, (key, hit)) in keys.iter().zip(cached).enumerate() {
            match hit {
                Some(outcome) => {
                    results[index] = Some(outcome.map(|mut response| {
                        response.from_cache = true;
                        response
                    }));
                }
                None => match miss_of_key.get(key) {
                    Some(&miss) => misses[miss].2.push(index),
                    None => {
                        miss_of_key.insert(key, misses.len());
                        misses.push((key.clone(), index, vec![index]));
                    }
                },
            }
        }
        let missed: usize = misses.iter().map(|miss| miss.2.len()).sum();
        let hits = requests.len() - missed;
        StatsRecorder::add(&self.stats.cache_hits, count(hits));
        StatsRecorder::add(&self.stats.merged, count(missed - misses.len()));

        let progress = self.progress_bar(requests.len(), hits);
        let mut outcomes = stream::iter(misses)
            .map(|(key, first, indices)| {
                let progress = &progress;
                async move {
                    let outcome = self.call(&requests[first]).await;
                    if outcome.as_ref().err().is_none_or(LlmError::is_call_outcome) {
                        self.store(&key, &outcome).await;
                    }
                    progress.inc(count(indices.len()));
                    (indices, outcome)
                }
            })
            .buffer_unordered(self.config.concurrency);
        while let Some((indices, outcome)) = outcomes.next().await {
            for index in indices {
                results[index] = Some(outcome.clone());
            }
        }
        drop(outcomes);
        progress.finish_and_clear();
        if let Err(error) = self.cache.flush().await {
            tracing::warn!(%error, "LLM cache flush failed; a re-run may repeat calls");
        }
        tracing::info!(
            model = %self.config.model,
            requests = requests.len(),
            cache_hits = hits,
            elapsed_ms = started.elapsed().as_millis(),
            "LLM batch done"
        );
        results
            .into_iter()
            .map(|result| {
                result.unwrap_or_else(|| {
                    Err(LlmError::Cache(
                        "internal: request left without an outcome".into(),
                    ))
                })
            })
            .collect()
    }

    /// Records that the answers to these requests could not be used (each with its reason), so
    /// that the next run asks them again instead of replaying them; the answers stay in the
    /// cache's history. Without a durable cache this only forgets them.
    pub async fn reject_all(&self, rejected: &[(&LlmRequest, String)]) {
        if rejected.is_empty() {
            return;
        }
        // One request may be the same for several rows (it was sent once for all of them).
        let mut seen = std::collections::HashSet::new();
        for (request, reason) in rejected {
            let key = self.cache_key(request);
            if !seen.insert(key.hash.clone()) {
                continue;
            }
            let outcome = Err(LlmError::Unusable {
                reason: reason.clone(),
            });
            self.store(&key, &outcome).await;
        }
        StatsRecorder::add(&self.stats.rejected, count(seen.len()));
        if let Err(error) = self.cache.flush().await {
            tracing::warn!(%error, "LLM cache flush failed; a re-run may replay unusable answers");
        }
    }

    async fn store(&self, key: &CacheKey, outcome: &CachedOutcome) {
        if let Err(error) = self.cache.put(key, outcome).await {
            tracing::warn!(%error, hash = %key.hash, "LLM cache put failed; a re-run may repeat this call");
        }
    }

    fn progress_bar(&self, total: usize, done: usize) -> ProgressBar {
        if !self.show_progress {
            return ProgressBar::hidden();
        }
        let bar = ProgressBar::new(count(total));
        if let Ok(style) = ProgressStyle::with_template(
            "{msg} [{elapsed_precise}] {wide_bar} {pos}/{len} ({per_sec}, eta {eta})",
        ) {
            bar.set_style(style);
        }
        bar.set_message(format!("LLM {}", self.config.model));
        bar.set_position(count(done));
        bar
    }

    /// One request through the retry loop; counts it in the stats.
    async fn call(&self, request: &LlmRequest) -> Result<LlmResponse> {
        let _permit = self
            .in_flight
            .acquire()
            .await
            .map_err(|_| LlmError::Config("client semaphore closed".into()))?;
        let url = match request.kind {
            RequestKind::Chat { .. } => &self.chat_url,
            RequestKind::Completion { .. } => &self.completion_url,
        };
        let body = serde_json::to_vec(&request.wire_body(&self.config.model))
            .map_err(|error| LlmError::Config(format!("cannot encode request: {error}")))?;
        let started = Instant::now();
        let outcome = self.retry_loop(url, &body).await;
        let latency = started.elapsed();
        match &outcome {
            Ok((parsed, _)) => {
                StatsRecorder::add(&self.stats.prompt_tokens, parsed.prompt_tokens);
                StatsRecorder::add(&self.stats.completion_tokens, parsed.completion_tokens);
            }
            Err(_) => StatsRecorder::add(&self.stats.failures, 1),
        }
        self.stats.add_latency(latency);
        let (parsed, attempts) = outcome?;
        Ok(LlmResponse {
            text: parsed.text,
            prompt_tokens: parsed.prompt_tokens,
            completion_tokens: parsed.completion_tokens,
            latency_ms: u64::try_from(latency.as_millis()).unwrap_or(u64::MAX),
            attempts,
            finish_reason: parsed.finish_reason,
            from_cache: false,
        })
    }

    async fn retry_loop(&self, url: &Url, body: &[u8]) -> Result<(ParsedCompletion, u32)> {
        let backoff = Backoff {
            base: self.config.backoff_base,
            max: self.config.backoff_max,
        };
        let endpoint = url.to_string();
        let mut attempts = 0u32;
        let mut malformed = 0u32;
        let started = Instant::now();
        let result = loop {
            let timeout = self.take_budget(attempts)?;
            attempts += 1;
            let failure = match self.attempt(url, body, timeout).await {
                Ok(parsed) => break Ok((parsed, attempts)),
                Err(failure) => failure,
            };
            let retries_done = attempts - 1;
            let (wait, cause) = match failure {
                Failure::Redirected(target) => {
                    break Err(LlmError::RemoteEndpoint {
                        endpoint: target,
                        reason: format!(
                            "{endpoint} redirected there, and a redirect off the configured \
                             endpoint is never followed"
                        ),
                    });
                }
                Failure::Permanent { status, body } => {
                    break Err(LlmError::Status {
                        endpoint,
                        status,
                        body,
                    });
                }
                Failure::Malformed(detail) => {
                    if malformed >= MALFORMED_RETRIES || retries_done >= self.config.max_retries {
                        break Err(LlmError::Malformed {
                            endpoint,
                            attempts,
                            detail,
                        });
                    }
                    malformed += 1;
                    (backoff.delay(retries_done, &mut rand::rng()), detail)
                }
                Failure::Transient { cause, retry_after } => {
                    if retries_done >= self.config.max_retries {
                        break Err(LlmError::RetriesExhausted {
                            endpoint,
                            attempts,
                            last: cause,
                        });
                    }
                    let wait = match retry_after {
                        Some(wait) => wait.min(self.config.retry_after_max),
                        None => backoff.delay(retries_done, &mut rand::rng()),
                    };
                    (wait, cause)
                }
            };
            if let Some(left) = self.deadline_left()
                && left <= wait
            {
                break Err(LlmError::BudgetExhausted(format!(
                    "deadline reached while waiting to retry after: {cause}"
                )));
            }
            tracing::debug!(%endpoint, attempts, ?wait, %cause, "retrying LLM request");
            tokio::time::sleep(wait).await;
        };
        tracing::trace!(elapsed = ?started.elapsed(), attempts, "LLM request finished");
        result
    }

    /// Time left before the deadline, if there is one.
    fn deadline_left(&self) -> Option<Duration> {
        self.config
            .total_budget
            .deadline
            .map(|deadline| deadline.saturating_sub(self.created.elapsed()))
    }

    /// Reserves one HTTP request from the budget and returns its timeout.
    fn take_budget(&self, attempts_so_far: u32) -> Result<Duration> {
        let budget = self.config.total_budget;
        let mut timeout = self.config.request_timeout;
        if let Some(left) = self.deadline_left() {
            if left.is_zero() {
                return Err(LlmError::BudgetExhausted(format!(
                    "deadline of {:?} passed",
                    budget.deadline.unwrap_or_default()
                )));
            }
            timeout = timeout.min(left);
        }
        if let Some(max_requests) = budget.max_requests {
            let used = self.requests_used.fetch_add(1, Ordering::Relaxed);
            if used >= max_requests {
                return Err(LlmError::BudgetExhausted(format!(
                    "max_requests = {max_requests} HTTP requests sent"
                )));
            }
        }
        let counter = if attempts_so_far == 0 {
            &self.stats.sent
        } else {
            &self.stats.retries
        };
        StatsRecorder::add(counter, 1);
        Ok(timeout)
    }

    /// One HTTP exchange, classified.
    async fn attempt(
        &self,
        url: &Url,
        body: &[u8],
        timeout: Duration,
    ) -> std::result::Result<ParsedCompletion, Failure> {
        let mut builder = self
            .http
            .post(url.clone())
            .header(CONTENT_TYPE, "application/json")
            .timeout(timeout)
            .body(body.to_vec());
        if let Some(authorization) = &self.authorization {
            builder = builder.header(AUTHORIZATION, authorization.clone());
        }
        let response = builder.send().await.map_err(|error| {
            match error
                .source()
                .and_then(|source| source.downcast_ref::<RedirectRefused>())
            {
                Some(RedirectRefused(target)) => Failure::Redirected(target.clone()),
                None => Failure::Transient {
                    cause: describe(&error),
                    retry_after: None,
                },
            }
        })?;
        let status = response.status().as_u16();
        if !response.status().is_success() {
            let retry_after = response
                .headers()
                .get(RETRY_AFTER)
                .and_then(|value| value.to_str().ok())
                .and_then(parse_retry_after);
            let text = response.text().await.unwrap_or_default();
            let excerpt: String = text.chars().take(ERROR_BODY_CHARS).collect();
            return Err(if is_retryable_status(status) {
                Failure::Transient {
                    cause: format!("HTTP {status}: {excerpt}"),
                    retry_after,
                }
            } else {
                Failure::Permanent {
                    status,
                    body: excerpt,
                }
            });
        }
        let bytes = read_body(response).await?;
        parse_completion(&bytes).map_err(Failure::Malformed)
    }
}

/// A completion body, at most [`MAX_BODY_BYTES`]: a larger one (a server that never stops
/// generating) is malformed, read no further than the cap.
async fn read_body(mut response: reqwest::Response) -> std::result::Result<Vec<u8>, Failure> {
    let too_large = |bytes: u64| {
        Failure::Malformed(format!(
            "a body of {bytes} bytes or more, over the {} MiB an answer may take",
            MAX_BODY_BYTES >> 20
        ))
    };
    if let Some(length) = response.content_length()
        && length > MAX_BODY_BYTES as u64
    {
        return Err(too_large(length));
    }
    let mut bytes = Vec::new();
    loop {
        let chunk = response.chunk().await.map_err(|error| {
            if error.is_timeout() {
                Failure::Transient {
                    cause: describe(&error),
                    retry_after: None,
                }
            } else {
                Failure::Malformed(format!("truncated body: {}", describe(&error)))
            }
        })?;
        let Some(chunk) = chunk else {
            return Ok(bytes);
        };
        if bytes.len() + chunk.len() > MAX_BODY_BYTES {
            return Err(too_large((bytes.len() + chunk.len()) as u64));
        }
        bytes.extend_from_slice(&chunk);
    }
}

/// Why the redirect policy stopped: the target is off the configured endpoint.
#[derive(Debug)]
struct RedirectRefused(String);

impl std::fmt::Display for RedirectRefused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "redirect to {} refused (not the configured endpoint)",
            self.0
        )
    }
}

impl std::error::Error for RedirectRefused {}

/// A reqwest error with its source chain (never contains headers, so never the key).
fn describe(error: &reqwest::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

fn count(n: usize) -> u64 {
    u64::try_from(n).unwrap_or(u64::MAX)
}
