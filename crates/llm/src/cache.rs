//! Response cache: typed keys and the `ResponseCache` trait, with an in-memory implementation.
//!
//! The key is a SHA-256 over a canonical JSON (sorted object keys) of the key format version,
//! the model, the prompt version and every request field, so it changes exactly when the answer
//! could. Both answers and final call errors are stored, so a re-run or a resume after a crash
//! sends nothing for requests that were already answered. The lake-backed cache (table
//! `llm_calls`) implements the same trait.

use std::collections::HashMap;
use std::fmt::{self, Debug};
use std::sync::Mutex;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::error::{LlmError, Result};
use crate::request::{LlmRequest, LlmResponse};

/// Version of the key layout; bump it when the hashed content changes meaning.
pub const CACHE_KEY_FORMAT: u32 = 1;

/// Cache key of one request: the readable parts plus the content hash that identifies it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct CacheKey {
    /// Model name.
    pub model: String,
    /// Version of the prompt template that produced the request.
    pub prompt_version: String,
    /// Hex SHA-256 of the canonical request (see [`request_hash`]); unique per key.
    pub hash: String,
}

impl CacheKey {
    /// The key of `request` sent to `model` from prompt template `prompt_version`.
    pub fn new(model: &str, request: &LlmRequest, prompt_version: &str) -> Self {
        Self {
            model: model.to_owned(),
            prompt_version: prompt_version.to_owned(),
            hash: request_hash(model, request, prompt_version),
        }
    }
}

/// Hex SHA-256 over the canonical JSON of (key format, model, prompt version, request).
pub fn request_hash(model: &str, request: &LlmRequest, prompt_version: &str) -> String {
    let content = json!({
        "format": CACHE_KEY_FORMAT,
        "model": model,
        "prompt_version": prompt_version,
        "request": request,
    });
    let mut canonical = String::new();
    write_canonical(&content, &mut canonical);
    hex::encode(Sha256::digest(canonical.as_bytes()))
}

/// Writes `value` as JSON with object keys sorted at every level.
fn write_canonical(value: &Value, out: &mut String) {
    match value {
        Value::Object(fields) => {
            let mut entries: Vec<_> = fields.iter().collect();
            entries.sort_by(|a, b| a.0.cmp(b.0));
            out.push('{');
            for (index, (name, field)) in entries.into_iter().enumerate() {
                if index > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(name.clone()).to_string());
                out.push(':');
                write_canonical(field, out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (index, item) in items.iter().enumerate() {
                if index > 0 {
                    out.push(',');
                }
                write_canonical(item, out);
            }
            out.push(']');
        }
        scalar => out.push_str(&scalar.to_string()),
    }
}

/// What the cache holds for a key: the answer, or the error the call finally ended with.
pub type CachedOutcome = std::result::Result<LlmResponse, LlmError>;

/// Storage of call outcomes by key.
#[async_trait]
pub trait ResponseCache: Send + Sync + Debug {
    /// The stored outcome of `key`, if any.
    async fn get(&self, key: &CacheKey) -> Result<Option<CachedOutcome>>;

    /// Stores the outcome of `key`, replacing an earlier one.
    async fn put(&self, key: &CacheKey, outcome: &CachedOutcome) -> Result<()>;

    /// Outcomes of many keys in order; override for stores with cheap batched lookups.
    async fn get_many(&self, keys: &[CacheKey]) -> Result<Vec<Option<CachedOutcome>>> {
        let mut outcomes = Vec::with_capacity(keys.len());
        for key in keys {
            outcomes.push(self.get(key).await?);
        }
        Ok(outcomes)
    }

    /// Makes every `put` so far durable; called at the end of each batch.
    async fn flush(&self) -> Result<()> {
        Ok(())
    }
}

/// A process-local cache, for tests and single-run use. `Debug` shows only the entry count:
/// answers may quote report text.
#[derive(Default)]
pub struct InMemoryCache {
    entries: Mutex<HashMap<CacheKey, CachedOutcome>>,
}

impl Debug for InMemoryCache {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("InMemoryCache")
            .field("entries", &self.len())
            .finish()
    }
}

impl InMemoryCache {
    /// An empty cache.
    pub fn new() -> Self {
        Self::default()
    }

    /// Number of stored outcomes.
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// Whether nothing is stored.
    pub fn is_empty(&self) -> bool {
        self.lock().is_empty()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<CacheKey, CachedOutcome>> {
        // A poisoned map is still a valid map: every insert is a single call.
        self.entries
            .lock()
            .unwrap_or_else(|poison| poison.into_inner())
    }
}

#[async_trait]
impl ResponseCache for InMemoryCache {
    async fn get(&self, key: &CacheKey) -> Result<Option<CachedOutcome>> {
        Ok(self.lock().get(key).cloned())
    }

    /// An unusable answer (`LlmError::kind` `parse`) is forgotten, not replayed.
    async fn put(&self, key: &CacheKey, outcome: &CachedOutcome) -> Result<()> {
        match outcome {
            Err(error) if error.kind() == "parse" => self.lock().remove(key),
            _ => self.lock().insert(key.clone(), outcome.clone()),
        };
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::request::ChatMessage;

    fn request() -> LlmRequest {
        LlmRequest::chat(vec![ChatMessage::user("Is the heart enlarged?")])
            .with_max_tokens(32)
            .with_guided_json(json!({"b": 1, "a": {"y": 2, "x": 3}}))
    }

    #[test]
    fn hash_is_stable_and_hex_sha256() {
        let hash = request_hash("m", &request(), "v1");
        assert_eq!(hash.len(), 64);
        assert_eq!(hash, request_hash("m", &request(), "v1"));
    }

    #[test]
    fn every_parameter_changes_the_hash() {
        let base = request_hash("m", &request(), "v1");
        assert_ne!(base, request_hash("other", &request(), "v1"));
        assert_ne!(base, request_hash("m", &request(), "v2"));
        assert_ne!(
            base,
            request_hash("m", &request().with_temperature(0.7), "v1")
        );
        assert_ne!(
            base,
            request_hash("m", &request().with_max_tokens(33), "v1")
        );
        assert_ne!(
            base,
            request_hash("m", &request().with_stop(vec!["x".into()]), "v1")
        );
        assert_ne!(
            base,
            request_hash("m", &request().with_guided_json(json!({})), "v1")
        );
        let completion = LlmRequest::completion("Is the heart enlarged?");
        assert_ne!(base, request_hash("m", &completion, "v1"));
    }

    #[test]
    fn canonical_json_sorts_keys_at_every_level() {
        let mut out = String::new();
        write_canonical(&json!({"b": [{"d": 1, "c": "x"}], "a": null}), &mut out);
        assert_eq!(out, r#"{"a":null,"b":[{"c":"x","d":1}]}"#);
    }

    #[tokio::test]
    async fn in_memory_cache_round_trips_answers_and_errors() {
        let cache = InMemoryCache::new();
        let answer = CacheKey::new("m", &request(), "v1");
        let failure = CacheKey::new("m", &LlmRequest::completion("x"), "v1");
        assert!(cache.get(&answer).await.expect("get").is_none());
        let response = LlmResponse {
            text: "no".into(),
            prompt_tokens: 3,
            completion_tokens: 1,
            latency_ms: 5,
            attempts: 1,
            finish_reason: Some("stop".into()),
            from_cache: false,
        };
        let error = LlmError::Status {
            endpoint: "http://127.0.0.1/v1".into(),
            status: 400,
            body: "bad".into(),
        };
        cache
            .put(&answer, &Ok(response.clone()))
            .await
            .expect("put");
        cache.put(&failure, &Err(error.clone())).await.expect("put");
        let both = cache.get_many(&[answer, failure]).await.expect("get_many");
        assert_eq!(both, vec![Some(Ok(response)), Some(Err(error))]);
        assert_eq!(cache.len(), 2);
        assert_eq!(format!("{cache:?}"), "InMemoryCache { entries: 2 }");
    }
}
