//! `cxrlake run`, `plan` and `status`: the pipeline over the lake with the given settings.

use std::io::Write;

use cxrlake_lake::Lake;

use crate::commands::settings::{SettingsArgs, say_settings};
use crate::error::{CliError, Result};
use crate::output::say;

/// `cxrlake status`.
#[derive(Debug, clap::Args)]
pub struct StatusArgs {
    /// Settings to compare with [default: the lake's stored ones]
    #[command(flatten)]
    pub settings: SettingsArgs,
}

impl StatusArgs {
    /// Runs `cxrlake status`.
    pub async fn run(&self, lake: &Lake, quiet: bool, out: &mut dyn Write) -> Result<()> {
        let Self { settings } = self;
        crate::commands::tables::lake_status(lake, out).await?;
        if lake.marker().await?.is_some() {
            let pipeline = settings.pipeline(lake, quiet).await?;
            say_settings(&pipeline, out)?;
            let plan = pipeline.plan(false).await?;
            say(out, format_args!("stages (with these settings):"))?;
            for line in plan.to_string().lines() {
                say(out, format_args!("  {line}"))?;
            }
        }
        Ok(())
    }
}

/// `cxrlake plan`.
#[derive(Debug, clap::Args)]
pub struct PlanArgs {
    /// Plan a rebuild of every stage over all studies
    #[arg(long)]
    pub full: bool,
    /// Settings to plan with [default: the lake's stored ones]
    #[command(flatten)]
    pub settings: SettingsArgs,
}

impl PlanArgs {
    /// Runs `cxrlake plan`.
    pub async fn run(&self, lake: &Lake, quiet: bool, out: &mut dyn Write) -> Result<()> {
        let Self { full, settings } = self;
        lake.require_initialized().await?;
        let pipeline = settings.pipeline(lake, quiet).await?;
        let plan = pipeline.plan(*full).await?;
        say(out, format_args!("{plan}"))
    }
}

/// `cxrlake run`.
#[derive(Debug, clap::Args)]
pub struct RunArgs {
    /// The stage [default: all stages, incremental]
    pub stage: Option<String>,
    /// Without a stage: rebuild every stage over all studies
    #[arg(long)]
    pub full: bool,
    /// judge: count the criterion requests and the distinct inputs a judge would rate,
    /// without judging or writing anything
    #[arg(long)]
    pub plan: bool,
    /// Settings of the stages
    #[command(flatten)]
    pub settings: SettingsArgs,
}

impl RunArgs {
    /// Runs `cxrlake run`.
    pub async fn run(&self, lake: &Lake, quiet: bool, out: &mut dyn Write) -> Result<()> {
        let Self {
            stage,
            full,
            plan,
            settings,
        } = self;
        lake.require_initialized().await?;
        if *plan && stage.as_deref() != Some("judge") {
            return Err(CliError::Usage(
                "--plan is a flag of `cxrlake run judge`; `cxrlake plan` shows what \
                 `cxrlake run` would recompute"
                    .into(),
            ));
        }
        let pipeline = settings.pipeline(lake, quiet).await?;
        let Some(stage) = stage else {
            // Each stage's lines as it ends (a long run is not silent).
            let mut failed = None;
            let record = pipeline
                .run(*full, &mut |stage| {
                    let mut lines = stage.lines(None);
                    lines.extend(stage.report.iter().map(|r| format!("            {r}")));
                    for line in lines {
                        if let Err(e) = say(out, format_args!("{line}")) {
                            failed.get_or_insert(e);
                        }
                    }
                })
                .await?;
            if let Some(e) = failed {
                return Err(e);
            }
            for line in record.settings_lines() {
                say(out, format_args!("{line}"))?;
            }
            return say(out, format_args!("{}", record.footer()));
        };
        if *full {
            return Err(CliError::Usage(
                "--full rebuilds all stages: use it without a stage (`cxrlake run \
                 --full`); a single stage always runs over all studies"
                    .into(),
            ));
        }
        let mode = if *plan {
            cxrlake_pipeline::RunMode::CountOnly
        } else {
            cxrlake_pipeline::RunMode::Write
        };
        let report = pipeline.run_stage(stage, mode).await?;
        say(out, format_args!("{report}"))
    }
}
