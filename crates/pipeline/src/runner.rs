//! The one stage runner: every stage, whatever it computes, runs here.
//!
//! ```text
//!  scope ──► chunks: patient ranges of the first input (full run), groups of studies (scoped
//!            run), or one chunk (Chunking::Whole)
//!  per chunk:  session over the inputs limited to the chunk (pinned input versions)
//!              + run_scope table, $full, the stage's functions and parameters
//!              ──► hooks.before_chunk ──► every statement (hooks.after_statement; the tables
//!                  of hooks.tables_after held like its result)
//!              ──► @table results conformed to their tables
//!              ──► changed studies: digests of old vs new rows (stages that detect changes)
//!              ──► write (while the next chunk computes): overwrite / append / replace the
//!                  chunk's studies, each commit with the Fingerprint and CommitMetrics
//!  hooks.finish ──► StageReport
//! ```
//!
//! With the `engine` setting on a Ballista cluster, the chunk sessions of a stage whose functions
//! all travel (cxrlake's own, and stage functions with a recipe) are clients of the cluster: its
//! statements run there (see `stage_engine`). Steps' results come back here; a `@table`
//! statement's rows are written by the executors as data files in a folder of the table
//! (`copy_statement`), which this process commits (`TableWrite::commit_files`), unless the
//! stage's hooks read them (`RunHooks::reads_rows`), the table is `quarantine` (its raw inputs
//! are capped here) or the stage appends (`Writes::Append`: its replaces are decided here).
//!
//! A killed run leaves its last commits' metrics saying `chunk k of n`, which the planner sees:
//! the stage reruns. Progress is an indicatif bar per stage on stderr (hidden when stderr is not
//! a terminal or the pipeline is quiet) and a `stage` tracing span.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;
use std::time::Instant;

use cxrlake_distributed::Engine;
use cxrlake_lake::{Lake, StageCommit, WrittenFolder};
use cxrlake_schemas::TableDef;
use cxrlake_udfs::portable;
use datafusion::arrow::array::{RecordBatch, StringArray};
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::prelude::{SessionContext, col, lit};
use datafusion::scalar::ScalarValue;
use tracing::Instrument;

use crate::error::{PipelineError, Result};
use crate::fingerprint::{CODE_VERSION, Changed, CommitMetrics, FINGERPRINT_FORMAT, Fingerprint};
use crate::pipeline::Pipeline;
use crate::progress::Progress;
use crate::scope::{Digests, Scope, digest, study_digests_of, table_digests};
use crate::sql::{
    Holding, Statement, collect, conform, copy_statement, count, first_column_strings, hold,
    patient_ranges, run_statement, shadow, sql_hash, statements,
};
use crate::stage::{
    ChunkInfo, Chunking, Prepared, RunHooks, RunMode, Stage, StageDef, StageReport, Writes,
};

/// The name of the table of the run's studies (empty in a full run) that stage SQL may read;
/// `$full` says whether the run covers every study, `$first_chunk` whether this is the run's
/// first chunk (a table that is not per study, such as `quarantine`, is overwritten by the
/// first chunk and appended to by the others, so only the first keeps its other rows).
pub const RUN_SCOPE_TABLE: &str = "run_scope";

/// Studies per chunk of a scoped run, per patient of a full run's chunk: a patient has about
/// three studies, and every chunk's replace reads the study ids of the table's files.
const STUDIES_PER_PATIENT_CHUNK: usize = 30;
/// The most studies in one chunk of a scoped run.
const MAX_STUDIES_PER_CHUNK: usize = 20_000;

/// One chunk of a stage run.
#[derive(Debug)]
enum Chunk {
    /// Every row of the inputs.
    All,
    /// The patients `first..=last`.
    Patients(String, String),
    /// These studies.
    Studies(Vec<String>),
}

/// The rows a chunk's session reads.
#[derive(Debug, Clone, Copy)]
enum Rows<'a> {
    All,
    Patients(&'a str, &'a str),
    Studies(&'a [String]),
}

impl Chunk {
    fn rows(&self) -> Rows<'_> {
        match self {
            Chunk::All => Rows::All,
            Chunk::Patients(first, last) => Rows::Patients(first, last),
            Chunk::Studies(ids) => Rows::Studies(ids),
        }
    }

    fn studies(&self) -> Option<&[String]> {
        match self {
            Chunk::Studies(ids) => Some(ids),
            _ => None,
        }
    }
}

/// Runs `stage` over `scope`: with `detect`, each chunk's changed studies are found and passed
/// on (else the scope); `mode` [`RunMode::CountOnly`] runs no `@table` statement and writes
/// nothing.
pub(crate) async fn run(
    pipeline: &Pipeline,
    stage: &dyn Stage,
    scope: &Scope,
    detect: bool,
    mode: RunMode,
) -> Result<StageReport> {
    let def = stage.def();
    let span = tracing::info_span!("stage", stage = def.name, scope = %scope.describe());
    run_chunks(pipeline, stage, scope, detect, mode)
        .instrument(span)
        .await
}

/// [`run`] inside its span.
async fn run_chunks(
    pipeline: &Pipeline,
    stage: &dyn Stage,
    scope: &Scope,
    detect: bool,
    mode: RunMode,
) -> Result<StageReport> {
    let started = Instant::now();
    let def = stage.def();
    let name = def.name;
    let lake = pipeline.lake();
    let statements = statements(def.file, def.sql, &|t| def.outputs.contains(&t))?;
    let tables: HashMap<&str, (TableDef, SchemaRef)> = def
        .outputs
        .iter()
        .map(|table| {
            let table_def = stage.table(table).ok_or_else(|| PipelineError::Sql {
                file: def.file.to_string(),
                reason: format!("output {table} is not a table cxrlake declares"),
            })?;
            Ok((*table, (table_def, (table_def.schema)())))
        })
        .collect::<Result<_>>()?;

    // A stage's own tables exist before its first run (a stage may declare new ones).
    for (table, schema) in tables.values() {
        lake.create_table(table.name, schema.clone()).await?;
    }
    // Inputs are read at the version their producer stage wrote last.
    let inputs = pipeline.input_versions(stage).await?;
    let mut pinned = HashMap::new();
    for (table, version) in &inputs {
        if lake.table(table).await?.version() != Some(*version) {
            pinned.insert(table.clone(), *version);
        }
    }
    let fingerprint = Fingerprint {
        format: FINGERPRINT_FORMAT,
        stage: name.to_string(),
        run: pipeline.run_id().to_string(),
        code: CODE_VERSION.to_string(),
        sql: sql_hash(def.sql),
        inputs: inputs.into_iter().collect::<BTreeMap<_, _>>(),
        definitions: crate::stage::identity(stage, pipeline).await?,
    };
    let mut prepared = stage.prepare(pipeline, mode).await?;
    let engine = stage_engine(lake, name, &prepared)?;
    let lake_ctx = lake.session_with(&pinned).await?;

    let per_chunk_patients = match def.chunking {
        Chunking::Patients { default } => match pipeline.config().chunk_patients {
            0 => default,
            n => n,
        },
        Chunking::Whole => usize::MAX,
    };
    let (chunks, sizes, unit): (Vec<Chunk>, Vec<usize>, &'static str) =
        match (scope.studies(), def.chunking) {
            (None, Chunking::Whole) => {
                let studies = match def.inputs.first() {
                    Some(first) => count_studies(&lake_ctx, name, first).await?,
                    None => 0,
                };
                (vec![Chunk::All], vec![studies], "studies")
            }
            (None, Chunking::Patients { .. }) => {
                let first = def.inputs.first().copied().unwrap_or("reports");
                let ranges = patient_ranges(&lake_ctx, name, first, per_chunk_patients).await?;
                if ranges.is_empty() {
                    // No patients at all: an empty range writes empty tables.
                    (
                        vec![Chunk::Patients(String::new(), String::new())],
                        vec![0],
                        "patients",
                    )
                } else {
                    let sizes = ranges.iter().map(|(_, _, n)| *n).collect();
                    let chunks = ranges
                        .into_iter()
                        .map(|(a, b, _)| Chunk::Patients(a, b))
                        .collect();
                    (chunks, sizes, "patients")
                }
            }
            (Some(ids), chunking) => {
                let ids: Vec<String> = ids.iter().cloned().collect();
                let per_chunk = match chunking {
                    Chunking::Whole => ids.len().max(1),
                    Chunking::Patients { .. } => per_chunk_patients
                        .saturating_mul(STUDIES_PER_PATIENT_CHUNK)
                        .clamp(1, MAX_STUDIES_PER_CHUNK),
                };
                let chunks: Vec<Chunk> = ids
                    .chunks(per_chunk)
                    .map(|c| Chunk::Studies(c.to_vec()))
                    .collect();
                let sizes = chunks
                    .iter()
                    .map(|c| c.studies().map_or(0, <[String]>::len))
                    .collect();
                (chunks, sizes, "studies")
            }
        };
    let n_chunks = chunks.len();
    let total: usize = sizes.iter().sum();
    let progress = Progress::new(name, total as u64, unit, pipeline.shows_progress());

    let mut seen: HashMap<&str, BTreeSet<String>> = HashMap::new();
    let mut changed = BTreeSet::new();
    let mut rows: Vec<(String, usize)> = def.outputs.iter().map(|t| (t.to_string(), 0)).collect();
    let mut version = 0;
    let mut commits = 0usize;
    let mut pending: Option<PendingWrite> = None;
    // On a cluster, what the statements compute for the next ones is scratch in the lake; a
    // killed run's is removed first.
    let on_cluster = engine != Engine::Local;
    if on_cluster {
        lake.clear_scratch(name).await?;
    }
    for (index, chunk) in chunks.iter().enumerate() {
        let last = index + 1 == n_chunks;
        let folder = format!("{name}/{index}");
        let holding = if on_cluster {
            Holding::Lake(lake, &folder)
        } else {
            Holding::Memory
        };
        let ctx =
            chunk_context(lake, &lake_ctx, &pinned, def, chunk.rows(), scope, holding).await?;
        for function in &prepared.functions {
            ctx.register_udf(function.clone());
        }
        let ctx = match &engine {
            Engine::Local => ctx,
            cluster => cluster.connect(ctx.state()).await?,
        };
        for table in def.side_inputs {
            let frame = lake_ctx
                .table(*table)
                .await
                .map_err(|e| PipelineError::query(name, e))?;
            ctx.register_table(*table, frame.into_view())
                .map_err(|e| PipelineError::query(name, e))?;
        }
        let info = ChunkInfo {
            index,
            chunks: n_chunks,
            studies: chunk.studies(),
        };
        prepared.hooks.before_chunk(&ctx, info).await?;
        let mut params = prepared.params.clone();
        params.push(("full", ScalarValue::from(scope.is_all())));
        params.push(("first_chunk", ScalarValue::from(index == 0)));
        let mut outputs = Vec::new();
        for (position, statement) in statements.iter().enumerate() {
            if mode == RunMode::CountOnly && statement.is_table {
                continue;
            }
            // What the last statement computes is read by no statement: it is not held.
            let kept = if position + 1 == statements.len() {
                Holding::Unread
            } else {
                holding
            };
            let step = Instant::now();
            let table = if statement.is_table {
                Some(
                    tables
                        .get(statement.name.as_str())
                        .ok_or_else(|| PipelineError::Sql {
                            file: def.file.to_string(),
                            reason: format!(
                                "@table {} is not one of the stage's outputs",
                                statement.name
                            ),
                        })?,
                )
            } else {
                None
            };
            // On a cluster the executors write a table's rows as data files, which are
            // committed here, unless this process needs the rows.
            if let Some((table_def, table_schema)) = table
                && on_cluster
                && mode == RunMode::Write
                && def.writes == Writes::Replace
                && table_def.name != "quarantine"
                && !prepared.hooks.reads_rows(statement)
            {
                let written = write_on_executors(
                    &ctx,
                    lake,
                    name,
                    statement,
                    &params,
                    (table_def, table_schema),
                    kept,
                )
                .await?;
                tracing::info!(
                    statement = statement.name.as_str(),
                    chunk = index + 1,
                    chunks = n_chunks,
                    rows = written.rows(),
                    seconds = step.elapsed().as_secs_f64(),
                    "statement done (files written by the executors)"
                );
                outputs.push((statement.name.clone(), written));
                continue;
            }
            let (schema, batches) = run_statement(&ctx, name, statement, &params).await?;
            let produced: usize = batches.iter().map(RecordBatch::num_rows).sum();
            tracing::info!(
                statement = statement.name.as_str(),
                chunk = index + 1,
                chunks = n_chunks,
                rows = produced,
                seconds = step.elapsed().as_secs_f64(),
                "statement done"
            );
            let (schema, batches) = if let Some((table_def, table_schema)) = table {
                // Conformed now (errors surface here): later statements read the table's rows
                // as the table declares them (struct fields flattened by `unnest` included).
                let conformed = batches
                    .iter()
                    .filter(|b| b.num_rows() > 0)
                    .map(|b| {
                        let conformed = conform(name, table_def.name, table_schema, b)?;
                        // An LLM answer of megabytes keeps its first MiB in quarantine.
                        if table_def.name == "quarantine" {
                            return cxrlake_lake::cap_raw(conformed).map_err(|e| {
                                PipelineError::Schema {
                                    stage: name,
                                    table: table_def.name.to_string(),
                                    reason: e.to_string(),
                                }
                            });
                        }
                        Ok(conformed)
                    })
                    .collect::<Result<Vec<_>>>()?;
                (table_schema.clone(), conformed)
            } else {
                (schema, batches)
            };
            prepared
                .hooks
                .after_statement(&ctx, statement, &batches)
                .await?;
            hold_hook_tables(
                &ctx,
                holding,
                name,
                prepared.hooks.as_mut(),
                statement,
                &batches,
            )
            .await?;
            hold(&ctx, kept, name, &statement.name, schema, &batches).await?;
            if statement.is_table {
                outputs.push((statement.name.clone(), Output::Batches(batches)));
            }
        }
        drop(ctx);
        if on_cluster {
            lake.clear_scratch(&folder).await?;
        }
        if mode == RunMode::CountOnly {
            progress.advance(sizes[index] as u64);
            continue;
        }
        // Write while the next chunk computes: at most one chunk's write is in flight, so
        // commits stay in chunk order.
        let mut writes = Vec::new();
        let mut chunk_changed = BTreeSet::new();
        for (table, mut output) in outputs {
            let Some((table_def, schema)) = tables.get(table.as_str()) else {
                continue;
            };
            let written = output.rows();
            let per_study = table_def.replace_by == Some("study_id");
            if detect && per_study {
                let old = match chunk {
                    Chunk::Studies(ids) => {
                        let ids = ids.iter().cloned().collect();
                        study_digests_of(lake, name, table_def.name, &ids).await?
                    }
                    Chunk::Patients(first, last) => {
                        let filter = col("patient_id")
                            .gt_eq(lit(first.as_str()))
                            .and(col("patient_id").lt_eq(lit(last.as_str())));
                        table_digests(&lake_ctx, name, table_def.name, Some(filter)).await?
                    }
                    Chunk::All => table_digests(&lake_ctx, name, table_def.name, None).await?,
                };
                let new = match &output {
                    Output::Batches(batches) => {
                        let mut new = Digests::new();
                        digest(name, batches, &mut new)?;
                        new
                    }
                    Output::Files(folder, _) => {
                        written_digests(lake, name, table_def.name, schema, folder).await?
                    }
                };
                chunk_changed.extend(crate::scope::changed(&old, &new));
                if !matches!(chunk, Chunk::Studies(_)) {
                    let seen = seen.entry(table_def.name).or_default();
                    seen.extend(old.into_keys().chain(new.into_keys()));
                    if last {
                        // Studies of patients no chunk covers any more were deleted.
                        let sql = format!("SELECT DISTINCT study_id FROM {}", table_def.name);
                        let ids =
                            first_column_strings(name, &collect(&lake_ctx, name, &sql).await?)?;
                        chunk_changed.extend(ids.into_iter().filter(|id| !seen.contains(id)));
                    }
                }
            }
            if let Some((_, n)) = rows.iter_mut().find(|(t, _)| *t == table) {
                *n += written;
            }
            let append = def.writes == Writes::Append;
            if let Output::Batches(batches) = &mut output
                && batches.is_empty()
            {
                // An append of nothing commits nothing, unless the run has no commit yet at its
                // last chunk (the commit carries the run's fingerprint).
                if append && !(last && commits == 0) {
                    continue;
                }
                batches.push(RecordBatch::new_empty(schema.clone()));
            }
            let replaces = if append {
                prepared.hooks.replaces(table_def.name)
            } else {
                None
            };
            writes.push((
                table_def.name.to_string(),
                per_study,
                output,
                written,
                replaces,
            ));
        }
        changed.extend(chunk_changed.iter().cloned());
        // What changed, for the stages reading these tables later.
        let recorded = match chunk {
            Chunk::Studies(ids) if !detect => Changed::Studies(ids.clone()),
            Chunk::All | Chunk::Patients(..) if !detect => Changed::All,
            Chunk::Patients(..) if !last => Changed::Pending,
            _ => Changed::Studies(chunk_changed.into_iter().collect()),
        };
        let unfinished = prepared.hooks.unfinished();
        let writes: Vec<_> = writes
            .into_iter()
            .map(|(table, per_study, output, written, replaces)| {
                let metrics = CommitMetrics {
                    rows: written,
                    chunk: index + 1,
                    chunks: n_chunks,
                    changed: recorded.clone(),
                    unfinished: unfinished.clone(),
                };
                let commit = StageCommit::new(name)
                    .with_fingerprint(fingerprint.to_json())
                    .with_metrics(metrics.to_json());
                (table, per_study, commit, output, replaces)
            })
            .collect();
        commits += writes.len();
        if let Some(previous) = pending.take() {
            version = finish_write(previous).await?.max(version);
        }
        let lake = lake.clone();
        let replace = chunk.studies().map(<[String]>::to_vec);
        let append = def.writes == Writes::Append;
        pending = Some(tokio::spawn(async move {
            let mut version = 0;
            for (table, per_study, commit, output, replaces) in writes {
                let write = lake.write(&table).commit(commit);
                // A table that is not per study (e.g. quarantine) is rewritten whole by the
                // statement that reads it.
                let write = match (&replace, append, index) {
                    (_, true, _) => match replaces {
                        Some(predicate) => write.replace_where(predicate),
                        None => write.append(),
                    },
                    (Some(ids), false, _) if per_study => write.replace_studies(ids.clone()),
                    (_, false, 0) => write.overwrite(),
                    (_, false, _) => write.append(),
                };
                version = match output {
                    Output::Batches(batches) => write.execute(batches).await?,
                    Output::Files(folder, rows) => write.commit_files(&folder, rows).await?,
                };
            }
            Ok(version)
        }));
        progress.advance(sizes[index] as u64);
    }
    if let Some(previous) = pending.take() {
        version = finish_write(previous).await?.max(version);
    }
    progress.finish();
    let metrics = prepared.hooks.finish(pipeline, scope).await?;
    let changed = if detect {
        Scope::Studies(changed)
    } else {
        scope.clone()
    };
    let mut report = StageReport {
        stage: name,
        scope: scope.clone(),
        rows,
        chunks: n_chunks,
        version,
        changed,
        units: (total, unit),
        seconds: started.elapsed().as_secs_f64(),
        metrics,
        summary: String::new(),
    };
    report.summary = stage.describe(&report);
    Ok(report)
}

/// The rows of a chunk's `@table` statement.
enum Output {
    /// Computed here, or sent here by a cluster.
    Batches(Vec<RecordBatch>),
    /// Written by a cluster's executors into a folder of the table (this many rows), committed
    /// here.
    Files(WrittenFolder, usize),
}

impl Output {
    fn rows(&self) -> usize {
        match self {
            Output::Batches(batches) => batches.iter().map(RecordBatch::num_rows).sum(),
            Output::Files(_, rows) => *rows,
        }
    }
}

/// Runs the `@table` statement `statement` on the cluster `ctx` is a client of, its rows written
/// by the executors into a new folder of the table (`copy_statement`) and, unless `kept` is
/// [`Holding::Unread`], registered for the statements after it (of stage `stage`).
async fn write_on_executors(
    ctx: &SessionContext,
    lake: &Lake,
    stage: &'static str,
    statement: &Statement,
    params: &[(&str, ScalarValue)],
    (table_def, table_schema): (&TableDef, &SchemaRef),
    kept: Holding<'_>,
) -> Result<Output> {
    let folder = lake.written_folder(table_def.name);
    let rows = copy_statement(ctx, stage, statement, params, table_schema, folder.url()).await?;
    if rows == 0 {
        lake.discard_written(&folder).await?;
        hold(ctx, kept, stage, &statement.name, table_schema.clone(), &[]).await?;
        return Ok(Output::Batches(Vec::new()));
    }
    if !matches!(kept, Holding::Unread) {
        let written = lake.written_table(&folder, table_schema.clone(), &ctx.runtime_env())?;
        shadow(ctx, stage, &statement.name, written)?;
    }
    Ok(Output::Files(folder, rows))
}

/// The digests of the rows the executors wrote into `folder` for `table` (of `schema`), read
/// back from the files.
async fn written_digests(
    lake: &Lake,
    stage: &'static str,
    table: &str,
    schema: &SchemaRef,
    folder: &WrittenFolder,
) -> Result<Digests> {
    let ctx = SessionContext::new();
    let files = lake.written_table(folder, schema.clone(), &ctx.runtime_env())?;
    ctx.register_table(table, files)
        .map_err(|e| PipelineError::query(stage, e))?;
    table_digests(&ctx, stage, table, None).await
}

/// A chunk's writes, running; the last version committed.
type PendingWrite = tokio::task::JoinHandle<Result<u64>>;

async fn finish_write(pending: PendingWrite) -> Result<u64> {
    match pending.await {
        Ok(done) => done,
        Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
        Err(e) => Err(PipelineError::Task(format!(
            "a table write was cancelled: {e}"
        ))),
    }
}

/// Distinct studies of `table` (0 when it has no `study_id`).
async fn count_studies(ctx: &SessionContext, stage: &'static str, table: &str) -> Result<usize> {
    let frame = ctx
        .table(table)
        .await
        .map_err(|e| PipelineError::query(stage, e))?;
    if !frame.schema().has_column_with_unqualified_name("study_id") {
        return Ok(0);
    }
    count(
        ctx,
        stage,
        &format!("SELECT count(DISTINCT study_id) FROM {table}"),
    )
    .await
}

/// Where the statements of `stage` run: on the Ballista cluster of the `engine` setting when
/// every function it calls can be rebuilt there (cxrlake's own, and stage functions with a
/// recipe: `cxrlake_udfs::portable`), else here (functions that call an LLM or fill a cache of
/// this process). Either way the results come back here, where they are conformed, written and
/// committed.
fn stage_engine(lake: &Lake, stage: &'static str, prepared: &Prepared) -> Result<Engine> {
    let engine: Engine = lake.settings().cxrlake.engine.parse()?;
    if engine == Engine::Local {
        return Ok(engine);
    }
    if let Some(function) = prepared.functions.iter().find(|f| !portable::travels(f)) {
        tracing::info!(
            stage,
            "the stage's SQL runs in this process: {} calls an LLM or fills a cache here",
            function.name()
        );
        return Ok(Engine::Local);
    }
    tracing::info!(stage, "the stage's SQL runs on {engine}");
    Ok(engine)
}

/// Holds the tables the stage's hooks compute from `statement`'s result, as the chunk holds its
/// steps.
async fn hold_hook_tables(
    ctx: &SessionContext,
    holding: Holding<'_>,
    stage: &'static str,
    hooks: &mut dyn RunHooks,
    statement: &Statement,
    batches: &[RecordBatch],
) -> Result<()> {
    for table in hooks.tables_after(statement, batches)? {
        hold(
            ctx,
            holding,
            stage,
            table.name,
            table.schema,
            &table.batches,
        )
        .await?;
    }
    Ok(())
}

/// A session whose inputs (the stage's `def.inputs`) are the lake's tables (as `lake_ctx` sees
/// them: some pinned to the versions in `pinned`) limited to `rows`, with cxrlake's functions,
/// and the run's studies as [`RUN_SCOPE_TABLE`]. A patient range is a filtered view (Delta file
/// statistics prune it: tables are written in patient order); a list of studies is read row
/// group by row group ([`Lake::read_studies`]) and kept as `holding` says, so a scoped run never
/// scans whole tables. Inputs without a `patient_id` (`study_id`) column, e.g. the content-addressed
/// `qa_judgements`, are registered whole.
async fn chunk_context(
    lake: &Lake,
    lake_ctx: &SessionContext,
    pinned: &HashMap<String, u64>,
    def: &StageDef,
    rows: Rows<'_>,
    scope: &Scope,
    holding: Holding<'_>,
) -> Result<SessionContext> {
    let (stage, inputs) = (def.name, def.inputs);
    let ctx = cxrlake_udfs::session_context_on(lake_ctx.copied_config(), lake_ctx.runtime_env());
    let query = |e| PipelineError::query(stage, e);
    for table in inputs {
        let frame = lake_ctx.table(*table).await.map_err(query)?;
        let has = |c: &str| frame.schema().has_column_with_unqualified_name(c);
        match rows {
            Rows::Patients(first, last) if has("patient_id") => {
                let filter = col("patient_id")
                    .gt_eq(lit(first))
                    .and(col("patient_id").lt_eq(lit(last)));
                let frame = frame.filter(filter).map_err(query)?;
                ctx.register_table(*table, frame.into_view())
                    .map_err(query)?;
            }
            Rows::Studies(ids) if has("study_id") => {
                let ids: BTreeSet<String> = ids.iter().cloned().collect();
                let started = Instant::now();
                let batches = lake
                    .read_studies(table, pinned.get(*table).copied(), &ids)
                    .await?;
                tracing::debug!(
                    table,
                    rows = batches.iter().map(RecordBatch::num_rows).sum::<usize>(),
                    seconds = started.elapsed().as_secs_f64(),
                    "studies' rows read"
                );
                // The types the lake's table provider reads (e.g. string views), so that the
                // stage's SQL sees what it sees in a full run.
                let schema = Arc::new(frame.schema().as_arrow().clone());
                let batches = batches
                    .iter()
                    .map(|b| cxrlake_lake::cast_batch(b, &schema))
                    .collect::<std::result::Result<Vec<_>, _>>()?;
                hold(&ctx, holding, stage, table, schema, &batches).await?;
            }
            _ => {
                ctx.register_table(*table, frame.into_view())
                    .map_err(query)?;
            }
        }
    }
    let scope_schema = Arc::new(Schema::new(vec![Field::new(
        "study_id",
        DataType::Utf8,
        false,
    )]));
    let ids = match scope {
        Scope::Studies(ids) => ids.iter().cloned().collect(),
        Scope::All => Vec::new(),
    };
    let scope_batch =
        RecordBatch::try_new(scope_schema.clone(), vec![Arc::new(StringArray::from(ids))])
            .map_err(|e| query(e.into()))?;
    hold(
        &ctx,
        holding,
        stage,
        RUN_SCOPE_TABLE,
        scope_schema,
        &[scope_batch],
    )
    .await?;
    Ok(ctx)
}
