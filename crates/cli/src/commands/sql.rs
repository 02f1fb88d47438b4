//! `cxrlake sql` and `cxrlake stats`: read-only SQL over the lake.

use std::io::Write;
use std::path::PathBuf;

use arrow::array::RecordBatch;
use cxrlake_lake::Lake;
use cxrlake_report::STATS;

use crate::error::{CliError, Result};
use crate::output::{Format, say, write_batches, write_parquet};

/// `cxrlake sql`.
#[derive(Debug, clap::Args)]
pub struct SqlArgs {
    /// The query, e.g. "SELECT rating, count(*) FROM qa GROUP BY rating ORDER BY rating"
    pub query: String,
    /// Output format
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
    /// Write to this file instead of the terminal
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
}

impl SqlArgs {
    /// Runs `cxrlake sql`.
    pub async fn run(&self, lake: &Lake, out: &mut dyn Write) -> Result<()> {
        let Self {
            query,
            format,
            out: file,
        } = self;
        lake.require_initialized().await?;
        sql(&lake, query, *format, file.as_deref(), out).await
    }
}

/// `cxrlake stats`.
#[derive(Debug, clap::Args)]
pub struct StatsArgs {
    /// qa_overview, qa_templates, qa_balance, qa_texts, qa_answer_parts, qa_answer_lengths,
    /// qa_rating_distribution, qa_ratings, qa_rating_aspects, qa_tags, judge_calls,
    /// judge_dedup, gemex_table2, gemex_content,
    /// gemex_regions, gemex_lengths, mimic_cxr_vqa_table1, mimic_cxr_vqa_table2,
    /// mimic_cxr_vqa_table3, mimic_cxr_vqa_categories, rexvqa_validators, rexvqa_tasks,
    /// rexvqa_categories, rexvqa_positions, givcxr_regions, givcxr_findings,
    /// givcxr_hallucination, givcxr_terms or givcxr_review
    pub name: Option<String>,
    /// Output format
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
}

impl StatsArgs {
    /// Runs `cxrlake stats`.
    pub async fn run(&self, lake: &Lake, out: &mut dyn Write) -> Result<()> {
        let Self { name, format } = self;
        let Some(name) = name else {
            for (name, query) in STATS {
                let what = query.lines().next().unwrap_or_default();
                say(
                    out,
                    format_args!("{name:<20} {}\n", what.trim_start_matches("-- ")),
                )?;
            }
            return Ok(());
        };
        let (_, query) = STATS.iter().find(|(n, _)| n == name).ok_or_else(|| {
            CliError::Usage(format!(
                "unknown statistic '{name}'; `cxrlake stats` lists them"
            ))
        })?;
        lake.require_initialized().await?;
        let ctx = crate::commands::distributed::stats_session(&lake).await?;
        sql_in(&ctx, query, *format, None, out).await
    }
}

/// `plan` when it writes nothing: `cxrlake sql` refuses INSERT, UPDATE, DELETE (they would
/// commit to the lake's tables behind the stages' backs) and COPY … TO (a file anywhere the user
/// can write); session-local statements (SET, CREATE VIEW, CREATE TABLE AS in memory) are fine.
fn read_only(
    plan: datafusion::logical_expr::LogicalPlan,
) -> Result<datafusion::logical_expr::LogicalPlan> {
    datafusion::execution::context::SQLOptions::new()
        .with_allow_dml(false)
        .verify_plan(&plan)
        .map_err(|e| {
            CliError::Usage(format!(
                "cxrlake sql is read-only ({e}): the lake's tables are written by its stages \
                 (`cxrlake run`, `ingest`, `ratings add`), and results are saved with --out FILE"
            ))
        })?;
    Ok(plan)
}

pub(crate) async fn sql(
    lake: &Lake,
    query: &str,
    format: Format,
    file: Option<&std::path::Path>,
    out: &mut dyn Write,
) -> Result<()> {
    // Tables outside the lake too: `SELECT … FROM 'rel/qa.parquet'` (Parquet, CSV, JSON by
    // extension, compressed or not) or `FROM '/other/lake/qa'` (a Delta table's folder); local
    // paths and object-store URLs. On a Ballista cluster (`--engine`), the lake's tables only.
    let ctx = crate::commands::distributed::sql_session(lake).await?;
    sql_in(&ctx, query, format, file, out).await
}

/// Runs `query` (one or more statements) in `ctx` and writes the last one's result.
pub(crate) async fn sql_in(
    ctx: &datafusion::prelude::SessionContext,
    query: &str,
    format: Format,
    file: Option<&std::path::Path>,
    out: &mut dyn Write,
) -> Result<()> {
    // Several statements run in order (e.g. `SET cxrlake.match_threshold = 0.7; SELECT …`); the
    // last one's result is the output.
    let mut statements = datafusion::sql::parser::DFParser::parse_sql(query)?;
    let last = statements.pop_back().ok_or_else(|| {
        CliError::Usage("the query is empty: give one or more SQL statements".into())
    })?;
    for statement in statements {
        let plan = read_only(ctx.state().statement_to_plan(statement).await?)?;
        ctx.execute_logical_plan(plan).await?.collect().await?;
    }
    let plan = read_only(ctx.state().statement_to_plan(last).await?)?;
    let df = ctx.execute_logical_plan(plan).await?;
    let schema = df.schema().inner().clone();
    let batches: Vec<RecordBatch> = df.collect().await?;
    match (format, file) {
        (Format::Parquet, Some(path)) => write_parquet(schema, &batches, path),
        (_, Some(path)) => {
            let mut file = std::fs::File::create(path).map_err(|e| CliError::Output {
                path: path.to_path_buf(),
                source: Box::new(e),
            })?;
            write_batches(format, schema, &batches, &mut file, path)
        }
        (_, None) => write_batches(
            format,
            schema,
            &batches,
            out,
            std::path::Path::new("stdout"),
        ),
    }
}
