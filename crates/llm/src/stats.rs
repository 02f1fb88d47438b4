//! Call accounting: requests, cache hits, sends, retries, failures, tokens and latency.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// Totals of a client's calls so far.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CallStats {
    /// Requests passed to `complete_all`.
    pub requested: u64,
    /// Requests answered (or failed) from the cache, without a call.
    pub cache_hits: u64,
    /// Requests answered by an identical request of the same batch (sent once for all).
    pub merged: u64,
    /// Requests sent to the endpoint (first attempts; HTTP requests = `sent + retries`).
    pub sent: u64,
    /// Extra attempts after a first attempt failed.
    pub retries: u64,
    /// Sent requests that ended in an error, plus requests refused by the budget.
    pub failures: u64,
    /// Answers the caller could not use (parse failures), to be asked again by the next run.
    pub rejected: u64,
    /// Prompt tokens of the answers fetched now.
    pub prompt_tokens: u64,
    /// Completion tokens of the answers fetched now.
    pub completion_tokens: u64,
    /// Sum of per-request latencies (first attempt to outcome) of the sent requests.
    pub total_latency: Duration,
}

/// Lock-free counters behind [`CallStats`].
#[derive(Debug, Default)]
pub(crate) struct StatsRecorder {
    pub requested: AtomicU64,
    pub cache_hits: AtomicU64,
    pub merged: AtomicU64,
    pub sent: AtomicU64,
    pub retries: AtomicU64,
    pub failures: AtomicU64,
    pub rejected: AtomicU64,
    pub prompt_tokens: AtomicU64,
    pub completion_tokens: AtomicU64,
    pub latency_micros: AtomicU64,
}

impl StatsRecorder {
    pub fn add(counter: &AtomicU64, amount: u64) {
        counter.fetch_add(amount, Ordering::Relaxed);
    }

    pub fn add_latency(&self, latency: Duration) {
        let micros = u64::try_from(latency.as_micros()).unwrap_or(u64::MAX);
        Self::add(&self.latency_micros, micros);
    }

    pub fn snapshot(&self) -> CallStats {
        let load = |counter: &AtomicU64| counter.load(Ordering::Relaxed);
        CallStats {
            requested: load(&self.requested),
            cache_hits: load(&self.cache_hits),
            merged: load(&self.merged),
            sent: load(&self.sent),
            retries: load(&self.retries),
            failures: load(&self.failures),
            rejected: load(&self.rejected),
            prompt_tokens: load(&self.prompt_tokens),
            completion_tokens: load(&self.completion_tokens),
            total_latency: Duration::from_micros(load(&self.latency_micros)),
        }
    }
}
