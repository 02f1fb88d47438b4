//! Replacing some studies' rows of a per-study table ([`crate::TableWrite::replace_studies`]) in
//! one commit.
//!
//! ```text
//! files holding the studies (read::locate: statistics, then the study_id column)
//!   with deletion vectors (qa): most files ── their old vector ∪ the studies' rows ──► one
//!                 deletion-vector file; remove + add of the same file with its new vector
//!   files then more than half deleted, and every file of a table without deletion vectors,
//!   per core ── their live other rows ──► new files
//!   files then wholly deleted ──► removed
//! the studies' new rows ── a writer per core ──► new files
//!                                   all removes and adds ── one commit
//! ```
//!
//! Delta is copy-on-write: without deletion vectors, replacing a few hundred scattered studies
//! re-encoded every file of `qa` holding one of them, nearly the whole table (12.5 s of a 31 s
//! incremental run at 20,000 studies). A deletion vector marks the old rows deleted instead
//! (`deletion.rs`); a file is rewritten only once most of its rows are deleted, so reads stay
//! cheap. The first replace of a table enables deletion vectors on it
//! (`delta.enableDeletionVectors`, reader version 3, writer version 7). Only tables whose
//! definition asks for them ([`cxrlake_schemas::TableDef::deletion_vectors`]: `qa`) use them:
//! delta-rs 1.1 scans without Parquet filter pushdown whenever a file it scans has a deletion
//! vector, so the patient-range chunks of a full run decode whole files (a full qa stage over
//! `scene_graphs` with deletion vectors took 590 s instead of 35 s). The new rows stay in files of their own, so a
//! later replace of the same studies (grade after qa) removes those.

use std::collections::{BTreeSet, HashMap};
use std::num::NonZeroU64;

use datafusion::arrow::array::{AsArray, RecordBatch};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, SchemaRef};
use deltalake::DeltaTable;
use deltalake::kernel::transaction::{CommitBuilder, CommitProperties};
use deltalake::kernel::{Action, Add};
use deltalake::logstore::ObjectStoreRef;
use deltalake::operations::write::WriterStatsConfig;
use deltalake::operations::write::writer::{DeltaWriter, WriterConfig};
use deltalake::protocol::{DeltaOperation, SaveMode};

use crate::deletion::DeletionVectorFile;
use crate::error::{LakeError, Result};
use crate::read::{Located, StudyIndexes, cast_batch, locate};

/// How a replace lays out what it writes.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Layout {
    /// The size at which a new data file starts.
    pub(crate) file_bytes: u64,
    /// Whether old rows are deleted by deletion vectors (else their files are rewritten).
    pub(crate) deletion_vectors: bool,
}

/// A file with more than this share of its rows deleted is rewritten instead of getting a
/// larger deletion vector (readers decode deleted rows before they drop them).
const REWRITE_DELETED_SHARE: f64 = 0.5;

/// The new rows of the replaced studies.
pub(crate) enum NewRows {
    /// Rows to write (here, a writer per core).
    Batches(Vec<RecordBatch>),
    /// Data files already written (by a cluster's executors), checked to hold only the studies.
    Files(Vec<Add>),
}

/// Replaces the rows of `ids` in `table` by `new` (rows of those studies only) in one commit;
/// the new table version.
pub(crate) async fn replace_studies(
    table: &DeltaTable,
    name: &str,
    new: NewRows,
    ids: &BTreeSet<String>,
    commit: CommitProperties,
    layout: Layout,
    indexes: &StudyIndexes,
) -> Result<u64> {
    let Layout {
        file_bytes,
        deletion_vectors,
    } = layout;
    let (batches, written) = match new {
        NewRows::Batches(batches) => {
            for batch in &batches {
                check_studies(name, batch, ids)?;
            }
            (batches, Vec::new())
        }
        NewRows::Files(adds) => (Vec::new(), adds),
    };
    let enabled;
    let table = if deletion_vectors {
        enabled = with_deletion_vectors(table, name).await?;
        &enabled
    } else {
        table
    };
    let delta = |e| LakeError::delta(name, e);
    let snapshot = table.snapshot().map_err(delta)?;
    let schema = snapshot.snapshot().arrow_schema();
    let stats = WriterStatsConfig::from_config(snapshot.snapshot().table_configuration());
    let config = WriterConfig::new(
        schema.clone(),
        Vec::new(),
        None,
        NonZeroU64::new(file_bytes),
        None,
        stats.num_indexed_cols,
        stats.stats_columns,
    );
    let store = table.object_store();
    let mut actions: Vec<Action> = written.into_iter().map(Action::Add).collect();
    let mut vectors = DeletionVectorFile::new();
    let mut rewritten = Vec::new();
    for file in locate(table, ids, indexes).await? {
        let deleted = file.deleted_after_replace();
        let rows = file.num_rows();
        if deleted.len() >= rows {
            actions.push(Action::Remove(file.remove));
        } else if !deletion_vectors || deleted.len() as f64 > REWRITE_DELETED_SHARE * rows as f64 {
            rewritten.push(file);
        } else {
            let mut add = file.add.clone();
            add.deletion_vector = Some(vectors.push(&deleted)?);
            add.stats = add.stats.as_deref().map(wide_bounds).transpose()?;
            add.data_change = true;
            actions.push(Action::Remove(file.remove));
            actions.push(Action::Add(add));
        }
    }
    if !vectors.is_empty() {
        vectors.put(&store).await?;
    }

    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mut tasks = tokio::task::JoinSet::new();
    for group in balanced(rewritten, threads) {
        let (store, config, schema) = (store.clone(), config.clone(), schema.clone());
        let name = name.to_string();
        tasks.spawn(async move { write_kept(&name, group, store, config, &schema).await });
    }
    // The new rows: one writer per core, so their files are encoded, and later read (judge and
    // grade after qa), in parallel.
    for group in split_rows(batches, threads)
        .into_iter()
        .filter(|g| !g.is_empty())
    {
        let (store, config, schema) = (store.clone(), config.clone(), schema.clone());
        let name = name.to_string();
        tasks.spawn(async move {
            let delta = |e| LakeError::delta(&name, e);
            let mut writer = DeltaWriter::new(store, config);
            for batch in &group {
                writer
                    .write(&cast_batch(batch, &schema)?)
                    .await
                    .map_err(delta)?;
            }
            let adds = writer.close().await.map_err(delta)?;
            Ok::<_, LakeError>(adds.into_iter().map(Action::Add).collect::<Vec<_>>())
        });
    }
    while let Some(done) = tasks.join_next().await {
        let written = done.map_err(|e| refused(name, format!("a writer failed: {e}")))?;
        actions.extend(written?);
    }

    let predicate = ids
        .iter()
        .map(|id| format!("'{}'", id.replace('\'', "''")))
        .collect::<Vec<_>>()
        .join(", ");
    let operation = DeltaOperation::Write {
        mode: SaveMode::Overwrite,
        partition_by: None,
        predicate: Some(format!("study_id IN ({predicate})")),
    };
    let done = CommitBuilder::from(commit)
        .with_actions(actions)
        .build(Some(snapshot), table.log_store(), operation)
        .await
        .map_err(delta)?;
    Ok(done.version as u64)
}

/// Fails when a row of `batch` belongs to none of `ids` (it would stay next to the old rows).
fn check_studies(name: &str, batch: &RecordBatch, ids: &BTreeSet<String>) -> Result<()> {
    let Some(column) = batch.column_by_name("study_id") else {
        return Err(refused(name, "the rows have no study_id column".into()));
    };
    let studies = cast(column, &DataType::Utf8)?;
    for study in studies.as_string::<i32>().iter() {
        if !study.is_some_and(|id| ids.contains(id)) {
            let study = study.unwrap_or("NULL");
            return Err(refused(
                name,
                format!("a new row of study {study} is not among the studies replaced"),
            ));
        }
    }
    Ok(())
}

/// The error of a replace that was refused or failed.
fn refused(table: &str, detail: String) -> LakeError {
    LakeError::Replace {
        table: table.to_string(),
        detail,
    }
}

/// `files` in `groups` groups of about equal bytes (largest first, each to the lightest group).
fn balanced(mut files: Vec<Located>, groups: usize) -> Vec<Vec<Located>> {
    files.sort_by_key(|file| std::cmp::Reverse(file.size));
    let mut out: Vec<(u64, Vec<Located>)> = (0..groups.max(1)).map(|_| (0, Vec::new())).collect();
    for file in files {
        if let Some(lightest) = out.iter_mut().min_by_key(|(bytes, _)| *bytes) {
            lightest.0 += file.size;
            lightest.1.push(file);
        }
    }
    out.into_iter()
        .map(|(_, files)| files)
        .filter(|files| !files.is_empty())
        .collect()
}

/// `batches` in at most `groups` runs of consecutive batches with about equal rows each.
fn split_rows(batches: Vec<RecordBatch>, groups: usize) -> Vec<Vec<RecordBatch>> {
    let total: usize = batches.iter().map(RecordBatch::num_rows).sum();
    let per_group = total.div_ceil(groups.max(1)).max(1);
    let mut out: Vec<Vec<RecordBatch>> = vec![Vec::new()];
    let mut rows = 0;
    for batch in batches {
        if rows >= per_group {
            out.push(Vec::new());
            rows = 0;
        }
        rows += batch.num_rows();
        if let Some(group) = out.last_mut() {
            group.push(batch);
        }
    }
    out
}

/// Writes the live rows of `files` that are not the replaced studies' into new files; the
/// removes of `files` and the adds of the new files.
async fn write_kept(
    name: &str,
    files: Vec<Located>,
    store: ObjectStoreRef,
    config: WriterConfig,
    schema: &SchemaRef,
) -> Result<Vec<Action>> {
    let delta = |e| LakeError::delta(name, e);
    let mut writer = DeltaWriter::new(store.clone(), config);
    let mut actions = Vec::new();
    // Each file's bytes are freed once its rows are written.
    for file in files {
        let bytes = file.fetch(&store).await?;
        let deleted = file.deleted_after_replace();
        for index in 0..file.row_groups() {
            for batch in file.kept_rows(&bytes, index, &deleted)? {
                writer
                    .write(&cast_batch(&batch, schema)?)
                    .await
                    .map_err(delta)?;
            }
        }
        actions.push(Action::Remove(file.remove));
    }
    let adds = writer.close().await.map_err(delta)?;
    actions.extend(adds.into_iter().map(Action::Add));
    Ok(actions)
}

/// `table`, with deletion vectors enabled (a commit of its own the first time).
async fn with_deletion_vectors(table: &DeltaTable, name: &str) -> Result<DeltaTable> {
    let snapshot = table.snapshot().map_err(|e| LakeError::delta(name, e))?;
    if snapshot
        .snapshot()
        .table_properties()
        .enable_deletion_vectors
        == Some(true)
    {
        return Ok(table.clone());
    }
    table
        .clone()
        .set_tbl_properties()
        .with_properties(HashMap::from([(
            "delta.enableDeletionVectors".to_string(),
            "true".to_string(),
        )]))
        .await
        .map_err(|e| LakeError::delta(name, e))
}

/// A file's statistics once a deletion vector removes some of its rows: `numRecords` still
/// counts the file's rows, and the minima and maxima may be wider than the live rows'.
fn wide_bounds(stats: &str) -> Result<String> {
    let mut stats: serde_json::Value = serde_json::from_str(stats)?;
    if let Some(stats) = stats.as_object_mut() {
        stats.insert("tightBounds".into(), serde_json::Value::Bool(false));
    }
    Ok(stats.to_string())
}
