//! A stage's SQL file: its `-- @step` / `-- @table` statements, running one, casting its
//! result to the table's schema (with struct flattening), and the SQL hash of the fingerprint.
//!
//! ```text
//! -- @step <name>     the result is registered as the table <name> for the statements
//!                     after it (in memory, or in the lake's scratch on a cluster)
//! -- @table <name>    the result is also written to the lake table <name>; a struct column
//!                     flattened with `unnest(s)` fills the table's columns by field name
//! ```

use std::sync::Arc;

use cxrlake_lake::Lake;
use datafusion::arrow::array::{AsArray, RecordBatch, new_null_array};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Int64Type, SchemaRef, UInt64Type};
use datafusion::catalog::TableProvider;
use datafusion::common::{Column, DataFusionError};
use datafusion::dataframe::{DataFrame, DataFrameWriteOptions};
use datafusion::datasource::MemTable;
use datafusion::logical_expr::{Expr, ScalarUDF};
use datafusion::physical_plan::{self, displayable};
use datafusion::prelude::{SessionContext, lit};
use datafusion::scalar::ScalarValue;

use crate::error::{PipelineError, Result};

/// The column of `names` (a result's column names) that fills the table column `name`: the
/// column of that name, else the one field of a struct flattened by `unnest(s)` (DataFusion
/// names it `s.name`, or `t.s.name` when `s` is qualified).
fn column_for<'a>(
    names: impl Iterator<Item = &'a str>,
    name: &str,
) -> std::result::Result<Option<usize>, String> {
    let suffix = format!(".{name}");
    let mut hits = Vec::new();
    for (index, candidate) in names.enumerate() {
        if candidate == name {
            return Ok(Some(index));
        }
        if candidate.ends_with(&suffix) {
            hits.push((index, candidate));
        }
    }
    match hits.as_slice() {
        [] => Ok(None),
        [(one, _)] => Ok(Some(*one)),
        many => Err(format!(
            "column {name} is ambiguous: {}",
            many.iter()
                .map(|(_, name)| *name)
                .collect::<Vec<_>>()
                .join(", ")
        )),
    }
}

/// Casts a stage result to the table's `schema` (Delta reads strings as views, lists keep their
/// field names, …) so that every stage writes exactly the declared types; nullable columns the
/// stage does not select are NULL. A column missing by name is taken from a struct flattened
/// with `unnest(s)` ([`column_for`]).
pub(crate) fn conform(
    stage: &'static str,
    table: &str,
    schema: &SchemaRef,
    batch: &RecordBatch,
) -> Result<RecordBatch> {
    let error = |reason: String| PipelineError::Schema {
        stage,
        table: table.to_string(),
        reason,
    };
    let columns = schema
        .fields()
        .iter()
        .map(|field| {
            let names = batch
                .schema_ref()
                .fields()
                .iter()
                .map(|f| f.name().as_str());
            let Some(column) = column_for(names, field.name())
                .map_err(&error)?
                .map(|index| batch.column(index))
            else {
                // A nullable column the stage does not compute (e.g. judged later) is NULL.
                if field.is_nullable() {
                    return Ok(new_null_array(field.data_type(), batch.num_rows()));
                }
                return Err(error(format!("missing column {}", field.name())));
            };
            cast(column, field.data_type())
                .map_err(|e| error(format!("column {}: {e}", field.name())))
        })
        .collect::<Result<Vec<_>>>()?;
    RecordBatch::try_new(schema.clone(), columns).map_err(|e| error(e.to_string()))
}

/// Runs `sql` of `stage` to completion.
pub async fn collect(
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
pub async fn count(ctx: &SessionContext, stage: &'static str, sql: &str) -> Result<usize> {
    let batches = collect(ctx, stage, sql).await?;
    Ok(batches
        .first()
        .and_then(|b| b.column(0).as_primitive_opt::<Int64Type>())
        .map(|a| a.value(0))
        .unwrap_or(0) as usize)
}

/// A short content hash of a stage's SQL, part of its fingerprint: of its [`sql_code`], so
/// that editing a comment or the layout does not make the stage's tables stale.
pub fn sql_hash(sql: &str) -> String {
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

/// Splits a stage's SQL (of `file`, named in errors) into its `-- @step <name>` / `-- @table
/// <name>` statements; `tables` says which names are tables the stage may write.
pub fn statements(file: &str, sql: &str, tables: &dyn Fn(&str) -> bool) -> Result<Vec<Statement>> {
    let error = |reason: String| PipelineError::Sql {
        file: file.to_string(),
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
            if is_table && !tables(name) {
                return Err(error(format!(
                    "@table {name} is not a table of the stage's outputs"
                )));
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
    let query = statement_error(stage, statement);
    let frame = statement_frame(ctx, stage, statement, params).await?;
    let planned = Arc::new(frame.schema().as_arrow().clone());
    let task = Arc::new(frame.task_ctx());
    let plan = frame.create_physical_plan().await.map_err(&query)?;
    if tracing::enabled!(tracing::Level::DEBUG) {
        tracing::debug!(
            stage,
            statement = statement.name.as_str(),
            "physical plan:\n{}",
            displayable(plan.as_ref()).indent(true)
        );
    }
    let batches = physical_plan::collect(plan, task).await.map_err(query)?;
    // Executed batches may differ from the plan in nullability; theirs is what a MemTable needs.
    let schema = batches.first().map_or(planned, RecordBatch::schema);
    Ok((schema, batches))
}

/// cxrlake's `conform_to` function.
fn conform_to() -> ScalarUDF {
    ScalarUDF::from(cxrlake_udfs::conform_to::ConformToFunc::new())
}

/// The error of `statement` of `stage` from a DataFusion error.
fn statement_error<'a>(
    stage: &'static str,
    statement: &'a Statement,
) -> impl Fn(DataFusionError) -> PipelineError + 'a {
    move |e| PipelineError::Statement {
        stage,
        statement: statement.name.clone(),
        source: Box::new(e),
    }
}

/// `statement` planned in `ctx` with the values of the `$params` it uses.
async fn statement_frame(
    ctx: &SessionContext,
    stage: &'static str,
    statement: &Statement,
    params: &[(&str, ScalarValue)],
) -> Result<DataFrame> {
    let query = statement_error(stage, statement);
    let frame = ctx.sql(&statement.sql).await.map_err(&query)?;
    let used: Vec<(&str, ScalarValue)> = params
        .iter()
        .filter(|(name, _)| statement.sql.contains(&format!("${name}")))
        .map(|(name, value)| (*name, value.clone()))
        .collect();
    if used.is_empty() {
        return Ok(frame);
    }
    frame.with_param_values(used).map_err(query)
}

/// Runs the `@table` statement `statement` as `COPY (SELECT <its columns cast to the table's
/// schema by `conform_to`, as [`conform`] casts them>) TO '<folder>' STORED AS PARQUET`: where the session runs
/// (a cluster's executors), its rows are written as data files into `folder` for this process to
/// commit; the number of rows.
pub(crate) async fn copy_statement(
    ctx: &SessionContext,
    stage: &'static str,
    statement: &Statement,
    params: &[(&str, ScalarValue)],
    schema: &SchemaRef,
    folder: &str,
) -> Result<usize> {
    let query = statement_error(stage, statement);
    let frame = statement_frame(ctx, stage, statement, params).await?;
    let error = |reason: String| PipelineError::Schema {
        stage,
        table: statement.name.clone(),
        reason,
    };
    let columns = schema
        .fields()
        .iter()
        .map(|field| {
            let names = frame.schema().fields().iter().map(|f| f.name().as_str());
            let value = match column_for(names, field.name()).map_err(&error)? {
                Some(index) => Expr::Column(Column::from(frame.schema().qualified_field(index))),
                // A nullable column the stage does not compute is NULL, as in `conform`.
                None if field.is_nullable() => lit(ScalarValue::Null),
                None => return Err(error(format!("missing column {}", field.name()))),
            };
            let conformed = conform_to().call(vec![
                value,
                lit(statement.name.as_str()),
                lit(field.name().as_str()),
            ]);
            Ok(conformed.alias(field.name()))
        })
        .collect::<Result<Vec<_>>>()?;
    let written = frame
        .select(columns)
        .map_err(&query)?
        .write_parquet(folder, DataFrameWriteOptions::new(), None)
        .await
        .map_err(&query)?;
    let rows = written
        .first()
        .and_then(|b| b.column(0).as_primitive_opt::<UInt64Type>())
        .map_or(0, |counts| counts.values().iter().sum::<u64>());
    Ok(rows as usize)
}

/// Where a stage keeps the rows its statements compute for the statements after them.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Holding<'a> {
    /// In memory (a run in this process).
    Memory,
    /// As scratch tables in the lake, under one folder per chunk: a cluster's executors read
    /// them as files instead of receiving them inside every plan.
    Lake(&'a Lake, &'a str),
    /// Not at all: no statement reads them.
    Unread,
}

/// Registers `batches` as the table `name`, shadowing a lake table of that name, in memory or
/// in the lake's scratch as `holding` says.
///
/// View-typed strings become plain ones: a string view array taken from a join or an aggregate
/// references every data buffer of its source, and DataFusion counts them all for each batch
/// it passes on (a join probing such a table spent most of its time counting memory).
pub(crate) async fn hold(
    ctx: &SessionContext,
    holding: Holding<'_>,
    stage: &'static str,
    name: &str,
    schema: SchemaRef,
    batches: &[RecordBatch],
) -> Result<()> {
    let table: Arc<dyn TableProvider> = match holding {
        Holding::Unread => return Ok(()),
        Holding::Memory => memory_table(stage, schema, batches)?,
        Holding::Lake(lake, folder) => {
            let (schema, batches) = plain(stage, schema, batches)?;
            lake.put_scratch(folder, name, schema, &batches, &ctx.runtime_env())
                .await?
        }
    };
    shadow(ctx, stage, name, table)
}

/// `batches` as an in-memory table (strings plain).
fn memory_table(
    stage: &'static str,
    schema: SchemaRef,
    batches: &[RecordBatch],
) -> Result<Arc<dyn TableProvider>> {
    let (schema, batches) = plain(stage, schema, batches)?;
    let table =
        MemTable::try_new(schema, vec![batches]).map_err(|e| PipelineError::query(stage, e))?;
    Ok(Arc::new(table))
}

/// Registers `table` as `name` in place of what had that name.
pub(crate) fn shadow(
    ctx: &SessionContext,
    stage: &'static str,
    name: &str,
    table: Arc<dyn TableProvider>,
) -> Result<()> {
    // register_table refuses an existing name, and the lake's table of that name is registered.
    ctx.deregister_table(name)
        .map_err(|e| PipelineError::query(stage, e))?;
    ctx.register_table(name, table)
        .map_err(|e| PipelineError::query(stage, e))?;
    Ok(())
}

/// `batches` with plain strings where `schema` has views.
fn plain(
    stage: &'static str,
    schema: SchemaRef,
    batches: &[RecordBatch],
) -> Result<(SchemaRef, Vec<RecordBatch>)> {
    if !schema
        .fields()
        .iter()
        .any(|f| cxrlake_lake::has_view_types(f.data_type()))
    {
        return Ok((schema, batches.to_vec()));
    }
    let plain = cxrlake_lake::portable_schema(&schema);
    let batches = batches
        .iter()
        .map(|batch| cxrlake_lake::portable_batch(batch, &plain))
        .collect::<std::result::Result<Vec<_>, _>>()
        .map_err(|e| PipelineError::query(stage, e.into()))?;
    Ok((plain, batches))
}

/// The non-null values of the first column of `batches` as strings.
pub fn first_column_strings(stage: &'static str, batches: &[RecordBatch]) -> Result<Vec<String>> {
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

/// `(first, last, patients)` of consecutive chunks of `per_chunk` patients of `table`, in id
/// order.
pub(crate) async fn patient_ranges(
    ctx: &SessionContext,
    stage: &'static str,
    table: &str,
    per_chunk: usize,
) -> Result<Vec<(String, String, usize)>> {
    let batches = collect(
        ctx,
        stage,
        &format!("SELECT DISTINCT patient_id FROM {table} ORDER BY patient_id"),
    )
    .await?;
    let ids = first_column_strings(stage, &batches)?;
    Ok(ids
        .chunks(per_chunk.max(1))
        .map(|chunk| {
            (
                chunk[0].clone(),
                chunk[chunk.len() - 1].clone(),
                chunk.len(),
            )
        })
        .collect())
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
