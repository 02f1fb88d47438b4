//! Deterministic synthetic corpus in the MIMIC-CXR, MIMIC-CXR-JPG, Chest ImaGenome and CXAS
//! formats, with a ground truth of what every report states (`cxrlake synth`).
//!
//! Output layout under `out`:
//!
//! ```text
//! files/pXX/pXXXXXXXX/sXXXXXXXX.txt          MIMIC-CXR reports
//! mimic-cxr-reports.zip                      same tree under files/ (only with `zip`)
//! mimic-cxr-2.0.0-metadata.csv.gz            MIMIC-CXR-JPG image metadata
//! mimic-cxr-2.0.0-split.csv.gz               train / validate / test, by patient
//! mimic-cxr-2.0.0-chexpert.csv.gz            labels derived from the ground truth
//! mimic-cxr-2.0.0-negbio.csv.gz              (same labels)
//! imagenome/scene_graph/<dicom>_SceneGraph.json   29 ImaGenome boxes per frontal image
//! cxas/pXX/pXXXXXXXX/sXXXXXXXX.json          CXAS COCO masks (compressed RLE), one per study
//! ground_truth.jsonl                         one line per study: findings, indication, normal
//! manifest.json                              counts, seed, generator version
//! ```

mod anatomy;
mod corpus;
pub mod csv_out;
pub mod cxas;
pub mod error;
pub mod ids;
pub mod imagenome;
mod images;
mod report;
pub mod rle;
pub mod truth;
pub mod vocab;

use std::fmt;
use std::path::PathBuf;

pub use corpus::GENERATOR_VERSION;
pub use error::{Result, SynthError};

/// What to generate.
#[derive(Debug, Clone, PartialEq)]
pub struct SynthOptions {
    /// Number of studies (MIMIC-CXR has 227,835).
    pub studies: usize,
    /// Seed; the same seed gives byte-identical output.
    pub seed: u64,
    /// Output directory (created; must be new or empty).
    pub out: PathBuf,
    /// Also write `mimic-cxr-reports.zip`.
    pub zip: bool,
    /// Share of images (0..=1) that get CXAS masks; the rest of the corpus does not
    /// depend on it. Masks dominate size and time: ~60 KB per frontal image.
    pub cxas_fraction: f64,
    /// Only this part of the corpus's patients (`None`: all of them).
    pub shard: Option<Shard>,
}

/// Part `part` (1-based) of `parts` equal runs of consecutive patients. A shard's per-study
/// files are byte-identical to the whole corpus's and its CSV and ground-truth rows are the
/// whole corpus's rows of its patients, so ingesting every shard of a corpus gives the lake of
/// the whole corpus while only one shard is on disk at a time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shard {
    /// Which part, `1..=parts`.
    pub part: usize,
    /// How many parts.
    pub parts: usize,
}

impl Shard {
    /// The patient indices of this shard among `patients`.
    pub fn patients(self, patients: usize) -> std::ops::Range<usize> {
        patients * (self.part - 1) / self.parts..patients * self.part / self.parts
    }
}

impl std::str::FromStr for Shard {
    type Err = SynthError;

    /// Parses `K/N` with `1 <= K <= N`.
    fn from_str(text: &str) -> Result<Self> {
        let invalid = || {
            SynthError::InvalidOptions(format!(
                "--shard must be K/N with 1 <= K <= N (part K of N), got '{text}'"
            ))
        };
        let (part, parts) = text.split_once('/').ok_or_else(invalid)?;
        let part: usize = part.trim().parse().map_err(|_| invalid())?;
        let parts: usize = parts.trim().parse().map_err(|_| invalid())?;
        if part == 0 || part > parts {
            return Err(invalid());
        }
        Ok(Self { part, parts })
    }
}

impl fmt::Display for Shard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.part, self.parts)
    }
}

impl SynthOptions {
    /// `studies` studies from `seed` into `out`, no zip, CXAS masks for every image.
    pub fn new(studies: usize, seed: u64, out: impl Into<PathBuf>) -> Self {
        Self {
            studies,
            seed,
            out: out.into(),
            zip: false,
            cxas_fraction: 1.0,
            shard: None,
        }
    }

    /// Generates only `shard` of the corpus's patients.
    pub fn with_shard(mut self, shard: Shard) -> Self {
        self.shard = Some(shard);
        self
    }

    /// Sets whether to write the report zip.
    pub fn with_zip(mut self, zip: bool) -> Self {
        self.zip = zip;
        self
    }

    /// Sets the share of images with CXAS masks.
    pub fn with_cxas_fraction(mut self, fraction: f64) -> Self {
        self.cxas_fraction = fraction;
        self
    }
}

/// What was generated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SynthSummary {
    /// Output directory.
    pub out: PathBuf,
    /// Seed used.
    pub seed: u64,
    /// The part generated, if not the whole corpus.
    pub shard: Option<Shard>,
    /// Patients.
    pub patients: usize,
    /// Studies (= reports).
    pub studies: usize,
    /// Images (metadata rows).
    pub images: usize,
    /// PA and AP images.
    pub frontal_images: usize,
    /// ImaGenome scene graph files.
    pub scene_graphs: usize,
    /// ImaGenome boxes.
    pub boxes: usize,
    /// CXAS files (one per study with masks).
    pub cxas_files: usize,
    /// CXAS masks.
    pub masks: usize,
}

impl fmt::Display for SynthSummary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "synthetic corpus in {} (seed {}{})",
            self.out.display(),
            self.seed,
            self.shard
                .map(|shard| format!(", shard {shard}"))
                .unwrap_or_default()
        )?;
        writeln!(f, "  patients        {:>9}", self.patients)?;
        writeln!(f, "  studies         {:>9}", self.studies)?;
        writeln!(
            f,
            "  images          {:>9} ({} frontal)",
            self.images, self.frontal_images
        )?;
        writeln!(
            f,
            "  scene graphs    {:>9} ({} boxes)",
            self.scene_graphs, self.boxes
        )?;
        write!(
            f,
            "  cxas files      {:>9} ({} masks)",
            self.cxas_files, self.masks
        )
    }
}

/// Generates the corpus; see the crate docs for the layout.
pub fn generate(options: &SynthOptions) -> Result<SynthSummary> {
    corpus::generate(options)
}
