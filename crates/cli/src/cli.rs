//! Command-line parsing (clap derive) and dispatch of `cxrlake` commands.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use cxrlake_lake::{Lake, Settings};
use tracing_subscriber::EnvFilter;

use crate::commands::refdefs::RefdefsCommand;
use crate::commands::{self, demo::DemoOptions, export::ExportCommand, import::ImportCommand};
use crate::commands::{ratings::RatingsCommand, templates::TemplatesCommand};
use crate::error::{CliError, Result};

/// cxrlake: build, grade, query and export chest X-ray VQA datasets as a Delta lake.
#[derive(Debug, Parser)]
#[command(name = "cxrlake", version, about, propagate_version = true)]
pub struct Cli {
    /// Lake root URL or folder [default: ./lake; env CXRLAKE_LAKE]
    #[arg(long, global = true, value_name = "URL")]
    pub lake: Option<String>,
    /// Configuration file [default: ./cxrlake.toml if present; env CXRLAKE_CONFIG]
    #[arg(long, global = true, value_name = "FILE", env = "CXRLAKE_CONFIG")]
    pub config: Option<PathBuf>,
    /// Set a configuration key for this run, e.g. --set seed=7 (repeatable)
    #[arg(long = "set", global = true, value_name = "KEY=VALUE")]
    pub overrides: Vec<String>,
    /// More log output (-v: cxrlake's stages and statements; -vv: everything, dependencies
    /// included)
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    pub verbose: u8,
    /// Only errors
    #[arg(short, long, global = true, conflicts_with = "verbose")]
    pub quiet: bool,
    /// A command that writes the lake (run, ingest, import, ratings add, demo) waits up to this
    /// many seconds for another command's write lease instead of failing at once
    #[arg(long, global = true, value_name = "SECONDS")]
    pub wait: Option<u64>,
    /// Where `sql` and the SQL of stages without functions of their own run: `local` or
    /// `ballista://HOST:PORT` (a cluster of `cxrlake scheduler` and `cxrlake executor`)
    /// [default: the `engine` setting, env CXRLAKE_ENGINE]
    #[arg(long, global = true, value_name = "URL")]
    pub engine: Option<String>,
    /// The command to run
    #[command(subcommand)]
    pub command: Command,
}

/// `cxrlake` commands.
// Parsed once per process: the size of the `run` variant does not matter.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Create the lake and an empty table for every table cxrlake defines (idempotent)
    Init,
    /// List tables with version, row count and the stage of their last commit
    Tables,
    /// Delete the files no table version needs any more: data files replaced or deleted by
    /// earlier commits and orphans no commit names (left by killed writers), older than the
    /// retention period (time travel to versions older than it stops working)
    Vacuum(commands::tables::VacuumArgs),
    /// Run SQL over the lake; every table is registered by name
    Sql(commands::sql::SqlArgs),
    /// Show the lake, its format version, the last commit of every table, the settings of its
    /// last run and which stages are stale (with these settings), and why
    Status(commands::run::StatusArgs),
    /// Print what `cxrlake run` would recompute (stages, studies, QA pairs, LLM calls) and why,
    /// without running anything
    Plan(commands::run::PlanArgs),
    /// Write a synthetic MIMIC-format corpus (reports, JPG CSVs, ImaGenome boxes, CXAS masks,
    /// ground truth), deterministic for a seed
    Synth(commands::ingest::SynthArgs),
    /// Ingest MIMIC-CXR reports (tree or zip), MIMIC-CXR-JPG CSVs, Chest ImaGenome scene graphs
    /// and CXAS COCO-RLE files; bad input goes to the quarantine table
    Ingest(commands::ingest::IngestArgs),
    /// Run a pipeline stage over the lake (stage name = SQL file in sql/: localize, extract, map,
    /// graph, balance, qa, judge, grade); without a stage, every stage, recomputing only what
    /// changed since its last run. Settings not given are the lake's stored ones
    Run(commands::run::RunArgs),
    /// QA templates (templates/)
    Templates {
        /// What to do
        #[command(subcommand)]
        command: TemplatesCommand,
    },
    /// Ratings of MIMIC-CXR-VQA QA pairs by other raters (human reviews), for `evaluate
    /// agreement --rubric`
    Ratings {
        /// What to do
        #[command(subcommand)]
        command: RatingsCommand,
    },
    /// Dataset statistics defined as SQL in sql/stats/ (without a name: list them)
    Stats(commands::sql::StatsArgs),
    /// The dataset's statistics as pictures: DIR/index.html (self-contained, opens offline) with
    /// the figures of paper 000's table 3 and figures 4–6 as PNG and SVG, every number as a CSV
    /// table (the statistics of `cxrlake stats`), the judge's dedup ratio and per-table provenance
    Report(commands::report::ReportArgs),
    /// Run a Ballista scheduler for `--engine ballista://HOST:PORT` until stopped
    Scheduler(commands::distributed::SchedulerArgs),
    /// Run a Ballista executor that registers with a `cxrlake scheduler`, until stopped
    Executor(commands::distributed::ExecutorArgs),
    /// Reference definitions: check, diff, stats, dataset_info.json, load into the lake
    Refdefs {
        /// What to do
        #[command(subcommand)]
        command: RefdefsCommand,
    },
    /// The papers' evaluations: scene-graph tags vs labels, boxes vs reference boxes, and the
    /// synthetic corpus's ground truth; scores stored in eval_<kind> tables and printed with
    /// bootstrap confidence intervals
    Evaluate {
        /// Which evaluation
        #[command(subcommand)]
        what: commands::evaluate::EvaluateCommand,
    },
    /// Import a released MIMIC-Ext-CXR-QBA into the lake (qa, scene_graphs, images), so that
    /// SQL, statistics and subset exports work without rebuilding it
    Import {
        /// What to import
        #[command(subcommand)]
        what: ImportCommand,
    },
    /// Export lake tables in the released dataset's layout
    Export {
        /// What to export
        #[command(subcommand)]
        what: ExportCommand,
    },
    /// The main job on embedded defaults: synthetic corpus → ingest → localize → extract →
    /// map → graph → balance → qa → judge → grade → release (Parquet and PhysioNet layout) →
    /// summary
    Demo(DemoOptions),
}

impl Command {
    /// The name of a command that writes the lake's tables (and so takes its write lease).
    fn writer(&self) -> Option<&'static str> {
        match self {
            Command::Run(_) => Some("run"),
            Command::Ingest(_) => Some("ingest"),
            Command::Import { .. } => Some("import"),
            Command::Ratings { .. } => Some("ratings add"),
            Command::Demo(_) => Some("demo"),
            Command::Vacuum(args) if !args.dry_run => Some("vacuum"),
            _ => None,
        }
    }
}

impl Cli {
    fn settings(&self) -> Result<Settings> {
        let mut settings = Settings::load(self.config.as_deref())?;
        if let Some(lake) = &self.lake {
            settings.cxrlake.lake = lake.clone();
        }
        if let Some(engine) = &self.engine {
            settings.cxrlake.engine = engine.clone();
        }
        for assignment in &self.overrides {
            let (key, value) = assignment.split_once('=').ok_or_else(|| {
                CliError::Usage(format!("--set expects KEY=VALUE, got '{assignment}'"))
            })?;
            settings.set(key.trim(), value.trim())?;
        }
        Ok(settings)
    }

    /// Runs the command, writing user-facing output to `out`. A command that writes the lake's
    /// tables holds its write lease (`_cxrlake/lease.json`) while it runs: a second writer is
    /// refused, naming the first.
    pub async fn run(&self, out: &mut dyn Write) -> Result<()> {
        let lake = Lake::open(self.settings()?)?
            .with_session_factory(cxrlake_flavours::session_context_on);
        // A memory:// lake lives as long as its process: only `demo` builds and reads one in a
        // single call; any other command would start from an empty lake every time.
        if lake.root().scheme() == "memory" && !matches!(self.command, Command::Demo(_)) {
            return Err(CliError::Usage(format!(
                "the lake {} is in memory and lives only as long as one cxrlake process, so \
                 every command would see an empty lake: give a folder or an object-store URL \
                 (--lake ./lake, s3://bucket/lake), or use memory:// with `cxrlake demo` or from \
                 the library",
                lake.root()
            )));
        }
        let lease = match self.command.writer() {
            Some(name) if lake.marker().await?.is_some() => Some(self.lease(&lake, name).await?),
            _ => None,
        };
        let result = self.dispatch(&lake, out).await;
        if let Some(lease) = lease {
            let released = lease.release().await;
            if result.is_ok() {
                released?;
            }
        }
        result
    }

    /// The lake's write lease for `command`; with `--wait`, polled until it is free or the
    /// wait is over (then the holder is named as without it).
    async fn lease(&self, lake: &Lake, command: &str) -> Result<cxrlake_lake::Lease> {
        let deadline = self
            .wait
            .map(|seconds| std::time::Instant::now() + std::time::Duration::from_secs(seconds));
        let mut announced = false;
        loop {
            let waiting = deadline.is_some_and(|d| std::time::Instant::now() < d);
            match lake.acquire_lease(command, cxrlake_lake::STALE_AFTER).await {
                Ok(lease) => return Ok(lease),
                Err(cxrlake_lake::LakeError::Busy { holder, .. }) if waiting => {
                    if !announced {
                        tracing::warn!(
                            "waiting up to {} s for `{}` (pid {} on {}) to release the lake",
                            self.wait.unwrap_or_default(),
                            holder.command,
                            holder.pid,
                            holder.host
                        );
                        announced = true;
                    }
                    tokio::time::sleep(std::time::Duration::from_millis(250)).await;
                }
                Err(cxrlake_lake::LakeError::Contended { .. }) if waiting => {
                    tokio::time::sleep(std::time::Duration::from_millis(250)).await;
                }
                Err(err) => return Err(err.into()),
            }
        }
    }

    async fn dispatch(&self, lake: &Lake, out: &mut dyn Write) -> Result<()> {
        let quiet = self.quiet;
        match &self.command {
            Command::Scheduler(args) => args.run(&lake.settings().storage, out).await,
            Command::Executor(args) => args.run(&lake.settings().storage, out).await,
            Command::Init => commands::tables::init(lake, out).await,
            Command::Tables => commands::tables::tables(lake, out).await,
            Command::Vacuum(args) => args.run(lake, out).await,
            Command::Sql(args) => args.run(lake, out).await,
            Command::Status(args) => args.run(lake, quiet, out).await,
            Command::Plan(args) => args.run(lake, quiet, out).await,
            Command::Refdefs { command } => command.run(lake, out).await,
            Command::Ingest(args) => args.run(lake, quiet, out).await,
            Command::Run(args) => args.run(lake, quiet, out).await,
            Command::Ratings { command } => command.run(lake, out).await,
            Command::Templates { command } => command.run(out),
            Command::Stats(args) => args.run(lake, out).await,
            Command::Report(args) => args.run(lake, out).await,
            Command::Synth(args) => args.run(out).await,
            Command::Evaluate { what } => what.run(lake, out).await,
            Command::Import { what } => what.run(lake, out).await,
            Command::Export { what } => what.run(lake, out).await,
            Command::Demo(options) => commands::demo::demo(lake, options, !quiet, out).await,
        }
    }
}

/// The log filter for `-q`, none, `-v` and `-vv`: dependencies (DataFusion, delta-rs, its
/// kernel, object_store, HTTP) log errors only unless `-vv`; `-v` shows cxrlake's own spans and
/// events. `RUST_LOG` overrides it.
fn log_filter(quiet: bool, verbose: u8) -> String {
    match (quiet, verbose) {
        (true, _) => "error".into(),
        // delta-kernel logs "not a table" probes at ERROR level.
        (false, 0) => "error,cxrlake=warn,buoyant_kernel::snapshot=off".into(),
        (false, 1) => "error,cxrlake=info,buoyant_kernel::snapshot=off".into(),
        _ => "debug".into(),
    }
}

fn init_logging(cli: &Cli) {
    let filter = EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| EnvFilter::new(log_filter(cli.quiet, cli.verbose)));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .try_init();
}

/// Entry point of the binary: parses arguments, runs, prints errors as one line.
#[allow(clippy::print_stderr)]
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    init_logging(&cli);
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        // Planning and (de)serializing deep plans recurses: a Ballista scheduler decoding a
        // stage's windowed join overflowed the default 2 MiB (reserved, not committed).
        .thread_stack_size(16 * 1024 * 1024)
        .build()
    {
        Ok(runtime) => runtime,
        Err(err) => {
            eprintln!("error: cannot start the async runtime: {err}");
            return ExitCode::FAILURE;
        }
    };
    let mut stdout = std::io::stdout().lock();
    match runtime.block_on(cli.run(&mut stdout)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("error: {}", err.one_line());
            ExitCode::from(err.exit_code())
        }
    }
}
