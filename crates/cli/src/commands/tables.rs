//! `cxrlake init`, `tables`, `vacuum`: the lake's tables and files.

use std::io::Write;

use arrow::array::AsArray;
use arrow::datatypes::Int64Type;
use cxrlake_lake::Lake;

use crate::error::Result;
use crate::output::say;

/// `cxrlake vacuum`.
#[derive(Debug, clap::Args)]
pub struct VacuumArgs {
    /// Keep files younger than this many hours (Delta's default is 7 days)
    #[arg(long, default_value_t = 168, value_name = "HOURS")]
    pub retention_hours: u64,
    /// List the files without deleting them
    #[arg(long)]
    pub dry_run: bool,
}

/// `cxrlake init`.
pub async fn init(lake: &Lake, out: &mut dyn Write) -> Result<()> {
    let created = lake.init().await?;
    say(
        out,
        format_args!(
            "lake at {} (format version {})",
            lake.root(),
            cxrlake_schemas::FORMAT_VERSION
        ),
    )?;
    if created.is_empty() {
        say(out, format_args!("all tables already exist"))
    } else {
        say(
            out,
            format_args!("created {} tables: {}", created.len(), created.join(", ")),
        )
    }
}

async fn count_rows(lake: &Lake, table: &str) -> Result<i64> {
    let ctx = lake.session().await?;
    let batches = ctx
        .sql(&format!("SELECT count(*) FROM \"{table}\""))
        .await?
        .collect()
        .await?;
    Ok(batches
        .first()
        .map_or(0, |b| b.column(0).as_primitive::<Int64Type>().value(0)))
}

impl VacuumArgs {
    /// Runs `cxrlake vacuum`.
    pub async fn run(&self, lake: &Lake, out: &mut dyn Write) -> Result<()> {
        let (hours, dry_run) = (self.retention_hours, self.dry_run);
        lake.require_initialized().await?;
        let retention = std::time::Duration::from_secs(hours.saturating_mul(3600));
        let (mut tables, mut files) = (0, 0);
        for name in lake.table_names().await? {
            let vacuumed = lake.vacuum(&name, retention, dry_run).await?;
            if vacuumed.files.is_empty() {
                continue;
            }
            tables += 1;
            files += vacuumed.files.len();
            say(
                out,
                format_args!(
                    "{name}: {} {} files",
                    if dry_run { "would delete" } else { "deleted" },
                    vacuumed.files.len()
                ),
            )?;
            for file in &vacuumed.files {
                say(out, format_args!("  {file}"))?;
            }
        }
        say(
            out,
            format_args!(
                "{files} files in {tables} tables {} (older than {hours} h, not needed by the \
             current versions)",
                if dry_run {
                    "would be deleted"
                } else {
                    "deleted"
                }
            ),
        )
    }
}

/// `cxrlake tables`.
pub async fn tables(lake: &Lake, out: &mut dyn Write) -> Result<()> {
    lake.require_initialized().await?;
    let mut rows = Vec::new();
    for name in lake.table_names().await? {
        let last = lake.history(&name, Some(1)).await?.into_iter().next();
        let (version, stage, fingerprint) = match last {
            Some(commit) => (
                commit.version.to_string(),
                commit
                    .stage
                    .as_ref()
                    .map_or("-".to_string(), |s| s.stage.clone()),
                commit
                    .stage
                    .map_or("-".to_string(), |s| s.fingerprint.to_string()),
            ),
            None => ("-".into(), "-".into(), "-".into()),
        };
        rows.push([
            name.clone(),
            version,
            count_rows(lake, &name).await?.to_string(),
            stage,
            fingerprint,
        ]);
    }
    let widths: Vec<usize> = (0..5)
        .map(|i| rows.iter().map(|r| r[i].len()).max().unwrap_or(0))
        .collect();
    let header = ["table", "version", "rows", "stage", "fingerprint"];
    let widths: Vec<usize> = widths
        .iter()
        .zip(header)
        .map(|(w, h)| (*w).max(h.len()))
        .collect();
    for row in std::iter::once(header.map(String::from)).chain(rows) {
        let line = row
            .iter()
            .zip(&widths)
            .map(|(cell, w)| format!("{cell:<w$}"))
            .collect::<Vec<_>>()
            .join("  ");
        say(out, format_args!("{}", line.trim_end()))?;
    }
    Ok(())
}

/// The lake's part of `cxrlake status`: its root, format, tables and their last commits.
pub async fn lake_status(lake: &Lake, out: &mut dyn Write) -> Result<()> {
    let Some(marker) = lake.marker().await? else {
        say(
            out,
            format_args!("no lake at {} — run `cxrlake init`", lake.root()),
        )?;
        return Ok(());
    };
    say(out, format_args!("lake:            {}", lake.root()))?;
    say(
        out,
        format_args!("format version:  {}", marker.format_version),
    )?;
    say(
        out,
        format_args!(
            "created:         {} by {}",
            marker.created_at, marker.created_by
        ),
    )?;
    let names = lake.table_names().await?;
    let missing: Vec<_> = cxrlake_schemas::TABLES
        .iter()
        .filter(|t| !names.iter().any(|n| n == t.name))
        .map(|t| t.name)
        .collect();
    say(out, format_args!("tables:          {}", names.len()))?;
    if !missing.is_empty() {
        say(
            out,
            format_args!(
                "missing tables:  {} (run `cxrlake init`)",
                missing.join(", ")
            ),
        )?;
    }
    for name in names {
        if let Some(commit) = lake.history(&name, Some(1)).await?.into_iter().next() {
            let stage = commit
                .stage
                .map_or("(not written by cxrlake)".to_string(), |s| s.stage);
            say(
                out,
                format_args!("  {name:<18} v{:<4} last stage: {stage}", commit.version),
            )?;
        }
    }
    Ok(())
}
