//! What every stage module shares: splitting its SQL file into statements, running them (chunk
//! by chunk of patients), casting results to the table schemas, and the SQL hash of its
//! fingerprint.

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

/// A short content hash of a stage's SQL, part of its fingerprint.
pub(crate) fn sql_hash(sql: &str) -> String {
    use sha2::Digest;
    hex::encode(&sha2::Sha256::digest(sql.as_bytes())[..8])
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

/// A session whose `inputs` are views of the lake's tables filtered to the patients
/// `first..=last` (Delta file statistics prune them: tables are written in patient order), with
/// cxrlake's functions and `functions`. Inputs without a `patient_id` column (e.g. the
/// content-addressed `qa_judgements`) are registered whole.
pub(crate) async fn chunk_context(
    lake_ctx: &SessionContext,
    stage: &'static str,
    inputs: &[&str],
    range: Option<(&str, &str)>,
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
        let per_patient = frame
            .schema()
            .has_column_with_unqualified_name("patient_id");
        let frame = match range {
            Some((first, last)) if per_patient => frame
                .filter(
                    col("patient_id")
                        .gt_eq(lit(first))
                        .and(col("patient_id").lt_eq(lit(last))),
                )
                .map_err(|e| PipelineError::query(stage, e))?,
            _ => frame,
        };
        ctx.register_table(*table, frame.into_view())
            .map_err(|e| PipelineError::query(stage, e))?;
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

    /// Runs every chunk; returns the rows written per table and the last table version.
    pub(crate) async fn run(
        &self,
        lake: &Lake,
        fingerprint: &serde_json::Value,
    ) -> Result<(Vec<(String, usize)>, u64)> {
        self.run_on(lake, &lake.session().await?, fingerprint).await
    }

    /// Like [`ChunkedStage::run`], reading the tables of `lake_ctx` (e.g. a session with some
    /// tables pinned to a version, [`Lake::session_with`]).
    pub(crate) async fn run_on(
        &self,
        lake: &Lake,
        lake_ctx: &SessionContext,
        fingerprint: &serde_json::Value,
    ) -> Result<(Vec<(String, usize)>, u64)> {
        let statements = statements(self.stage, self.sql)?;
        let first_input = self.inputs.first().copied().unwrap_or("reports");
        let ranges = patient_ranges(lake_ctx, self.stage, first_input, self.chunk_patients).await?;
        let chunks = ranges.len().max(1);
        let mut rows: Vec<(String, usize)> = Vec::new();
        let mut version = 0;
        let mut pending: Option<PendingWrite> = None;
        for chunk in 0..chunks {
            let range = ranges.get(chunk).map(|(a, b)| (a.as_str(), b.as_str()));
            // No patients at all: an empty range writes empty tables.
            let range = range.or(Some(("", "")));
            let ctx =
                chunk_context(lake_ctx, self.stage, self.inputs, range, &self.functions).await?;
            let mut outputs = Vec::new();
            for statement in &statements {
                let started = std::time::Instant::now();
                let (schema, batches) =
                    run_statement(&ctx, self.stage, statement, &self.params).await?;
                tracing::info!(
                    stage = self.stage,
                    statement = statement.name.as_str(),
                    chunk = chunk + 1,
                    rows = batches.iter().map(RecordBatch::num_rows).sum::<usize>(),
                    seconds = started.elapsed().as_secs_f64(),
                    "statement done"
                );
                register(&ctx, self.stage, &statement.name, schema, &batches)?;
                if statement.is_table {
                    outputs.push((statement.name.clone(), batches));
                }
            }
            // Conform now (errors surface here), write while the next chunk computes: at most
            // one chunk's write is in flight, so commits stay in chunk order.
            let mut writes = Vec::new();
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
                if batches.is_empty() {
                    batches.push(RecordBatch::new_empty((def.schema)()));
                }
                let commit = StageCommit::new(self.stage)
                    .with_fingerprint(fingerprint.clone())
                    .with_metrics(serde_json::json!({
                        "rows": written,
                        "chunk": chunk + 1,
                        "chunks": chunks,
                    }));
                writes.push((def.name, commit, batches, written));
            }
            drop(ctx);
            if let Some(previous) = pending.take() {
                finish(previous, &mut rows, &mut version).await?;
            }
            let lake = lake.clone();
            pending = Some(tokio::spawn(async move {
                let mut done = Vec::new();
                for (table, commit, batches, written) in writes {
                    let write = lake.write(table).commit(commit);
                    let write = if chunk == 0 {
                        write.overwrite()
                    } else {
                        write.append()
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
        Ok((rows, version))
    }
}
