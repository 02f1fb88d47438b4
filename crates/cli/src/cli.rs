//! Command-line parsing (clap derive) and dispatch of `cxrlake` commands.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use arrow::array::{AsArray, RecordBatch};
use arrow::datatypes::Int64Type;
use clap::{Parser, Subcommand};
use cxrlake_lake::{Lake, Settings};
use tracing_subscriber::EnvFilter;

use crate::error::{CliError, Result};
use crate::folders::{Input, Output};
use crate::output::{Format, write_batches, write_parquet};
use crate::refdefs::RefdefsCommand;
use cxrlake_report::STATS;

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
    Vacuum {
        /// Keep files younger than this many hours (Delta's default is 7 days)
        #[arg(long, default_value_t = 168, value_name = "HOURS")]
        retention_hours: u64,
        /// List the files without deleting them
        #[arg(long)]
        dry_run: bool,
    },
    /// Run SQL over the lake; every table is registered by name
    Sql {
        /// The query, e.g. "SELECT rating, count(*) FROM qa GROUP BY rating ORDER BY rating"
        query: String,
        /// Output format
        #[arg(long, value_enum, default_value_t = Format::Table)]
        format: Format,
        /// Write to this file instead of the terminal
        #[arg(long, value_name = "FILE")]
        out: Option<PathBuf>,
    },
    /// Show the lake, its format version, the last commit of every table, the settings of its
    /// last run and which stages are stale (with these settings), and why
    Status {
        /// Settings to compare with [default: the lake's stored ones]
        #[command(flatten)]
        settings: SettingsArgs,
    },
    /// Print what `cxrlake run` would recompute (stages, studies, QA pairs, LLM calls) and why,
    /// without running anything
    Plan {
        /// Plan a rebuild of every stage over all studies
        #[arg(long)]
        full: bool,
        /// Settings to plan with [default: the lake's stored ones]
        #[command(flatten)]
        settings: SettingsArgs,
    },
    /// Write a synthetic MIMIC-format corpus (reports, JPG CSVs, ImaGenome boxes, CXAS masks,
    /// ground truth), deterministic for a seed
    Synth {
        /// Number of studies (MIMIC-CXR has 227,835)
        #[arg(long, default_value_t = 1000)]
        studies: usize,
        /// Seed; the same seed gives byte-identical files
        #[arg(long, default_value_t = 0)]
        seed: u64,
        /// Output folder
        #[arg(long, value_name = "DIR")]
        out: PathBuf,
        /// Also write mimic-cxr-reports.zip
        #[arg(long)]
        zip: bool,
        /// Fraction of images that get CXAS masks (0..=1)
        #[arg(long, value_name = "F")]
        cxas_fraction: Option<f64>,
        /// Only part K of N of the patients (the whole corpus's files for them), e.g. 3/10:
        /// ingest each part and delete it before the next when the whole corpus does not fit
        #[arg(long, value_name = "K/N")]
        shard: Option<cxrlake_synth::Shard>,
    },
    /// Ingest MIMIC-CXR reports (tree or zip), MIMIC-CXR-JPG CSVs, Chest ImaGenome scene graphs
    /// and CXAS COCO-RLE files; bad input goes to the quarantine table
    Ingest {
        /// Folders, files or zip archives (walked recursively)
        #[arg(required = true, value_name = "PATH")]
        inputs: Vec<PathBuf>,
        /// Exit non-zero when anything was quarantined
        #[arg(long)]
        strict: bool,
        /// Studies per chunk (bounds memory and commit size)
        #[arg(long, default_value_t = 10_000)]
        chunk_studies: usize,
    },
    /// Run a pipeline stage over the lake (stage name = SQL file in sql/: localize, extract, map,
    /// graph, balance, qa, judge, grade); without a stage, every stage, recomputing only what
    /// changed since its last run. Settings not given are the lake's stored ones
    Run {
        /// The stage [default: all stages, incremental]
        stage: Option<String>,
        /// Without a stage: rebuild every stage over all studies
        #[arg(long)]
        full: bool,
        /// judge: count the criterion requests and the distinct inputs a judge would rate,
        /// without judging or writing anything
        #[arg(long)]
        plan: bool,
        /// Settings of the stages
        #[command(flatten)]
        settings: SettingsArgs,
    },
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
    Stats {
        /// qa_overview, qa_templates, qa_balance, qa_texts, qa_answer_parts, qa_answer_lengths,
        /// qa_rating_distribution, qa_ratings, qa_rating_aspects, qa_tags, judge_calls,
        /// judge_dedup, gemex_table2, gemex_content,
        /// gemex_regions, gemex_lengths, mimic_cxr_vqa_table1, mimic_cxr_vqa_table2,
        /// mimic_cxr_vqa_table3, mimic_cxr_vqa_categories, rexvqa_validators, rexvqa_tasks,
        /// rexvqa_categories, rexvqa_positions, givcxr_regions, givcxr_findings,
        /// givcxr_hallucination, givcxr_terms or givcxr_review
        name: Option<String>,
        /// Output format
        #[arg(long, value_enum, default_value_t = Format::Table)]
        format: Format,
    },
    /// The dataset's statistics as pictures: DIR/index.html (self-contained, opens offline) with
    /// the figures of paper 000's table 3 and figures 4–6 as PNG and SVG, every number as a CSV
    /// table (the statistics of `cxrlake stats`), the judge's dedup ratio and per-table provenance
    Report {
        /// Output folder
        #[arg(long, value_name = "DIR")]
        out: PathBuf,
    },
    /// Run a Ballista scheduler for `--engine ballista://HOST:PORT` until stopped
    Scheduler(crate::distributed::SchedulerArgs),
    /// Run a Ballista executor that registers with a `cxrlake scheduler`, until stopped
    Executor(crate::distributed::ExecutorArgs),
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
        what: crate::evaluate::EvaluateCommand,
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

/// `cxrlake ratings` commands.
#[derive(Debug, Subcommand)]
pub enum RatingsCommand {
    /// Add a file of ratings: for mimic_cxr_vqa (the default) columns item = question_id of
    /// mimic_cxr_vqa_qa, rater, rubric = correctness|consistency|completeness|relevance, value =
    /// one of the rubric's levels of paper 001 table 3; for givcxr (radiologists' reviews)
    /// columns qa_id of givcxr_qa, reviewer, accepted = true|false[, comment]. .csv, .csv.gz,
    /// .jsonl or .parquet; a rating of the same item by the same rater replaces the old one
    Add {
        /// The ratings file
        file: PathBuf,
        /// The flavour rated: mimic_cxr_vqa or givcxr
        #[arg(long, value_name = "FLAVOUR", default_value = "mimic_cxr_vqa")]
        flavour: String,
    },
}

/// `cxrlake templates` commands.
#[derive(Debug, Subcommand)]
pub enum TemplatesCommand {
    /// Check a folder (strategies, subsets, conditions, placeholders, refdefs names) and list
    /// its templates
    Check {
        /// Templates folder [default: the embedded templates/]
        #[arg(long, value_name = "DIR")]
        templates: Option<PathBuf>,
        /// Reference definitions folder [default: the embedded definitions]
        #[arg(long, value_name = "DIR")]
        refdefs: Option<PathBuf>,
    },
}

/// What `cxrlake import` reads.
#[derive(Debug, Subcommand)]
pub enum ImportCommand {
    /// A release in the PhysioNet layout: its root folder (qa.zip, scene_data.zip,
    /// quality_mappings.csv), an exports/<subset> folder, or one of its zips; zips are read in
    /// place, quality codes decoded through the release's quality_mappings.csv. Resumable: a
    /// study already in the lake is skipped
    Release {
        /// The release folder or zip
        #[arg(value_name = "PATH")]
        path: PathBuf,
        /// Exit non-zero when a member was quarantined
        #[arg(long)]
        strict: bool,
        /// Studies per commit (bounds memory)
        #[arg(long, default_value_t = 1_000)]
        chunk_studies: usize,
    },
}

/// What `cxrlake export` writes.
#[derive(Debug, Subcommand)]
pub enum ExportCommand {
    /// Per-study sXXXXXXXX.scene_graph.json files under pXX/pXXXXXXXX/ (paper appendix D.1)
    SceneGraphs {
        /// Output folder
        #[arg(long, value_name = "DIR")]
        out: PathBuf,
        /// Only the scene graphs matching this SQL predicate, e.g. "study_id = 's50414267'"
        #[arg(long = "where", value_name = "PREDICATE")]
        filter: Option<String>,
    },
    /// Per-study sXXXXXXXX.qa.json files under pXX/pXXXXXXXX/ (paper appendix D.2, answer
    /// parts nested as sub_answers)
    Qa {
        /// Output folder
        #[arg(long, value_name = "DIR")]
        out: PathBuf,
        /// Only the questions matching this SQL predicate over qa columns, e.g.
        /// "question_strategy = 'finding'"
        #[arg(long = "where", value_name = "PREDICATE")]
        filter: Option<String>,
    },
    /// A release: --subset all writes the released tree (root with every QA pair and image,
    /// exports/A_frontal = FT, exports/B_frontal = PT, each with a q1M sample in metadata/q1M/);
    /// ft, pt, a+ or a++ writes that subset alone (frontal images only). Parquet: nested
    /// qa.parquet and scene_graphs.parquet; both formats: metadata/*.parquet and *.csv.gz (seven
    /// flat tables, pandas MultiIndex layout), cxrlake_info.json in every folder and stats/ (the
    /// `cxrlake report` of the lake) at the root; PhysioNet: qa.zip, scene_data.zip, README.md,
    /// quality_mappings.csv at the root, metadata/dataset_info.json (the vocabulary) in every
    /// folder
    Release {
        /// Output folder
        #[arg(long, value_name = "DIR")]
        out: PathBuf,
        /// all (the release tree), ft (rating >= 'A'), pt (rating >= 'B'), a+ or a++
        #[arg(long, default_value = "all", value_name = "SUBSET")]
        subset: String,
        /// Only QA pairs matching this SQL predicate over qa columns and split, e.g.
        /// "rating >= 'A' AND question_strategy = 'finding'"
        #[arg(long = "where", value_name = "PREDICATE")]
        filter: Option<String>,
        /// Only this split
        #[arg(long, value_parser = ["train", "validate", "test"])]
        split: Option<String>,
        /// Questions in each subset's reproducible hash sample (metadata/q1M/; seed from
        /// cxrlake.seed); 0 for none
        #[arg(long, default_value_t = cxrlake_export::release::DEFAULT_SAMPLE, value_name = "N")]
        sample: u64,
        /// Which files
        #[arg(long, value_enum, default_value_t = ReleaseFormatArg::Both)]
        format: ReleaseFormatArg,
        /// Reference definitions for metadata/dataset_info.json [default: the embedded ones]
        #[arg(long, value_name = "DIR")]
        refdefs: Option<PathBuf>,
    },
    /// The GEMeX flavour (`run --flavour gemex`): gemex/<split>.json, GEMeX records with
    /// location boxes in original pixels and in the 224 × 224 frame, and llava/<split>.json,
    /// LLaVA conversations with the type-aware system prompt (images as
    /// files/pXX/pXXXXXXXX/sXXXXXXXX/<image_id>.jpg)
    Gemex {
        /// Output folder
        #[arg(long, value_name = "DIR")]
        out: PathBuf,
        /// Only the questions matching this SQL predicate over gemex_qa columns, e.g.
        /// "question_type = 'multi-choice'"
        #[arg(long = "where", value_name = "PREDICATE")]
        filter: Option<String>,
        /// Which files
        #[arg(long, value_enum, default_value_t = GemexFormatArg::Both)]
        format: GemexFormatArg,
    },
    /// The MIMIC-CXR-VQA flavour (`run --flavour mimic_cxr_vqa`, paper 001):
    /// mimic_cxr_vqa/<split>.json (flat records with the dataset id, category, CheXpert label
    /// value, question, answer, answer type and the study's images with view positions) and
    /// mimic_cxr_vqa/<split>.parquet
    MimicCxrVqa {
        /// Output folder
        #[arg(long, value_name = "DIR")]
        out: PathBuf,
        /// Only the QA pairs matching this SQL predicate over mimic_cxr_vqa_qa columns, e.g.
        /// "prohibited_count = 0"
        #[arg(long = "where", value_name = "PREDICATE")]
        filter: Option<String>,
    },
    /// The ReXVQA flavour (`run --flavour rexvqa`, paper 003): the kept MCQs (V(Q) true, no PHI,
    /// no near-duplicate) as rexvqa/<split>.json (ReXVQA-style records: lettered options,
    /// correct_answer, correct_answer_explanation, task_name, category, difficulty, images)
    /// and rexvqa/<split>.parquet
    Rexvqa {
        /// Output folder
        #[arg(long, value_name = "DIR")]
        out: PathBuf,
        /// Only the kept MCQs matching this SQL predicate over rexvqa_questions columns, e.g.
        /// "difficulty = 'hard'"
        #[arg(long = "where", value_name = "PREDICATE")]
        filter: Option<String>,
    },
    /// The GIV-CXR flavour (`run --flavour givcxr`, paper 002): the exported region-grounded QA
    /// pairs in the release layout, givcxr/<split>.json ({"version", "split", "data": [records
    /// with image_id, anatomical_region, bbox in original pixels, question, answer, …]}),
    /// givcxr/<split>.parquet and givcxr/manifest.json; with --sample also the training subsets
    /// givcxr/subsets/sample-<N>-seed-<S>/bbox_input.jsonl and bbox_output.jsonl (LLaVA style,
    /// boxes in the 384 × 384 frame)
    Givcxr {
        /// Output folder
        #[arg(long, value_name = "DIR")]
        out: PathBuf,
        /// Only the QA pairs matching this SQL predicate over givcxr_dataset columns, e.g.
        /// "region = 'right_lung' AND bbox_size_category = 'small'"
        #[arg(long = "where", value_name = "PREDICATE")]
        filter: Option<String>,
        /// Also write the training subsets: N train pairs drawn by a seeded hash (all if fewer)
        #[arg(long, value_name = "N")]
        sample: Option<usize>,
        /// Seed of the --sample draw
        #[arg(long, default_value_t = 0, value_name = "S", requires = "sample")]
        seed: u64,
    },
}

impl Command {
    /// The name of a command that writes the lake's tables (and so takes its write lease).
    fn writer(&self) -> Option<&'static str> {
        match self {
            Command::Run { .. } => Some("run"),
            Command::Ingest { .. } => Some("ingest"),
            Command::Import { .. } => Some("import"),
            Command::Ratings { .. } => Some("ratings add"),
            Command::Demo(_) => Some("demo"),
            Command::Vacuum { dry_run: false, .. } => Some("vacuum"),
            _ => None,
        }
    }
}

impl ExportCommand {
    /// The flavour it exports (`None`: MIMIC-Ext-CXR-QBA itself).
    fn flavour(&self) -> Option<&'static str> {
        match self {
            Self::SceneGraphs { .. } | Self::Qa { .. } | Self::Release { .. } => None,
            Self::Gemex { .. } => Some("gemex"),
            Self::MimicCxrVqa { .. } => Some("mimic_cxr_vqa"),
            Self::Rexvqa { .. } => Some("rexvqa"),
            Self::Givcxr { .. } => Some("givcxr"),
        }
    }

    /// The output folder.
    fn out(&self) -> &std::path::Path {
        match self {
            Self::SceneGraphs { out, .. }
            | Self::Qa { out, .. }
            | Self::Release { out, .. }
            | Self::Gemex { out, .. }
            | Self::MimicCxrVqa { out, .. }
            | Self::Rexvqa { out, .. }
            | Self::Givcxr { out, .. } => out,
        }
    }
}

/// `cxrlake export gemex --format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum GemexFormatArg {
    /// GEMeX JSON per split
    Gemex,
    /// LLaVA conversations per split
    Llava,
    /// Both
    Both,
}

impl From<GemexFormatArg> for cxrlake_export::GemexFormat {
    fn from(format: GemexFormatArg) -> Self {
        match format {
            GemexFormatArg::Gemex => Self::Gemex,
            GemexFormatArg::Llava => Self::Llava,
            GemexFormatArg::Both => Self::Both,
        }
    }
}

/// `cxrlake export release --format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ReleaseFormatArg {
    /// Nested qa.parquet and scene_graphs.parquet, and the metadata tables
    Parquet,
    /// The PhysioNet layout: zips of per-study JSON, metadata tables, README, mappings
    Physionet,
    /// Both
    Both,
}

impl From<ReleaseFormatArg> for cxrlake_export::ReleaseFormat {
    fn from(format: ReleaseFormatArg) -> Self {
        match format {
            ReleaseFormatArg::Parquet => Self::Parquet,
            ReleaseFormatArg::Physionet => Self::Physionet,
            ReleaseFormatArg::Both => Self::Both,
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
        let lake =
            Lake::open(self.settings()?)?.with_session_factory(cxrlake_udfs::session_context_on);
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
        let lake = lake.clone();
        match &self.command {
            Command::Scheduler(args) => args.run(&lake.settings().storage, out).await,
            Command::Executor(args) => args.run(&lake.settings().storage, out).await,
            Command::Init => init(&lake, out).await,
            Command::Tables => tables(&lake, out).await,
            Command::Vacuum {
                retention_hours,
                dry_run,
            } => vacuum(&lake, *retention_hours, *dry_run, out).await,
            Command::Sql {
                query,
                format,
                out: file,
            } => {
                lake.require_initialized().await?;
                sql(&lake, query, *format, file.as_deref(), out).await
            }
            Command::Status { settings } => {
                status(&lake, out).await?;
                if lake.marker().await?.is_some() {
                    let pipeline = settings.pipeline(&lake, self.quiet).await?;
                    say_settings(&pipeline, out)?;
                    let plan = pipeline.plan(false).await?;
                    say(out, format_args!("stages (with these settings):"))?;
                    for line in plan.to_string().lines() {
                        say(out, format_args!("  {line}"))?;
                    }
                }
                Ok(())
            }
            Command::Plan { full, settings } => {
                lake.require_initialized().await?;
                let pipeline = settings.pipeline(&lake, self.quiet).await?;
                let plan = pipeline.plan(*full).await?;
                say(out, format_args!("{plan}"))
            }
            Command::Refdefs { command } => command.run(&lake, out).await,
            Command::Ingest {
                inputs,
                strict,
                chunk_studies,
            } => {
                let mut fetched = Vec::with_capacity(inputs.len());
                for input in inputs {
                    fetched.push(Input::fetch(input, &lake, out).await?);
                }
                let local = fetched.iter().map(|i| i.path().to_path_buf()).collect();
                let names = fetched
                    .iter()
                    .map(|i| i.url().map(str::to_string))
                    .collect();
                let options = cxrlake_ingest::IngestOptions::new(local)
                    .with_names(names)
                    .with_strict(*strict)
                    .with_progress(!self.quiet)
                    .with_chunk_studies(*chunk_studies)
                    .with_limits(cxrlake_ingest::Limits::of(&lake.settings().cxrlake));
                let summary = cxrlake_ingest::ingest(&lake, &options).await?;
                say(out, format_args!("{summary}"))?;
                if summary.failed() {
                    return Err(CliError::Strict(format!(
                        "--strict: {} input(s) quarantined; see `cxrlake sql \"SELECT * FROM quarantine\"`",
                        summary.quarantined()
                    )));
                }
                Ok(())
            }
            Command::Run {
                stage,
                full,
                plan,
                settings,
            } => {
                lake.require_initialized().await?;
                if *plan && stage.as_deref() != Some("judge") {
                    return Err(CliError::Usage(
                        "--plan is a flag of `cxrlake run judge`; `cxrlake plan` shows what \
                         `cxrlake run` would recompute"
                            .into(),
                    ));
                }
                let pipeline = settings.pipeline(&lake, self.quiet).await?;
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
            Command::Ratings {
                command: RatingsCommand::Add { file, flavour },
            } => {
                lake.require_initialized().await?;
                let added = match flavour.as_str() {
                    "mimic_cxr_vqa" => {
                        cxrlake_pipeline::mimic_cxr_vqa::ratings::add_ratings(&lake, file).await?
                    }
                    "givcxr" => cxrlake_pipeline::givcxr::reviews::add_reviews(&lake, file).await?,
                    other => {
                        return Err(CliError::Usage(format!(
                            "ratings add --flavour {other}: ratings are kept for mimic_cxr_vqa \
                             and givcxr"
                        )));
                    }
                };
                say(out, format_args!("{added}"))
            }
            Command::Templates {
                command: TemplatesCommand::Check { templates, refdefs },
            } => {
                let defs = crate::refdefs::load_defs(refdefs.as_deref())?;
                let loaded = match templates {
                    Some(dir) => cxrlake_templates::Templates::load(dir, &defs),
                    None => cxrlake_templates::Templates::embedded(&defs),
                }
                .map_err(cxrlake_pipeline::PipelineError::from)?;
                for t in &loaded.templates {
                    say(
                        out,
                        format_args!(
                            "{:<32} {:<16} {} phrasing(s), {} variable value(s), {} main case(s), {} part(s)\n",
                            t.id,
                            t.strategy.as_str(),
                            t.questions.len(),
                            t.variables.subcategory.len(),
                            t.main.len(),
                            t.parts.len()
                        ),
                    )?;
                }
                say(
                    out,
                    format_args!(
                        "{} templates ok, version {}",
                        loaded.templates.len(),
                        loaded.version()
                    ),
                )
            }
            Command::Stats { name, format } => {
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
                let ctx = crate::distributed::stats_session(&lake).await?;
                sql_in(&ctx, query, *format, None, out).await
            }
            Command::Report { out: dir } => {
                lake.require_initialized().await?;
                let folder = Output::open(dir, &lake).await?;
                let report = cxrlake_report::Report::new(folder.path());
                let summary = cxrlake_report::write_report(&lake, &report).await?;
                say(out, format_args!("{summary}"))?;
                folder.finish(out).await
            }
            Command::Synth {
                studies,
                seed,
                out: dir,
                zip,
                cxas_fraction,
                shard,
            } => {
                let mut options =
                    cxrlake_synth::SynthOptions::new(*studies, *seed, dir.clone()).with_zip(*zip);
                if let Some(shard) = shard {
                    options = options.with_shard(*shard);
                }
                if let Some(fraction) = cxas_fraction {
                    if !(0.0..=1.0).contains(fraction) {
                        return Err(CliError::Usage(format!(
                            "--cxas-fraction must be within 0..=1, got {fraction}"
                        )));
                    }
                    options = options.with_cxas_fraction(*fraction);
                }
                let summary = synth(options).await?;
                say(out, format_args!("{summary}"))
            }
            Command::Evaluate { what } => what.run(&lake, out).await,
            Command::Import {
                what:
                    ImportCommand::Release {
                        path,
                        strict,
                        chunk_studies,
                    },
            } => {
                lake.init().await?;
                let input = Input::fetch(path, &lake, out).await?;
                let import = cxrlake_export::ReleaseImport::new(input.path().to_path_buf())
                    .with_chunk_studies(*chunk_studies);
                let summary = cxrlake_export::import_release(&lake, &import).await?;
                say(out, format_args!("{summary}"))?;
                if *strict && summary.quarantined > 0 {
                    return Err(CliError::Strict(format!(
                        "--strict: {} release member(s) quarantined",
                        summary.quarantined
                    )));
                }
                Ok(())
            }
            Command::Export { what } => {
                lake.require_initialized().await?;
                if let Some(flavour) = what.flavour() {
                    refuse_stale_flavour(&lake, flavour, out).await?;
                }
                let folder = Output::open(what.out(), &lake).await?;
                let dir = &folder.path();
                match what {
                    ExportCommand::SceneGraphs { out: _, filter } => {
                        let mut export = cxrlake_export::SceneGraphExport::new(dir.clone());
                        if let Some(filter) = filter {
                            export = export.with_filter(filter.clone());
                        }
                        let summary = cxrlake_export::export_scene_graphs(&lake, &export).await?;
                        say(out, format_args!("{summary}"))?;
                    }
                    ExportCommand::Qa { out: _, filter } => {
                        let mut export = cxrlake_export::QaExport::new(dir.clone());
                        if let Some(filter) = filter {
                            export = export.with_filter(filter.clone());
                        }
                        let summary = cxrlake_export::export_qa(&lake, &export).await?;
                        say(out, format_args!("{summary}"))?;
                    }
                    ExportCommand::Release {
                        out: _,
                        subset,
                        filter,
                        split,
                        sample,
                        format,
                        refdefs,
                    } => {
                        let mut export = cxrlake_export::ReleaseExport::new(dir.clone())
                            .with_subset(subset.parse()?)
                            .with_sample(*sample)
                            .with_format((*format).into());
                        if let Some(filter) = filter {
                            export = export.with_filter(filter.clone());
                        }
                        if let Some(split) = split {
                            export = export.with_split(split)?;
                        }
                        if *format != ReleaseFormatArg::Parquet {
                            let defs = crate::refdefs::load_defs(refdefs.as_deref())?;
                            export = export.with_dataset_info(defs.dataset_info());
                        }
                        let summary = cxrlake_export::export_release(&lake, &export).await?;
                        say(out, format_args!("{summary}"))?;
                    }
                    ExportCommand::Gemex {
                        out: _,
                        filter,
                        format,
                    } => {
                        let mut export = cxrlake_export::GemexExport::new(dir.clone())
                            .with_format((*format).into());
                        if let Some(filter) = filter {
                            export = export.with_filter(filter.clone());
                        }
                        let summary = cxrlake_export::export_gemex(&lake, &export).await?;
                        say(out, format_args!("{summary}"))?;
                    }
                    ExportCommand::MimicCxrVqa { out: _, filter } => {
                        let bank = mimic_cxr_vqa_bank(&lake)?;
                        let mut export =
                            cxrlake_export::MimicVqaExport::new(dir.clone(), bank.dataset_id());
                        if let Some(filter) = filter {
                            export = export.with_filter(filter.clone());
                        }
                        let summary = cxrlake_export::export_mimic_cxr_vqa(&lake, &export).await?;
                        say(out, format_args!("{summary}"))?;
                    }
                    ExportCommand::Rexvqa { out: _, filter } => {
                        let mut export = cxrlake_export::RexvqaExport::new(dir.clone());
                        if let Some(filter) = filter {
                            export = export.with_filter(filter.clone());
                        }
                        let summary = cxrlake_export::export_rexvqa(&lake, &export).await?;
                        say(out, format_args!("{summary}"))?;
                    }
                    ExportCommand::Givcxr {
                        out: _,
                        filter,
                        sample,
                        seed,
                    } => {
                        let mut export = cxrlake_export::GivcxrExport::new(dir.clone());
                        if let Some(filter) = filter {
                            export = export.with_filter(filter.clone());
                        }
                        if let Some(pairs) = sample {
                            export = export.with_sample(*pairs, *seed);
                        }
                        let summary = cxrlake_export::export_givcxr(&lake, &export).await?;
                        say(out, format_args!("{summary}"))?;
                    }
                }
                folder.finish(out).await
            }
            Command::Demo(options) => demo(&lake, options, !self.quiet, out).await,
        }
    }
}

/// Refuses to export `flavour` when a run with the lake's settings would recompute any of its
/// stages (a refdefs edit, a changed setting, an upstream stage rerun): the export would ship
/// rows that the lake's own settings no longer produce. When the check itself cannot run (the
/// lake's stored definitions folder is gone on this machine), says so and exports.
async fn refuse_stale_flavour(lake: &Lake, flavour: &str, out: &mut dyn Write) -> Result<()> {
    let pipeline = match cxrlake_pipeline::Pipeline::open(lake.clone()).await {
        Ok(pipeline) => pipeline,
        Err(e) => {
            return say(
                out,
                format_args!(
                    "note: not checked whether {flavour} is up to date ({})",
                    CliError::from(e).one_line()
                ),
            );
        }
    };
    let plan = pipeline.plan(false).await?;
    let stale: Vec<String> = plan
        .stages
        .iter()
        .filter(|s| {
            !s.scope.is_empty()
                && cxrlake_pipeline::flavours::owning(s.stage).is_some_and(|f| f.name == flavour)
        })
        .map(|s| {
            let why = s.reasons.first().map_or("", String::as_str);
            format!("{} ({}: {why})", s.stage, s.scope.describe())
        })
        .collect();
    if stale.is_empty() {
        return Ok(());
    }
    Err(CliError::Stale(format!(
        "{flavour} is not up to date with the lake's settings and definitions: {}. Run \
         `cxrlake run --flavour {flavour}` first (`cxrlake plan` says what it recomputes)",
        stale.join("; ")
    )))
}

/// Writes one line of user-facing output.
pub(crate) fn say(out: &mut dyn Write, text: std::fmt::Arguments<'_>) -> Result<()> {
    out.write_fmt(text)
        .and_then(|()| out.write_all(b"\n"))
        .map_err(|e| CliError::Output {
            path: PathBuf::from("stdout"),
            source: Box::new(e),
        })
}

async fn init(lake: &Lake, out: &mut dyn Write) -> Result<()> {
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

async fn vacuum(lake: &Lake, hours: u64, dry_run: bool, out: &mut dyn Write) -> Result<()> {
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

async fn tables(lake: &Lake, out: &mut dyn Write) -> Result<()> {
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

async fn sql(
    lake: &Lake,
    query: &str,
    format: Format,
    file: Option<&std::path::Path>,
    out: &mut dyn Write,
) -> Result<()> {
    // Tables outside the lake too: `SELECT … FROM 'rel/qa.parquet'` (Parquet, CSV, JSON by
    // extension, compressed or not) or `FROM '/other/lake/qa'` (a Delta table's folder); local
    // paths and object-store URLs. On a Ballista cluster (`--engine`), the lake's tables only.
    let ctx = crate::distributed::sql_session(lake).await?;
    sql_in(&ctx, query, format, file, out).await
}

/// Runs `query` (one or more statements) in `ctx` and writes the last one's result.
async fn sql_in(
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

async fn status(lake: &Lake, out: &mut dyn Write) -> Result<()> {
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

async fn synth(options: cxrlake_synth::SynthOptions) -> Result<cxrlake_synth::SynthSummary> {
    tokio::task::spawn_blocking(move || cxrlake_synth::generate(&options))
        .await
        .map_err(|e| CliError::Usage(format!("synthetic corpus generator stopped: {e}")))?
        .map_err(CliError::from)
}

/// The main job on the embedded defaults: synthetic corpus → ingest → localize → extract (rules)
/// → map (lexical) → graph → balance → qa → judge (heuristic) → grade → the GEMeX flavour
/// (offline re-grounding and generation) → the release (both formats: the whole tree, FT and PT
/// exports) and the GEMeX export → summary.
async fn demo(
    lake: &Lake,
    options: &DemoOptions,
    progress: bool,
    out: &mut dyn Write,
) -> Result<()> {
    let started = std::time::Instant::now();
    init(lake, out).await?;
    let defs = crate::refdefs::load_defs(None)?;
    crate::refdefs::load_into_lake(lake, &defs).await?;
    say(
        out,
        format_args!("reference definitions {} loaded\n", defs.fingerprint()),
    )?;

    match existing_corpus(&options.corpus)? {
        Some((studies, seed)) if studies == options.studies as u64 && seed == options.seed => {
            say(
                out,
                format_args!(
                    "reusing the synthetic corpus in {} ({studies} studies, seed {seed})\n",
                    options.corpus.display()
                ),
            )?;
        }
        Some((studies, seed)) => {
            return Err(CliError::Usage(format!(
                "{} holds another corpus ({studies} studies, seed {seed}); remove it or pass --corpus DIR",
                options.corpus.display()
            )));
        }
        None => {
            let synth_options = cxrlake_synth::SynthOptions::new(
                options.studies,
                options.seed,
                options.corpus.clone(),
            );
            say(out, format_args!("{}\n", synth(synth_options).await?))?;
        }
    }

    let options_ingest = cxrlake_ingest::IngestOptions::new(vec![options.corpus.clone()])
        .with_limits(cxrlake_ingest::Limits::of(&lake.settings().cxrlake));
    say(
        out,
        format_args!("{}\n", cxrlake_ingest::ingest(lake, &options_ingest).await?),
    )?;
    // Every stage, incremental: a rerun of the demo on its own lake recomputes nothing.
    let pipeline = cxrlake_pipeline::Pipeline::builder(lake.clone())
        .reuse_stored_settings(false)
        .set("cxrlake.flavours", "gemex,mimic_cxr_vqa,rexvqa,givcxr")?
        .progress(progress)
        .open()
        .await?;
    let mut failed = None;
    pipeline
        .run(false, &mut |stage| {
            let line = match &stage.report {
                Some(report) => format!("{report}\n"),
                None => format!("{}: up to date\n", stage.stage),
            };
            if let Err(e) = say(out, format_args!("{line}")) {
                failed.get_or_insert(e);
            }
        })
        .await?;
    if let Some(e) = failed {
        return Err(e);
    }

    let release = cxrlake_export::ReleaseExport::new(options.release.clone())
        .with_dataset_info(defs.dataset_info());
    say(
        out,
        format_args!(
            "{}\n",
            cxrlake_export::export_release(lake, &release).await?
        ),
    )?;
    let gemex = cxrlake_export::GemexExport::new(&options.flavours);
    say(
        out,
        format_args!("{}\n", cxrlake_export::export_gemex(lake, &gemex).await?),
    )?;
    let vqa = cxrlake_export::MimicVqaExport::new(
        &options.flavours,
        mimic_cxr_vqa_bank(lake)?.dataset_id(),
    );
    say(
        out,
        format_args!(
            "{}\n",
            cxrlake_export::export_mimic_cxr_vqa(lake, &vqa).await?
        ),
    )?;
    let rexvqa = cxrlake_export::RexvqaExport::new(&options.flavours);
    say(
        out,
        format_args!("{}\n", cxrlake_export::export_rexvqa(lake, &rexvqa).await?),
    )?;
    let givcxr = cxrlake_export::GivcxrExport::new(&options.flavours);
    say(
        out,
        format_args!("{}\n", cxrlake_export::export_givcxr(lake, &givcxr).await?),
    )?;

    let truth = options.corpus.join("ground_truth.jsonl");
    let report = cxrlake_pipeline::evaluate::observations_vs_truth(lake, &defs, &truth).await?;
    say(
        out,
        format_args!("mapped observations vs the corpus's ground truth:\n{report}\n"),
    )?;

    say(out, format_args!("lake tables:"))?;
    tables(lake, out).await?;
    say(
        out,
        format_args!("\nlocalization quality on frontal images (table 11 levels):"),
    )?;
    let query = "SELECT r.localization_quality, count(*) AS region_boxes, \
                 round(100.0 * count(*) / sum(count(*)) OVER (), 1) AS percent \
                 FROM region_boxes r JOIN images i USING (image_id) WHERE i.is_frontal \
                 GROUP BY 1 ORDER BY 2 DESC";
    sql(lake, query, Format::Table, None, out).await?;
    say(
        out,
        format_args!("\nmapped observations by positiveness and certainty (rules + lexical):"),
    )?;
    let query = "SELECT positiveness, certainty, count(*) AS observations, \
                 count(DISTINCT study_id) AS studies, \
                 round(100.0 * count(*) / sum(count(*)) OVER (), 1) AS percent \
                 FROM observations WHERE child_level = 0 \
                 GROUP BY 1, 2 ORDER BY 3 DESC";
    sql(lake, query, Format::Table, None, out).await?;
    say(
        out,
        format_args!("\nscene-graph extraction quality (table 11, worst aspect per study):"),
    )?;
    let query = "SELECT study_quality['region_extract_quality'] AS regions, \
                 study_quality['entity_extract_quality'] AS entities, \
                 study_quality['general_issue_level'] AS issues, count(*) AS studies \
                 FROM scene_graphs GROUP BY 1, 2, 3 ORDER BY 4 DESC LIMIT 8";
    sql(lake, query, Format::Table, None, out).await?;
    say(
        out,
        format_args!("\nquestions per template (sql/stats/qa_templates.sql):"),
    )?;
    sql(lake, stat("qa_templates"), Format::Table, None, out).await?;
    say(
        out,
        format_args!(
            "\nmost asked regions and findings, positive vs negative (sql/stats/qa_balance.sql):"
        ),
    )?;
    let query = format!(
        "SELECT * FROM ({}) LIMIT 12",
        stat("qa_balance").trim().trim_end_matches(';')
    );
    sql(lake, &query, Format::Table, None, out).await?;
    say(
        out,
        format_args!("\nratings per question type (sql/stats/qa_ratings.sql):"),
    )?;
    sql(lake, stat("qa_ratings"), Format::Table, None, out).await?;
    say(
        out,
        format_args!("\njudge calls with content dedup (sql/stats/judge_calls.sql):"),
    )?;
    sql(lake, stat("judge_calls"), Format::Table, None, out).await?;
    say(
        out,
        format_args!(
            "\nGEMeX questions (T) and boxes (B) per split and type (sql/stats/gemex_table2.sql):"
        ),
    )?;
    sql(lake, stat("gemex_table2"), Format::Table, None, out).await?;
    say(
        out,
        format_args!(
            "\nMIMIC-CXR-VQA images, QA pairs, open and closed answers per split \
             (sql/stats/mimic_cxr_vqa_table1.sql):"
        ),
    )?;
    sql(lake, stat("mimic_cxr_vqa_table1"), Format::Table, None, out).await?;
    say(
        out,
        format_args!(
            "\nMIMIC-CXR-VQA questions per CheXpert label value \
             (sql/stats/mimic_cxr_vqa_table2.sql):"
        ),
    )?;
    sql(lake, stat("mimic_cxr_vqa_table2"), Format::Table, None, out).await?;
    say(
        out,
        format_args!(
            "\nMIMIC-CXR-VQA judge on the QC sample of reports \
             (sql/stats/mimic_cxr_vqa_table3.sql):"
        ),
    )?;
    sql(lake, stat("mimic_cxr_vqa_table3"), Format::Table, None, out).await?;
    say(
        out,
        format_args!("\nReXVQA validators and filters (sql/stats/rexvqa_validators.sql):"),
    )?;
    sql(lake, stat("rexvqa_validators"), Format::Table, None, out).await?;
    say(
        out,
        format_args!(
            "\nReXVQA kept MCQs per task type and difficulty (sql/stats/rexvqa_tasks.sql):"
        ),
    )?;
    sql(lake, stat("rexvqa_tasks"), Format::Table, None, out).await?;
    say(
        out,
        format_args!("\nReXVQA correct-answer positions (sql/stats/rexvqa_positions.sql):"),
    )?;
    sql(lake, stat("rexvqa_positions"), Format::Table, None, out).await?;
    say(
        out,
        format_args!(
            "\nGIV-CXR QA pairs kept and rejected, by reason (givcxr_dataset, givcxr_rejects):"
        ),
    )?;
    let query = "SELECT 'kept' AS outcome, count(*) AS qa_pairs FROM givcxr_dataset \
                 UNION ALL SELECT 'rejected: ' || reason, count(*) \
                 FROM (SELECT unnest(reasons) AS reason FROM givcxr_rejects) GROUP BY reason \
                 ORDER BY qa_pairs DESC";
    sql(lake, query, Format::Table, None, out).await?;
    say(
        out,
        format_args!(
            "\nGIV-CXR QA pairs per clinical finding, multi-label (sql/stats/givcxr_findings.sql):"
        ),
    )?;
    sql(lake, stat("givcxr_findings"), Format::Table, None, out).await?;
    say(out, format_args!("\nreference vocabulary by category:"))?;
    let query = "SELECT category, count(*) AS findings, sum(array_length(synonyms)) AS synonyms \
                 FROM ref_findings GROUP BY category ORDER BY category";
    sql(lake, query, Format::Table, None, out).await?;
    say(
        out,
        format_args!("\ndone in {:.1} s", started.elapsed().as_secs_f64()),
    )
}

/// The SQL of the stats query `name` (one of [`STATS`]; empty, and so an error when run, if not).
fn stat(name: &str) -> &'static str {
    cxrlake_report::stats::query(name).unwrap_or_default()
}

/// The MIMIC-CXR-VQA question bank the lake's settings name (its dataset id goes into exports).
fn mimic_cxr_vqa_bank(lake: &Lake) -> Result<cxrlake_pipeline::mimic_cxr_vqa::Bank> {
    Ok(cxrlake_pipeline::mimic_cxr_vqa::bank_in(
        &lake.settings().cxrlake.templates,
    )?)
}

/// `(studies, seed)` of the corpus already in `dir`, if its manifest says so.
fn existing_corpus(dir: &std::path::Path) -> Result<Option<(u64, u64)>> {
    let manifest = dir.join("manifest.json");
    let Ok(text) = std::fs::read_to_string(&manifest) else {
        return Ok(None);
    };
    let value: serde_json::Value = serde_json::from_str(&text).map_err(|e| {
        CliError::Usage(format!(
            "{}: {e}; remove the folder or pass --corpus DIR",
            manifest.display()
        ))
    })?;
    Ok(value["studies"].as_u64().zip(value["seed"].as_u64()))
}

/// The settings of the stages, each a `cxrlake.*` key (`[key]`): a flag overrides the config
/// file, the environment and the lake's stored settings; settings not given are the lake's
/// (those of its last run), so a plain `cxrlake run` rebuilds nothing.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct SettingsArgs {
    /// Reference definitions folder [key: refdefs; built-in: the embedded definitions]
    #[arg(long, value_name = "DIR")]
    pub refdefs: Option<PathBuf>,
    /// QA templates folder (balance, qa) [key: templates; built-in: templates/]
    #[arg(long, value_name = "DIR")]
    pub templates: Option<PathBuf>,
    /// Extraction prompts folder of the LLM backend [key: prompts; built-in: prompts/]
    #[arg(long, value_name = "DIR")]
    pub prompts: Option<PathBuf>,
    /// Judge prompts folder of the LLM judge [key: judge_prompts; built-in: prompts/judge/]
    #[arg(long, value_name = "DIR")]
    pub judge_prompts: Option<PathBuf>,
    /// LLM judge: QA pairs of one study and criterion per call, 1 to 32 [key: judge_batch; default: 8]
    #[arg(long, value_name = "N")]
    pub judge_batch: Option<u64>,
    /// Extraction backend: rules or llm [key: extractor; default on a lake's first run: llm
    /// with --llm-endpoint, else rules; later runs keep the lake's]
    #[arg(long, value_name = "NAME", value_parser = ["rules", "llm"])]
    pub extractor: Option<String>,
    /// Judge: heuristic, reading (the heuristic with an entailment check against the report) or
    /// llm [key: judge; default on a lake's first run: llm with --llm-endpoint, else
    /// heuristic; later runs keep the lake's]
    #[arg(long, value_name = "NAME", value_parser = ["heuristic", "reading", "llm"])]
    pub judge: Option<String>,
    /// OpenAI-compatible base URL, e.g. http://127.0.0.1:8000/v1 (vLLM, llama.cpp server,
    /// Ollama) [key: llm_endpoint]
    #[arg(long, value_name = "URL")]
    pub llm_endpoint: Option<String>,
    /// Model name sent to the endpoint [key: llm_model]
    #[arg(long, value_name = "NAME")]
    pub model: Option<String>,
    /// LLM requests in flight at once [key: llm_concurrency]
    #[arg(long, value_name = "N")]
    pub llm_concurrency: Option<usize>,
    /// Seconds one LLM request may take, queueing at the server included [key:
    /// llm_request_timeout]
    #[arg(long, value_name = "SECONDS")]
    pub llm_timeout: Option<u64>,
    /// Environment variable holding the LLM API key [key: llm_api_key_env]
    #[arg(long, value_name = "VAR")]
    pub llm_api_key_env: Option<String>,
    /// Stop after this many LLM requests; answered ones are cached, a re-run resumes [key:
    /// llm_max_requests]
    #[arg(long, value_name = "N")]
    pub llm_max_requests: Option<u64>,
    /// Allow an LLM endpoint outside loopback/private networks: only for endpoints approved for
    /// PHI; never reused from the lake [key: allow_remote_llm]
    #[arg(long)]
    pub allow_remote_llm: bool,
    /// Embedder of the map stage: lexical or onnx [key: embedder]
    #[arg(long, value_name = "NAME")]
    pub embedder: Option<String>,
    /// ONNX model file of the onnx embedder [key: onnx_model]
    #[arg(long, value_name = "FILE")]
    pub onnx_model: Option<PathBuf>,
    /// tokenizer.json of the onnx embedder [key: onnx_tokenizer]
    #[arg(long, value_name = "FILE")]
    pub onnx_tokenizer: Option<PathBuf>,
    /// Cosine similarity a tag needs to map onto a reference tag [key: match_threshold]
    #[arg(long, value_name = "COSINE")]
    pub match_threshold: Option<f64>,
    /// localize: boxes smaller than this many square pixels are dropped [key: min_area]
    #[arg(long, value_name = "PIXELS")]
    pub min_area: Option<f64>,
    /// Add a dataset flavour to build besides MIMIC-Ext-CXR-QBA, e.g. gemex (repeatable or comma
    /// separated); the lake keeps the flavours it was given before [key: flavours]
    #[arg(long = "flavour", value_name = "NAME")]
    pub flavours: Vec<String>,
    /// Stop building a flavour (repeatable or comma separated; `all` for every one); its tables
    /// stay, and `plan` and `status` still say whether they are up to date
    #[arg(long = "no-flavour", value_name = "NAME")]
    pub no_flavours: Vec<String>,
    /// Generation backend of the flavours: offline or llm [key: generator; default on a lake's
    /// first run: llm with --llm-endpoint, else offline; later runs keep the lake's]
    #[arg(long, value_name = "NAME", value_parser = ["offline", "llm"])]
    pub generator: Option<String>,
    /// Prompts folder of the flavours, one subfolder each (e.g. gemex/) [key: flavour_prompts;
    /// built-in: prompts/]
    #[arg(long, value_name = "DIR")]
    pub flavour_prompts: Option<PathBuf>,
    /// MIMIC-CXR-VQA: keep the paper's spelling of its questions (true) or correct it (false)
    /// [key: vqa_paper_typos]
    #[arg(long, value_name = "BOOL")]
    pub vqa_paper_typos: Option<bool>,
    /// MIMIC-CXR-VQA: answers with a prohibited term or a report reference are flagged,
    /// regenerated (asked again) or dropped (quarantined) [key: vqa_lint]
    #[arg(long, value_name = "POLICY", value_parser = ["flag", "regenerate", "drop"])]
    pub vqa_lint: Option<String>,
    /// MIMIC-CXR-VQA: reports in the judge's QC sample; 0 for all [key: vqa_qc_reports]
    #[arg(long, value_name = "N")]
    pub vqa_qc_reports: Option<usize>,
    /// ReXVQA: characters an explanation needs (validator v3) [key: rexvqa_min_explanation]
    #[arg(long, value_name = "N")]
    pub rexvqa_min_explanation: Option<usize>,
    /// ReXVQA: cosine similarity at which an MCQ nearly repeats an earlier one of its study
    /// [key: rexvqa_duplicate_threshold]
    #[arg(long, value_name = "COSINE")]
    pub rexvqa_duplicate_threshold: Option<f64>,
    /// ReXVQA: MCQs per 1,000 in the stratified QC sample [key: rexvqa_qc_per_1000]
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(0..=1000))]
    pub rexvqa_qc_per_1000: Option<u64>,
    /// GIV-CXR: the patient-disjoint split, train:val:test shares (e.g. 0.564:0.05:0.386) or
    /// `official` [key: givcxr_split]
    #[arg(long, value_name = "SHARES")]
    pub givcxr_split: Option<String>,
    /// GIV-CXR: share of the image under which a box is `small` [key: givcxr_bbox_small]
    #[arg(long, value_name = "SHARE")]
    pub givcxr_bbox_small: Option<f64>,
    /// GIV-CXR: share of the image from which a box is `large` [key: givcxr_bbox_large]
    #[arg(long, value_name = "SHARE")]
    pub givcxr_bbox_large: Option<f64>,
    /// Patients per chunk (bounds memory; one commit per chunk) [key: chunk_patients; default:
    /// localize 500, map 5000, graph 2000, qa/judge/grade 100]
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub chunk_patients: Option<u64>,
    /// Ignore the settings the lake stored for its last run (built-in defaults, then the config
    /// file, environment and flags)
    #[arg(long)]
    pub reset: bool,
}

impl SettingsArgs {
    /// The `(key, value)` of every flag given; folders and files become absolute paths.
    fn assignments(&self) -> Result<Vec<(&'static str, String)>> {
        let path = |flag: &str, path: &PathBuf| -> Result<String> {
            std::fs::canonicalize(path)
                .map(|p| p.display().to_string())
                .map_err(|e| CliError::Usage(format!("--{flag} {}: {e}", path.display())))
        };
        let mut out = Vec::new();
        for (key, flag, value) in [
            ("refdefs", "refdefs", &self.refdefs),
            ("templates", "templates", &self.templates),
            ("prompts", "prompts", &self.prompts),
            ("judge_prompts", "judge-prompts", &self.judge_prompts),
            ("flavour_prompts", "flavour-prompts", &self.flavour_prompts),
            ("onnx_model", "onnx-model", &self.onnx_model),
            ("onnx_tokenizer", "onnx-tokenizer", &self.onnx_tokenizer),
        ] {
            if let Some(value) = value {
                out.push((key, path(flag, value)?));
            }
        }
        let texts = [
            ("extractor", self.extractor.clone()),
            ("judge", self.judge.clone()),
            ("generator", self.generator.clone()),
            ("llm_endpoint", self.llm_endpoint.clone()),
            ("llm_model", self.model.clone()),
            (
                "llm_concurrency",
                self.llm_concurrency.map(|n| n.to_string()),
            ),
            (
                "llm_request_timeout",
                self.llm_timeout.map(|n| n.to_string()),
            ),
            ("llm_api_key_env", self.llm_api_key_env.clone()),
            (
                "llm_max_requests",
                self.llm_max_requests.map(|n| n.to_string()),
            ),
            ("embedder", self.embedder.clone()),
            (
                "match_threshold",
                self.match_threshold.map(|v| v.to_string()),
            ),
            ("min_area", self.min_area.map(|v| v.to_string())),
            ("judge_batch", self.judge_batch.map(|n| n.to_string())),
            (
                "vqa_paper_typos",
                self.vqa_paper_typos.map(|v| v.to_string()),
            ),
            ("vqa_lint", self.vqa_lint.clone()),
            ("vqa_qc_reports", self.vqa_qc_reports.map(|n| n.to_string())),
            (
                "rexvqa_min_explanation",
                self.rexvqa_min_explanation.map(|n| n.to_string()),
            ),
            (
                "rexvqa_duplicate_threshold",
                self.rexvqa_duplicate_threshold.map(|v| v.to_string()),
            ),
            (
                "rexvqa_qc_per_1000",
                self.rexvqa_qc_per_1000.map(|n| n.to_string()),
            ),
            ("givcxr_split", self.givcxr_split.clone()),
            (
                "givcxr_bbox_small",
                self.givcxr_bbox_small.map(|v| v.to_string()),
            ),
            (
                "givcxr_bbox_large",
                self.givcxr_bbox_large.map(|v| v.to_string()),
            ),
            ("chunk_patients", self.chunk_patients.map(|n| n.to_string())),
            (
                "allow_remote_llm",
                self.allow_remote_llm.then(|| "true".to_string()),
            ),
        ];
        out.extend(
            texts
                .into_iter()
                .filter_map(|(key, value)| value.map(|v| (key, v))),
        );
        if let Some(threshold) = self.match_threshold
            && !(threshold.is_finite() && threshold <= 1.0)
        {
            return Err(CliError::Usage(format!(
                "--match-threshold must be a cosine similarity of at most 1, got {threshold}"
            )));
        }
        if self.llm_timeout == Some(0) {
            return Err(CliError::Usage(
                "--llm-timeout must be at least 1 second".into(),
            ));
        }
        Ok(out)
    }

    /// The pipeline over `lake` with these flags over the lake's settings.
    async fn pipeline(&self, lake: &Lake, quiet: bool) -> Result<cxrlake_pipeline::Pipeline> {
        let mut builder = cxrlake_pipeline::Pipeline::builder(lake.clone())
            .reuse_stored_settings(!self.reset)
            .progress(!quiet);
        for (key, value) in self.assignments()? {
            builder = builder.set(key, &value)?;
        }
        builder = builder
            .add_flavours(&self.flavours)
            .remove_flavours(&self.no_flavours);
        let pipeline = builder.open().await?;
        if self.llm_endpoint.is_some() {
            // The backends were resolved on the lake's first run and are kept: an endpoint
            // alone does not switch a lake built offline to the LLM.
            let config = pipeline.config();
            for (key, flag, value, given) in [
                ("extractor", "--extractor", &config.extractor, &self.extractor),
                ("judge", "--judge", &config.judge, &self.judge),
                ("generator", "--generator", &config.generator, &self.generator),
            ] {
                let used = key != "generator" || !config.flavours.is_empty();
                if used && given.is_none() && value != "llm" && !value.is_empty() {
                    tracing::warn!(
                        "--llm-endpoint is set, but the lake keeps {key} = {value} from its \
                         earlier runs: `{flag} llm` switches it to the LLM"
                    );
                }
            }
        }
        Ok(pipeline)
    }
}

/// Prints the lake's stored settings and, where they differ, the ones in effect.
fn say_settings(pipeline: &cxrlake_pipeline::Pipeline, out: &mut dyn Write) -> Result<()> {
    let Some(stored) = pipeline.stored() else {
        return say(out, format_args!("settings:        (no run recorded yet)"));
    };
    say(
        out,
        format_args!(
            "settings:        of the last run ({}, `cxrlake {}`)",
            stored.run_id, stored.command
        ),
    )?;
    let settings = pipeline.settings();
    for key in cxrlake_pipeline::settings::RESULT_KEYS {
        let value = stored.value(key).unwrap_or_default();
        let source = stored
            .settings
            .iter()
            .find(|(k, _, _)| k == key)
            .map_or("", |(_, _, s)| s.as_str());
        let shown = if value.is_empty() {
            "(built-in)"
        } else {
            value
        };
        let mut line = format!("  cxrlake.{key:<16} {shown} ({source})");
        let now = settings.get(key).unwrap_or_default();
        if now != value {
            line.push_str(&format!(" → now {now} ({})", settings.source(key)));
        }
        say(out, format_args!("{line}"))?;
    }
    Ok(())
}

/// Options of the main job.
#[derive(Debug, Clone, clap::Args)]
pub struct DemoOptions {
    /// Studies in the synthetic corpus
    #[arg(long, default_value_t = 500)]
    pub studies: usize,
    /// Seed of the synthetic corpus and all sampling
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Where the synthetic corpus is written
    #[arg(long, value_name = "DIR", default_value = "corpus")]
    pub corpus: PathBuf,
    /// Where the release is written (metadata/, qa.zip, scene_data.zip, exports/A_frontal,
    /// exports/B_frontal, quality_mappings.csv, README.md; see `cxrlake export release`)
    #[arg(long, value_name = "DIR", default_value = "release")]
    pub release: PathBuf,
    /// Where the other flavours' exports are written (gemex/, llava/, mimic_cxr_vqa/ and
    /// rexvqa/; see `cxrlake export gemex`, `mimic-cxr-vqa` and `rexvqa`)
    #[arg(long, value_name = "DIR", default_value = "flavours")]
    pub flavours: PathBuf,
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
