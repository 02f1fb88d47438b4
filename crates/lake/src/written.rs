//! Data files that others wrote into a table's folder (a cluster's executors, running a stage's
//! statement as `COPY … TO`), committed by this process: the commit protocol stays with the one
//! writer of the lake, the data does not pass through it.
//!
//! ```text
//! <table>/w-<uuid>/<files>.parquet   written by the executors (one folder per statement)
//!   ── list, each file's footer ──► add actions: numRecords; min, max and null count of the
//!                                   top-level scalar columns (strings, integers, floats, dates, booleans)
//!   append ── the adds
//!   overwrite ── removes of every file of the table + the adds
//!   replace studies ── each new file's study_id column checked against the studies, then
//!                      replace.rs with the adds as the studies' new rows
//!   ──► one commit
//! ```
//!
//! The lake writes such folders itself too: an append or overwrite with several writers
//! ([`crate::TableWrite::writers`]) encodes its batches into one file per writer, at once on
//! the lake's encoder threads, and commits them the same way (Delta's own writer encodes on one
//! task).
//!
//! A run killed between the files and the commit leaves files no commit names: orphans, which
//! `cxrlake vacuum` removes once they are older than the retention period.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::datatypes::{DataType, Schema, SchemaRef};
use datafusion::catalog::TableProvider;
use datafusion::execution::runtime_env::RuntimeEnv;
use datafusion::parquet::arrow::{ArrowSchemaConverter, ArrowWriter};
use datafusion::parquet::basic::Compression;
use datafusion::parquet::file::metadata::ParquetMetaData;
use datafusion::parquet::file::properties::{EnabledStatistics, WriterProperties};
use datafusion::parquet::file::statistics::Statistics;
use deltalake::kernel::transaction::CommitBuilder;
use deltalake::kernel::{Action, Add};
use deltalake::protocol::{DeltaOperation, SaveMode};
use futures::TryStreamExt;
use object_store::path::Path;
use object_store::{ObjectMeta, ObjectStoreExt, PutPayload};
use serde_json::{Map, Value};
use url::Url;

use crate::error::{LakeError, Result};
use crate::lake::{Lake, WriteMode, commit_properties};
use crate::read::{cast_batch, footer, index_file};
use crate::replace::{self, NewRows};

/// Columns with statistics in an add action, as Delta's `delta.dataSkippingNumIndexedCols`
/// default (the lake's own writer keeps the same number).
const INDEXED_COLUMNS: usize = 32;

/// A new folder of a table where others write data files for this process to commit.
#[derive(Debug, Clone)]
pub struct WrittenFolder {
    table: String,
    /// The folder in the lake's object store.
    path: Path,
    /// Its name under the table's folder (`w-<uuid>`).
    name: String,
    url: Url,
}

impl WrittenFolder {
    /// The folder's URL, ending in `/` (a `COPY … TO` target: a folder, not a file).
    pub fn url(&self) -> &str {
        self.url.as_str()
    }

    /// The table it belongs to.
    pub fn table(&self) -> &str {
        &self.table
    }
}

impl Lake {
    /// A new, empty folder in table `table`'s folder for data files written elsewhere.
    pub fn written_folder(&self, table: &str) -> WrittenFolder {
        let name = format!("w-{}", uuid::Uuid::new_v4().simple());
        let path = self.table_folder(table).join(name.as_str());
        let mut url = self.root().clone();
        url.set_path(&format!("/{path}/"));
        WrittenFolder {
            table: table.to_string(),
            path,
            name,
            url,
        }
    }

    /// The files of `folder` as a table of `schema` for sessions on `runtime` (the statements
    /// after the one that wrote them read them there).
    pub fn written_table(
        &self,
        folder: &WrittenFolder,
        schema: SchemaRef,
        runtime: &RuntimeEnv,
    ) -> Result<Arc<dyn TableProvider>> {
        self.listing_table(folder.url.as_str(), schema, runtime)
    }

    /// Deletes the files of `folder` (nothing of it was committed).
    pub async fn discard_written(&self, folder: &WrittenFolder) -> Result<()> {
        self.delete_under(&folder.path).await.map(|_| ())
    }

    /// Writes `batches` (rows of a table of `schema`, cast to it where they differ) into
    /// `folder` as up to `writers` Parquet files, encoded at once on [`encoders`]: the
    /// batches split in order into runs of about equal rows. The rows written.
    pub(crate) async fn write_files(
        &self,
        folder: &WrittenFolder,
        schema: &SchemaRef,
        batches: Vec<RecordBatch>,
        writers: usize,
    ) -> Result<usize> {
        let rows: usize = batches.iter().map(RecordBatch::num_rows).sum();
        let mut encoding = Vec::new();
        for (index, run) in runs(batches, rows, writers).into_iter().enumerate() {
            let schema = schema.clone();
            let (done, encoded) = tokio::sync::oneshot::channel();
            let job = move || {
                let _ = done.send(encode(index, &schema, run));
            };
            match encoders() {
                Some(pool) => pool.spawn(job),
                None => rayon::spawn(job),
            }
            encoding.push(encoded);
        }
        let refused = |detail: String| LakeError::Written {
            table: folder.table.clone(),
            folder: folder.url.to_string(),
            detail,
        };
        // Every file encoded before any is stored: rows that cannot be encoded leave nothing.
        let mut files = Vec::new();
        for encoded in encoding {
            let encoded = encoded
                .await
                .map_err(|e| refused(format!("a file's encoding stopped: {e}")))?;
            files.push(encoded.map_err(refused)?);
        }
        for (name, bytes) in files {
            self.store()
                .put(&folder.path.clone().join(name), PutPayload::from(bytes))
                .await?;
        }
        Ok(rows)
    }

    /// The data files in `folder`, by path.
    async fn written_files(&self, folder: &WrittenFolder) -> Result<Vec<ObjectMeta>> {
        let mut files: Vec<ObjectMeta> = self
            .store()
            .list(Some(&folder.path))
            .try_filter(|meta| std::future::ready(meta.location.extension() == Some("parquet")))
            .try_collect()
            .await?;
        files.sort_by(|a, b| a.location.cmp(&b.location));
        Ok(files)
    }
}

/// The threads that encode data files, one per core, the same for the whole process. Not
/// tokio's blocking pool nor rayon's: on threads that come and go, or that also build the rows
/// being written, the allocator kept more of the encoders' memory (an import's peak RSS
/// 0.78-1.04 GB on the blocking pool, growing with the run on rayon's, against 0.52 GB).
/// `None` if the threads cannot be started: rayon's then.
fn encoders() -> Option<&'static rayon::ThreadPool> {
    static ENCODERS: std::sync::OnceLock<Option<rayon::ThreadPool>> = std::sync::OnceLock::new();
    ENCODERS
        .get_or_init(|| {
            rayon::ThreadPoolBuilder::new()
                .thread_name(|i| format!("cxrlake-encode-{i}"))
                .build()
                .ok()
        })
        .as_ref()
}

/// Rows handed to the Parquet writer at once (Delta's writer hands 1,024; in 8,192 the
/// encoding took 6 % less time).
const WRITE_ROWS: usize = 8192;

/// `batches` (of `rows` rows in all) split in order into at most `writers` runs of about
/// equal rows (whole batches; none empty).
fn runs(batches: Vec<RecordBatch>, rows: usize, writers: usize) -> Vec<Vec<RecordBatch>> {
    let mut runs: Vec<Vec<RecordBatch>> = Vec::new();
    let mut written = 0;
    for batch in batches {
        // Run k + 1 starts at the batch boundary nearest to k/writers of all rows.
        let k = runs.len();
        if k == 0 || (k < writers && (2 * written + batch.num_rows()) * writers >= 2 * k * rows) {
            runs.push(Vec::new());
        }
        written += batch.num_rows();
        if let Some(run) = runs.last_mut() {
            run.push(batch);
        }
    }
    runs
}

/// The writer properties of files of `schema`: Delta's writer's (Snappy; the parquet crate's
/// defaults otherwise), except that the leaves under a list get no statistics. Delta's file
/// statistics leave repeated leaves out and no reader prunes on them (a predicate on
/// `answers[1].text` is not a range of a leaf's values), while their minimum and maximum cost
/// a byte-string comparison per value: 8 % of the time parquet-rs took to encode an import's
/// `qa` rows (694,444 rows: 5.20 s against 5.67 s, medians of 7).
fn writer_properties(schema: &Schema) -> std::result::Result<WriterProperties, String> {
    let mut builder = WriterProperties::builder()
        .set_created_by(format!("cxrlake version {}", env!("CARGO_PKG_VERSION")))
        .set_compression(Compression::SNAPPY);
    let parquet = ArrowSchemaConverter::new()
        .convert(schema)
        .map_err(|e| format!("parquet cannot hold the table's schema: {e}"))?;
    for leaf in parquet.columns().iter().filter(|c| c.max_rep_level() > 0) {
        builder =
            builder.set_column_statistics_enabled(leaf.path().clone(), EnabledStatistics::None);
    }
    Ok(builder.build())
}

/// The Parquet file (its name, its bytes) of `batches`, cast to `schema` where they differ, as
/// [`writer_properties`] says; else what is wrong.
fn encode(
    index: usize,
    schema: &SchemaRef,
    batches: Vec<RecordBatch>,
) -> std::result::Result<(String, Vec<u8>), String> {
    let properties = writer_properties(schema)?;
    let parquet = |e: datafusion::parquet::errors::ParquetError| format!("parquet: {e}");
    let mut writer =
        ArrowWriter::try_new(Vec::new(), schema.clone(), Some(properties)).map_err(parquet)?;
    for batch in batches {
        let batch = if batch.schema() == *schema {
            batch
        } else {
            if let Some(field) = schema
                .fields()
                .iter()
                .find(|field| batch.column_by_name(field.name()).is_none())
            {
                return Err(format!("rows without the column {}", field.name()));
            }
            cast_batch(&batch, schema).map_err(|e| format!("rows not of the table's types: {e}"))?
        };
        // In slices, as Delta's writer does: the writer computes a whole slice's nesting
        // levels at once.
        let mut offset = 0;
        while offset < batch.num_rows() {
            let rows = (batch.num_rows() - offset).min(WRITE_ROWS);
            writer.write(&batch.slice(offset, rows)).map_err(parquet)?;
            offset += rows;
        }
    }
    let bytes = writer.into_inner().map_err(parquet)?;
    let name = format!("part-{index:05}-{}.parquet", uuid::Uuid::new_v4());
    Ok((name, bytes))
}

/// Commits the files of `folder` to `table` (loaded, at its latest version) as `mode` says, in
/// one commit; the new version. The files must hold `expected_rows` rows, what the statement
/// that wrote them reported.
pub(crate) async fn commit(
    lake: &Lake,
    table: &deltalake::DeltaTable,
    folder: &WrittenFolder,
    expected_rows: usize,
    mode: &WriteMode,
    commit: &crate::StageCommit,
    deletion_vectors: bool,
) -> Result<u64> {
    let name = folder.table.as_str();
    let delta = |e| LakeError::delta(name, e);
    let snapshot = table.snapshot().map_err(delta)?;
    let schema = snapshot.snapshot().arrow_schema();
    let store = lake.store();
    let key = table.table_url().to_string();
    let files = lake.written_files(folder).await?;
    let ids: Option<BTreeSet<String>> = match mode {
        WriteMode::ReplaceStudies(ids) => Some(ids.iter().cloned().collect()),
        _ => None,
    };
    let mut adds = Vec::with_capacity(files.len());
    let mut files_rows = Vec::with_capacity(files.len());
    for file in &files {
        let parquet = match &ids {
            // A replace's new rows must all be the studies' (else they would stay next to
            // the old rows): the file's study_id column, indexed for the next replaces.
            Some(ids) => {
                let (parquet, studies) =
                    index_file(store, &key, &file.location, file.size, lake.indexes()).await?;
                if let Some(stray) = studies.iter().find(|s| !ids.contains(s.as_str())) {
                    return Err(LakeError::Replace {
                        table: name.to_string(),
                        detail: format!(
                            "a new row of study {stray} in {} is not among the studies replaced",
                            file.location
                        ),
                    });
                }
                parquet
            }
            None => footer(store, &file.location, file.size).await?,
        };
        files_rows.push(parquet.file_metadata().num_rows());
        if parquet.file_metadata().num_rows() == 0 {
            continue;
        }
        adds.push(add_action(folder, file, &parquet, &schema)?);
    }
    let found: i64 = files_rows.iter().sum();
    if found != expected_rows as i64 {
        // A task run twice (an executor lost after it wrote its files) writes its rows twice.
        return Err(LakeError::Written {
            table: name.to_string(),
            folder: folder.url.to_string(),
            detail: format!(
                "they hold {found} rows where the statement wrote {expected_rows} (a task's \
                 files written twice, or files of another writer)"
            ),
        });
    }
    let version = match mode {
        WriteMode::ReplaceStudies(_) if table.version().is_some() => {
            let ids = ids.unwrap_or_default();
            replace::replace_studies(
                table,
                name,
                NewRows::Files(adds),
                &ids,
                commit_properties(commit),
                replace::Layout {
                    file_bytes: crate::lake::REPLACE_FILE_BYTES,
                    deletion_vectors,
                },
                lake.indexes(),
            )
            .await?
        }
        WriteMode::Append | WriteMode::Overwrite => {
            let overwrite = *mode == WriteMode::Overwrite;
            let mut actions: Vec<Action> = Vec::new();
            if overwrite {
                actions.extend(
                    snapshot
                        .log_data()
                        .iter()
                        .map(|file| Action::Remove(file.remove_action(true))),
                );
            }
            actions.extend(adds.into_iter().map(Action::Add));
            let operation = DeltaOperation::Write {
                mode: if overwrite {
                    SaveMode::Overwrite
                } else {
                    SaveMode::Append
                },
                partition_by: None,
                predicate: None,
            };
            let done = CommitBuilder::from(commit_properties(commit))
                .with_actions(actions)
                .build(Some(snapshot), table.log_store(), operation)
                .await
                .map_err(delta)?;
            done.version as u64
        }
        WriteMode::ReplaceStudies(_) | WriteMode::ReplaceWhere(_) => {
            return Err(LakeError::Replace {
                table: name.to_string(),
                detail: "files written elsewhere are committed by append, overwrite or a \
                         replace of studies of an existing table only"
                    .into(),
            });
        }
    };
    crate::commit::committed();
    Ok(version)
}

/// The add action of `file` (in `folder`) with Delta statistics from its footer: the row count,
/// and for the first [`INDEXED_COLUMNS`] top-level columns of `schema` that are scalars, their
/// null count and (where the Parquet statistics are exact) minimum and maximum.
fn add_action(
    folder: &WrittenFolder,
    file: &ObjectMeta,
    parquet: &ParquetMetaData,
    schema: &Schema,
) -> Result<Add> {
    let (mut min, mut max, mut nulls) = (Map::new(), Map::new(), Map::new());
    let leaves = parquet.file_metadata().schema_descr();
    for field in schema.fields().iter().take(INDEXED_COLUMNS) {
        let Some(leaf) = leaves
            .columns()
            .iter()
            .position(|c| c.path().parts() == [field.name().as_str()])
        else {
            continue;
        };
        let stats: Vec<Option<&Statistics>> = parquet
            .row_groups()
            .iter()
            .map(|group| group.column(leaf).statistics())
            .collect();
        if let Some(count) = stats
            .iter()
            .map(|s| s.and_then(Statistics::null_count_opt))
            .sum::<Option<u64>>()
        {
            nulls.insert(field.name().clone(), Value::from(count));
        }
        if let Some((low, high)) = bounds(field.data_type(), &stats) {
            min.insert(field.name().clone(), low);
            max.insert(field.name().clone(), high);
        }
    }
    let mut stats = Map::new();
    stats.insert(
        "numRecords".into(),
        Value::from(parquet.file_metadata().num_rows()),
    );
    stats.insert("minValues".into(), Value::Object(min));
    stats.insert("maxValues".into(), Value::Object(max));
    stats.insert("nullCount".into(), Value::Object(nulls));
    let file_name = file.location.filename().unwrap_or_default();
    Ok(Add {
        path: format!("{}/{file_name}", folder.name),
        partition_values: HashMap::new(),
        size: file.size as i64,
        modification_time: file.last_modified.timestamp_millis(),
        data_change: true,
        stats: Some(Value::Object(stats).to_string()),
        tags: None,
        deletion_vector: None,
        base_row_id: None,
        default_row_commit_version: None,
        clustering_provider: None,
    })
}

/// The minimum and maximum over row groups of a column of `data_type` as Delta statistics
/// values; `None` when a row group has no exact bounds or the type has no Delta bounds here.
fn bounds(data_type: &DataType, stats: &[Option<&Statistics>]) -> Option<(Value, Value)> {
    let mut low: Option<Value> = None;
    let mut high: Option<Value> = None;
    for stats in stats {
        let stats = (*stats)?;
        if stats.min_bytes_opt().is_none() {
            // Only nulls in this row group.
            continue;
        }
        if !(stats.min_is_exact() && stats.max_is_exact()) {
            return None;
        }
        let (min, max) = match (data_type, stats) {
            (
                DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View,
                Statistics::ByteArray(s),
            ) => (
                Value::from(s.min_opt()?.as_utf8().ok()?),
                Value::from(s.max_opt()?.as_utf8().ok()?),
            ),
            (DataType::Int8 | DataType::Int16 | DataType::Int32, Statistics::Int32(s)) => {
                (Value::from(*s.min_opt()?), Value::from(*s.max_opt()?))
            }
            (DataType::Int64, Statistics::Int64(s)) => {
                (Value::from(*s.min_opt()?), Value::from(*s.max_opt()?))
            }
            (DataType::Float32, Statistics::Float(s)) => (
                finite(f64::from(*s.min_opt()?))?,
                finite(f64::from(*s.max_opt()?))?,
            ),
            (DataType::Float64, Statistics::Double(s)) => {
                (finite(*s.min_opt()?)?, finite(*s.max_opt()?)?)
            }
            (DataType::Date32, Statistics::Int32(s)) => {
                (date(*s.min_opt()?)?, date(*s.max_opt()?)?)
            }
            (DataType::Boolean, Statistics::Boolean(s)) => {
                (Value::from(*s.min_opt()?), Value::from(*s.max_opt()?))
            }
            _ => return None,
        };
        low = Some(match low {
            Some(current) if !less(&min, &current) => current,
            _ => min,
        });
        high = Some(match high {
            Some(current) if !less(&current, &max) => current,
            _ => max,
        });
    }
    Some((low?, high?))
}

/// `a < b` for two statistics values of one column (strings, numbers or dates).
fn less(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::String(a), Value::String(b)) => a < b,
        (Value::Bool(a), Value::Bool(b)) => a < b,
        (Value::Number(a), Value::Number(b)) => match (a.as_i64(), b.as_i64()) {
            (Some(a), Some(b)) => a < b,
            _ => a.as_f64().unwrap_or(f64::NAN) < b.as_f64().unwrap_or(f64::NAN),
        },
        _ => false,
    }
}

/// A finite float as a JSON number (Delta has no bound for NaN).
fn finite(x: f64) -> Option<Value> {
    serde_json::Number::from_f64(x).map(Value::Number)
}

/// Days since the epoch as Delta's date (`YYYY-MM-DD`).
fn date(days: i32) -> Option<Value> {
    let epoch = chrono::NaiveDate::from_ymd_opt(1970, 1, 1)?;
    let day = epoch.checked_add_signed(chrono::Duration::days(i64::from(days)))?;
    Some(Value::from(day.format("%Y-%m-%d").to_string()))
}
