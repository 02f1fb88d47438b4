//! `cxrlake export release`: subsets of the graded lake in the released dataset's layouts, each
//! subset a SQL file of `sql/release/`.
//!
//! ```text
//! images ─images.sql ($1 frontal only)─▶ release_images ─image_sets.sql─▶ image_sets
//! qa ⋈ image_sets ─candidates.sql (keep_images: per-image entries of kept images only, split)─▶
//!    release_candidates ─ft.sql | pt.sql | a_plus.sql | a_plus_plus.sql | all.sql
//!    ─ --where, --split ─▶ qa.parquet (nested) = release_qa ─studies.sql─▶ release_studies
//! scene_graphs ⋈ release_studies ─scene_graphs.sql─▶ scene_graphs.parquet = release_scene_graphs
//! release_* ─<table>_metadata.sql ×7─▶ metadata/<table>_metadata.parquet + .csv.gz
//! release_qa ─sample.sql (sample_hash(seed, study, question) < p)─▶ metadata/q1M/…
//! physionet: release_qa ─D.2─▶ qa.zip; release_scene_graphs ─D.1─▶ scene_data.zip (+ metadata.json)
//! each folder: metadata/question_metadata.parquet + counts ─▶ cxrlake_info.json (info.rs)
//! root: lake ─cxrlake report─▶ stats/ (figures as PNG and SVG, CSV tables, index.html)
//! ```
//!
//! `--subset all` writes the release's tree: the root (every QA pair and image) and
//! `exports/A_frontal` (FT) and `exports/B_frontal` (PT), each with its q1M sample; another
//! subset writes one such folder at the output root. The lake's `qa` is scanned once per part:
//! that one stream of the subset's rows (`release_qa`, a `Broadcast` table, `broadcast.rs`) feeds
//! `qa.parquet` or `qa.zip`, the four per-question metadata tables and their q1M samples at
//! once; the study-level files then read the written `question_metadata.parquet` back.

mod broadcast;
mod csv;
mod info;
mod tables;

use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::Arc;
use std::time::Instant;

use arrow::array::{Array, AsArray};
use arrow::compute::cast;
use arrow::datatypes::{DataType, Int64Type};
use cxrlake_lake::Lake;
use cxrlake_schemas::Rating;
use cxrlake_schemas::quality;
use datafusion::catalog::TableProvider;
use datafusion::common::ScalarValue;
use datafusion::dataframe::DataFrame;
use datafusion::error::DataFusionError;
use datafusion::execution::SendableRecordBatchStream;
use datafusion::prelude::{ParquetReadOptions, SessionContext, col, lit};
use serde_json::Value;
use tracing::Instrument;

pub use cxrlake_lake::{portable_batch, portable_schema, portable_type};
pub use tables::TableFiles;

use crate::error::{ExportError, Result};
use crate::files::{create_folder, patient_folder, write_file};
use crate::qa::{StudySizes, question_stream, study_sizes, write_question_stream};
use crate::scan::filter_error;
use crate::scene_graphs::write_scene_graphs;
use crate::sink::{Sink, ZipSink};
use broadcast::Broadcast;

/// The views and subsets of `sql/release/`.
mod sql {
    pub const IMAGES: &str = include_str!("../../../../sql/release/images.sql");
    pub const IMAGE_SETS: &str = include_str!("../../../../sql/release/image_sets.sql");
    pub const CANDIDATES: &str = include_str!("../../../../sql/release/candidates.sql");
    pub const STUDIES: &str = include_str!("../../../../sql/release/studies.sql");
    pub const SCENE_GRAPHS: &str = include_str!("../../../../sql/release/scene_graphs.sql");
    pub const SAMPLE: &str = include_str!("../../../../sql/release/sample.sql");
    pub const STUDY_FILES: &str = include_str!("../../../../sql/release/study_files.sql");
    /// The seven flat metadata tables in file order.
    pub const METADATA: [super::Metadata; 7] = [
        super::Metadata {
            name: "patient_metadata",
            query: include_str!("../../../../sql/release/patient_metadata.sql"),
            per_question: false,
        },
        super::Metadata {
            name: "study_metadata",
            query: include_str!("../../../../sql/release/study_metadata.sql"),
            per_question: false,
        },
        super::Metadata {
            name: "image_metadata",
            query: include_str!("../../../../sql/release/image_metadata.sql"),
            per_question: false,
        },
        super::Metadata {
            name: "question_metadata",
            query: include_str!("../../../../sql/release/question_metadata.sql"),
            per_question: true,
        },
        super::Metadata {
            name: "question_image_metadata",
            query: include_str!("../../../../sql/release/question_image_metadata.sql"),
            per_question: true,
        },
        super::Metadata {
            name: "answer_metadata",
            query: include_str!("../../../../sql/release/answer_metadata.sql"),
            per_question: true,
        },
        super::Metadata {
            name: "answer_image_metadata",
            query: include_str!("../../../../sql/release/answer_image_metadata.sql"),
            per_question: true,
        },
    ];
}

/// A flat metadata table: `metadata/<name>.parquet` and `.csv.gz`.
#[derive(Debug, Clone, Copy)]
struct Metadata {
    name: &'static str,
    query: &'static str,
    /// Whether its rows come from each row of `release_qa` alone (written during the subset's
    /// scan) rather than from the release's studies, images and scene graphs.
    per_question: bool,
}

/// The names of the seven metadata tables (files `metadata/<name>.parquet` and `.csv.gz`).
pub fn metadata_tables() -> impl Iterator<Item = &'static str> {
    sql::METADATA.iter().map(|table| table.name)
}

/// A subset of the lake's QA pairs (paper 3.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Subset {
    /// Every QA pair, every image (the release's root).
    All,
    /// Pre-training grade: rating B or better, frontal images only.
    Pt,
    /// Fine-tuning grade: rating A or better, frontal images only.
    Ft,
    /// Rating A+ or better, frontal images only.
    APlus,
    /// Rating A++, frontal images only.
    APlusPlus,
}

impl Subset {
    /// Every subset.
    pub const ALL: [Subset; 5] = [
        Subset::All,
        Subset::Pt,
        Subset::Ft,
        Subset::APlus,
        Subset::APlusPlus,
    ];

    /// The name on the command line: `all`, `pt`, `ft`, `a+`, `a++`.
    pub fn name(self) -> &'static str {
        match self {
            Subset::All => "all",
            Subset::Pt => "pt",
            Subset::Ft => "ft",
            Subset::APlus => "a+",
            Subset::APlusPlus => "a++",
        }
    }

    /// The subset's SQL file (`sql/release/<name>.sql`).
    fn query(self) -> &'static str {
        match self {
            Subset::All => include_str!("../../../../sql/release/all.sql"),
            Subset::Pt => include_str!("../../../../sql/release/pt.sql"),
            Subset::Ft => include_str!("../../../../sql/release/ft.sql"),
            Subset::APlus => include_str!("../../../../sql/release/a_plus.sql"),
            Subset::APlusPlus => include_str!("../../../../sql/release/a_plus_plus.sql"),
        }
    }

    /// Whether non-frontal images are removed (every subset but `all`).
    pub fn frontal_only(self) -> bool {
        self != Subset::All
    }

    /// The lowest rating it keeps (`None`: every QA pair, rated or not).
    pub fn min_rating(self) -> Option<Rating> {
        match self {
            Subset::All => None,
            Subset::Pt => Some(Rating::B),
            Subset::Ft => Some(Rating::A),
            Subset::APlus => Some(Rating::APlus),
            Subset::APlusPlus => Some(Rating::APlusPlus),
        }
    }
}

impl fmt::Display for Subset {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Subset {
    type Err = ExportError;

    fn from_str(s: &str) -> Result<Self> {
        let wanted = s.trim().to_ascii_lowercase();
        Subset::ALL
            .into_iter()
            .find(|subset| subset.name() == wanted)
            .ok_or_else(|| {
                let names: Vec<_> = Subset::ALL.iter().map(|s| s.name()).collect();
                ExportError::Usage(format!(
                    "unknown subset '{s}'; use one of {} (ft: rating >= 'A', pt: rating >= 'B'), \
                     or --where for any other predicate",
                    names.join(", ")
                ))
            })
    }
}

/// Which files a release has.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReleaseFormat {
    /// `qa.parquet` and `scene_graphs.parquet` (nested) and the metadata tables.
    Parquet,
    /// The PhysioNet layout: `qa.zip`, `scene_data.zip` / `scene_graph.zip`, the metadata
    /// tables, `quality_mappings.csv`, `metadata/dataset_info.json`, `README.md`.
    Physionet,
    /// Both.
    Both,
}

impl ReleaseFormat {
    fn parquet(self) -> bool {
        self != ReleaseFormat::Physionet
    }

    fn physionet(self) -> bool {
        self != ReleaseFormat::Parquet
    }
}

/// The official splits.
pub const SPLITS: [&str; 3] = ["train", "validate", "test"];

/// Default size of the question sample (`q1M`).
pub const DEFAULT_SAMPLE: u64 = 1_000_000;

/// What to export and where.
#[derive(Debug, Clone, PartialEq)]
pub struct ReleaseExport {
    /// Output folder.
    pub out_dir: PathBuf,
    /// The subset (`all`: the whole release tree).
    pub subset: Subset,
    /// A SQL predicate over `qa` columns (and `split`), applied on top of the subset.
    pub filter: Option<String>,
    /// Only this split.
    pub split: Option<String>,
    /// Questions in the hash sample (`metadata/q1M/`) of each subset but `all`; 0: none.
    pub sample: u64,
    /// Which files.
    pub format: ReleaseFormat,
    /// `metadata/dataset_info.json` of the PhysioNet layout (the reference definitions'
    /// vocabularies).
    pub dataset_info: Option<Value>,
}

impl ReleaseExport {
    /// The whole release tree in both formats, 1M-question samples.
    pub fn new(out_dir: impl Into<PathBuf>) -> Self {
        Self {
            out_dir: out_dir.into(),
            subset: Subset::All,
            filter: None,
            split: None,
            sample: DEFAULT_SAMPLE,
            format: ReleaseFormat::Both,
            dataset_info: None,
        }
    }

    /// Exports this subset.
    pub fn with_subset(mut self, subset: Subset) -> Self {
        self.subset = subset;
        self
    }

    /// Keeps only QA pairs matching `filter` (SQL over `qa` columns and `split`).
    pub fn with_filter(mut self, filter: impl Into<String>) -> Self {
        self.filter = Some(filter.into());
        self
    }

    /// Keeps only `split` (train, validate, test); other values are an error.
    pub fn with_split(mut self, split: &str) -> Result<Self> {
        if !SPLITS.contains(&split) {
            return Err(ExportError::Usage(format!(
                "unknown split '{split}'; use one of {}",
                SPLITS.join(", ")
            )));
        }
        self.split = Some(split.to_string());
        Ok(self)
    }

    /// Samples `questions` questions (0: no sample).
    pub fn with_sample(mut self, questions: u64) -> Self {
        self.sample = questions;
        self
    }

    /// Writes these files.
    pub fn with_format(mut self, format: ReleaseFormat) -> Self {
        self.format = format;
        self
    }

    /// Writes `info` as `metadata/dataset_info.json` (PhysioNet layout).
    pub fn with_dataset_info(mut self, info: Value) -> Self {
        self.dataset_info = Some(info);
        self
    }

    /// The folders written and their subsets.
    fn parts(&self) -> Vec<(&'static str, Subset)> {
        match self.subset {
            Subset::All => vec![
                ("", Subset::All),
                ("exports/A_frontal", Subset::Ft),
                ("exports/B_frontal", Subset::Pt),
            ],
            subset => vec![("", subset)],
        }
    }
}

/// What one folder of a release holds.
#[derive(Debug, Clone, PartialEq)]
pub struct PartSummary {
    /// Folder relative to the output (`""` for the root).
    pub folder: String,
    /// Its subset.
    pub subset: Subset,
    /// Rows of each metadata table, in file order.
    pub tables: Vec<(String, u64)>,
    /// Questions (QA pairs).
    pub questions: u64,
    /// Questions per split.
    pub splits: Vec<(String, u64)>,
    /// Questions of the hash sample (0 when none was written).
    pub sample_questions: u64,
    /// Bytes written.
    pub bytes: u64,
}

impl PartSummary {
    /// Rows of a metadata table (0 if absent).
    pub fn rows(&self, table: &str) -> u64 {
        self.tables
            .iter()
            .find(|(name, _)| name == table)
            .map_or(0, |(_, rows)| *rows)
    }
}

/// What a release export wrote.
#[derive(Debug, Clone, PartialEq)]
pub struct ReleaseSummary {
    /// The output folder.
    pub out_dir: PathBuf,
    /// Each folder written.
    pub parts: Vec<PartSummary>,
    /// Wall-clock seconds.
    pub seconds: f64,
}

impl fmt::Display for ReleaseSummary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for part in &self.parts {
            let folder = if part.folder.is_empty() {
                "."
            } else {
                &part.folder
            };
            write!(
                f,
                "{folder} ({}): {} questions, {} answer parts, {} studies, {} patients, {} images",
                part.subset,
                part.questions,
                part.rows("answer_metadata"),
                part.rows("study_metadata"),
                part.rows("patient_metadata"),
                part.rows("image_metadata"),
            )?;
            if part.sample_questions > 0 {
                write!(f, "; sample {} questions", part.sample_questions)?;
            }
            writeln!(f, "; {:.1} MB", part.bytes as f64 / 1e6)?;
        }
        let questions: u64 = self.parts.iter().map(|p| p.questions).sum();
        write!(
            f,
            "release → {} in {:.2} s ({:.0} questions/s)",
            self.out_dir.display(),
            self.seconds,
            if self.seconds > 0.0 {
                questions as f64 / self.seconds
            } else {
                0.0
            }
        )
    }
}

/// Writes the release (see the module doc).
pub async fn export_release(lake: &Lake, export: &ReleaseExport) -> Result<ReleaseSummary> {
    let span = tracing::info_span!("export_release", out = %export.out_dir.display());
    run(lake, export).instrument(span).await
}

async fn run(lake: &Lake, export: &ReleaseExport) -> Result<ReleaseSummary> {
    let started = Instant::now();
    if let Some(filter) = &export.filter
        && filter.trim().is_empty()
    {
        return Err(ExportError::Usage(
            "--where is empty; give a SQL predicate over qa columns, e.g. \
             \"question_strategy = 'finding'\""
                .into(),
        ));
    }
    create_folder(&export.out_dir)?;
    let mut parts = Vec::new();
    for (folder, subset) in export.parts() {
        let part = write_part(lake, export, folder, subset).await?;
        tracing::info!(folder, %subset, questions = part.questions, "release part written");
        parts.push(part);
    }
    if export.format.physionet() {
        let root = &export.out_dir;
        write_file(
            &root.join("quality_mappings.csv"),
            quality_mappings_csv().as_bytes(),
        )?;
        if let Some(info) = &export.dataset_info {
            // The vocabulary in every folder's metadata/, where the release's loaders look.
            let text = serde_json::to_string_pretty(info)? + "\n";
            for part in &parts {
                let metadata = root.join(&part.folder).join("metadata");
                create_folder(&metadata)?;
                write_file(&metadata.join("dataset_info.json"), text.as_bytes())?;
            }
        }
        write_file(&root.join("README.md"), readme(export, &parts).as_bytes())?;
    }
    // Last: the statistics are the slowest part (minutes at full scale) and a release without
    // them is still whole.
    info::write_stats(lake, export).await?;
    Ok(ReleaseSummary {
        out_dir: export.out_dir.clone(),
        parts,
        seconds: started.elapsed().as_secs_f64(),
    })
}

/// Registers the result of `sql` (with `params` for `$1`, `$2`, …) as the view `name`.
async fn register(
    ctx: &SessionContext,
    name: &str,
    sql: &str,
    params: Vec<ScalarValue>,
) -> Result<()> {
    let mut frame = ctx.sql(sql).await?;
    if !params.is_empty() {
        frame = frame.with_param_values(params)?;
    }
    ctx.deregister_table(name)?;
    ctx.register_table(name, frame.into_view())?;
    Ok(())
}

/// Registers a Parquet file as `name`.
async fn register_file(ctx: &SessionContext, name: &str, path: &Path) -> Result<()> {
    ctx.deregister_table(name)?;
    let path = path.to_string_lossy();
    ctx.register_parquet(name, path.as_ref(), ParquetReadOptions::default())
        .await?;
    Ok(())
}

/// A Parquet file of the part: kept when the format has Parquet, else a hidden scratch file.
fn part_file(dir: &Path, name: &str, keep: bool) -> PathBuf {
    if keep {
        dir.join(format!("{name}.parquet"))
    } else {
        dir.join(format!(".{name}.{}.scratch.parquet", std::process::id()))
    }
}

async fn write_part(
    lake: &Lake,
    export: &ReleaseExport,
    folder: &str,
    subset: Subset,
) -> Result<PartSummary> {
    let dir = export.out_dir.join(folder);
    create_folder(&dir)?;
    let ctx = crate::scan::session(lake).await?;
    let frontal = ScalarValue::Boolean(Some(subset.frontal_only()));
    register(&ctx, "release_images", sql::IMAGES, vec![frontal]).await?;
    register(&ctx, "image_sets", sql::IMAGE_SETS, vec![]).await?;
    register(&ctx, "release_candidates", sql::CANDIDATES, vec![]).await?;

    // The subset's scan of the lake runs on the engine (on a cluster: its executors); the
    // files are written here, each zip archive being one sequential stream.
    let scan_ctx = crate::scan::on_engine(lake, &ctx).await?;
    let filter = export.filter.as_deref();
    let mut frame = scan_ctx.sql(subset.query()).await?;
    if let Some(filter) = filter {
        let invalid = filter_error("qa", filter);
        let predicate = frame.parse_sql_expr(filter).map_err(&invalid)?;
        frame = frame.filter(predicate).map_err(invalid)?;
    }
    if let Some(split) = &export.split {
        frame = frame.filter(col("split").eq(lit(split.as_str())))?;
    }
    let studies = study_sizes(&frame, filter).await?;
    let questions: u64 = studies.values().map(|(_, size)| *size as u64).sum();
    if questions == 0 {
        return Err(empty_release(export, subset));
    }
    tracing::info!(%subset, questions, studies = studies.len(), "release subset counted");
    let sample = (export.sample > 0 && subset != Subset::All).then(|| Sample {
        // The SQL integer has the seed's bits (sample_hash reads them back as u64).
        seed: lake.settings().cxrlake.seed.cast_signed(),
        probability: export.sample as f64 / questions as f64,
    });
    let scan = ScanOutputs {
        qa: export.format.parquet().then(|| dir.join("qa.parquet")),
        qa_zip: export
            .format
            .physionet()
            .then(|| (dir.join("qa.zip"), studies)),
        metadata: dir.join("metadata"),
        sample,
    };
    let mut written = write_scan(&ctx, frame, &scan, filter).await?;

    let scene_file = part_file(&dir, "scene_graphs", export.format.parquet());
    let studied = write_studies(&ctx, export, &dir, subset, &scene_file, sample.is_some()).await;
    if !export.format.parquet() {
        let _ = std::fs::remove_file(&scene_file);
    }
    let (splits, studied) = studied?;
    written.extend(studied);
    let tables: Vec<(String, u64)> = sql::METADATA
        .iter()
        .map(|table| {
            (
                table.name.to_string(),
                written.rows(Output::Table(table.name)),
            )
        })
        .collect();
    let part = PartSummary {
        folder: folder.to_string(),
        subset,
        questions: written.rows(Output::Qa),
        tables,
        splits,
        sample_questions: written.rows(Output::Sampled("question_metadata")),
        bytes: written.bytes(),
    };
    info::write_self_description(&ctx, export, &part, &dir).await?;
    Ok(part)
}

/// The error of a subset without a question.
fn empty_release(export: &ReleaseExport, subset: Subset) -> ExportError {
    let mut detail = String::new();
    if let Some(filter) = &export.filter {
        detail.push_str(&format!(" matching `{filter}`"));
    }
    if let Some(split) = &export.split {
        detail.push_str(&format!(" in split {split}"));
    }
    if subset.frontal_only() {
        detail.push_str(" with a frontal image");
    }
    ExportError::EmptyRelease {
        subset: subset.name(),
        detail,
    }
}

/// The hash sample of a part (`sample.sql`).
#[derive(Debug, Clone, Copy)]
struct Sample {
    seed: i64,
    probability: f64,
}

/// What the subset's scan writes.
#[derive(Debug)]
struct ScanOutputs {
    /// `qa.parquet` (Parquet format).
    qa: Option<PathBuf>,
    /// `qa.zip` and the questions of each study (PhysioNet layout).
    qa_zip: Option<(PathBuf, StudySizes)>,
    /// The metadata folder: the per-question tables, and those of the sample in `q1M/`.
    metadata: PathBuf,
    sample: Option<Sample>,
}

/// A file of a part.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Output {
    /// The questions (`qa.parquet` or `qa.zip`).
    Qa,
    /// A metadata table.
    Table(&'static str),
    /// A metadata table of the sample.
    Sampled(&'static str),
    /// Another file: scene graphs, zips.
    Other,
}

/// Rows and bytes of each file written.
#[derive(Debug, Default)]
struct Outputs(Vec<(Output, TableFiles)>);

impl Outputs {
    fn extend(&mut self, other: Outputs) {
        self.0.extend(other.0);
    }

    fn push(&mut self, output: Output, files: TableFiles) {
        self.0.push((output, files));
    }

    /// Rows of `output` (the most of its files: `qa.parquet` and `qa.zip` hold the same).
    fn rows(&self, output: Output) -> u64 {
        self.0
            .iter()
            .filter(|(o, _)| *o == output)
            .map(|(_, files)| files.rows)
            .max()
            .unwrap_or(0)
    }

    fn bytes(&self) -> u64 {
        self.0.iter().map(|(_, files)| files.bytes).sum()
    }
}

type Writing = tokio::task::JoinHandle<Result<(Output, TableFiles)>>;

/// Starts writing `rows` as the metadata table `name` in `dir`.
fn start_table(rows: SendableRecordBatchStream, dir: &Path, output: Output, name: &str) -> Writing {
    let parquet = dir.join(format!("{name}.parquet"));
    let csv = dir.join(format!("{name}.csv.gz"));
    tokio::spawn(async move {
        let files = tables::write_stream(rows, &parquet, Some(&csv), true).await?;
        Ok((output, files))
    })
}

/// One scan of the subset `frame` feeds every file computed from its rows alone: `qa.parquet`,
/// `qa.zip` and the per-question metadata tables; `sample.sql` keeps the sampled questions'
/// rows of each of these tables for `q1M/`.
///
/// ```text
/// frame ─▶ release_qa ─┬─▶ qa.parquet, qa.zip
///                      └─▶ question_metadata.sql ─▶ release_population ─┬─▶ question_metadata
///                          (and question_image, answer,                 └─▶ sample.sql ─▶
///                           answer_image)                                   q1M/question_metadata
/// ```
async fn write_scan(
    ctx: &SessionContext,
    frame: DataFrame,
    outputs: &ScanOutputs,
    filter: Option<&str>,
) -> Result<Outputs> {
    let source_error = |err: DataFusionError| match filter {
        Some(filter) => filter_error("qa", filter)(err),
        None => ExportError::DataFusion(err),
    };
    let source = crate::scan::ordered_stream(frame)
        .await
        .map_err(source_error)?;
    let subset = Arc::new(Broadcast::new(source.schema()));
    ctx.deregister_table("release_qa")?;
    ctx.register_table("release_qa", Arc::clone(&subset) as Arc<dyn TableProvider>)?;
    let mut writing: Vec<Writing> = Vec::new();
    if let Some(path) = outputs.qa.clone() {
        let rows = subset.reader()?;
        writing.push(tokio::spawn(async move {
            let files = tables::write_stream(rows, &path, None, false).await?;
            Ok((Output::Qa, files))
        }));
    }
    if let Some((path, studies)) = &outputs.qa_zip {
        let rows = question_stream(ctx.table("release_qa").await?, None).await?;
        let sink = Arc::new(Sink::Zip(Box::new(ZipSink::create(path, "qa/")?)));
        let studies = studies.clone();
        writing.push(tokio::spawn(async move {
            let written = write_question_stream(rows, studies, Arc::clone(&sink)).await?;
            let bytes = finish(sink)?;
            let rows = written.questions as u64;
            Ok((Output::Qa, TableFiles { rows, bytes }))
        }));
    }
    let mut tables = Vec::new();
    for table in sql::METADATA.iter().filter(|t| t.per_question) {
        let rows = ctx.sql(table.query).await?.execute_stream().await?;
        let Some(sample) = outputs.sample else {
            writing.push(start_table(
                rows,
                &outputs.metadata,
                Output::Table(table.name),
                table.name,
            ));
            continue;
        };
        let population = Arc::new(Broadcast::new(rows.schema()));
        let output = Output::Table(table.name);
        writing.push(start_table(
            population.reader()?,
            &outputs.metadata,
            output,
            table.name,
        ));
        ctx.deregister_table("release_population")?;
        ctx.register_table(
            "release_population",
            Arc::clone(&population) as Arc<dyn TableProvider>,
        )?;
        let params = vec![
            ScalarValue::Int64(Some(sample.seed)),
            ScalarValue::Float64(Some(sample.probability)),
        ];
        let sampled = ctx.sql(sql::SAMPLE).await?.with_param_values(params)?;
        let sampled = sampled.execute_stream().await?;
        let dir = outputs.metadata.join("q1M");
        writing.push(start_table(
            sampled,
            &dir,
            Output::Sampled(table.name),
            table.name,
        ));
        tables.push(tokio::spawn(async move { population.feed(rows).await }));
    }

    let fed = subset.feed(source).await;
    let mut first_error = None;
    for task in tables {
        if let Err(err) = task
            .await
            .map_err(ExportError::from)
            .and_then(|fed| Ok(fed?))
        {
            first_error.get_or_insert(err);
        }
    }
    let mut written = Outputs::default();
    for task in writing {
        match task.await {
            Ok(Ok((output, files))) => written.push(output, files),
            Ok(Err(err)) => {
                first_error.get_or_insert(err);
            }
            Err(err) => {
                first_error.get_or_insert(err.into());
            }
        }
    }
    // The source's error is the cause of the readers' errors.
    fed.map_err(source_error)?;
    first_error.map_or(Ok(written), Err)
}

/// The files computed from the release's studies, after the subset's scan: the scene graphs
/// (`scene_file`), the study, patient and image metadata tables (their question counts from
/// `question_metadata.parquet`), the scene graph zip, and the same tables of the sample; the
/// questions per split, and what was written.
async fn write_studies(
    ctx: &SessionContext,
    export: &ReleaseExport,
    dir: &Path,
    subset: Subset,
    scene_file: &Path,
    sampled: bool,
) -> Result<(Vec<(String, u64)>, Outputs)> {
    let metadata = dir.join("metadata");
    let mut written = Outputs::default();
    register_file(
        ctx,
        "release_qa",
        &metadata.join("question_metadata.parquet"),
    )
    .await?;
    register(ctx, "release_studies", sql::STUDIES, vec![]).await?;
    let scene =
        tables::write_table(ctx.sql(sql::SCENE_GRAPHS).await?, scene_file, None, false).await?;
    if export.format.parquet() {
        written.push(Output::Other, scene);
    }
    register_file(ctx, "release_scene_graphs", scene_file).await?;
    written.extend(write_study_tables(ctx, &metadata, Output::Table).await?);
    if export.format.physionet() {
        let bytes = write_scene_graph_zip(ctx, dir, subset).await?;
        written.push(Output::Other, TableFiles { rows: 0, bytes });
    }
    let splits = split_counts(ctx).await?;

    if sampled {
        let sample = metadata.join("q1M");
        register_file(ctx, "release_qa", &sample.join("question_metadata.parquet")).await?;
        register(ctx, "release_studies", sql::STUDIES, vec![]).await?;
        written.extend(write_study_tables(ctx, &sample, Output::Sampled).await?);
    }
    Ok((splits, written))
}

/// The metadata tables that are not per question into `dir`.
async fn write_study_tables(
    ctx: &SessionContext,
    dir: &Path,
    output: fn(&'static str) -> Output,
) -> Result<Outputs> {
    let mut written = Outputs::default();
    for table in sql::METADATA.iter().filter(|t| !t.per_question) {
        let frame = ctx.sql(table.query).await?;
        let parquet = dir.join(format!("{}.parquet", table.name));
        let csv = dir.join(format!("{}.csv.gz", table.name));
        let files = tables::write_table(frame, &parquet, Some(&csv), true).await?;
        written.push(output(table.name), files);
    }
    Ok(written)
}

/// Questions per split of the part.
async fn split_counts(ctx: &SessionContext) -> Result<Vec<(String, u64)>> {
    let batches = ctx
        .sql("SELECT split, count(*) FROM release_qa GROUP BY split ORDER BY split")
        .await?
        .collect()
        .await?;
    let mut out = Vec::new();
    for batch in batches {
        let splits = cast(batch.column(0), &DataType::Utf8)?;
        let counts = cast(batch.column(1), &DataType::Int64)?;
        let (splits, counts) = (
            splits.as_string::<i32>(),
            counts.as_primitive::<Int64Type>(),
        );
        for row in 0..batch.num_rows() {
            let split = if splits.is_valid(row) {
                splits.value(row)
            } else {
                "(none)"
            };
            out.push((split.to_string(), counts.value(row).max(0) as u64));
        }
    }
    Ok(out)
}

/// The scene graph zip (`scene_data.zip` for `all`, the release's root; `scene_graph.zip` for
/// the graded subsets, as in its `exports/`) with each study's `.metadata.json`; its bytes.
async fn write_scene_graph_zip(ctx: &SessionContext, dir: &Path, subset: Subset) -> Result<u64> {
    let name = if subset == Subset::All {
        "scene_data.zip"
    } else {
        "scene_graph.zip"
    };
    let sink = Arc::new(Sink::Zip(Box::new(ZipSink::create(
        &dir.join(name),
        "scene_data/",
    )?)));
    write_scene_graphs(
        ctx.table("release_scene_graphs").await?,
        None,
        Arc::clone(&sink),
    )
    .await?;
    write_study_files(ctx, &sink).await?;
    finish(sink)
}

fn finish(sink: Arc<Sink>) -> Result<u64> {
    match Arc::try_unwrap(sink) {
        Ok(Sink::Zip(zip)) => zip.finish(),
        _ => Err(ExportError::Poisoned),
    }
}

/// Suffix of a study's metadata file in the scene graph zip.
pub const STUDY_METADATA_SUFFIX: &str = ".metadata.json";

/// Each study's `sXXXXXXXX.metadata.json` (split, procedure, date, images with view position
/// and size) into `sink`: one JSON line per row of `study_files.sql`.
async fn write_study_files(ctx: &SessionContext, sink: &Sink) -> Result<()> {
    let batches = ctx.sql(sql::STUDY_FILES).await?.collect().await?;
    let mut members = Vec::new();
    for batch in &batches {
        let schema = portable_schema(&batch.schema());
        let batch = portable_batch(batch, &schema)?;
        let mut lines = arrow::json::LineDelimitedWriter::new(Vec::new());
        lines.write(&batch)?;
        lines.finish()?;
        let text = lines.into_inner();
        let patients = cast(batch.column(0), &DataType::Utf8)?;
        let studies = cast(batch.column(1), &DataType::Utf8)?;
        let (patients, studies) = (patients.as_string::<i32>(), studies.as_string::<i32>());
        for (row, line) in text
            .split(|b| *b == b'\n')
            .filter(|l| !l.is_empty())
            .enumerate()
        {
            let (patient_id, study_id) = (patients.value(row), studies.value(row));
            let relative =
                patient_folder(patient_id).join(format!("{study_id}{STUDY_METADATA_SUFFIX}"));
            let mut bytes = line.to_vec();
            bytes.push(b'\n');
            members.extend(sink.put(&relative, &bytes)?);
        }
    }
    sink.merge(members)
}

/// `quality_mappings.csv`: every quality value of tables 11 and 12 with its aspect, level name
/// and resulting rating, then the rating codes.
pub fn quality_mappings_csv() -> String {
    let mut out = String::from("aspect,key,value,level,rating\n");
    for aspect in quality::ALL {
        for level in aspect.levels {
            out.push_str(&format!(
                "{},{},{},{},{}\n",
                aspect.title, aspect.key, level.value, level.name, level.rating
            ));
        }
    }
    for rating in Rating::ALL {
        out.push_str(&format!(
            "Rating,rating,{},{},{}\n",
            rating.release_code(),
            rating,
            rating
        ));
    }
    out
}

/// The release's `README.md`: what each folder holds, with counts.
fn readme(export: &ReleaseExport, parts: &[PartSummary]) -> String {
    let mut out = String::from(
        "# cxrlake release\n\nWritten by `cxrlake export release` in the layout of \
         MIMIC-Ext-CXR-QBA. Quality values are integers (`quality_mappings.csv`), ratings \
         `<rank>_<grade>` strings; metadata tables carry `*.rating_rank` numbers for filtering. \
         Each folder describes itself in `cxrlake_info.json`; `stats/index.html` shows the \
         dataset's statistics as figures and tables (CSV files beside it).\n\n",
    );
    if let Some(filter) = &export.filter {
        out.push_str(&format!("Filter: `{filter}`\n\n"));
    }
    if let Some(split) = &export.split {
        out.push_str(&format!("Split: {split}\n\n"));
    }
    out.push_str(
        "| folder | subset | patients | studies | images | questions | answer parts | sample |\n\
         |---|---|---|---|---|---|---|---|\n",
    );
    for part in parts {
        let folder = if part.folder.is_empty() {
            "."
        } else {
            &part.folder
        };
        out.push_str(&format!(
            "| {folder} | {} | {} | {} | {} | {} | {} | {} |\n",
            part.subset,
            part.rows("patient_metadata"),
            part.rows("study_metadata"),
            part.rows("image_metadata"),
            part.questions,
            part.rows("answer_metadata"),
            part.sample_questions,
        ));
    }
    out.push_str("\nQuestions per split:\n\n| folder | split | questions |\n|---|---|---|\n");
    for part in parts {
        let folder = if part.folder.is_empty() {
            "."
        } else {
            &part.folder
        };
        for (split, questions) in &part.splits {
            out.push_str(&format!("| {folder} | {split} | {questions} |\n"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subsets_parse_by_name_and_say_what_is_valid() {
        for subset in Subset::ALL {
            assert_eq!(subset.name().parse::<Subset>().ok(), Some(subset));
        }
        assert_eq!("FT".parse::<Subset>().ok(), Some(Subset::Ft));
        let err = "gold".parse::<Subset>().expect_err("unknown").to_string();
        assert!(err.contains("use one of all, pt, ft, a+, a++"), "{err}");
        assert!(Subset::Ft.query().contains("rating >= 'A'"));
        assert_eq!(Subset::Ft.min_rating(), Some(Rating::A));
        assert!(!Subset::All.frontal_only());
    }

    #[test]
    fn quality_mappings_cover_every_level_once() {
        let csv = quality_mappings_csv();
        let levels: usize = quality::ALL.iter().map(|a| a.levels.len()).sum();
        assert_eq!(csv.lines().count(), 1 + levels + Rating::ALL.len());
        assert!(csv.contains("Extraction issues,general_issue_level,-1,DISCARDED,D\n"));
        assert!(csv.contains("Rating,rating,4_A,A,A\n"));
        let mut keys: Vec<(String, String)> = csv
            .lines()
            .skip(1)
            .map(|line| {
                let fields: Vec<_> = line.split(',').collect();
                (fields[1].to_string(), fields[2].to_string())
            })
            .collect();
        let total = keys.len();
        keys.sort();
        keys.dedup();
        assert_eq!(keys.len(), total, "(key, value) is unambiguous");
    }
}
