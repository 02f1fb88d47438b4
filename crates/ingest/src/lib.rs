//! `cxrlake ingest`: MIMIC-CXR reports (tree or zip), MIMIC-CXR-JPG CSVs, Chest ImaGenome scene
//! graphs and CXAS COCO-RLE masks → the lake's source tables, idempotently, with every bad
//! input recorded in `quarantine`.
//!
//! ```text
//!  discover  walk folders and zips, classify by name ─┐
//!  keys      SELECT the keys already in the lake      │
//!            ▼                                         ▼
//!  splits CSV → metadata CSV (+split) → label CSVs → reports → scene graphs → CXAS
//!   (streamed rows)                       (files in chunks, parsed in parallel with rayon)
//!            │ each unit: new → pending │ present → counted │ bad → quarantine
//!            ▼
//!  chunked Delta appends, StageCommit("ingest") with input fingerprint and row metrics;
//!  nothing new → no commit
//! ```
//! Boxes and masks need the image size: it comes from the metadata CSV of the same run or
//! from the lake's `images` table, so the CSVs are read first.

pub mod boxes;
pub mod cxas;
pub mod discover;
pub mod error;
pub mod ids;
pub mod imagenome;
pub mod jpg_csv;
pub mod quarantine;
pub mod reports;
pub mod summary;
pub mod writer;

/// The largest image side, in pixels, that cxrlake accepts: JPEG's limit (MIMIC-CXR-JPG's images
/// are at most ~4,300 pixels a side). Larger values in the metadata or in CXAS files are forged or
/// broken, and would overflow `Int32` columns.
pub(crate) const MAX_IMAGE_SIDE: u32 = 65_535;

use std::collections::HashMap;
use std::path::PathBuf;
use std::time::Instant;

use cxrlake_lake::Lake;
use indicatif::{ProgressBar, ProgressStyle};
use rayon::prelude::*;
use serde_json::Value;
use tracing::Instrument;

use crate::discover::{Discovered, FileReader, InputFile, Kind, Labeler};
use crate::jpg_csv::{CsvInput, ImageInfo, ImageRow, LabelRow, SplitRow};
use crate::quarantine::{Quarantined, Target};
use crate::writer::{Background, Offer, Row, Sink, Unit, content_hash, load_keys};

pub use discover::Limits;
pub use error::{IngestError, Result};
pub use summary::{IngestSummary, TableCounts};

/// What to ingest and how.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IngestOptions {
    /// Folders, files and zip archives to ingest (walked recursively).
    pub inputs: Vec<PathBuf>,
    /// Whether quarantined inputs should fail the run (the CLI exits non-zero; see
    /// [`IngestSummary::failed`]). Everything is still ingested and recorded.
    pub strict: bool,
    /// Show a progress bar on stderr.
    pub progress: bool,
    /// Studies (report, scene-graph or CXAS files) per chunk: bounds memory and commit size.
    pub chunk_studies: usize,
    /// How the commit's input fingerprint names each input, when not by its path (an
    /// `s3://` URL whose objects were copied to a local folder first).
    pub names: Vec<Option<String>>,
    /// How much is read from the inputs (the `ingest_*` settings).
    pub limits: Limits,
}

impl IngestOptions {
    /// Ingests `inputs`, not strict, no progress bar, 10,000 studies per chunk.
    pub fn new(inputs: Vec<PathBuf>) -> Self {
        Self {
            inputs,
            strict: false,
            progress: false,
            chunk_studies: 10_000,
            names: Vec::new(),
            limits: Limits::default(),
        }
    }

    /// Names the inputs in the commit's fingerprint (`None`: by its path), in input order.
    pub fn with_names(mut self, names: Vec<Option<String>>) -> Self {
        self.names = names;
        self
    }

    /// Sets the limits of what is read.
    pub fn with_limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// Sets strict mode.
    pub fn with_strict(mut self, strict: bool) -> Self {
        self.strict = strict;
        self
    }

    /// Sets whether to show a progress bar.
    pub fn with_progress(mut self, progress: bool) -> Self {
        self.progress = progress;
        self
    }

    /// Sets the chunk size in studies.
    pub fn with_chunk_studies(mut self, chunk_studies: usize) -> Self {
        self.chunk_studies = chunk_studies.max(1);
        self
    }
}

/// Pending row bytes per table before a commit.
const COMMIT_BYTES: usize = 256 << 20;

/// Ingests the inputs into `lake` (which must be initialised) and returns what happened.
pub async fn ingest(lake: &Lake, options: &IngestOptions) -> Result<IngestSummary> {
    let span = tracing::info_span!("ingest", inputs = options.inputs.len());
    run_ingest(lake, options).instrument(span).await
}

async fn run_ingest(lake: &Lake, options: &IngestOptions) -> Result<IngestSummary> {
    let started = Instant::now();
    lake.require_initialized().await?;
    let mut found = discover::discover(&options.inputs, &options.limits)?;
    found.rename_inputs(&options.names);
    tracing::info!(
        files = found.files.len(),
        skipped = found.skipped,
        "discovered inputs"
    );
    let mut run = Run::open(lake, options, &found).await?;
    for quarantined in found.quarantined {
        run.quarantine(quarantined);
    }
    let of_kind = |wanted: fn(Kind) -> bool| -> Vec<InputFile> {
        found
            .files
            .iter()
            .filter(|f| wanted(f.kind))
            .cloned()
            .collect()
    };
    for file in of_kind(|k| k == Kind::Split) {
        run.split_csv(&file).await?;
    }
    for file in of_kind(|k| k == Kind::Metadata) {
        run.metadata_csv(&file).await?;
    }
    for file in of_kind(|k| matches!(k, Kind::Labels(_))) {
        if let Kind::Labels(labeler) = file.kind {
            run.label_csv(&file, labeler).await?;
        }
    }
    for chunk in discover::chunks(&of_kind(|k| k == Kind::Report), options.chunk_studies) {
        run.reports(chunk).await?;
    }
    for chunk in discover::chunks(&of_kind(|k| k == Kind::SceneGraph), options.chunk_studies) {
        run.scene_graphs(chunk).await?;
    }
    for chunk in discover::chunks(&of_kind(|k| k == Kind::Cxas), options.chunk_studies) {
        run.cxas(chunk).await?;
    }
    let mut summary = run.finish().await?;
    summary.files_skipped = found.skipped as u64;
    summary.strict = options.strict;
    summary.elapsed = started.elapsed();
    tracing::info!(
        studies = summary.studies,
        quarantined = summary.quarantined(),
        "ingest done"
    );
    Ok(summary)
}

/// The state of one ingest run: a sink per table, the image index, counts.
struct Run<'a> {
    lake: &'a Lake,
    fingerprint: Value,
    files: FileReader,
    progress: ProgressBar,
    images_info: HashMap<String, ImageInfo>,
    split_of: HashMap<String, String>,
    reports: Sink<reports::ReportRow>,
    images: Sink<ImageRow>,
    splits: Sink<SplitRow>,
    labels: Sink<LabelRow>,
    boxes: Sink<imagenome::BoxRow>,
    masks: Sink<cxas::MaskRow>,
    quarantine: Sink<Quarantined>,
    quarantined: HashMap<Target, u64>,
    files_read: HashMap<Target, u64>,
    /// The commit written while the next files are parsed.
    background: Background,
}

impl<'a> Run<'a> {
    async fn open(lake: &'a Lake, options: &IngestOptions, found: &Discovered) -> Result<Self> {
        let chunk = options.chunk_studies.max(1);
        let ctx = lake.session().await?;
        let ctx = &ctx;
        let mut images_info = HashMap::new();
        let known = load_keys(
            ctx,
            "SELECT image_id, patient_id, study_id, CAST(\"rows\" AS VARCHAR), CAST(\"columns\" AS VARCHAR) FROM images",
        )
        .await?;
        for key in known {
            let parts: Vec<&str> = key.split('\u{1f}').collect();
            if let [image_id, patient_id, study_id, rows, columns] = parts[..] {
                images_info.insert(
                    image_id.to_string(),
                    ImageInfo {
                        patient_id: patient_id.to_string(),
                        study_id: study_id.to_string(),
                        rows: rows.parse().ok(),
                        columns: columns.parse().ok(),
                    },
                );
            }
        }
        let mut split_of = HashMap::new();
        for key in load_keys(ctx, "SELECT image_id, split FROM splits").await? {
            if let Some((image_id, split)) = key.split_once('\u{1f}') {
                split_of.insert(image_id.to_string(), split.to_string());
            }
        }
        let image_keys = images_info.keys().cloned().collect();
        let split_keys = split_of.keys().cloned().collect();
        let progress = if options.progress {
            let bar = ProgressBar::new(found.files.len() as u64);
            if let Ok(style) = ProgressStyle::with_template(
                "{spinner} ingest [{elapsed_precise}] {wide_bar} {pos}/{len} files ({per_sec}) {msg}",
            ) {
                bar.set_style(style);
            }
            bar
        } else {
            ProgressBar::hidden()
        };
        Ok(Self {
            lake,
            fingerprint: found.fingerprint.clone(),
            files: FileReader::new(options.limits),
            progress,
            images_info,
            split_of,
            reports: Sink::new(
                load_keys(ctx, "SELECT study_id FROM reports").await?,
                chunk,
                COMMIT_BYTES,
            ),
            images: Sink::new(image_keys, chunk * 4, COMMIT_BYTES),
            splits: Sink::new(split_keys, chunk * 4, COMMIT_BYTES),
            labels: Sink::new(
                load_keys(ctx, "SELECT study_id, labeler FROM chexpert_labels").await?,
                chunk * 2,
                COMMIT_BYTES,
            ),
            boxes: Sink::new(
                load_keys(ctx, "SELECT DISTINCT image_id FROM imagenome_boxes").await?,
                chunk * 40,
                COMMIT_BYTES,
            ),
            masks: Sink::new(
                load_keys(ctx, "SELECT DISTINCT image_id FROM cxas_masks").await?,
                chunk * 100,
                COMMIT_BYTES,
            ),
            quarantine: Sink::new(
                load_keys(
                    ctx,
                    "SELECT source, location, reason FROM quarantine WHERE stage = 'ingest'",
                )
                .await?,
                10_000,
                64 << 20,
            ),
            quarantined: HashMap::new(),
            files_read: HashMap::new(),
            background: Background::default(),
        })
    }

    /// Records a bad input (once per source, location and reason).
    fn quarantine(&mut self, record: Quarantined) {
        tracing::warn!(
            source = %record.source,
            location = %record.location,
            reason = %record.reason,
            "quarantined"
        );
        *self.quarantined.entry(record.target).or_default() += 1;
        let key = record.key();
        let content = content_hash(key.as_bytes());
        self.quarantine.offer(key, content, vec![record]);
    }

    fn file_read(&mut self, target: Target) {
        *self.files_read.entry(target).or_default() += 1;
        self.progress.inc(1);
    }

    /// Offers a unit to a sink; a conflicting duplicate goes to quarantine.
    fn offer<R: Row>(
        sink: &mut Sink<R>,
        unit: Unit<R>,
        duplicate: impl FnOnce() -> Quarantined,
    ) -> Option<Quarantined> {
        if unit.rows.is_empty() {
            return None;
        }
        match sink.offer(unit.key, unit.content, unit.rows) {
            Offer::New | Offer::Present => None,
            Offer::Conflict => Some(duplicate()),
        }
    }

    async fn flush_full(&mut self) -> Result<()> {
        self.flush_sinks(false).await
    }

    /// Starts the commits of every sink's pending rows (`all`) or of the full sinks' rows.
    async fn flush_sinks(&mut self, all: bool) -> Result<()> {
        let (lake, fingerprint, background) = (self.lake, &self.fingerprint, &mut self.background);
        self.splits
            .flush_if(all, background, lake, fingerprint)
            .await?;
        self.images
            .flush_if(all, background, lake, fingerprint)
            .await?;
        self.labels
            .flush_if(all, background, lake, fingerprint)
            .await?;
        self.reports
            .flush_if(all, background, lake, fingerprint)
            .await?;
        self.boxes
            .flush_if(all, background, lake, fingerprint)
            .await?;
        self.masks
            .flush_if(all, background, lake, fingerprint)
            .await?;
        self.quarantine
            .flush_if(all, background, lake, fingerprint)
            .await?;
        Ok(())
    }

    /// Streams one CSV, turning each row into a unit for `target`'s sink via `handle`.
    async fn csv<F>(
        &mut self,
        file: &InputFile,
        target: Target,
        required: &[&str],
        mut handle: F,
    ) -> Result<()>
    where
        F: FnMut(&mut Self, &CsvInput, &jpg_csv::CsvRow) -> Option<Quarantined>,
    {
        self.file_read(target);
        let mut input = match CsvInput::open(file, &mut self.files, target, required) {
            Ok(input) => input,
            Err(record) => {
                self.quarantine(record);
                return Ok(());
            }
        };
        while let Some(row) = input.next_row() {
            match row {
                Ok(row) => {
                    if let Some(record) = handle(self, &input, &row) {
                        self.quarantine(record);
                    }
                }
                Err(record) => self.quarantine(record),
            }
            self.flush_full().await?;
        }
        Ok(())
    }

    async fn split_csv(&mut self, file: &InputFile) -> Result<()> {
        self.csv(
            file,
            Target::Splits,
            jpg_csv::SPLIT_COLUMNS,
            |run, input, row| {
                let parsed = match jpg_csv::split_row(input, row) {
                    Ok(parsed) => parsed,
                    Err(reason) => return Some(input.quarantine(row, reason)),
                };
                let known = run.split_of.get(&parsed.image_id);
                if known.is_none() {
                    run.split_of
                        .insert(parsed.image_id.clone(), parsed.split.clone());
                }
                let unit = csv_unit(row, parsed);
                let reason = duplicate_reason("dicom_id", &unit.key);
                Self::offer(&mut run.splits, unit, || input.quarantine(row, reason))
            },
        )
        .await
    }

    async fn metadata_csv(&mut self, file: &InputFile) -> Result<()> {
        self.csv(
            file,
            Target::Images,
            jpg_csv::METADATA_COLUMNS,
            |run, input, row| {
                let parsed = match jpg_csv::metadata_row(input, row, &run.split_of) {
                    Ok(parsed) => parsed,
                    Err(reason) => return Some(input.quarantine(row, reason)),
                };
                run.images_info
                    .entry(parsed.image_id.clone())
                    .or_insert_with(|| parsed.info.clone());
                let unit = csv_unit(row, parsed);
                let reason = duplicate_reason("dicom_id", &unit.key);
                Self::offer(&mut run.images, unit, || input.quarantine(row, reason))
            },
        )
        .await
    }

    async fn label_csv(&mut self, file: &InputFile, labeler: Labeler) -> Result<()> {
        let mut required = vec!["subject_id", "study_id"];
        required.extend(cxrlake_schemas::sources::CHEXPERT_CSV_COLUMNS);
        self.csv(
            file,
            Target::ChexpertLabels,
            &required,
            |run, input, row| {
                let parsed = match jpg_csv::label_row(input, row, labeler) {
                    Ok(parsed) => parsed,
                    Err(reason) => return Some(input.quarantine(row, reason)),
                };
                let unit = csv_unit(row, parsed);
                let study = unit.rows[0].study_id.clone();
                let duplicate = || input.quarantine(row, duplicate_reason("study_id", &study));
                Self::offer(&mut run.labels, unit, duplicate)
            },
        )
        .await
    }

    async fn reports(&mut self, chunk: &[InputFile]) -> Result<()> {
        let contents = discover::read_all(&mut self.files, chunk);
        let parsed: Vec<_> = chunk
            .par_iter()
            .zip(contents)
            .map(|(file, bytes)| match bytes {
                Ok(bytes) => reports::parse(file, bytes),
                Err(reason) => Err(Quarantined::new(
                    Target::Reports,
                    file.source(),
                    "file",
                    reason,
                    Vec::new(),
                )),
            })
            .collect();
        for (file, result) in chunk.iter().zip(parsed) {
            self.file_read(Target::Reports);
            match result {
                Ok(row) => {
                    let unit = Unit {
                        key: row.key(),
                        content: content_hash(row.content_hash.as_bytes()),
                        rows: vec![row],
                        quarantined: Vec::new(),
                    };
                    let study = unit.key.clone();
                    let duplicate = || {
                        Quarantined::new(
                            Target::Reports,
                            file.source(),
                            "file",
                            format!(
                                "duplicate study id {study}: an earlier input has a different report for it"
                            ),
                            Vec::new(),
                        )
                    };
                    if let Some(record) = Self::offer(&mut self.reports, unit, duplicate) {
                        self.quarantine(record);
                    }
                }
                Err(record) => self.quarantine(record),
            }
        }
        self.flush_full().await
    }

    async fn scene_graphs(&mut self, chunk: &[InputFile]) -> Result<()> {
        let contents = discover::read_all(&mut self.files, chunk);
        let images = &self.images_info;
        let parsed: Vec<_> = chunk
            .par_iter()
            .zip(contents)
            .map(|(file, bytes)| match bytes {
                Ok(bytes) => imagenome::parse(file, &bytes, images).map(|unit| vec![unit]),
                Err(reason) => Err(unreadable(Target::ImagenomeBoxes, file, reason)),
            })
            .collect();
        for (file, result) in chunk.iter().zip(parsed) {
            self.file_read(Target::ImagenomeBoxes);
            self.take_units(file, result, Target::ImagenomeBoxes, |run| &mut run.boxes);
        }
        self.flush_full().await
    }

    async fn cxas(&mut self, chunk: &[InputFile]) -> Result<()> {
        let contents = discover::read_all(&mut self.files, chunk);
        let images = &self.images_info;
        let parsed: Vec<_> = chunk
            .par_iter()
            .zip(contents)
            .map(|(file, bytes)| match bytes {
                Ok(bytes) => cxas::parse(file, &bytes, images),
                Err(reason) => Err(unreadable(Target::CxasMasks, file, reason)),
            })
            .collect();
        for (file, result) in chunk.iter().zip(parsed) {
            self.file_read(Target::CxasMasks);
            self.take_units(file, result, Target::CxasMasks, |run| &mut run.masks);
        }
        self.flush_full().await
    }

    /// Offers the units parsed from one file (one per image) and quarantines the rest.
    fn take_units<R: Row>(
        &mut self,
        file: &InputFile,
        result: std::result::Result<Vec<Unit<R>>, Quarantined>,
        target: Target,
        sink: fn(&mut Self) -> &mut Sink<R>,
    ) {
        let units = match result {
            Ok(units) => units,
            Err(record) => {
                self.quarantine(record);
                return;
            }
        };
        for mut unit in units {
            for record in std::mem::take(&mut unit.quarantined) {
                self.quarantine(record);
            }
            let image = unit.key.clone();
            let duplicate = || {
                Quarantined::new(
                    target,
                    file.source(),
                    "file",
                    format!(
                        "duplicate image id {image}: an earlier input has different content for it"
                    ),
                    Vec::new(),
                )
            };
            if let Some(record) = Self::offer(sink(self), unit, duplicate) {
                self.quarantine(record);
            }
        }
    }

    async fn finish(mut self) -> Result<IngestSummary> {
        self.flush_sinks(true).await?;
        self.background.finish().await?;
        self.progress.finish_and_clear();
        let per_table = |target: Target, counts: &TableCounts| {
            let mut counts = counts.clone();
            counts.files = self.files_read.get(&target).copied().unwrap_or(0);
            counts.quarantined = self.quarantined.get(&target).copied().unwrap_or(0);
            (target.name().to_string(), counts)
        };
        let mut tables = vec![
            per_table(Target::Reports, &self.reports.counts),
            per_table(Target::Images, &self.images.counts),
            per_table(Target::Splits, &self.splits.counts),
            per_table(Target::ChexpertLabels, &self.labels.counts),
            per_table(Target::ImagenomeBoxes, &self.boxes.counts),
            per_table(Target::CxasMasks, &self.masks.counts),
        ];
        if self.quarantined.contains_key(&Target::Archive) {
            tables.push(per_table(Target::Archive, &TableCounts::default()));
        }
        Ok(IngestSummary {
            tables,
            studies: self.reports.distinct_keys(),
            quarantine_rows_new: self.quarantine.counts.rows_new,
            ..IngestSummary::default()
        })
    }
}

/// A CSV row as a unit: keyed by its row's key, content = the raw row.
fn csv_unit<R: Row>(row: &jpg_csv::CsvRow, parsed: R) -> Unit<R> {
    Unit {
        key: parsed.key(),
        content: content_hash(&row.raw()),
        rows: vec![parsed],
        quarantined: Vec::new(),
    }
}

fn duplicate_reason(column: &str, key: &str) -> String {
    let key = key.replace('\u{1f}', " ");
    format!("duplicate {column} {key}: an earlier row has different values")
}

fn unreadable(target: Target, file: &InputFile, reason: String) -> Quarantined {
    Quarantined::new(target, file.source(), "file", reason, Vec::new())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ingest_future_is_send() {
        fn assert_send<T: Send>(_: &T) {}
        let lake = Lake::open_url("memory:///send").expect("lake");
        let options = IngestOptions::new(Vec::new());
        let future = ingest(&lake, &options);
        assert_send(&future);
    }
}
