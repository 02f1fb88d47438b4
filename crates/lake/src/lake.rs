//! The lake: Delta tables under one root URL, their versions and history, and one
//! `SessionContext` with every table registered.

use std::collections::{BTreeSet, HashMap};
use std::num::NonZeroU64;
use std::sync::Arc;

use cxrlake_schemas::{FORMAT_VERSION, TABLES, TableDef};
use datafusion::arrow::array::{AsArray, BooleanArray, MutableArrayData, RecordBatch, make_array};
use datafusion::arrow::compute::{cast, filter_record_batch};
use datafusion::arrow::datatypes::{DataType, FieldRef, Fields, Schema, SchemaRef};
use datafusion::execution::runtime_env::RuntimeEnv;
use datafusion::prelude::{Expr, SessionConfig, SessionContext, col, lit};
use deltalake::kernel::transaction::CommitProperties;
use deltalake::logstore::ObjectStoreRef;
use deltalake::protocol::SaveMode;
use deltalake::{DeltaTable, DeltaTableBuilder, DeltaTableError, Path};
use futures::TryStreamExt;
use object_store::{ObjectStoreExt, PutPayload};
use serde::{Deserialize, Serialize};
use url::Url;

use crate::commit::{COMMIT_INFO_KEY, CommitRecord, StageCommit};
use crate::config::Settings;
use crate::error::{LakeError, Result};
use crate::read::{StudyIndexes, locked};
use crate::replace;
use crate::store::{parse_root, root_store};

/// Folder of lake-level metadata, next to the tables.
const META_DIR: &str = "_cxrlake";

/// The size at which a replace starts a new data file (`replace.rs`): the kept rows of the
/// rewritten files and the new rows go to files of at most this size, so a later replace of a few
/// studies rewrites a few such files.
pub(crate) const REPLACE_FILE_BYTES: u64 = 16 << 20;

/// Contents of `_cxrlake/lake.json`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct LakeMarker {
    /// Lake format version.
    pub format_version: u32,
    /// cxrlake version that created the lake.
    pub created_by: String,
    /// Creation time (RFC 3339).
    pub created_at: String,
}

/// Builds the `SessionContext` of a lake session from its configuration and the runtime its
/// Delta tables registered their object stores in. The lake is storage only: the layers above
/// it pass a factory that adds their SQL functions and planner rules
/// (`cxrlake_udfs::session_context_on`); the default is DataFusion's plain context.
pub type SessionFactory = fn(SessionConfig, Arc<RuntimeEnv>) -> SessionContext;

fn plain_session(config: SessionConfig, runtime: Arc<RuntimeEnv>) -> SessionContext {
    SessionContext::new_with_config_rt(config, runtime)
}

/// A cxrlake lake.
#[derive(Debug, Clone)]
pub struct Lake {
    root: Url,
    session_factory: SessionFactory,
    store: ObjectStoreRef,
    root_path: Path,
    settings: Settings,
    /// Where the studies' rows lie in the data files read so far (`read.rs`).
    indexes: Arc<StudyIndexes>,
    /// The newest snapshot of each table loaded so far: loading a table again reads only the
    /// commits made since (an incremental run opens a session over every table about 29 times).
    snapshots: Arc<std::sync::Mutex<HashMap<String, DeltaTable>>>,
    /// Per table, the rows its last replace of some studies wrote: the stages after a scoped
    /// stage read exactly those rows, which need not be decoded from the files again.
    replaced: Arc<std::sync::Mutex<HashMap<String, Replaced>>>,
}

/// The rows a replace of some studies wrote, and the table version it committed.
#[derive(Debug)]
struct Replaced {
    version: u64,
    studies: BTreeSet<String>,
    batches: Vec<RecordBatch>,
}

/// The most rows a [`Replaced`] keeps (a scoped stage's chunk of 3,000 studies writes some
/// 750,000 QA pairs); a replace of more leaves nothing kept. The kept batches are those the
/// stage computed, so keeping them costs memory only after the stage, until the next replace.
const REPLACED_KEPT_ROWS: usize = 1_000_000;

/// How a write replaces what is there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WriteMode {
    /// Add rows.
    Append,
    /// Replace all rows.
    Overwrite,
    /// Replace the rows of these studies (`study_id IN (…)`), atomically.
    ReplaceStudies(Vec<String>),
    /// Replace the rows matching a predicate, atomically; every written row must match it (a
    /// content-addressed table re-answering some of its keys).
    ReplaceWhere(Expr),
}

/// A pending write to one table: `lake.write("qa").replace_studies(ids).commit(c).execute(batches)`.
#[derive(Debug)]
pub struct TableWrite<'a> {
    lake: &'a Lake,
    table: String,
    mode: WriteMode,
    commit: StageCommit,
    /// Whether a replace uses deletion vectors (the table's [`TableDef::deletion_vectors`]).
    deletion_vectors: bool,
    /// How many files an append or overwrite of an existing table writes at once (1: Delta's
    /// own writer, one task).
    writers: usize,
}

impl Lake {
    /// Opens the lake at the configured root (`cxrlake.lake`) with the configured storage options.
    pub fn open(settings: Settings) -> Result<Self> {
        let root = parse_root(&settings.cxrlake.lake)?;
        let (store, root_path) = root_store(&root, &settings.storage)?;
        Ok(Self {
            root,
            session_factory: plain_session,
            store,
            root_path,
            settings,
            indexes: Arc::default(),
            snapshots: Arc::default(),
            replaced: Arc::default(),
        })
    }

    /// Opens the lake at `root` with default settings.
    pub fn open_url(root: &str) -> Result<Self> {
        let mut settings = Settings::default();
        settings.cxrlake.lake = root.to_string();
        Self::open(settings)
    }

    /// The lake with sessions built by `factory` (e.g. with cxrlake's SQL functions).
    pub fn with_session_factory(mut self, factory: SessionFactory) -> Self {
        self.session_factory = factory;
        self
    }

    /// The lake's root URL (ends with `/`).
    pub fn root(&self) -> &Url {
        &self.root
    }

    /// The settings the lake was opened with.
    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    /// The object store under the lake.
    pub(crate) fn store(&self) -> &ObjectStoreRef {
        &self.store
    }

    /// Where the studies' rows lie in the data files read so far.
    pub(crate) fn indexes(&self) -> &StudyIndexes {
        &self.indexes
    }

    /// The folder of table `name` in the lake's object store.
    pub(crate) fn table_folder(&self, name: &str) -> Path {
        self.root_path.clone().join(name)
    }

    /// `_cxrlake/<name>` under the lake's root.
    pub(crate) fn meta_path(&self, name: &str) -> Path {
        self.root_path.clone().join(META_DIR).join(name)
    }

    fn marker_path(&self) -> Path {
        self.root_path.clone().join(META_DIR).join("lake.json")
    }

    /// Reads the lake marker; `None` when the lake was never initialised.
    pub async fn marker(&self) -> Result<Option<LakeMarker>> {
        match self.store.get(&self.marker_path()).await {
            Ok(found) => {
                let marker: LakeMarker = serde_json::from_slice(&found.bytes().await?)?;
                if marker.format_version != FORMAT_VERSION {
                    return Err(LakeError::FormatVersion {
                        root: self.root.to_string(),
                        found: marker.format_version,
                        expected: FORMAT_VERSION,
                    });
                }
                Ok(Some(marker))
            }
            // A missing bucket is "not found" too, but no `cxrlake init` would help there.
            Err(object_store::Error::NotFound { .. }) => {
                if !matches!(self.root.scheme(), "file" | "memory") {
                    let mut listing = self.store.list(Some(&self.root_path));
                    if let Some(Err(err)) = futures::StreamExt::next(&mut listing).await {
                        return Err(crate::transfer::storage_error(&self.root, err));
                    }
                }
                Ok(None)
            }
            Err(err) => Err(crate::transfer::storage_error(&self.root, err)),
        }
    }

    /// Stores `bytes` under `_cxrlake/<name>` (e.g. the definition sources a stage used).
    pub async fn put_meta(&self, name: &str, bytes: Vec<u8>) -> Result<()> {
        let path = self.root_path.clone().join(META_DIR).join(name);
        self.store.put(&path, PutPayload::from(bytes)).await?;
        Ok(())
    }

    /// The bytes stored by [`Lake::put_meta`], `None` when there are none.
    pub async fn get_meta(&self, name: &str) -> Result<Option<Vec<u8>>> {
        let path = self.root_path.clone().join(META_DIR).join(name);
        match self.store.get(&path).await {
            Ok(found) => Ok(Some(found.bytes().await?.to_vec())),
            Err(object_store::Error::NotFound { .. }) => Ok(None),
            Err(err) => Err(err.into()),
        }
    }

    /// Fails with a hint to run `cxrlake init` when the lake does not exist.
    pub async fn require_initialized(&self) -> Result<LakeMarker> {
        self.marker()
            .await?
            .ok_or_else(|| LakeError::NotInitialized(self.root.to_string()))
    }

    /// Creates the lake marker and an empty table for every table definition that is missing.
    /// Idempotent; returns the names of the tables it created.
    pub async fn init(&self) -> Result<Vec<String>> {
        if self.marker().await?.is_none() {
            let marker = LakeMarker {
                format_version: FORMAT_VERSION,
                created_by: format!("cxrlake {}", env!("CARGO_PKG_VERSION")),
                created_at: chrono::Utc::now().to_rfc3339(),
            };
            let body = serde_json::to_vec_pretty(&marker)?;
            self.store
                .put(&self.marker_path(), PutPayload::from(body))
                .await?;
        }
        let existing = self.table_names().await?;
        let mut created = Vec::new();
        for def in TABLES {
            if !existing.iter().any(|name| name == def.name) {
                self.create_table(def.name, (def.schema)()).await?;
                created.push(def.name.to_string());
            }
        }
        Ok(created)
    }

    /// URL of a table's folder.
    pub fn table_url(&self, name: &str) -> Result<Url> {
        let valid = !name.is_empty()
            && name
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
        if !valid {
            return Err(LakeError::InvalidTableName(name.to_string()));
        }
        self.root
            .join(&format!("{name}/"))
            .map_err(|e| LakeError::InvalidUrl {
                url: self.root.to_string(),
                reason: e.to_string(),
            })
    }

    /// The folder of a table when the lake lives on the local file system. (`Url::to_file_path`
    /// does not look at the scheme, so `memory:///lake` must be ruled out here.)
    fn local_folder(&self, name: &str) -> Result<Option<std::path::PathBuf>> {
        let url = self.table_url(name)?;
        Ok((url.scheme() == "file")
            .then(|| url.to_file_path().ok())
            .flatten())
    }

    /// delta-rs expects a local table folder to exist before the first commit.
    fn ensure_local_folder(&self, name: &str) -> Result<()> {
        if let Some(dir) = self.local_folder(name)? {
            std::fs::create_dir_all(&dir).map_err(|e| {
                LakeError::Config(format!("cannot create table folder {}: {e}", dir.display()))
            })?;
        }
        Ok(())
    }

    fn builder(&self, name: &str) -> Result<DeltaTableBuilder> {
        let url = self.table_url(name)?;
        Ok(DeltaTableBuilder::from_url(url.clone())
            .map_err(|e| LakeError::delta(name, e))?
            .with_storage_backend(self.store.clone(), url))
    }

    /// Names of the Delta tables in the lake, sorted.
    pub async fn table_names(&self) -> Result<Vec<String>> {
        let listing = self
            .store
            .list_with_delimiter(Some(&self.root_path))
            .await?;
        let mut names = Vec::new();
        for dir in listing.common_prefixes {
            let Some(name) = dir.filename().map(str::to_string) else {
                continue;
            };
            if name == META_DIR {
                continue;
            }
            let inner = self.store.list_with_delimiter(Some(&dir)).await?;
            if inner
                .common_prefixes
                .iter()
                .any(|p| p.filename() == Some("_delta_log"))
            {
                names.push(name);
            }
        }
        names.sort();
        Ok(names)
    }

    /// Whether a table's folder is missing on a local file system (delta-rs reports that as a
    /// location error rather than "not a table").
    fn missing_local_folder(&self, name: &str) -> Result<bool> {
        Ok(self
            .local_folder(name)?
            .is_some_and(|dir| !dir.join("_delta_log").is_dir()))
    }

    /// A handle on an existing table: the newest snapshot loaded so far, else an unloaded one.
    fn existing(&self, name: &str) -> Result<DeltaTable> {
        if self.missing_local_folder(name)? {
            return Err(self.no_such_table(name));
        }
        if let Some(table) = locked(&self.snapshots).get(name) {
            return Ok(table.clone());
        }
        self.unloaded(name)
    }

    /// An unloaded handle on a table.
    fn unloaded(&self, name: &str) -> Result<DeltaTable> {
        self.builder(name)?
            .build()
            .map_err(|e| LakeError::delta(name, e))
    }

    /// Keeps `table` as the newest snapshot of `name` unless a newer one is kept.
    fn remember(&self, name: &str, table: &DeltaTable) {
        let Some(version) = table.version() else {
            return;
        };
        let mut cache = locked(&self.snapshots);
        if cache
            .get(name)
            .and_then(DeltaTable::version)
            .is_none_or(|kept| kept < version)
        {
            cache.insert(name.to_string(), table.clone());
        }
    }

    /// The latest version of a table.
    pub async fn table(&self, name: &str) -> Result<DeltaTable> {
        let mut table = self.existing(name)?;
        match table.load().await {
            Ok(()) => {
                self.remember(name, &table);
                Ok(table)
            }
            Err(DeltaTableError::NotATable(_)) => Err(self.no_such_table(name)),
            Err(err) => Err(LakeError::delta(name, err)),
        }
    }

    /// A table as of `version` (time travel).
    pub async fn table_at(&self, name: &str, version: u64) -> Result<DeltaTable> {
        let mut table = self.existing(name)?;
        if table.version().is_some_and(|kept| kept > version) {
            // Snapshots only move forward: an older version is loaded from the log.
            table = self.unloaded(name)?;
        }
        match table.load_version(version).await {
            Ok(()) => {
                self.remember(name, &table);
                Ok(table)
            }
            Err(DeltaTableError::NotATable(_)) => Err(self.no_such_table(name)),
            Err(err) => Err(LakeError::NoSuchVersion {
                name: name.to_string(),
                version,
                source: Box::new(err),
            }),
        }
    }

    fn no_such_table(&self, name: &str) -> LakeError {
        LakeError::NoSuchTable {
            name: name.to_string(),
            root: self.root.to_string(),
        }
    }

    /// Creates an empty table with `schema` unless it exists; returns the table.
    pub async fn create_table(&self, name: &str, schema: SchemaRef) -> Result<DeltaTable> {
        match self.table(name).await {
            Ok(table) => Ok(table),
            Err(LakeError::NoSuchTable { .. }) => {
                self.ensure_local_folder(name)?;
                let table = self
                    .builder(name)?
                    .build()
                    .map_err(|e| LakeError::delta(name, e))?;
                table
                    .write(vec![RecordBatch::new_empty(schema)])
                    .with_save_mode(SaveMode::Append)
                    .with_table_name(name)
                    .with_commit_properties(commit_properties(&StageCommit::new("init")))
                    .await
                    .map_err(|e| LakeError::delta(name, e))
                    .inspect(|_| crate::commit::committed())
            }
            Err(err) => Err(err),
        }
    }

    /// Starts a write to `table` (append by default).
    pub fn write(&self, table: &str) -> TableWrite<'_> {
        TableWrite {
            lake: self,
            table: table.to_string(),
            mode: WriteMode::Append,
            commit: StageCommit::new("manual"),
            deletion_vectors: table_def(table).is_some_and(|def| def.deletion_vectors),
            writers: 1,
        }
    }

    /// The Arrow schema of the lake table `name` (as cxrlake declares it).
    fn table_schema(&self, name: &str) -> Result<SchemaRef> {
        cxrlake_schemas::table(name)
            .map(|def| (def.schema)())
            .ok_or_else(|| self.no_such_table(name))
    }

    /// The rows of the studies `ids` in the per-study table `name` (at `version`, else the
    /// latest), as cxrlake declares the table; reads only the row groups that hold them.
    pub async fn read_studies(
        &self,
        name: &str,
        version: Option<u64>,
        ids: &BTreeSet<String>,
    ) -> Result<Vec<RecordBatch>> {
        let table = match version {
            Some(version) => self.table_at(name, version).await?,
            None => self.table(name).await?,
        };
        if let Some(rows) = self.replaced_rows(name, table.version(), ids)? {
            return Ok(rows);
        }
        // As cxrlake declares the table; a table it does not declare (a stage's own) as stored.
        let schema = match cxrlake_schemas::table(name) {
            Some(def) => (def.schema)(),
            None => table.table_provider().await?.schema(),
        };
        crate::read::read_studies(&table, ids, &schema, &self.indexes).await
    }

    /// The rows of `ids` in `name` at `version` when this handle's last replace of the table
    /// committed that version and covered them all.
    fn replaced_rows(
        &self,
        name: &str,
        version: Option<u64>,
        ids: &BTreeSet<String>,
    ) -> Result<Option<Vec<RecordBatch>>> {
        let replaced = locked(&self.replaced);
        let Some(kept) = replaced.get(name) else {
            return Ok(None);
        };
        if Some(kept.version) != version || !ids.is_subset(&kept.studies) {
            return Ok(None);
        }
        if ids.len() == kept.studies.len() {
            return Ok(Some(kept.batches.clone()));
        }
        let mut rows = Vec::with_capacity(kept.batches.len());
        for batch in &kept.batches {
            let study = batch
                .column_by_name("study_id")
                .ok_or_else(|| LakeError::Config(format!("{name} has no study_id column")))?;
            let study = cast(study, &DataType::Utf8)?;
            let keep: BooleanArray = study
                .as_string::<i32>()
                .iter()
                .map(|id| Some(id.is_some_and(|id| ids.contains(id))))
                .collect();
            rows.push(filter_record_batch(batch, &keep)?);
        }
        Ok(Some(rows))
    }

    /// Keeps the rows a replace of `studies` wrote as `version` of `name` (see
    /// [`Lake::replaced_rows`]); `None` forgets the rows kept for the table.
    fn keep_replaced(
        &self,
        name: &str,
        version: u64,
        studies: BTreeSet<String>,
        batches: Option<Vec<RecordBatch>>,
    ) {
        let mut replaced = locked(&self.replaced);
        match batches {
            Some(batches) => {
                tracing::debug!(table = name, version, "replaced rows kept");
                let kept = Replaced {
                    version,
                    studies,
                    batches,
                };
                replaced.insert(name.to_string(), kept);
            }
            None => {
                replaced.remove(name);
            }
        }
    }

    /// A table's commits, newest first.
    pub async fn history(&self, name: &str, limit: Option<usize>) -> Result<Vec<CommitRecord>> {
        let table = self.table(name).await?;
        let latest = table.version().unwrap_or(0);
        let infos: Vec<_> = table
            .history(limit)
            .try_collect()
            .await
            .map_err(|e| LakeError::delta(name, e))?;
        Ok(infos
            .into_iter()
            .enumerate()
            .map(|(i, info)| CommitRecord {
                version: latest.saturating_sub(i as u64),
                timestamp_ms: info.timestamp,
                operation: info.operation.clone(),
                stage: info
                    .info
                    .get(COMMIT_INFO_KEY)
                    .and_then(|v| serde_json::from_value(v.clone()).ok()),
            })
            .collect())
    }

    /// A `SessionContext` (built by the lake's [`SessionFactory`]) with every lake table
    /// registered by name.
    pub async fn session(&self) -> Result<SessionContext> {
        self.session_with(&HashMap::new()).await
    }

    /// Like [`Lake::session`], with some tables pinned to a version (`name → version`).
    pub async fn session_with(&self, versions: &HashMap<String, u64>) -> Result<SessionContext> {
        let config = SessionConfig::new()
            .with_batch_size(self.settings.cxrlake.batch_size)
            .with_option_extension(self.settings.cxrlake.clone())
            .with_information_schema(true)
            // Plain strings: view arrays that aggregates and joins pass on reference every
            // buffer of their source batches, and DataFusion counts them all per batch (an
            // array_agg of view strings took 30 times longer than of plain ones). Delta scans
            // take both options from the session; filters are still pushed into the Parquet scan.
            .set_bool(
                "datafusion.execution.parquet.schema_force_view_types",
                false,
            )
            .set_bool("datafusion.execution.parquet.pushdown_filters", true);
        let ctx = (self.session_factory)(config, Arc::new(RuntimeEnv::default()));
        let started = std::time::Instant::now();
        let names = self.table_names().await?;
        // Tables load in parallel (each reads its Delta log).
        let mut loads = tokio::task::JoinSet::new();
        for name in names.iter().cloned() {
            let (lake, version) = (self.clone(), versions.get(&name).copied());
            loads.spawn(async move {
                let table = match version {
                    Some(version) => lake.table_at(&name, version).await?,
                    None => lake.table(&name).await?,
                };
                Ok::<_, LakeError>((name, table))
            });
        }
        while let Some(loaded) = loads.join_next().await {
            let (name, table) = loaded.map_err(|e| {
                LakeError::Config(format!("loading the lake's tables failed: {e}"))
            })??;
            table
                .update_datafusion_session(&ctx.state())
                .map_err(|e| LakeError::delta(&name, e))?;
            let provider = table
                .table_provider()
                .with_session(Arc::new(ctx.state()))
                .await?;
            ctx.register_table(name.as_str(), provider)?;
        }
        tracing::debug!(
            tables = names.len(),
            seconds = started.elapsed().as_secs_f64(),
            "session ready"
        );
        Ok(ctx)
    }

    /// Registers the latest version of `table` in `ctx` (a session of this lake) again, reading
    /// its `list<struct>` column `column` with only the struct fields `fields` (in the table's
    /// order). The Parquet reader then decodes only those leaves of the column: DataFusion
    /// reads every leaf of a nested column that a query touches, however few of its fields
    /// the query uses, and functions of the whole list (`array_length`, `answers[1]`) copy
    /// every field of it. Deletion vectors are honoured (as row selections). Queries that name a
    /// field left out fail to plan.
    pub async fn narrow(
        &self,
        ctx: &SessionContext,
        table: &str,
        column: &str,
        fields: &[&str],
    ) -> Result<()> {
        let provider = ctx.table_provider(table).await?;
        let schema = narrowed(&provider.schema(), column, fields)
            .map_err(|detail| LakeError::Config(format!("table '{table}': {detail}")))?;
        let loaded = self.table(table).await?;
        let scan =
            crate::narrow::NarrowScan::new(&loaded, table, schema, &ctx.runtime_env()).await?;
        ctx.deregister_table(table)?;
        ctx.register_table(table, Arc::new(scan))?;
        Ok(())
    }
}

/// `schema` with the `list<struct>` column `column` keeping only the struct fields `fields`.
fn narrowed(
    schema: &SchemaRef,
    column: &str,
    fields: &[&str],
) -> std::result::Result<SchemaRef, String> {
    let (index, field) = schema
        .column_with_name(column)
        .ok_or_else(|| format!("no column '{column}'"))?;
    let DataType::List(item) = field.data_type() else {
        return Err(format!("'{column}' is not a list of structs"));
    };
    let DataType::Struct(parts) = item.data_type() else {
        return Err(format!("'{column}' is not a list of structs"));
    };
    if let Some(missing) = fields.iter().find(|f| parts.find(f).is_none()) {
        return Err(format!("'{column}' has no field '{missing}'"));
    }
    let kept: Fields = parts
        .iter()
        .filter(|part| fields.contains(&part.name().as_str()))
        .cloned()
        .collect();
    let item = item.as_ref().clone().with_data_type(DataType::Struct(kept));
    let field = field
        .as_ref()
        .clone()
        .with_data_type(DataType::List(Arc::new(item)));
    let mut columns: Vec<FieldRef> = schema.fields().iter().cloned().collect();
    columns[index] = Arc::new(field);
    Ok(Arc::new(Schema::new_with_metadata(
        columns,
        schema.metadata().clone(),
    )))
}

pub(crate) fn commit_properties(commit: &StageCommit) -> CommitProperties {
    let value = serde_json::to_value(commit).unwrap_or_default();
    CommitProperties::default().with_metadata([(COMMIT_INFO_KEY.to_string(), value)])
}

impl TableWrite<'_> {
    /// Adds the rows (the default).
    pub fn append(mut self) -> Self {
        self.mode = WriteMode::Append;
        self
    }

    /// Replaces all rows.
    pub fn overwrite(mut self) -> Self {
        self.mode = WriteMode::Overwrite;
        self
    }

    /// Replaces exactly the rows of these studies; every written row must belong to one of them.
    pub fn replace_studies(mut self, study_ids: Vec<String>) -> Self {
        self.mode = WriteMode::ReplaceStudies(study_ids);
        self
    }

    /// Replaces the rows matching `predicate`; every written row must match it.
    pub fn replace_where(mut self, predicate: Expr) -> Self {
        self.mode = WriteMode::ReplaceWhere(predicate);
        self
    }

    /// Whether a replace deletes the old rows with Delta deletion vectors (`replace.rs`) instead
    /// of rewriting the files that hold them; the table's definition decides by default.
    pub fn deletion_vectors(mut self, on: bool) -> Self {
        self.deletion_vectors = on;
        self
    }

    /// Encodes an append or overwrite of an existing table into up to `writers` data files at
    /// once, on the lake's encoder threads (`written.rs`), instead of on Delta's one writer task; still
    /// one commit. The batches are split in order into runs of about equal rows, so this pays when
    /// there are at least `writers` batches and the encoding, not the computing of the rows,
    /// is what the write waits for (an import's decoded rows).
    pub fn writers(mut self, writers: usize) -> Self {
        self.writers = writers.max(1);
        self
    }

    /// Sets the provenance recorded in the commit.
    pub fn commit(mut self, commit: StageCommit) -> Self {
        self.commit = commit;
        self
    }

    /// Commits the data files others wrote into `folder` ([`Lake::written_folder`]: a cluster's
    /// executors) as this write's rows, in one atomic commit (`written.rs`); the new table
    /// version. The files must hold `rows` rows (what the statement that wrote them reported: a
    /// task an executor ran twice leaves more). The table must exist; a replace of studies
    /// checks that every new row is one of them; a replace by predicate is refused.
    pub async fn commit_files(self, folder: &crate::WrittenFolder, rows: usize) -> Result<u64> {
        let name = self.table.as_str();
        let mut table = self.lake.existing(name)?;
        table.load().await.map_err(|e| LakeError::delta(name, e))?;
        crate::written::commit(
            self.lake,
            &table,
            folder,
            rows,
            &self.mode,
            &self.commit,
            self.deletion_vectors,
        )
        .await
    }

    /// Writes the batches in one atomic commit (creating the table if needed) and returns the new
    /// table version. Until the commit file lands, readers keep seeing the previous version.
    pub async fn execute(self, batches: Vec<RecordBatch>) -> Result<u64> {
        let name = self.table.as_str();
        let is_new = self.lake.missing_local_folder(name)?;
        self.lake.ensure_local_folder(name)?;
        let mut table = if is_new {
            self.lake.unloaded(name)?
        } else {
            self.lake.existing(name)?
        };
        if !is_new {
            match table.load().await {
                // Kept, so that the next write loads only the commits made after it: from an
                // older snapshot every append of an import read all of the import's commits
                // again, many at once, each on a blocking thread of its own.
                Ok(()) => self.lake.remember(name, &table),
                Err(DeltaTableError::NotATable(_)) => {}
                Err(err) => return Err(LakeError::delta(name, err)),
            }
        }
        if let WriteMode::ReplaceStudies(ids) = &self.mode
            && table.version().is_some()
        {
            let ids: BTreeSet<String> = ids.iter().cloned().collect();
            let commit = commit_properties(&self.commit);
            let version = replace::replace_studies(
                &table,
                name,
                replace::NewRows::Batches(batches.clone()),
                &ids,
                commit,
                replace::Layout {
                    file_bytes: REPLACE_FILE_BYTES,
                    deletion_vectors: self.deletion_vectors,
                },
                &self.lake.indexes,
            )
            .await?;
            crate::commit::committed();
            // Kept as a read returns them: in the table's declared types, each batch with
            // buffers of its own (a stage's batches are often slices of larger arrays, which a
            // cast of a list column processes whole, once per slice). The replace is
            // committed: rows not kept (too many, a table cxrlake does not declare) are read
            // from the files.
            let rows: usize = batches.iter().map(RecordBatch::num_rows).sum();
            let kept = match self.lake.table_schema(name) {
                Ok(schema) if rows <= REPLACED_KEPT_ROWS => batches
                    .iter()
                    .map(|b| crate::read::cast_batch(&compacted(b)?, &schema))
                    .collect::<Result<Vec<_>>>()
                    .ok(),
                _ => None,
            };
            self.lake.keep_replaced(name, version, ids, kept);
            return Ok(version);
        }
        let parallel = matches!(self.mode, WriteMode::Append | WriteMode::Overwrite)
            && self.writers > 1
            && batches.len() > 1
            && table.version().is_some();
        if parallel {
            // The declared schema, else (a table cxrlake does not declare) the table's own.
            let schema = match self.lake.table_schema(name) {
                Ok(schema) => schema,
                Err(err) => table.snapshot().map_err(|_| err)?.snapshot().arrow_schema(),
            };
            let folder = self.lake.written_folder(name);
            let committed = async {
                let rows = (self.lake)
                    .write_files(&folder, &schema, batches, self.writers)
                    .await?;
                crate::written::commit(
                    self.lake,
                    &table,
                    &folder,
                    rows,
                    &self.mode,
                    &self.commit,
                    self.deletion_vectors,
                )
                .await
            }
            .await;
            if committed.is_err() {
                // Nothing names the files: they go now, not at the next vacuum.
                let _ = self.lake.discard_written(&folder).await;
            }
            return committed;
        }
        let builder = table
            .write(batches)
            .with_commit_properties(commit_properties(&self.commit));
        let builder = match self.mode {
            WriteMode::Append => builder.with_save_mode(SaveMode::Append),
            WriteMode::Overwrite => builder.with_save_mode(SaveMode::Overwrite),
            WriteMode::ReplaceStudies(ids) => {
                let ids = ids.into_iter().map(lit).collect();
                builder
                    .with_save_mode(SaveMode::Overwrite)
                    .with_replace_where(col("study_id").in_list(ids, false))
                    .with_target_file_size(NonZeroU64::new(REPLACE_FILE_BYTES))
            }
            WriteMode::ReplaceWhere(predicate) => builder
                .with_save_mode(SaveMode::Overwrite)
                .with_replace_where(predicate),
        };
        let table = builder.await.map_err(|e| LakeError::delta(name, e))?;
        crate::commit::committed();
        self.lake.remember(name, &table);
        Ok(table.version().unwrap_or(0))
    }
}

/// `batch` with every column copied into buffers that hold only its rows.
fn compacted(batch: &RecordBatch) -> Result<RecordBatch> {
    let columns = batch
        .columns()
        .iter()
        .map(|column| {
            let data = column.to_data();
            let mut copy = MutableArrayData::new(vec![&data], false, data.len());
            copy.try_extend(0, 0, data.len())?;
            Ok(make_array(copy.freeze()))
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(RecordBatch::try_new(batch.schema(), columns)?)
}

/// Looks up the definition of a lake table by name.
pub fn table_def(name: &str) -> Option<&'static TableDef> {
    cxrlake_schemas::table(name)
}
