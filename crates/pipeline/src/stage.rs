//! What every stage module shares: splitting its SQL file into statements, running them (chunk
//! by chunk of patients), casting results to the table schemas, and the SQL hash of its
//! fingerprint.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use cxrlake_lake::{Lake, StageCommit};
use datafusion::arrow::array::{AsArray, RecordBatch, new_null_array};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Int64Type, SchemaRef};
use datafusion::datasource::MemTable;
use datafusion::logical_expr::ScalarUDF;
use datafusion::prelude::{SessionContext, col, lit};
use datafusion::scalar::ScalarValue;

use crate::error::{PipelineError, Result};
use crate::scope::{Digests, Scope, digest, study_digests_of, table_digests};

/// Casts a stage result to the table's schema (Delta reads strings as views, lists keep their
/// field names, …) so that every stage writes exactly the declared types; nullable columns the
/// stage does not select are NULL.
pub(crate) fn conform(
    stage: &'static str,
    table: &'static str,
    batch: &RecordBatch,
) -> Result<RecordBatch> {
    let schema = cxrlake_schemas::table(table)
        .map(|t| (t.schema)())
        .ok_or_else(|| PipelineError::Schema {
            stage,
            table,
            reason: "unknown table".into(),
        })?;
    let columns = schema
        .fields()
        .iter()
        .map(|field| {
            let Some(column) = batch.column_by_name(field.name()) else {
                // A nullable column the stage does not compute (e.g. judged later) is NULL.
                if field.is_nullable() {
                    return Ok(new_null_array(field.data_type(), batch.num_rows()));
                }
                return Err(PipelineError::Schema {
                    stage,
                    table,
                    reason: format!("missing column {}", field.name()),
                });
            };
            cast(column, field.data_type()).map_err(|e| PipelineError::Schema {
                stage,
                table,
                reason: format!("column {}: {e}", field.name()),
            })
        })
        .collect::<Result<Vec<_>>>()?;
    RecordBatch::try_new(schema, columns).map_err(|e| PipelineError::Schema {
        stage,
        table,
        reason: e.to_string(),
    })
}

/// Runs `sql` of `stage` to completion.
pub(crate) async fn collect(
    ctx: &SessionContext,
    stage: &'static str,
    sql: &str,
) -> Result<Vec<RecordBatch>> {
    ctx.sql(sql)
        .await
        .map_err(|e| PipelineError::query(stage, e))?
        .collect()
        .await
        .map_err(|e| PipelineError::query(stage, e))
}

/// The single integer `sql` of `stage` returns (a `count(*)`).
pub(crate) async fn count(ctx: &SessionContext, stage: &'static str, sql: &str) -> Result<usize> {
    let batches = collect(ctx, stage, sql).await?;
    Ok(batches
        .first()
        .and_then(|b| b.column(0).as_primitive_opt::<Int64Type>())
        .map(|a| a.value(0))
        .unwrap_or(0) as usize)
}

/// A short content hash of a stage's SQL, part of its fingerprint: of its [`sql_code`], so
/// that editing a comment or the layout does not make the stage's tables stale.
pub(crate) fn sql_hash(sql: &str) -> String {
    use sha2::Digest;
    hex::encode(&sha2::Sha256::digest(sql_code(sql).as_bytes())[..8])
}

/// `sql` without its `--` comments (but with the `-- @step` / `-- @table` headers, which name
/// the statements), each line trimmed, blank lines dropped. `--` inside a string literal or a
/// quoted identifier is text, not a comment.
fn sql_code(sql: &str) -> String {
    let mut out = String::with_capacity(sql.len());
    let mut quote: Option<char> = None;
    for line in sql.lines() {
        let trimmed = line.trim();
        let in_text = quote.is_some();
        if !in_text && trimmed.starts_with("-- @") {
            out.push_str(trimmed);
            out.push('\n');
            continue;
        }
        let mut code = String::with_capacity(line.len());
        let mut chars = line.chars().peekable();
        while let Some(c) = chars.next() {
            match quote {
                Some(q) if c == q => quote = None,
                Some(_) => {}
                None if c == '\'' || c == '"' => quote = Some(c),
                None if c == '-' && chars.peek() == Some(&'-') => break,
                None => {}
            }
            code.push(c);
        }
        // Whitespace inside a string literal is kept.
        let code = if in_text {
            code.as_str()
        } else {
            code.trim_start()
        };
        let code = if quote.is_some() {
            code
        } else {
            code.trim_end()
        };
        if !code.is_empty() || in_text {
            out.push_str(code);
            out.push('\n');
        }
    }
    out
}

/// One statement of a stage's SQL file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Statement {
    /// The name its result is registered under.
    pub name: String,
    /// Whether the result is written to the lake table `name`.
    pub is_table: bool,
    /// The SQL text.
    pub sql: String,
}

/// Splits the SQL file of `stage` into its `-- @step <name>` / `-- @table <name>` statements.
pub(crate) fn statements(stage: &str, sql: &str) -> Result<Vec<Statement>> {
    let error = |reason: String| PipelineError::Sql {
        file: format!("sql/{stage}.sql"),
        reason,
    };
    let mut out: Vec<Statement> = Vec::new();
    for line in sql.lines() {
        let header = line.trim().strip_prefix("-- @");
        if let Some(header) = header {
            let (kind, name) = header.split_once(' ').unwrap_or((header, ""));
            let is_table = match kind {
                "step" => false,
                "table" => true,
                _ => return Err(error(format!("unknown header '-- @{header}'"))),
            };
            let name = name.trim();
            if name.is_empty() {
                return Err(error(format!("header '-- @{header}' has no name")));
            }
            if is_table && cxrlake_schemas::table(name).is_none() {
                return Err(error(format!("@table {name} is not a lake table")));
            }
            out.push(Statement {
                name: name.to_string(),
                is_table,
                sql: String::new(),
            });
        } else if let Some(statement) = out.last_mut() {
            statement.sql.push_str(line);
            statement.sql.push('\n');
        }
    }
    Ok(out)
}

/// Runs one statement with the `$name` parameters it uses; returns its schema with its batches
/// (there may be none).
pub(crate) async fn run_statement(
    ctx: &SessionContext,
    stage: &'static str,
    statement: &Statement,
    params: &[(&str, ScalarValue)],
) -> Result<(SchemaRef, Vec<RecordBatch>)> {
    let query = |e| PipelineError::Statement {
        stage,
        statement: statement.name.clone(),
        source: Box::new(e),
    };
    let frame = ctx.sql(&statement.sql).await.map_err(query)?;
    let used: Vec<(&str, ScalarValue)> = params
        .iter()
        .filter(|(name, _)| statement.sql.contains(&format!("${name}")))
        .map(|(name, value)| (*name, value.clone()))
        .collect();
    let frame = if used.is_empty() {
        frame
    } else {
        frame.with_param_values(used).map_err(query)?
    };
    let planned = Arc::new(frame.schema().as_arrow().clone());
    let batches = frame.collect().await.map_err(query)?;
    // Executed batches may differ from the plan in nullability; theirs is what a MemTable needs.
    let schema = batches.first().map_or(planned, RecordBatch::schema);
    Ok((schema, batches))
}

/// Registers `batches` as the in-memory table `name`, shadowing a lake table of that name.
pub(crate) fn register(
    ctx: &SessionContext,
    stage: &'static str,
    name: &str,
    schema: SchemaRef,
    batches: &[RecordBatch],
) -> Result<()> {
    let table = MemTable::try_new(schema, vec![batches.to_vec()])
        .map_err(|e| PipelineError::query(stage, e))?;
    // register_table refuses an existing name, and the lake's table of that name is registered.
    ctx.deregister_table(name)
        .map_err(|e| PipelineError::query(stage, e))?;
    ctx.register_table(name, Arc::new(table))
        .map_err(|e| PipelineError::query(stage, e))?;
    Ok(())
}

/// The non-null values of the first column of `batches` as strings.
pub(crate) fn first_column_strings(
    stage: &'static str,
    batches: &[RecordBatch],
) -> Result<Vec<String>> {
    let mut out = Vec::new();
    for batch in batches {
        let column = cast(batch.column(0), &DataType::Utf8)
            .map_err(|e| PipelineError::query(stage, e.into()))?;
        out.extend(
            column
                .as_string::<i32>()
                .iter()
                .flatten()
                .map(str::to_string),
        );
    }
    Ok(out)
}

/// `(first, last)` patient ids of consecutive chunks of `per_chunk` patients of `table`, in id
/// order.
pub(crate) async fn patient_ranges(
    ctx: &SessionContext,
    stage: &'static str,
    table: &str,
    per_chunk: usize,
) -> Result<Vec<(String, String)>> {
    let batches = collect(
        ctx,
        stage,
        &format!("SELECT DISTINCT patient_id FROM {table} ORDER BY patient_id"),
    )
    .await?;
    let ids = first_column_strings(stage, &batches)?;
    Ok(ids
        .chunks(per_chunk.max(1))
        .map(|chunk| (chunk[0].clone(), chunk[chunk.len() - 1].clone()))
        .collect())
}

/// The rows a chunk reads: a patient range (full runs) or a list of studies (scoped runs).
#[derive(Debug, Clone, Copy)]
pub(crate) enum Rows<'a> {
    /// The patients `first..=last` (Delta file statistics prune them: tables are written in
    /// patient order).
    Patients(&'a str, &'a str),
    /// These studies.
    Studies(&'a [String]),
}

/// A session whose `inputs` are the lake's tables (as `lake_ctx` sees them: some may be pinned
/// to the versions in `pinned`) limited to `rows`, with cxrlake's functions and `functions`.
/// A patient range is a filtered view (Delta file statistics prune it: tables are written in
/// patient order); a list of studies is read row group by row group
/// ([`Lake::read_studies`]) into memory, so a scoped run never scans whole tables. Inputs
/// without a `patient_id` (`study_id`) column, e.g. the content-addressed `qa_judgements`, are
/// registered whole.
pub(crate) async fn chunk_context(
    lake: &Lake,
    lake_ctx: &SessionContext,
    pinned: &HashMap<String, u64>,
    stage: &'static str,
    inputs: &[&str],
    rows: Rows<'_>,
    functions: &[ScalarUDF],
) -> Result<SessionContext> {
    let ctx = cxrlake_udfs::session_context_on(lake_ctx.copied_config(), lake_ctx.runtime_env());
    for function in functions {
        ctx.register_udf(function.clone());
    }
    for table in inputs {
        let frame = lake_ctx
            .table(*table)
            .await
            .map_err(|e| PipelineError::query(stage, e))?;
        let has = |c: &str| frame.schema().has_column_with_unqualified_name(c);
        match rows {
            Rows::Patients(first, last) if has("patient_id") => {
                let filter = col("patient_id")
                    .gt_eq(lit(first))
                    .and(col("patient_id").lt_eq(lit(last)));
                let frame = frame
                    .filter(filter)
                    .map_err(|e| PipelineError::query(stage, e))?;
                ctx.register_table(*table, frame.into_view())
                    .map_err(|e| PipelineError::query(stage, e))?;
            }
            Rows::Studies(ids) if has("study_id") => {
                let ids: BTreeSet<String> = ids.iter().cloned().collect();
                let started = std::time::Instant::now();
                let batches = lake
                    .read_studies(table, pinned.get(*table).copied(), &ids)
                    .await?;
                tracing::debug!(
                    stage,
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
                let table_data = MemTable::try_new(schema, vec![batches])
                    .map_err(|e| PipelineError::query(stage, e))?;
                ctx.register_table(*table, Arc::new(table_data))
                    .map_err(|e| PipelineError::query(stage, e))?;
            }
            _ => {
                ctx.register_table(*table, frame.into_view())
                    .map_err(|e| PipelineError::query(stage, e))?;
            }
        }
    }
    Ok(ctx)
}

/// The writes of one chunk, running: per table (name, rows, version).
type PendingWrite = tokio::task::JoinHandle<Result<Vec<(String, usize, u64)>>>;

/// Waits for a chunk's writes and adds them to the totals.
async fn finish(
    pending: PendingWrite,
    rows: &mut Vec<(String, usize)>,
    version: &mut u64,
) -> Result<()> {
    let done = match pending.await {
        Ok(done) => done?,
        Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
        Err(e) => {
            return Err(PipelineError::Config(format!(
                "a table write was cancelled: {e}"
            )));
        }
    };
    for (table, written, committed) in done {
        *version = committed;
        match rows.iter_mut().find(|(name, _)| *name == table) {
            Some((_, n)) => *n += written,
            None => rows.push((table, written)),
        }
    }
    Ok(())
}

/// A stage run chunk by chunk of patients: each chunk runs every statement of the stage's SQL
/// over its patients and writes its `@table` results (the first chunk replaces the tables, the
/// others append; every commit carries the fingerprint and `chunk`/`chunks`, so an interrupted
/// run is visible and a rerun replaces it).
#[derive(Debug)]
pub(crate) struct ChunkedStage<'a> {
    /// Stage name.
    pub stage: &'static str,
    /// Its SQL file.
    pub sql: &'static str,
    /// Tables read, each with a `patient_id` column; the first lists the patients.
    pub inputs: &'a [&'a str],
    /// Functions the SQL calls besides cxrlake's own.
    pub functions: Vec<ScalarUDF>,
    /// `$name` parameters.
    pub params: Vec<(&'static str, ScalarValue)>,
    /// Patients per chunk.
    pub chunk_patients: usize,
}

impl ChunkedStage<'_> {
    /// The input tables' versions, for the fingerprint.
    pub(crate) async fn input_versions(&self, lake: &Lake) -> Result<serde_json::Value> {
        let mut inputs = serde_json::Map::new();
        for table in self.inputs {
            let version = lake.table(table).await?.version();
            inputs.insert(table.to_string(), serde_json::json!(version));
        }
        Ok(serde_json::Value::Object(inputs))
    }

    /// Runs every chunk over all patients, replacing the stage's tables; returns the rows
    /// written per table and the last table version.
    pub(crate) async fn run(
        &self,
        lake: &Lake,
        fingerprint: &serde_json::Value,
    ) -> Result<(Vec<(String, usize)>, u64)> {
        let run = self
            .run_scoped(lake, &HashMap::new(), fingerprint, &Scope::All, false)
            .await?;
        Ok((run.rows, run.version))
    }

    /// Runs the stage over `scope`, reading the lake's tables (those in `pinned` at that
    /// version, [`Lake::session_with`]). All: chunk by chunk of patients, the
    /// first chunk replacing the tables, the others appending. Studies: chunk by chunk of
    /// studies, each replacing exactly its studies' rows. With `detect`, every chunk compares its
    /// studies' new rows with the old ones ([`crate::scope`]) and the result names the studies
    /// whose rows changed (else the scope itself).
    pub(crate) async fn run_scoped(
        &self,
        lake: &Lake,
        pinned: &HashMap<String, u64>,
        fingerprint: &serde_json::Value,
        scope: &Scope,
        detect: bool,
    ) -> Result<StageRun> {
        let lake_ctx = &lake.session_with(pinned).await?;
        let statements = statements(self.stage, self.sql)?;
        let chunks: Vec<Chunk> = match scope.studies() {
            None => {
                let first_input = self.inputs.first().copied().unwrap_or("reports");
                let ranges =
                    patient_ranges(lake_ctx, self.stage, first_input, self.chunk_patients).await?;
                if ranges.is_empty() {
                    // No patients at all: an empty range writes empty tables.
                    vec![Chunk::Patients(String::new(), String::new())]
                } else {
                    ranges
                        .into_iter()
                        .map(|(a, b)| Chunk::Patients(a, b))
                        .collect()
                }
            }
            Some(ids) => {
                let ids: Vec<String> = ids.iter().cloned().collect();
                // Studies per chunk: ten times a full run's (a patient has about three studies),
                // as every chunk's replace reads the study ids of the table's files.
                let per_chunk = self.chunk_patients.saturating_mul(30).clamp(1, 20_000);
                ids.chunks(per_chunk)
                    .map(|c| Chunk::Studies(c.to_vec()))
                    .collect()
            }
        };
        let n_chunks = chunks.len();
        // Studies a detecting full run has seen, per table (old or new rows in some chunk).
        let mut seen: HashMap<&str, BTreeSet<String>> = HashMap::new();
        let mut changed = BTreeSet::new();
        let mut rows: Vec<(String, usize)> = Vec::new();
        let mut version = 0;
        let mut pending: Option<PendingWrite> = None;
        for (index, chunk) in chunks.iter().enumerate() {
            let last = index + 1 == n_chunks;
            let ctx = chunk_context(
                lake,
                lake_ctx,
                pinned,
                self.stage,
                self.inputs,
                chunk.rows(),
                &self.functions,
            )
            .await?;
            let mut outputs = Vec::new();
            for statement in &statements {
                let started = std::time::Instant::now();
                let (schema, batches) =
                    run_statement(&ctx, self.stage, statement, &self.params).await?;
                tracing::info!(
                    stage = self.stage,
                    statement = statement.name.as_str(),
                    chunk = index + 1,
                    rows = batches.iter().map(RecordBatch::num_rows).sum::<usize>(),
                    seconds = started.elapsed().as_secs_f64(),
                    "statement done"
                );
                register(&ctx, self.stage, &statement.name, schema, &batches)?;
                if statement.is_table {
                    outputs.push((statement.name.clone(), batches));
                }
            }
            drop(ctx);
            // Conform now (errors surface here), write while the next chunk computes: at most
            // one chunk's write is in flight, so commits stay in chunk order.
            let mut writes = Vec::new();
            let mut chunk_changed = BTreeSet::new();
            for (table, batches) in outputs {
                let def = cxrlake_schemas::table(&table).ok_or_else(|| PipelineError::Sql {
                    file: format!("sql/{}.sql", self.stage),
                    reason: format!("@table {table} is not a lake table"),
                })?;
                let written: usize = batches.iter().map(RecordBatch::num_rows).sum();
                let mut batches = batches
                    .iter()
                    .filter(|b| b.num_rows() > 0)
                    .map(|b| conform(self.stage, def.name, b))
                    .collect::<Result<Vec<_>>>()?;
                let per_study = def.replace_by == Some("study_id");
                if detect && per_study {
                    // The chunk's old rows: its studies, or its patient range.
                    let old = match chunk {
                        Chunk::Studies(ids) => {
                            let ids = ids.iter().cloned().collect();
                            study_digests_of(lake, self.stage, def.name, &ids).await?
                        }
                        Chunk::Patients(first, last) => {
                            let filter = col("patient_id")
                                .gt_eq(lit(first.as_str()))
                                .and(col("patient_id").lt_eq(lit(last.as_str())));
                            table_digests(lake_ctx, self.stage, def.name, Some(filter)).await?
                        }
                    };
                    tracing::debug!(stage = self.stage, table = def.name, "old rows digested");
                    let mut new = Digests::new();
                    digest(self.stage, &batches, &mut new)?;
                    chunk_changed.extend(crate::scope::changed(&old, &new));
                    if let Chunk::Patients(..) = chunk {
                        let seen = seen.entry(def.name).or_default();
                        seen.extend(old.into_keys().chain(new.into_keys()));
                        if last {
                            // Studies of patients no chunk covers any more were deleted.
                            let sql = format!("SELECT DISTINCT study_id FROM {}", def.name);
                            let ids = first_column_strings(
                                self.stage,
                                &collect(lake_ctx, self.stage, &sql).await?,
                            )?;
                            chunk_changed.extend(ids.into_iter().filter(|id| !seen.contains(id)));
                        }
                    }
                }
                if batches.is_empty() {
                    batches.push(RecordBatch::new_empty((def.schema)()));
                }
                writes.push((def.name, batches, written));
            }
            changed.extend(chunk_changed.iter().cloned());
            // What changed, for stages reading these tables later: the studies (scoped runs and
            // a detecting full run's last chunk), "all" (full runs), "pending" (earlier chunks
            // of a detecting full run).
            let recorded = match chunk {
                Chunk::Studies(ids) if !detect => serde_json::json!(ids),
                Chunk::Patients(..) if !detect => serde_json::json!("all"),
                Chunk::Patients(..) if !last => serde_json::json!("pending"),
                _ => serde_json::json!(chunk_changed),
            };
            let writes: Vec<_> = writes
                .into_iter()
                .map(|(table, batches, written)| {
                    let commit = StageCommit::new(self.stage)
                        .with_fingerprint(fingerprint.clone())
                        .with_metrics(serde_json::json!({
                            "rows": written,
                            "chunk": index + 1,
                            "chunks": n_chunks,
                            "changed": recorded,
                        }));
                    (table, commit, batches, written)
                })
                .collect();
            if let Some(previous) = pending.take() {
                finish(previous, &mut rows, &mut version).await?;
            }
            let lake = lake.clone();
            let replace = match chunk {
                Chunk::Studies(ids) => Some(ids.clone()),
                Chunk::Patients(..) => None,
            };
            pending = Some(tokio::spawn(async move {
                let mut done = Vec::new();
                for (table, commit, batches, written) in writes {
                    let write = lake.write(table).commit(commit);
                    let write = match (&replace, index) {
                        (Some(ids), _) => write.replace_studies(ids.clone()),
                        (None, 0) => write.overwrite(),
                        (None, _) => write.append(),
                    };
                    let version = write.execute(batches).await?;
                    done.push((table.to_string(), written, version));
                }
                Ok(done)
            }));
        }
        if let Some(previous) = pending.take() {
            finish(previous, &mut rows, &mut version).await?;
        }
        let changed = if detect {
            Scope::Studies(changed)
        } else {
            scope.clone()
        };
        Ok(StageRun {
            rows,
            version,
            changed,
        })
    }
}

/// One chunk of a stage run.
#[derive(Debug)]
enum Chunk {
    /// The patients `first..=last`.
    Patients(String, String),
    /// These studies.
    Studies(Vec<String>),
}

impl Chunk {
    fn rows(&self) -> Rows<'_> {
        match self {
            Chunk::Patients(first, last) => Rows::Patients(first, last),
            Chunk::Studies(ids) => Rows::Studies(ids),
        }
    }
}

/// What a [`ChunkedStage`] run wrote.
#[derive(Debug)]
pub(crate) struct StageRun {
    /// Rows written per table.
    pub rows: Vec<(String, usize)>,
    /// The last table version committed.
    pub version: u64,
    /// The studies whose rows changed (the scope, unless the run detected changes).
    pub changed: Scope,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn comments_and_layout_do_not_change_the_sql_hash_but_code_does() {
        let sql = "-- grade: what it does\n-- @step requests\nSELECT a, -- the id\n  b\nFROM t\n";
        let reworded = "-- grade: what it does, better said\n\n-- @step requests\n\
                        SELECT a,\n    b -- kept\nFROM t   \n";
        assert_eq!(sql_hash(sql), sql_hash(reworded));
        assert_ne!(sql_hash(sql), sql_hash(&sql.replace("FROM t", "FROM u")));
        // A header names a statement: it is code.
        assert_ne!(
            sql_hash(sql),
            sql_hash(&sql.replace("@step requests", "@step asks"))
        );
        // `--` in a string literal or quoted identifier is text.
        let literal = "SELECT '--a' AS \"x--y\" FROM t\n";
        assert_eq!(sql_code(literal), literal);
        assert_ne!(
            sql_hash(literal),
            sql_hash("SELECT '--b' AS \"x--y\" FROM t\n")
        );
        // Whitespace inside a multi-line literal is kept.
        assert_ne!(
            sql_hash("SELECT 'a\n  b' FROM t\n"),
            sql_hash("SELECT 'a\nb' FROM t\n")
        );
    }
}
