//! Idempotent, chunked appends: a [`Sink`] per target table knows the keys already in the lake,
//! takes rows unit by unit (a report, a CSV row, a scene-graph file, a CXAS image), keeps only
//! new units and commits them in bounded chunks.
//!
//! ```text
//!  lake ──SELECT key──▶ existing keys
//!  parsed unit (key, content hash, rows)
//!     key in existing               → present  (counted, nothing written)
//!     key seen earlier in this run  → present if same content, else conflict (→ quarantine)
//!     otherwise                     → pending ──(max rows / bytes reached, or end)──▶ one commit
//! ```
//! A commit is built and written in the background ([`Background`]) while the next files are
//! read and parsed; one at a time, so commits land in the order they were started.

use std::collections::{HashMap, HashSet};
use std::hash::BuildHasher;

use arrow::array::{Array, RecordBatch, StringArray};
use arrow::compute::cast;
use arrow::datatypes::DataType;
use cxrlake_lake::{Lake, StageCommit};
use datafusion::prelude::SessionContext;
use serde_json::{Value, json};

use crate::error::Result;
use crate::quarantine::Quarantined;
use crate::summary::TableCounts;

/// Rows per record batch of a commit.
const BATCH_ROWS: usize = 8192;

/// A row type of one target table.
pub trait Row: Sized + Send + 'static {
    /// The lake table.
    const TABLE: &'static str;
    /// The key of the unit the row belongs to (what idempotency is decided on).
    fn key(&self) -> String;
    /// Rough in-memory size, to bound chunks.
    fn approx_bytes(&self) -> usize;
    /// Builds a batch of the table's schema.
    fn batch(rows: &[Self]) -> Result<RecordBatch>;
}

/// What became of an offered unit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Offer {
    /// New: queued for the next commit.
    New,
    /// Already in the lake, or an identical copy was seen earlier in this run.
    Present,
    /// The key was seen earlier in this run with different content.
    Conflict,
}

/// Hash of a unit's content, to tell identical duplicates from conflicting ones within a run
/// (never stored): foldhash, which hashes a CXAS file several times faster than SipHash.
pub fn content_hash(bytes: &[u8]) -> u64 {
    foldhash::fast::FixedState::with_seed(0).hash_one(bytes)
}

/// Pending rows of one table plus the keys it already holds.
#[derive(Debug)]
pub struct Sink<R: Row> {
    existing: HashSet<String>,
    existing_offered: HashSet<String>,
    seen: HashMap<String, u64>,
    pending: Vec<R>,
    pending_bytes: usize,
    max_rows: usize,
    max_bytes: usize,
    /// Counts for the summary.
    pub counts: TableCounts,
}

impl<R: Row> Sink<R> {
    /// A sink over `existing` keys that commits every `max_rows` rows or `max_bytes` bytes.
    pub fn new(existing: HashSet<String>, max_rows: usize, max_bytes: usize) -> Self {
        Self {
            existing,
            existing_offered: HashSet::new(),
            seen: HashMap::new(),
            pending: Vec::new(),
            pending_bytes: 0,
            max_rows: max_rows.max(1),
            max_bytes: max_bytes.max(1),
            counts: TableCounts::default(),
        }
    }

    /// Whether `key` is in the lake or was taken in this run.
    pub fn contains(&self, key: &str) -> bool {
        self.existing.contains(key) || self.seen.contains_key(key)
    }

    /// Offers one unit: its key, a hash of its content and its rows.
    pub fn offer(&mut self, key: String, content: u64, rows: Vec<R>) -> Offer {
        let n = rows.len() as u64;
        if self.existing.contains(&key) {
            self.counts.rows_read += n;
            self.counts.rows_present += n;
            self.existing_offered.insert(key);
            return Offer::Present;
        }
        match self.seen.get(&key) {
            Some(&previous) if previous == content => {
                self.counts.rows_read += n;
                self.counts.rows_present += n;
                Offer::Present
            }
            Some(_) => Offer::Conflict,
            None => {
                self.counts.rows_read += n;
                self.seen.insert(key, content);
                self.pending_bytes += rows.iter().map(R::approx_bytes).sum::<usize>();
                self.pending.extend(rows);
                Offer::New
            }
        }
    }

    /// Distinct keys offered in this run (new or already present).
    pub fn distinct_keys(&self) -> u64 {
        (self.seen.len() + self.existing_offered.len()) as u64
    }

    /// Whether the pending rows should be committed now.
    fn is_full(&self) -> bool {
        self.pending.len() >= self.max_rows || self.pending_bytes >= self.max_bytes
    }

    /// Starts the commit of the pending rows when `all` is set or the chunk is full (see
    /// [`Sink::is_full`]).
    pub async fn flush_if(
        &mut self,
        all: bool,
        background: &mut Background,
        lake: &Lake,
        fingerprint: &Value,
    ) -> Result<()> {
        if all || self.is_full() {
            self.flush(background, lake, fingerprint).await?;
        }
        Ok(())
    }

    /// Starts the commit of the pending rows (nothing when there are none) once the commit
    /// before it has landed.
    async fn flush(
        &mut self,
        background: &mut Background,
        lake: &Lake,
        fingerprint: &Value,
    ) -> Result<()> {
        if self.pending.is_empty() {
            return Ok(());
        }
        let rows = std::mem::take(&mut self.pending);
        self.pending_bytes = 0;
        self.counts.rows_new += rows.len() as u64;
        self.counts.commits += 1;
        let commit = StageCommit::new("ingest")
            .with_fingerprint(fingerprint.clone())
            .with_metrics(json!({ "table": R::TABLE, "rows": rows.len() }));
        let lake = lake.clone();
        background
            .start(async move {
                // Batches of a few thousand rows: arrays that fit the allocator's pages, not
                // one array of the whole commit (hundreds of MB of RLE strings, grown by copying).
                let batches = rows
                    .chunks(BATCH_ROWS)
                    .map(R::batch)
                    .collect::<Result<Vec<_>>>()?;
                // Freed before the write: the batches hold the rows' data now.
                let count = rows.len();
                drop(rows);
                let version = lake
                    .write(R::TABLE)
                    .append()
                    .commit(commit)
                    .execute(batches)
                    .await?;
                tracing::debug!(table = R::TABLE, rows = count, version, "ingest commit");
                Ok(())
            })
            .await
    }
}

/// The one commit being built and written while the run goes on.
#[derive(Debug, Default)]
pub struct Background {
    running: Option<tokio::task::JoinHandle<Result<()>>>,
}

impl Background {
    /// Waits for the running commit, then starts `write`.
    async fn start(
        &mut self,
        write: impl Future<Output = Result<()>> + Send + 'static,
    ) -> Result<()> {
        self.finish().await?;
        self.running = Some(tokio::spawn(write));
        Ok(())
    }

    /// Waits for the running commit, if any; its error is the run's.
    pub async fn finish(&mut self) -> Result<()> {
        match self.running.take() {
            Some(running) => running.await?,
            None => Ok(()),
        }
    }
}

/// The distinct keys a query returns, columns joined with `\u{1f}` (as [`Row::key`] builds them).
pub async fn load_keys(ctx: &SessionContext, sql: &str) -> Result<HashSet<String>> {
    let batches = ctx.sql(sql).await?.collect().await?;
    let mut keys = HashSet::new();
    for batch in batches {
        let columns = batch
            .columns()
            .iter()
            .map(|column| cast(column, &DataType::Utf8))
            .collect::<std::result::Result<Vec<_>, _>>()?;
        let columns: Vec<&StringArray> = columns
            .iter()
            .filter_map(|c| c.as_any().downcast_ref::<StringArray>())
            .collect();
        for row in 0..batch.num_rows() {
            let parts: Vec<&str> = columns
                .iter()
                .map(|c| if c.is_null(row) { "" } else { c.value(row) })
                .collect();
            keys.insert(parts.join("\u{1f}"));
        }
    }
    Ok(keys)
}

/// A parsed input unit: its key, a hash of its content, its rows, and the parts of it that
/// were quarantined.
#[derive(Debug)]
pub struct Unit<R> {
    /// Idempotency key (see [`Row::key`]).
    pub key: String,
    /// Hash of the unit's content.
    pub content: u64,
    /// Rows.
    pub rows: Vec<R>,
    /// Parts that could not be used.
    pub quarantined: Vec<Quarantined>,
}
