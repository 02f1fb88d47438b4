//! Retry policy: which failures are retried, and how long to wait before the next attempt.
//!
//! ```text
//!   attempt ─► 2xx + valid JSON ─────────────────────────► answer
//!      │      2xx + truncated/non-JSON ─► retry once ────► Malformed
//!      │      429 ─► wait Retry-After (or backoff) ─┐
//!      │      500/502/503/504, timeout, reset ──────┴─► retry up to max_retries ─► RetriesExhausted
//!      └────► other 4xx (400, 401, 404, ...) ──────────► Status (never retried)
//! ```
//!
//! Backoff is exponential with full jitter: step `n` waits a uniform random time in
//! `[0, min(backoff_max, backoff_base * 2^n)]`.

use std::time::Duration;

use rand::Rng;

/// Malformed 2xx bodies are retried at most this many times.
pub const MALFORMED_RETRIES: u32 = 1;

/// How a failed attempt should be treated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Failure {
    /// Worth retrying: 429, 5xx, timeout, connection failure. `retry_after` comes from a 429.
    Transient {
        /// Human-readable cause.
        cause: String,
        /// Server-requested wait.
        retry_after: Option<Duration>,
    },
    /// The server answered 2xx with a body that is not a completion.
    Malformed(String),
    /// The endpoint redirected to another host, port or scheme: not followed (the PHI guard
    /// checked only the configured endpoint).
    Redirected(String),
    /// A status that retrying cannot fix.
    Permanent {
        /// HTTP status.
        status: u16,
        /// Start of the body.
        body: String,
    },
}

/// Whether an HTTP status is worth retrying.
pub(crate) fn is_retryable_status(status: u16) -> bool {
    matches!(status, 429 | 500 | 502 | 503 | 504)
}

/// Parses a `Retry-After` header given in seconds (HTTP dates are treated as absent).
pub(crate) fn parse_retry_after(value: &str) -> Option<Duration> {
    value.trim().parse::<u64>().ok().map(Duration::from_secs)
}

/// Exponential backoff with full jitter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Backoff {
    /// Step 0 ceiling.
    pub base: Duration,
    /// Ceiling of every step.
    pub max: Duration,
}

impl Backoff {
    /// Ceiling of step `retry` (0-based): `min(max, base * 2^retry)`.
    pub fn ceiling(&self, retry: u32) -> Duration {
        let factor = 1u32.checked_shl(retry.min(31)).unwrap_or(u32::MAX);
        self.base.saturating_mul(factor).min(self.max)
    }

    /// A uniformly random wait in `[0, ceiling(retry)]`.
    pub fn delay(&self, retry: u32, rng: &mut impl Rng) -> Duration {
        let ceiling = self.ceiling(retry);
        if ceiling.is_zero() {
            return Duration::ZERO;
        }
        Duration::from_nanos(
            rng.random_range(0..=u64::try_from(ceiling.as_nanos()).unwrap_or(u64::MAX)),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand::rngs::StdRng;

    #[test]
    fn ceiling_doubles_and_caps() {
        let backoff = Backoff {
            base: Duration::from_millis(100),
            max: Duration::from_secs(1),
        };
        assert_eq!(backoff.ceiling(0), Duration::from_millis(100));
        assert_eq!(backoff.ceiling(1), Duration::from_millis(200));
        assert_eq!(backoff.ceiling(3), Duration::from_millis(800));
        assert_eq!(backoff.ceiling(4), Duration::from_secs(1));
        assert_eq!(backoff.ceiling(200), Duration::from_secs(1));
    }

    #[test]
    fn delays_are_jittered_within_the_ceiling() {
        let backoff = Backoff {
            base: Duration::from_millis(100),
            max: Duration::from_secs(1),
        };
        let mut rng = StdRng::seed_from_u64(7);
        let delays: Vec<Duration> = (0..200).map(|_| backoff.delay(2, &mut rng)).collect();
        assert!(
            delays
                .iter()
                .all(|delay| *delay <= Duration::from_millis(400))
        );
        let distinct: std::collections::HashSet<_> = delays.iter().collect();
        assert!(distinct.len() > 150, "full jitter spreads the waits");
        let zero = Backoff {
            base: Duration::ZERO,
            max: Duration::ZERO,
        };
        assert_eq!(zero.delay(3, &mut rng), Duration::ZERO);
    }

    #[test]
    fn status_classes() {
        for status in [429, 500, 502, 503, 504] {
            assert!(is_retryable_status(status));
        }
        for status in [400, 401, 403, 404, 422, 501] {
            assert!(!is_retryable_status(status));
        }
    }

    #[test]
    fn retry_after_seconds() {
        assert_eq!(parse_retry_after(" 3 "), Some(Duration::from_secs(3)));
        assert_eq!(parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT"), None);
    }
}
