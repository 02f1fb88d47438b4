//! Run-wide indexes of `qa_judgements` by content hash, read once per run and probed by every
//! chunk: the judge asks which of a chunk's inputs are judged already ([`JudgedSet`]), grade
//! looks up the levels of a chunk's request hashes ([`VerdictIndex`]).
//!
//! ```text
//!  qa_judgements ──once per run──► index (content hash → usable verdict)
//!  chunk: requests step ──its distinct hashes, looked up──► a table of this chunk's verdicts
//!                                                          (judge: `judged`, grade: `chunk_verdicts`)
//! ```
//!
//! A chunk joined against the whole set before: grade scanned all of `qa_judgements` per chunk
//! (content hashes are random, so file statistics prune nothing) and the judge built a hash table
//! of every judged hash per chunk, a cost of chunks × verdicts (~650 chunks × ~28 M verdicts at
//! full MIMIC scale). Now a chunk costs its own requests. A content hash is 32 hex digits
//! (128 bits of sha256), kept as a `u128`; any other text is keyed by its own sha256.

use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::Arc;
use std::time::Instant;

use datafusion::arrow::array::{Array, ArrayRef, AsArray, RecordBatch, StringArray, UInt32Array};
use datafusion::arrow::compute::{cast, concat, take};
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::prelude::SessionContext;
use sha2::{Digest, Sha256};

use crate::error::{PipelineError, Result};
use crate::sql::collect;

/// The key of a content hash.
fn key(hash: &str) -> u128 {
    if hash.len() == 32
        && let Ok(key) = u128::from_str_radix(hash, 16)
    {
        return key;
    }
    let digest = Sha256::digest(hash.as_bytes());
    let mut bytes = [0u8; 16];
    bytes.copy_from_slice(&digest[..16]);
    u128::from_be_bytes(bytes)
}

/// Hashes a key by folding it: keys are already uniform (sha256 bits).
#[derive(Default)]
struct KeyHasher(u64);

impl Hasher for KeyHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut word = [0u8; 8];
            word[..chunk.len()].copy_from_slice(chunk);
            self.0 = self.0.rotate_left(5) ^ u64::from_le_bytes(word);
        }
    }

    fn write_u128(&mut self, key: u128) {
        self.0 = (key as u64) ^ ((key >> 64) as u64);
    }
}

type Keys = BuildHasherDefault<KeyHasher>;

/// `column` as plain strings (a scan may give string views).
fn strings(stage: &'static str, column: &ArrayRef) -> Result<ArrayRef> {
    cast(column, &DataType::Utf8).map_err(|e| PipelineError::query(stage, e.into()))
}

/// The content hashes of a requests step's `batches`: the column `content_hash`, the field of
/// that name of the struct column `request`, or of the list-of-structs column `hashes`.
pub(crate) fn request_hashes(
    stage: &'static str,
    batches: &[RecordBatch],
) -> Result<Vec<ArrayRef>> {
    batches
        .iter()
        .filter_map(|batch| {
            if let Some(hashes) = batch.column_by_name("content_hash") {
                return Some(hashes.clone());
            }
            if let Some(request) = batch.column_by_name("request") {
                return request
                    .as_struct_opt()?
                    .column_by_name("content_hash")
                    .cloned();
            }
            let lists = batch.column_by_name("hashes")?.as_list_opt::<i32>()?;
            let offsets = lists.value_offsets();
            let (first, last) = (offsets[0] as usize, offsets[offsets.len() - 1] as usize);
            let hashes = lists
                .values()
                .as_struct_opt()?
                .column_by_name("content_hash")?;
            Some(hashes.slice(first, last - first))
        })
        .map(|hashes| strings(stage, &hashes))
        .collect()
}

/// The distinct non-null hashes of `arrays`, each with its key, in first-seen order.
fn distinct(arrays: &[ArrayRef]) -> Vec<(&str, u128)> {
    let mut seen: HashSet<u128, Keys> = HashSet::default();
    let mut out = Vec::new();
    for array in arrays {
        for hash in array.as_string::<i32>().iter().flatten() {
            let key = key(hash);
            if seen.insert(key) {
                out.push((hash, key));
            }
        }
    }
    out
}

/// The content hashes rated without error, for the judge: a chunk asks for the inputs not in it.
#[derive(Default)]
pub(crate) struct JudgedSet {
    keys: HashSet<u128, Keys>,
}

impl JudgedSet {
    /// One `content_hash` column.
    pub(crate) fn schema() -> SchemaRef {
        Arc::new(Schema::new(vec![Field::new(
            "content_hash",
            DataType::Utf8,
            false,
        )]))
    }

    /// The hashes of `qa_judgements` rated without error (a content hash includes the judge's
    /// cache identity, so any judge's row is this judge's).
    pub(crate) async fn read(ctx: &SessionContext, stage: &'static str) -> Result<Self> {
        let started = Instant::now();
        let sql = "SELECT content_hash FROM qa_judgements WHERE error IS NULL";
        let mut set = Self::default();
        for batch in collect(ctx, stage, sql).await? {
            set.insert(&strings(stage, batch.column(0))?);
        }
        tracing::debug!(
            judged = set.keys.len(),
            seconds = started.elapsed().as_secs_f64(),
            "judged set read"
        );
        Ok(set)
    }

    /// Adds the non-null hashes of the string array `hashes`.
    pub(crate) fn insert(&mut self, hashes: &ArrayRef) {
        self.keys
            .extend(hashes.as_string::<i32>().iter().flatten().map(key));
    }

    /// Adds one hash.
    pub(crate) fn insert_one(&mut self, hash: &str) {
        self.keys.insert(key(hash));
    }

    /// The distinct hashes of `hashes` (string arrays) that it holds, as one batch of
    /// [`Self::schema`].
    pub(crate) fn among(&self, stage: &'static str, hashes: &[ArrayRef]) -> Result<RecordBatch> {
        let judged: StringArray = distinct(hashes)
            .into_iter()
            .filter(|(_, key)| self.keys.contains(key))
            .map(|(hash, _)| Some(hash))
            .collect();
        RecordBatch::try_new(Self::schema(), vec![Arc::new(judged)])
            .map_err(|e| PipelineError::query(stage, e.into()))
    }
}

/// The usable verdicts of `qa_judgements` (no error), for grade: content hash → levels. The
/// levels lists are few (one level name per answer part), so each distinct list is kept once.
pub(crate) struct VerdictIndex {
    /// Content hash → position in `levels`.
    keys: HashMap<u128, u32, Keys>,
    /// The distinct levels lists, as the table types them.
    levels: ArrayRef,
}

impl VerdictIndex {
    /// `content_hash` and `levels`.
    fn schema(levels: &DataType) -> SchemaRef {
        Arc::new(Schema::new(vec![
            Field::new("content_hash", DataType::Utf8, false),
            Field::new("levels", levels.clone(), true),
        ]))
    }

    /// Reads the verdicts of `qa_judgements` without error.
    pub(crate) async fn read(ctx: &SessionContext, stage: &'static str) -> Result<Self> {
        let started = Instant::now();
        let sql = "SELECT content_hash, levels FROM qa_judgements WHERE error IS NULL";
        let batches = collect(ctx, stage, sql).await?;
        let mut keys: HashMap<u128, u32, Keys> = HashMap::default();
        let mut interned: HashMap<String, u32> = HashMap::new();
        let mut lists: Vec<ArrayRef> = Vec::new();
        let mut text = String::new();
        for batch in &batches {
            let hashes = strings(stage, batch.column(0))?;
            let levels = batch.column(1);
            let Some(lists_of_batch) = levels.as_list_opt::<i32>() else {
                return Err(PipelineError::Schema {
                    stage,
                    table: "qa_judgements".into(),
                    reason: format!("levels is {}, not a list", levels.data_type()),
                });
            };
            let values = strings(stage, lists_of_batch.values())?;
            let values = values.as_string::<i32>();
            let offsets = lists_of_batch.value_offsets();
            for (row, hash) in hashes.as_string::<i32>().iter().enumerate() {
                let Some(hash) = hash else { continue };
                text.clear();
                if levels.is_null(row) {
                    text.push('\u{0}');
                } else {
                    for i in offsets[row] as usize..offsets[row + 1] as usize {
                        match values.is_valid(i) {
                            true => text.push_str(values.value(i)),
                            false => text.push('\u{0}'),
                        }
                        text.push('\u{1f}');
                    }
                }
                let position = match interned.get(text.as_str()) {
                    Some(&position) => position,
                    None => {
                        let position = lists.len() as u32;
                        interned.insert(text.clone(), position);
                        lists.push(levels.slice(row, 1));
                        position
                    }
                };
                keys.insert(key(hash), position);
            }
        }
        let levels = match lists.is_empty() {
            true => {
                datafusion::arrow::array::new_empty_array(&DataType::new_list(DataType::Utf8, true))
            }
            false => {
                let lists: Vec<&dyn Array> = lists.iter().map(AsRef::as_ref).collect();
                concat(&lists).map_err(|e| PipelineError::query(stage, e.into()))?
            }
        };
        tracing::debug!(
            verdicts = keys.len(),
            distinct_levels = levels.len(),
            seconds = started.elapsed().as_secs_f64(),
            "verdict index read"
        );
        Ok(Self { keys, levels })
    }

    /// The schema of [`Self::of`]'s batch.
    pub(crate) fn table_schema(&self) -> SchemaRef {
        Self::schema(self.levels.data_type())
    }

    /// The verdicts of the distinct hashes of `hashes` (string arrays) that have one, as one
    /// batch of `content_hash` and `levels`.
    pub(crate) fn of(&self, stage: &'static str, hashes: &[ArrayRef]) -> Result<RecordBatch> {
        let (found, positions): (Vec<&str>, Vec<u32>) = distinct(hashes)
            .into_iter()
            .filter_map(|(hash, key)| Some((hash, *self.keys.get(&key)?)))
            .unzip();
        let levels = take(self.levels.as_ref(), &UInt32Array::from(positions), None)
            .map_err(|e| PipelineError::query(stage, e.into()))?;
        RecordBatch::try_new(
            self.table_schema(),
            vec![Arc::new(StringArray::from(found)), levels],
        )
        .map_err(|e| PipelineError::query(stage, e.into()))
    }
}

#[cfg(test)]
mod tests {
    use datafusion::arrow::array::{ListBuilder, StringBuilder};

    use super::*;

    fn hashes(values: &[&str]) -> Vec<ArrayRef> {
        vec![Arc::new(StringArray::from(values.to_vec())) as ArrayRef]
    }

    #[test]
    fn keys_are_the_hash_bits_or_a_digest() {
        assert_eq!(key("0000000000000000000000000000002a"), 42);
        assert_ne!(key("not a hash"), key("not a hash either"));
        assert_eq!(key("not a hash"), key("not a hash"));
    }

    #[test]
    fn judged_set_answers_with_the_distinct_hashes_it_holds() {
        let mut set = JudgedSet::default();
        set.insert(&hashes(&["aa", "bb"])[0]);
        set.insert_one("cc");
        let among = set
            .among("judge", &hashes(&["bb", "zz", "bb", "cc"]))
            .expect("batch");
        let found: Vec<_> = among
            .column(0)
            .as_string::<i32>()
            .iter()
            .flatten()
            .collect();
        assert_eq!(found, ["bb", "cc"]);
    }

    #[tokio::test]
    async fn verdict_index_gives_each_hash_its_levels() {
        let mut levels = ListBuilder::new(StringBuilder::new());
        for list in [
            Some(vec![Some("OPTIMAL"), Some("OPTIMAL")]),
            Some(vec![Some("OPTIMAL"), None]),
            Some(vec![Some("OPTIMAL"), Some("OPTIMAL")]),
            None,
        ] {
            match list {
                Some(values) => levels.append_value(values),
                None => levels.append_null(),
            }
        }
        let levels: ArrayRef = Arc::new(levels.finish());
        let hash = StringArray::from(vec!["h1", "h2", "h3", "h4"]);
        let error = StringArray::from(vec![None, None, None, Some("failed")]);
        let schema = Arc::new(Schema::new(vec![
            Field::new("content_hash", DataType::Utf8, false),
            Field::new("levels", levels.data_type().clone(), true),
            Field::new("error", DataType::Utf8, true),
        ]));
        let batch = RecordBatch::try_new(schema, vec![Arc::new(hash), levels, Arc::new(error)])
            .expect("batch");
        let ctx = SessionContext::new();
        ctx.register_batch("qa_judgements", batch).expect("table");
        let index = VerdictIndex::read(&ctx, "grade").await.expect("index");
        assert_eq!(index.levels.len(), 2, "two distinct lists");
        let found = index
            .of("grade", &hashes(&["h3", "h4", "h2", "h3", "nope"]))
            .expect("batch");
        let found_hashes: Vec<_> = found
            .column(0)
            .as_string::<i32>()
            .iter()
            .flatten()
            .collect();
        assert_eq!(found_hashes, ["h3", "h2"]);
        let lists = found.column(1).as_list::<i32>();
        let text = |row: usize| -> Vec<Option<String>> {
            lists
                .value(row)
                .as_string::<i32>()
                .iter()
                .map(|v| v.map(str::to_string))
                .collect()
        };
        assert_eq!(text(0), [Some("OPTIMAL".into()), Some("OPTIMAL".into())]);
        assert_eq!(text(1), [Some("OPTIMAL".into()), None]);
    }
}
