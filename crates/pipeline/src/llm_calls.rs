//! The lake-backed LLM response cache: table `llm_calls`, one row per answered request.
//!
//! Every outcome is appended to a local journal (one JSON line, written before the next request
//! is answered), so a killed run loses nothing that was answered; `flush` commits the journal to
//! `llm_calls` and empties it, and `open` first commits what a killed run left in it. The newest
//! row of a request decides, by the kind of its error (`LlmError::kind`):
//! - an answer, or a `permanent` failure (HTTP 400, 413, 422: the server refuses the request
//!   itself and would again) is replayed;
//! - a `parse` failure (an answer the stage could not use, recorded by `LlmClient::reject_all`
//!   after the answer's own row) and every `transient` failure (retries exhausted, malformed
//!   bodies, statuses about the server or its configuration: 401/403 credentials, 404 an unknown
//!   model or path, …) is kept for accounting and sent again by the next run.

use std::collections::{BTreeSet, HashMap};
use std::fmt;
use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use async_trait::async_trait;
use cxrlake_lake::{Lake, StageCommit};
use cxrlake_llm::{CacheKey, CachedOutcome, LlmError, LlmResponse, ResponseCache};
use datafusion::arrow::array::{
    Array, ArrayRef, AsArray, Float64Array, Int32Array, Int64Array, RecordBatch, StringArray,
    TimestampMicrosecondArray,
};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Int32Type, Int64Type};
use serde::{Deserialize, Serialize};

use crate::error::{PipelineError, Result};

const TABLE: &str = "llm_calls";

/// One `llm_calls` row; also the journal's line format.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct CallRow {
    request_hash: String,
    endpoint: String,
    model: String,
    prompt_version: String,
    response: Option<String>,
    error: Option<String>,
    finish_reason: Option<String>,
    attempts: Option<i32>,
    prompt_tokens: Option<i64>,
    completion_tokens: Option<i64>,
    latency_ms: Option<f64>,
    created_at: i64,
}

impl CallRow {
    fn new(endpoint: &str, key: &CacheKey, outcome: &CachedOutcome) -> Self {
        let mut row = CallRow {
            request_hash: key.hash.clone(),
            endpoint: endpoint.to_string(),
            model: key.model.clone(),
            prompt_version: key.prompt_version.clone(),
            response: None,
            error: None,
            finish_reason: None,
            attempts: None,
            prompt_tokens: None,
            completion_tokens: None,
            latency_ms: None,
            created_at: now_micros(),
        };
        match outcome {
            Ok(response) => {
                row.response = Some(response.text.clone());
                row.finish_reason = response.finish_reason.clone();
                row.attempts = Some(response.attempts as i32);
                row.prompt_tokens = Some(response.prompt_tokens as i64);
                row.completion_tokens = Some(response.completion_tokens as i64);
                row.latency_ms = Some(response.latency_ms as f64);
            }
            Err(error) => {
                row.error = serde_json::to_string(error).ok();
                row.attempts = match error {
                    LlmError::RetriesExhausted { attempts, .. }
                    | LlmError::Malformed { attempts, .. } => Some(*attempts as i32),
                    LlmError::Status { .. } => Some(1),
                    _ => None,
                };
            }
        }
        row
    }

    /// The outcome to replay, or `None` when the row must be asked again.
    fn replay(&self) -> Option<CachedOutcome> {
        if let Some(text) = &self.response {
            return Some(Ok(LlmResponse {
                text: text.clone(),
                prompt_tokens: self.prompt_tokens.unwrap_or(0) as u64,
                completion_tokens: self.completion_tokens.unwrap_or(0) as u64,
                latency_ms: self.latency_ms.unwrap_or(0.0) as u64,
                attempts: self.attempts.unwrap_or(0) as u32,
                finish_reason: self.finish_reason.clone(),
                from_cache: true,
            }));
        }
        let error: LlmError = serde_json::from_str(self.error.as_deref()?).ok()?;
        (error.kind() == "permanent").then_some(Err(error))
    }
}

fn now_micros() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_micros() as i64)
        .unwrap_or(0)
}

/// The `llm_calls` cache of one lake and endpoint.
pub struct LakeCache {
    lake: Lake,
    /// The stage whose calls it caches (the commits of `llm_calls` name it).
    stage: String,
    endpoint: String,
    journal_path: PathBuf,
    state: Mutex<State>,
}

struct State {
    replay: HashMap<String, CachedOutcome>,
    pending: Vec<CallRow>,
    journal: File,
}

impl fmt::Debug for LakeCache {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = self.lock();
        f.debug_struct("LakeCache")
            .field("stage", &self.stage)
            .field("endpoint", &self.endpoint)
            .field("journal", &self.journal_path)
            .field("entries", &state.replay.len())
            .field("pending", &state.pending.len())
            .finish()
    }
}

impl LakeCache {
    /// Opens the cache of `lake` for the requests of `stage` to `endpoint`: commits what an
    /// interrupted run left in the journal, then loads the replayable rows of `model`.
    pub async fn open(
        lake: &Lake,
        stage: &str,
        endpoint: &str,
        model: &str,
    ) -> Result<Arc<LakeCache>> {
        let journal_path = journal_path(lake);
        let leftover = read_journal(&journal_path)?;
        if !leftover.is_empty() {
            tracing::info!(
                rows = leftover.len(),
                "committing LLM answers journaled by an interrupted run"
            );
            write_rows(lake, stage, leftover).await?;
        }
        let journal = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&journal_path)
            .and_then(|file| file.set_len(0).map(|()| file))
            .map_err(|e| journal_error(&journal_path, e))?;
        let replay = load(lake, model).await?;
        Ok(Arc::new(LakeCache {
            lake: lake.clone(),
            stage: stage.to_string(),
            endpoint: endpoint.to_string(),
            journal_path,
            state: Mutex::new(State {
                replay,
                pending: Vec::new(),
                journal,
            }),
        }))
    }

    /// Rows replayable from the cache now.
    pub fn len(&self) -> usize {
        self.lock().replay.len()
    }

    /// Whether nothing is replayable.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// The journal lives next to a local lake, else in the temp folder under a hash of the root.
fn journal_path(lake: &Lake) -> PathBuf {
    if lake.root().scheme() == "file"
        && let Ok(root) = lake.root().to_file_path()
    {
        return root.join("_llm_calls.journal");
    }
    use sha2::Digest;
    let hash = hex::encode(&sha2::Sha256::digest(lake.root().as_str().as_bytes())[..8]);
    std::env::temp_dir().join(format!("cxrlake-{hash}-llm_calls.journal"))
}

fn journal_error(path: &Path, error: std::io::Error) -> PipelineError {
    PipelineError::Journal {
        path: path.display().to_string(),
        reason: error.to_string(),
    }
}

/// Reads a journal; a line cut by a kill is skipped.
fn read_journal(path: &Path) -> Result<Vec<CallRow>> {
    let file = match File::open(path) {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(journal_error(path, e)),
    };
    let mut rows = Vec::new();
    for line in BufReader::new(file).lines() {
        let line = line.map_err(|e| journal_error(path, e))?;
        if let Ok(row) = serde_json::from_str::<CallRow>(&line) {
            rows.push(row);
        }
    }
    Ok(rows)
}

/// The replayable outcomes of `model`, the newest row per request hash winning.
async fn load(lake: &Lake, model: &str) -> Result<HashMap<String, CachedOutcome>> {
    let ctx = lake.session().await?;
    let sql = format!(
        "SELECT request_hash, endpoint, model, prompt_version, response, error, finish_reason, \
         attempts, prompt_tokens, completion_tokens, latency_ms, \
         CAST(created_at AS BIGINT) AS created_at \
         FROM {TABLE} WHERE model = '{}' ORDER BY created_at",
        model.replace('\'', "''")
    );
    let batches = ctx
        .sql(&sql)
        .await
        .map_err(|e| PipelineError::query("llm_calls", e))?
        .collect()
        .await
        .map_err(|e| PipelineError::query("llm_calls", e))?;
    let mut out = HashMap::new();
    for batch in &batches {
        for row in rows_of(batch)? {
            match row.replay() {
                Some(outcome) => out.insert(row.request_hash.clone(), outcome),
                None => out.remove(&row.request_hash),
            };
        }
    }
    Ok(out)
}

fn strings(batch: &RecordBatch, name: &str) -> Result<StringArray> {
    let column = batch
        .column_by_name(name)
        .ok_or_else(|| schema_error(format!("missing column {name}")))?;
    Ok(cast(column, &DataType::Utf8)
        .map_err(|e| schema_error(e.to_string()))?
        .as_string::<i32>()
        .clone())
}

fn schema_error(reason: String) -> PipelineError {
    PipelineError::Schema {
        stage: "llm_calls",
        table: TABLE.to_string(),
        reason,
    }
}

fn rows_of(batch: &RecordBatch) -> Result<Vec<CallRow>> {
    let text = |name| strings(batch, name);
    let (hash, endpoint, model, version) = (
        text("request_hash")?,
        text("endpoint")?,
        text("model")?,
        text("prompt_version")?,
    );
    let (response, error, finish) = (text("response")?, text("error")?, text("finish_reason")?);
    let int = |name: &str, to: &DataType| -> Result<ArrayRef> {
        let column = batch
            .column_by_name(name)
            .ok_or_else(|| schema_error(format!("missing column {name}")))?;
        cast(column, to).map_err(|e| schema_error(e.to_string()))
    };
    let attempts = int("attempts", &DataType::Int32)?;
    let attempts = attempts.as_primitive::<Int32Type>();
    let prompt = int("prompt_tokens", &DataType::Int64)?;
    let prompt = prompt.as_primitive::<Int64Type>();
    let completion = int("completion_tokens", &DataType::Int64)?;
    let completion = completion.as_primitive::<Int64Type>();
    let latency = int("latency_ms", &DataType::Float64)?;
    let latency = latency.as_primitive::<datafusion::arrow::datatypes::Float64Type>();
    let created = int("created_at", &DataType::Int64)?;
    let created = created.as_primitive::<Int64Type>();
    let opt_string = |a: &StringArray, i: usize| a.is_valid(i).then(|| a.value(i).to_string());
    Ok((0..batch.num_rows())
        .map(|i| CallRow {
            request_hash: hash.value(i).to_string(),
            endpoint: endpoint.value(i).to_string(),
            model: model.value(i).to_string(),
            prompt_version: version.value(i).to_string(),
            response: opt_string(&response, i),
            error: opt_string(&error, i),
            finish_reason: opt_string(&finish, i),
            attempts: attempts.is_valid(i).then(|| attempts.value(i)),
            prompt_tokens: prompt.is_valid(i).then(|| prompt.value(i)),
            completion_tokens: completion.is_valid(i).then(|| completion.value(i)),
            latency_ms: latency.is_valid(i).then(|| latency.value(i)),
            created_at: created.value(i),
        })
        .collect())
}

/// Appends rows to `llm_calls` in one commit.
async fn write_rows(lake: &Lake, stage: &str, rows: Vec<CallRow>) -> Result<u64> {
    let count = rows.len();
    let text = |f: fn(&CallRow) -> Option<&str>| -> ArrayRef {
        Arc::new(rows.iter().map(f).collect::<StringArray>())
    };
    let columns: Vec<ArrayRef> = vec![
        text(|r| Some(&r.request_hash)),
        text(|r| Some(&r.endpoint)),
        text(|r| Some(&r.model)),
        text(|r| Some(&r.prompt_version)),
        text(|r| r.response.as_deref()),
        text(|r| r.error.as_deref()),
        text(|r| r.finish_reason.as_deref()),
        Arc::new(rows.iter().map(|r| r.attempts).collect::<Int32Array>()),
        Arc::new(rows.iter().map(|r| r.prompt_tokens).collect::<Int64Array>()),
        Arc::new(
            rows.iter()
                .map(|r| r.completion_tokens)
                .collect::<Int64Array>(),
        ),
        Arc::new(rows.iter().map(|r| r.latency_ms).collect::<Float64Array>()),
        Arc::new(
            TimestampMicrosecondArray::from(rows.iter().map(|r| r.created_at).collect::<Vec<_>>())
                .with_timezone("UTC"),
        ),
    ];
    let schema = cxrlake_schemas::pipeline::llm_calls();
    let batch = RecordBatch::try_new(schema, columns).map_err(|e| schema_error(e.to_string()))?;
    let commit = StageCommit::new(stage).with_metrics(serde_json::json!({ "llm_calls": count }));
    Ok(lake
        .write(TABLE)
        .append()
        .commit(commit)
        .execute(vec![batch])
        .await?)
}

#[async_trait]
impl ResponseCache for LakeCache {
    async fn get(&self, key: &CacheKey) -> cxrlake_llm::Result<Option<CachedOutcome>> {
        Ok(self.lock().replay.get(&key.hash).cloned())
    }

    async fn put(&self, key: &CacheKey, outcome: &CachedOutcome) -> cxrlake_llm::Result<()> {
        let row = CallRow::new(&self.endpoint, key, outcome);
        let line = serde_json::to_string(&row).map_err(|e| LlmError::Cache(e.to_string()))?;
        let mut state = self.lock();
        state
            .journal
            .write_all(format!("{line}\n").as_bytes())
            .map_err(|e| LlmError::Cache(format!("{}: {e}", self.journal_path.display())))?;
        match row.replay() {
            Some(outcome) => state.replay.insert(row.request_hash.clone(), outcome),
            None => state.replay.remove(&row.request_hash),
        };
        state.pending.push(row);
        Ok(())
    }

    async fn flush(&self) -> cxrlake_llm::Result<()> {
        let pending = std::mem::take(&mut self.lock().pending);
        if pending.is_empty() {
            return Ok(());
        }
        write_rows(&self.lake, &self.stage, pending)
            .await
            .map_err(|e| LlmError::Cache(e.to_string()))?;
        let state = self.lock();
        state
            .journal
            .set_len(0)
            .map_err(|e| LlmError::Cache(format!("{}: {e}", self.journal_path.display())))?;
        Ok(())
    }
}

/// An LLM client's call accounting as stage metrics (`llm_requested`, `llm_sent`, …).
pub fn llm_metrics(stats: &cxrlake_llm::CallStats) -> crate::stage::Metrics {
    crate::stage::Metrics::from([
        ("llm_requested".to_string(), stats.requested.into()),
        ("llm_cache_hits".to_string(), stats.cache_hits.into()),
        ("llm_merged".to_string(), stats.merged.into()),
        ("llm_sent".to_string(), stats.sent.into()),
        ("llm_retries".to_string(), stats.retries.into()),
        ("llm_failures".to_string(), stats.failures.into()),
        ("llm_rejected".to_string(), stats.rejected.into()),
        ("llm_prompt_tokens".to_string(), stats.prompt_tokens.into()),
        (
            "llm_completion_tokens".to_string(),
            stats.completion_tokens.into(),
        ),
    ])
}

/// `; LLM: N requests, …` of a report with [`llm_metrics`]; empty for a report without (an
/// offline run).
pub fn describe_llm(report: &crate::stage::StageReport) -> String {
    if !report.metrics.contains_key("llm_requested") {
        return String::new();
    }
    format!(
        "; LLM: {} requests, {} from llm_calls, {} sent{}, {} retries, {} failed{}, {} prompt + \
         {} completion tokens",
        report.metric("llm_requested"),
        report.metric("llm_cache_hits"),
        report.metric("llm_sent"),
        match report.metric("llm_merged") {
            0 => String::new(),
            merged => format!(" ({merged} more answered by an identical request)"),
        },
        report.metric("llm_retries"),
        report.metric("llm_failures"),
        match report.metric("llm_rejected") {
            0 => String::new(),
            rejected => format!(", {rejected} answers unusable (asked again by the next run)"),
        },
        report.metric("llm_prompt_tokens"),
        report.metric("llm_completion_tokens"),
    )
}

/// A client for `config` whose answers are cached in the lake's `llm_calls` under
/// `prompt_version`, with the pipeline's progress bar.
pub async fn cached_client(
    pipeline: &crate::pipeline::Pipeline,
    stage: &str,
    config: cxrlake_llm::LlmConfig,
    prompt_version: &str,
) -> Result<Arc<cxrlake_llm::LlmClient>> {
    let cache = LakeCache::open(
        pipeline.lake(),
        stage,
        config.endpoint.as_str(),
        &config.model,
    )
    .await?;
    Ok(Arc::new(
        cxrlake_llm::LlmClient::new(config)?
            .with_cache(cache)
            .with_prompt_version(prompt_version)
            .with_progress(pipeline.shows_progress()),
    ))
}

/// The failed rows of a step's LLM results: the `error` column, or the `error` field of the
/// struct column `within`.
#[derive(Debug, Default)]
struct Failures {
    /// Rows (answers).
    rows: usize,
    /// Rows with an error: an unparseable or off-format answer, or a failed call.
    unusable: usize,
    /// Rows whose call failed (their error starts with `CALL_FAILED`).
    calls_failed: usize,
    /// The first error.
    first: Option<String>,
    /// The `study_id` of every unusable row (when the result has the column).
    studies: BTreeSet<String>,
}

impl Failures {
    /// `None` when the result has no errors column (not an LLM step's result). Rows of the
    /// `retried` studies are not counted, but their study is listed when unusable.
    fn of(
        batches: &[RecordBatch],
        within: Option<&str>,
        retried: &BTreeSet<String>,
    ) -> Result<Option<Failures>> {
        let mut out = Failures::default();
        for batch in batches {
            let errors = match within {
                Some(column) => batch
                    .column_by_name(column)
                    .and_then(|c| c.as_struct_opt())
                    .and_then(|c| c.column_by_name("error"))
                    .cloned(),
                None => batch.column_by_name("error").cloned(),
            };
            let Some(errors) = errors else {
                return Ok(None);
            };
            let text = |column: &ArrayRef| {
                cast(column, &DataType::Utf8).map_err(|e| PipelineError::query("llm", e.into()))
            };
            let errors = text(&errors)?;
            let studies = batch.column_by_name("study_id").map(text).transpose()?;
            let studies = studies.as_ref().map(|s| s.as_string::<i32>());
            for (row, error) in errors.as_string::<i32>().iter().enumerate() {
                let study = studies.filter(|s| s.is_valid(row)).map(|s| s.value(row));
                if let (Some(_), Some(study)) = (error, study) {
                    out.studies.insert(study.to_string());
                }
                if study.is_some_and(|s| retried.contains(s)) {
                    continue;
                }
                out.rows += 1;
                let Some(error) = error else {
                    continue;
                };
                out.unusable += 1;
                if error.starts_with(cxrlake_udfs::extract::CALL_FAILED) {
                    out.calls_failed += 1;
                }
                out.first.get_or_insert_with(|| error.to_string());
            }
        }
        Ok(Some(out))
    }
}

/// Fails when every row of a step's result is a failed LLM call (its error starts with
/// `CALL_FAILED`): the endpoint is down or does not serve the model, and committing would only
/// replace earlier results with failures (the calls are in `llm_calls`; a rerun asks them
/// again). The errors are the `error` column, or the `error` field of the struct column
/// `within`.
pub(crate) fn refuse_if_every_call_failed(
    step: &str,
    batches: &[RecordBatch],
    within: Option<&str>,
) -> Result<()> {
    match Failures::of(batches, within, &BTreeSet::new())? {
        Some(f) if f.rows > 0 && f.calls_failed == f.rows => Err(PipelineError::LlmUnavailable {
            step: step.to_string(),
            calls: f.calls_failed,
            first: f.first.unwrap_or_default(),
        }),
        _ => Ok(()),
    }
}

/// Checks a step's LLM answers before its chunk is committed: an error when every call failed
/// (as [`refuse_if_every_call_failed`]), when every answer is unusable, or when more than
/// `max_share` of them are; otherwise the studies of the unusable answers, which the chunk
/// records as unfinished (the next run asks them again). The answers of `retried` studies (the
/// ones the last run could not finish) are not counted: a model that fails them again leaves
/// them stale without failing the run.
pub fn check_answers(
    step: &str,
    batches: &[RecordBatch],
    within: Option<&str>,
    max_share: f64,
    retried: &BTreeSet<String>,
) -> Result<BTreeSet<String>> {
    let Some(f) = Failures::of(batches, within, retried)? else {
        return Ok(BTreeSet::new());
    };
    let first = || f.first.clone().unwrap_or_default();
    if f.rows > 0 && f.calls_failed == f.rows {
        return Err(PipelineError::LlmUnavailable {
            step: step.to_string(),
            calls: f.calls_failed,
            first: first(),
        });
    }
    if f.rows > 0 && f.unusable == f.rows {
        return Err(PipelineError::LlmUnusable {
            step: step.to_string(),
            answers: f.rows,
            first: first(),
        });
    }
    if f.unusable as f64 > max_share * f.rows as f64 {
        return Err(PipelineError::LlmFailureShare {
            step: step.to_string(),
            unusable: f.unusable,
            answers: f.rows,
            limit: max_share,
            first: first(),
        });
    }
    Ok(f.studies)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn failed(status: u16) -> CallRow {
        let key = CacheKey {
            model: "m".into(),
            prompt_version: "1".into(),
            hash: "h".into(),
        };
        let error = LlmError::Status {
            endpoint: "http://127.0.0.1:8080/v1/chat/completions".into(),
            status,
            body: "refused".into(),
        };
        CallRow::new("http://127.0.0.1:8080/v1", &key, &Err(error))
    }

    #[test]
    fn only_refusals_of_the_request_itself_are_replayed() {
        for status in [400, 413, 422] {
            assert!(matches!(failed(status).replay(), Some(Err(_))), "{status}");
        }
        // A wrong model name, credentials or path: asked again once the server is fixed.
        for status in [401, 403, 404, 405, 409] {
            assert!(failed(status).replay().is_none(), "{status}");
        }
    }

    #[test]
    fn an_unusable_answer_is_asked_again() {
        let key = CacheKey {
            model: "m".into(),
            prompt_version: "1".into(),
            hash: "h".into(),
        };
        let error = LlmError::Unusable {
            reason: "not JSON".into(),
        };
        let row = CallRow::new("http://127.0.0.1:8080/v1", &key, &Err(error));
        assert!(row.replay().is_none());
        assert!(row.error.as_deref().is_some_and(|e| e.contains("not JSON")));
    }
}
