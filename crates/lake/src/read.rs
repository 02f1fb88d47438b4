//! Reading the rows of some studies from a per-study table without scanning it (DESIGN 2.5:
//! an edit recomputes only the studies it touches, and a scoped stage reads only their rows).
//!
//! ```text
//! every data file ── Delta stats, row-group stats (study_id min/max) ──► candidates
//!   candidates ── footer and study_id column, once per file (StudyIndexes) ──► each study's
//!                 row runs; minus the file's deletion vector ──► per row group, a mask
//!   files with a masked row, fetched whole ── row selection (other rows skipped) ──► the rows
//! ```
//!
//! Files are decoded in parallel. Replacing the studies' rows (`replace.rs`,
//! [`crate::TableWrite::replace_studies`]) locates them the same way, deletes or rewrites the
//! old rows and writes the new rows into files of their own, so a later read or replace of the
//! same studies (judge and grade after qa, in one incremental run) touches those files only;
//! a read through the lake handle that made the replace gets the rows it kept in memory
//! ([`crate::Lake::read_studies`]) without reading files at all.

use std::collections::{BTreeSet, HashMap};
use std::ops::{Bound, Range};
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use datafusion::arrow::array::{AsArray, BooleanArray, BooleanBufferBuilder, RecordBatch};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, SchemaRef};
use datafusion::parquet::arrow::arrow_reader::{
    ArrowReaderMetadata, ArrowReaderOptions, ParquetRecordBatchReaderBuilder, RowSelection,
};
use datafusion::parquet::arrow::async_reader::AsyncFileReader;
use datafusion::parquet::arrow::{ParquetRecordBatchStreamBuilder, ProjectionMask};
use datafusion::parquet::errors::{ParquetError, Result as ParquetResult};
use datafusion::parquet::file::metadata::PageIndexPolicy;
use datafusion::parquet::file::metadata::{ParquetMetaData, ParquetMetaDataReader};
use datafusion::parquet::file::statistics::Statistics;
use deltalake::DeltaTable;
use deltalake::kernel::{Add, Remove};
use deltalake::logstore::ObjectStoreRef;
use futures::future::BoxFuture;
use futures::{FutureExt, StreamExt, TryStreamExt};
use object_store::ObjectStoreExt;
use object_store::path::Path;
use roaring::RoaringTreemap;
use serde_json::Value;

use crate::deletion;
use crate::error::{LakeError, Result};

/// One data file that holds some of the studies.
pub(crate) struct Located {
    /// Where it lies, relative to the table root.
    pub(crate) path: Path,
    /// Its size in bytes.
    pub(crate) size: u64,
    /// Its add action as the table version holds it (statistics, deletion vector).
    pub(crate) add: Add,
    /// The action that removes it (with its deletion vector) from the table.
    pub(crate) remove: Remove,
    /// The rows the table version's deletion vector removes from the file.
    pub(crate) deleted: RoaringTreemap,
    /// Its footer, decoded for Arrow.
    metadata: ArrowReaderMetadata,
    /// Per row group: `None` when it holds none of the studies, else which of its rows do
    /// (deleted rows never do).
    hits: Vec<Option<BooleanArray>>,
}

impl Located {
    /// The rows of row group `index` of the file `bytes` that `keep` selects (every row
    /// without it); the others are skipped, not decoded into arrays.
    fn rows(
        &self,
        bytes: &Bytes,
        index: usize,
        keep: Option<&BooleanArray>,
    ) -> Result<Vec<RecordBatch>> {
        let mut reader = ParquetRecordBatchReaderBuilder::new_with_metadata(
            bytes.clone(),
            self.metadata.clone(),
        )
        .with_row_groups(vec![index]);
        if let Some(keep) = keep {
            reader =
                reader.with_row_selection(RowSelection::from_filters(std::slice::from_ref(keep)));
        }
        Ok(reader
            .build()?
            .collect::<std::result::Result<Vec<_>, _>>()?)
    }

    /// The whole file.
    pub(crate) async fn fetch(&self, store: &ObjectStoreRef) -> Result<Bytes> {
        Ok(store.get(&self.path).await?.bytes().await?)
    }

    /// Its number of rows, deleted ones included.
    pub(crate) fn num_rows(&self) -> u64 {
        self.metadata.metadata().file_metadata().num_rows().max(0) as u64
    }

    /// Its number of row groups.
    pub(crate) fn row_groups(&self) -> usize {
        self.hits.len()
    }

    /// The rows of the file the table version holds and the located studies' rows among them:
    /// the file's deletion vector after the studies' rows are replaced.
    pub(crate) fn deleted_after_replace(&self) -> RoaringTreemap {
        let mut deleted = self.deleted.clone();
        for (hit, first) in self.hits.iter().zip(first_rows(self.metadata.metadata())) {
            if let Some(hit) = hit {
                deleted.extend(
                    (0..hit.len())
                        .filter(|&row| hit.value(row))
                        .map(|row| first + row as u64),
                );
            }
        }
        deleted
    }

    /// The rows of row group `index` of the file `bytes` that `deleted` (the file's
    /// [`Located::deleted_after_replace`]) keeps.
    pub(crate) fn kept_rows(
        &self,
        bytes: &Bytes,
        index: usize,
        deleted: &RoaringTreemap,
    ) -> Result<Vec<RecordBatch>> {
        let parquet = self.metadata.metadata();
        let first = first_rows(parquet)[index];
        let rows = first..first + parquet.row_group(index).num_rows().max(0) as u64;
        if deleted.range_cardinality(rows.clone()) == 0 {
            return self.rows(bytes, index, None);
        }
        let keep: BooleanArray = rows.map(|row| Some(!deleted.contains(row))).collect();
        self.rows(bytes, index, Some(&keep))
    }

    /// The rows of the located studies in the file `bytes`.
    fn hit_rows(&self, bytes: &Bytes, schema: &SchemaRef) -> Result<Vec<RecordBatch>> {
        let mut out = Vec::new();
        for (index, hit) in self.hits.iter().enumerate() {
            if let Some(mask) = hit {
                for batch in self.rows(bytes, index, Some(mask))? {
                    out.push(cast_batch(&batch, schema)?);
                }
            }
        }
        Ok(out)
    }
}

/// The index in the file of the first row of each row group.
fn first_rows(parquet: &ParquetMetaData) -> Vec<u64> {
    let mut first = 0u64;
    (0..parquet.num_row_groups())
        .map(|index| {
            let at = first;
            first += parquet.row_group(index).num_rows().max(0) as u64;
            at
        })
        .collect()
}

/// Whether some of `ids` lie in `[min, max]`.
fn any_between(ids: &BTreeSet<String>, min: &str, max: &str) -> bool {
    min <= max
        && ids
            .range::<str, _>((Bound::Included(min), Bound::Included(max)))
            .next()
            .is_some()
}

/// The data files of `table` that hold some of `ids`, each with the row groups that do. Files
/// and row groups whose `study_id` statistics rule the studies out are not read; of the others
/// only the footer and the `study_id` column are fetched until a row of the studies is found
/// (after an incremental qa stage, most files hold none of the studies it rewrote: their new
/// rows are in files of their own), and only files with such rows are fetched whole.
pub(crate) async fn locate(
    table: &DeltaTable,
    ids: &BTreeSet<String>,
    indexes: &StudyIndexes,
) -> Result<Vec<Located>> {
    let name = table.table_url().to_string();
    let snapshot = table.snapshot().map_err(|e| LakeError::delta(&name, e))?;
    let store = table.object_store();
    let files: Vec<_> = snapshot
        .log_data()
        .iter()
        .filter(|file| match file_study_range(file.stats().as_deref()) {
            Some((min, max)) => any_between(ids, &min, &max),
            None => true,
        })
        .map(|file| Candidate {
            path: file.object_store_path(),
            size: file.size().max(0) as u64,
            // The whole action (tags, row tracking) is carried over when the file is re-added
            // with a new deletion vector.
            #[allow(deprecated)]
            add: file.add_action(),
            remove: file.remove_action(true),
        })
        .collect();
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let located: Vec<Option<Located>> = futures::stream::iter(files)
        .map(|file| {
            let (store, name) = (store.clone(), name.as_str());
            async move { locate_file(store, name, file, ids, indexes).await }
        })
        .buffered(2 * threads)
        .try_collect()
        .await?;
    let candidates = located.len();
    let located: Vec<Located> = located.into_iter().flatten().collect();
    tracing::debug!(
        table = %name,
        studies = ids.len(),
        candidates,
        holding = located.len(),
        bytes = located.iter().map(|l| l.size).sum::<u64>(),
        "studies located"
    );
    Ok(located)
}

/// A data file of the table version that may hold some of the studies.
struct Candidate {
    path: Path,
    size: u64,
    add: Add,
    remove: Remove,
}

/// [`locate`] of one data file: `None` when it holds none of `ids`. Only its footer, its
/// deletion vector and its `study_id` column are fetched, and the footer and column only once
/// per [`StudyIndexes`].
async fn locate_file(
    store: ObjectStoreRef,
    table: &str,
    file: Candidate,
    ids: &BTreeSet<String>,
    indexes: &StudyIndexes,
) -> Result<Option<Located>> {
    let Candidate {
        path,
        size,
        add,
        remove,
    } = file;
    let key = format!("{table}{path}");
    let index = match indexes.get(&key) {
        Some(index) => index,
        None => match StudyIndex::load(&store, &path, size, Some(ids)).await? {
            Some(index) => indexes.insert(key, index),
            None => return Ok(None),
        },
    };
    let parquet = index.metadata.metadata();
    let hits_in_file: Vec<&Range<u64>> = ids
        .iter()
        .filter_map(|id| index.studies.get(id.as_str()))
        .flatten()
        .collect();
    if hits_in_file.is_empty() {
        return Ok(None);
    }
    let deleted = match &add.deletion_vector {
        Some(dv) => deletion::read(&store, table, dv).await?,
        None => RoaringTreemap::new(),
    };
    let mut hits: Vec<Option<BooleanArray>> = vec![None; parquet.num_row_groups()];
    for (index, first) in first_rows(parquet).into_iter().enumerate() {
        let rows = parquet.row_group(index).num_rows().max(0) as u64;
        let mut mask = BooleanBufferBuilder::new(rows as usize);
        mask.append_n(rows as usize, false);
        let mut any = false;
        for range in &hits_in_file {
            for row in range.start.max(first)..range.end.min(first + rows) {
                if !deleted.contains(row) {
                    mask.set_bit((row - first) as usize, true);
                    any = true;
                }
            }
        }
        if any {
            hits[index] = Some(BooleanArray::new(mask.finish(), None));
        }
    }
    if hits.iter().all(Option::is_none) {
        return Ok(None);
    }
    Ok(Some(Located {
        path,
        size,
        add,
        remove,
        deleted,
        metadata: index.metadata.clone(),
        hits,
    }))
}

/// Where each study's rows lie in one data file, with the file's footer. Data files are never
/// modified (a replace writes new ones or deletion vectors), so an index stays valid for the
/// file's path.
#[derive(Debug)]
pub(crate) struct StudyIndex {
    metadata: ArrowReaderMetadata,
    /// Per study, its runs of consecutive rows (row indexes in the file).
    studies: HashMap<Box<str>, Vec<Range<u64>>>,
}

impl StudyIndex {
    /// Fetches the footer and the `study_id` column of the file at `path`; `None` when the
    /// row-group statistics show that it holds none of `ids` (nothing more is fetched then; no
    /// `ids`: the column is always read).
    async fn load(
        store: &ObjectStoreRef,
        path: &Path,
        size: u64,
        ids: Option<&BTreeSet<String>>,
    ) -> Result<Option<Self>> {
        let (reader, metadata) = open(store, path, size).await?;
        let parquet = metadata.metadata();
        let Some(leaf) = parquet
            .file_metadata()
            .schema_descr()
            .columns()
            .iter()
            .position(|c| c.path().parts() == ["study_id"])
        else {
            return Err(LakeError::Config(format!(
                "{path} has no study_id column: only per-study tables can replace studies"
            )));
        };
        let Some(ids) = ids else {
            return Self::read_studies(reader, metadata, leaf).await.map(Some);
        };
        let may_hold = (0..parquet.num_row_groups()).any(|i| {
            match parquet.row_group(i).column(leaf).statistics() {
                Some(Statistics::ByteArray(s)) => match (s.min_opt(), s.max_opt()) {
                    (Some(min), Some(max)) => match (min.as_utf8(), max.as_utf8()) {
                        (Ok(min), Ok(max)) => any_between(ids, min, max),
                        _ => true,
                    },
                    _ => true,
                },
                _ => true,
            }
        });
        if !may_hold {
            return Ok(None);
        }
        Self::read_studies(reader, metadata, leaf).await.map(Some)
    }

    /// Reads the `study_id` column (leaf `leaf`) of the file `reader` reads.
    async fn read_studies(
        reader: StoreFile,
        metadata: ArrowReaderMetadata,
        leaf: usize,
    ) -> Result<Self> {
        let parquet = metadata.metadata();
        let mask = ProjectionMask::leaves(parquet.file_metadata().schema_descr(), [leaf]);
        let mut batches =
            ParquetRecordBatchStreamBuilder::new_with_metadata(reader, metadata.clone())
                .with_projection(mask)
                .with_batch_size(64 * 1024)
                .build()?;
        let mut studies: HashMap<Box<str>, Vec<Range<u64>>> = HashMap::new();
        let mut row = 0u64;
        let mut run: Option<(Box<str>, Range<u64>)> = None;
        while let Some(batch) = batches.next().await {
            let column = cast(batch?.column(0), &DataType::Utf8)?;
            for id in column.as_string::<i32>().iter() {
                let id = id.unwrap_or_default();
                match &mut run {
                    Some((current, range)) if current.as_ref() == id => range.end = row + 1,
                    _ => {
                        if let Some((done, range)) = run.take() {
                            studies.entry(done).or_default().push(range);
                        }
                        run = Some((id.into(), row..row + 1));
                    }
                }
                row += 1;
            }
        }
        if let Some((done, range)) = run {
            studies.entry(done).or_default().push(range);
        }
        Ok(Self { metadata, studies })
    }
}

/// The footer of the data file at `path` (`size` bytes) and the studies it holds, a file not yet
/// in table `table` (as [`locate`] names it), whose index is kept for the table's next replaces.
pub(crate) async fn index_file(
    store: &ObjectStoreRef,
    table: &str,
    path: &Path,
    size: u64,
    indexes: &StudyIndexes,
) -> Result<(Arc<ParquetMetaData>, Vec<String>)> {
    let index = StudyIndex::load(store, path, size, None)
        .await?
        .ok_or_else(|| LakeError::Config(format!("{path}: its study_id column was not read")))?;
    let index = indexes.insert(format!("{table}{path}"), index);
    let studies = index.studies.keys().map(|id| id.to_string()).collect();
    Ok((index.metadata.metadata().clone(), studies))
}

/// The footer of the data file at `path` (`size` bytes).
pub(crate) async fn footer(
    store: &ObjectStoreRef,
    path: &Path,
    size: u64,
) -> Result<Arc<ParquetMetaData>> {
    let (_, metadata) = open(store, path, size).await?;
    Ok(metadata.metadata().clone())
}

/// A reader of the data file at `path` (`size` bytes; 0: asked of the store) and its footer.
async fn open(
    store: &ObjectStoreRef,
    path: &Path,
    size: u64,
) -> Result<(StoreFile, ArrowReaderMetadata)> {
    let size = match size {
        0 => store.head(path).await?.size,
        size => size,
    };
    let mut reader = StoreFile {
        store: store.clone(),
        path: path.clone(),
        size,
    };
    let options = ArrowReaderOptions::new().with_page_index_policy(PageIndexPolicy::Optional);
    let metadata = ArrowReaderMetadata::load_async(&mut reader, options).await?;
    Ok((reader, metadata))
}

/// The [`StudyIndex`] of every data file located so far, by table and path; one per
/// [`crate::Lake`], shared by its clones, so the stages of one run read each file's `study_id`
/// column once.
#[derive(Debug, Default)]
pub(crate) struct StudyIndexes(Mutex<HashMap<String, Arc<StudyIndex>>>);

impl StudyIndexes {
    fn get(&self, key: &str) -> Option<Arc<StudyIndex>> {
        self.lock().get(key).cloned()
    }

    fn insert(&self, key: String, index: StudyIndex) -> Arc<StudyIndex> {
        let index = Arc::new(index);
        self.lock().insert(key, Arc::clone(&index));
        index
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Arc<StudyIndex>>> {
        locked(&self.0)
    }
}

/// `mutex` locked, also after a panic of another holder: the lake's caches are consistent
/// after any panic, as their entries are inserted or replaced whole.
pub(crate) fn locked<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// A data file read by byte ranges from the table's object store.
struct StoreFile {
    store: ObjectStoreRef,
    path: Path,
    size: u64,
}

impl AsyncFileReader for StoreFile {
    fn get_bytes(&mut self, range: Range<u64>) -> BoxFuture<'_, ParquetResult<Bytes>> {
        async move {
            self.store
                .get_range(&self.path, range)
                .await
                .map_err(|e| ParquetError::External(Box::new(e)))
        }
        .boxed()
    }

    fn get_byte_ranges(
        &mut self,
        ranges: Vec<Range<u64>>,
    ) -> BoxFuture<'_, ParquetResult<Vec<Bytes>>> {
        async move {
            self.store
                .get_ranges(&self.path, &ranges)
                .await
                .map_err(|e| ParquetError::External(Box::new(e)))
        }
        .boxed()
    }

    fn get_metadata<'a>(
        &'a mut self,
        _options: Option<&'a ArrowReaderOptions>,
    ) -> BoxFuture<'a, ParquetResult<Arc<ParquetMetaData>>> {
        async move {
            let size = self.size;
            let metadata = ParquetMetaDataReader::new()
                .with_page_index_policy(PageIndexPolicy::Optional)
                .load_and_finish(self, size)
                .await?;
            Ok(Arc::new(metadata))
        }
        .boxed()
    }
}

/// `minValues.study_id` and `maxValues.study_id` of a file's Delta statistics.
fn file_study_range(stats: Option<&str>) -> Option<(String, String)> {
    let stats: Value = serde_json::from_str(stats?).ok()?;
    let value = |key: &str| {
        stats
            .get(key)?
            .get("study_id")?
            .as_str()
            .map(str::to_string)
    };
    Some((value("minValues")?, value("maxValues")?))
}

/// The rows of `ids` in `table` (as `schema`), decoding only the rows of the row groups that
/// hold them, files in parallel.
pub(crate) async fn read_studies(
    table: &DeltaTable,
    ids: &BTreeSet<String>,
    schema: &SchemaRef,
    indexes: &StudyIndexes,
) -> Result<Vec<RecordBatch>> {
    let located = locate(table, ids, indexes).await?;
    let store = table.object_store();
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let located: Vec<(Located, Bytes)> = futures::stream::iter(located)
        .map(|file| {
            let store = store.clone();
            async move {
                let bytes = file.fetch(&store).await?;
                Ok::<_, LakeError>((file, bytes))
            }
        })
        .buffered(2 * threads)
        .try_collect()
        .await?;
    let per_thread = located.len().div_ceil(threads).max(1);
    let parts = std::thread::scope(|scope| {
        let handles: Vec<_> = located
            .chunks(per_thread)
            .map(|files| {
                scope.spawn(move || {
                    let mut out = Vec::new();
                    for (file, bytes) in files {
                        out.extend(file.hit_rows(bytes, schema)?);
                    }
                    Ok::<_, LakeError>(out)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
            })
            .collect::<Vec<_>>()
    });
    let mut out = Vec::new();
    for part in parts {
        out.extend(part?);
    }
    Ok(out)
}

/// `batch` cast to `schema`, column by column by name (files and table providers may use other
/// string and list encodings of the same columns).
pub fn cast_batch(batch: &RecordBatch, schema: &SchemaRef) -> Result<RecordBatch> {
    let columns = schema
        .fields()
        .iter()
        .map(|field| {
            let column = batch.column_by_name(field.name()).ok_or_else(|| {
                LakeError::Config(format!("a data file has no column {}", field.name()))
            })?;
            Ok(cast(column, field.data_type())?)
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(RecordBatch::try_new(schema.clone(), columns)?)
}
