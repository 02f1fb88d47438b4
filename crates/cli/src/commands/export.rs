//! `cxrlake export`: the lake in the released dataset's layout, and the flavours' files.

use std::io::Write;
use std::path::PathBuf;

use clap::Subcommand;
use cxrlake_lake::Lake;

use crate::error::{CliError, Result};
use crate::folders::Output;
use crate::output::say;

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

impl ExportCommand {
    /// Runs the command.
    pub async fn run(&self, lake: &Lake, out: &mut dyn Write) -> Result<()> {
        lake.require_initialized().await?;
        if let Some(flavour) = self.flavour() {
            refuse_stale_flavour(lake, flavour, out).await?;
        }
        let folder = Output::open(self.out(), lake).await?;
        let dir = &folder.path();
        match self {
            ExportCommand::SceneGraphs { out: _, filter } => {
                let mut export = cxrlake_export::SceneGraphExport::new(dir.clone());
                if let Some(filter) = filter {
                    export = export.with_filter(filter.clone());
                }
                let summary = cxrlake_export::export_scene_graphs(lake, &export).await?;
                say(out, format_args!("{summary}"))?;
            }
            ExportCommand::Qa { out: _, filter } => {
                let mut export = cxrlake_export::QaExport::new(dir.clone());
                if let Some(filter) = filter {
                    export = export.with_filter(filter.clone());
                }
                let summary = cxrlake_export::export_qa(lake, &export).await?;
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
                    let defs = crate::commands::refdefs::load_defs(refdefs.as_deref())?;
                    export = export.with_dataset_info(defs.dataset_info());
                }
                let summary = cxrlake_export::export_release(lake, &export).await?;
                say(out, format_args!("{summary}"))?;
            }
            ExportCommand::Gemex {
                out: _,
                filter,
                format,
            } => {
                let mut export = cxrlake_gemex::export::GemexExport::new(dir.clone())
                    .with_format((*format).into());
                if let Some(filter) = filter {
                    export = export.with_filter(filter.clone());
                }
                let summary = cxrlake_gemex::export::export_gemex(lake, &export).await?;
                say(out, format_args!("{summary}"))?;
            }
            ExportCommand::MimicCxrVqa { out: _, filter } => {
                let bank = mimic_cxr_vqa_bank(lake)?;
                let mut export = cxrlake_mimic_cxr_vqa::export::MimicVqaExport::new(
                    dir.clone(),
                    bank.dataset_id(),
                );
                if let Some(filter) = filter {
                    export = export.with_filter(filter.clone());
                }
                let summary =
                    cxrlake_mimic_cxr_vqa::export::export_mimic_cxr_vqa(lake, &export).await?;
                say(out, format_args!("{summary}"))?;
            }
            ExportCommand::Rexvqa { out: _, filter } => {
                let mut export = cxrlake_rexvqa::export::RexvqaExport::new(dir.clone());
                if let Some(filter) = filter {
                    export = export.with_filter(filter.clone());
                }
                let summary = cxrlake_rexvqa::export::export_rexvqa(lake, &export).await?;
                say(out, format_args!("{summary}"))?;
            }
            ExportCommand::Givcxr {
                out: _,
                filter,
                sample,
                seed,
            } => {
                let mut export = cxrlake_givcxr::export::GivcxrExport::new(dir.clone());
                if let Some(filter) = filter {
                    export = export.with_filter(filter.clone());
                }
                if let Some(pairs) = sample {
                    export = export.with_sample(*pairs, *seed);
                }
                let summary = cxrlake_givcxr::export::export_givcxr(lake, &export).await?;
                say(out, format_args!("{summary}"))?;
            }
        }
        folder.finish(out).await
    }

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

impl From<GemexFormatArg> for cxrlake_gemex::export::GemexFormat {
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

/// Refuses to export `flavour` when a run with the lake's settings would recompute any of its
/// stages (a refdefs edit, a changed setting, an upstream stage rerun): the export would ship
/// rows that the lake's own settings no longer produce. When the check itself cannot run (the
/// lake's stored definitions folder is gone on this machine), says so and exports.
async fn refuse_stale_flavour(lake: &Lake, flavour: &str, out: &mut dyn Write) -> Result<()> {
    let pipeline = match cxrlake_pipeline::Pipeline::open(lake.clone(), cxrlake_flavours::ALL).await
    {
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
                && cxrlake_pipeline::flavours::owning(cxrlake_flavours::ALL, s.stage)
                    .is_some_and(|f| f.name == flavour)
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

/// The MIMIC-CXR-VQA question bank the lake's settings name (its dataset id goes into exports).
pub(crate) fn mimic_cxr_vqa_bank(lake: &Lake) -> Result<cxrlake_mimic_cxr_vqa::stages::Bank> {
    Ok(cxrlake_mimic_cxr_vqa::stages::bank_in(
        &lake.settings().cxrlake.templates,
    )?)
}
