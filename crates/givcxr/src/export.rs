//! `cxrlake export givcxr`: the exported QA pairs of `givcxr_dataset` (paper 002, region-grounded
//! VQA) in the GIV-CXR release layout (section 7.1), with the paper's training subsets (G19) on
//! request.
//!
//! ```text
//! <out>/givcxr/train.json      {"version": "1.0", "split": "train", "data": [{image_id,
//!                                patient_id, study_id, anatomical_region, bbox, question, answer,
//!                                reasoning_aspect, clinical_finding, bbox_size_category,
//!                                question_length, answer_length}, …]}
//! <out>/givcxr/train.parquet   the same rows, the table's columns
//!   (and val, test; rows without a split go to none)
//! <out>/givcxr/manifest.json   dataset, version, license, access, bbox frame, pairs per split,
//!                              the record's fields, the generators, prompt versions and judges
//! <out>/givcxr/subsets/sample-<N>-seed-<S>/bbox_input.jsonl    with --sample N [--seed S]:
//! <out>/givcxr/subsets/sample-<N>-seed-<S>/bbox_output.jsonl   N train pairs, LLaVA style
//! ```
//!
//! Records follow the release: `image_id` is the study's folder (`pXX/pXXXXXXXX/sXXXXXXXX`, the
//! table's `image_path`), `anatomical_region` the region (snake_case), `bbox` `[x1, y1, x2, y2]`
//! in original image pixels; keys are written in this order. Rows are ordered by `qa_id` and
//! streamed; files are written to hidden temporary files and renamed into place when complete.
//!
//! # Training subsets
//!
//! The sample of `N` pairs with seed `S` is the `N` train pairs with the smallest
//! `sha256("<S>/givcxr-sample/<qa_id>")` (hex), all of them if fewer, in that hash order: the
//! same lake, filter, `N` and `S` give the same sample, and a larger `N` extends a smaller one.
//! Each pair is written twice, once per prompt variant, as
//! `{id, image: "<image_path>/<image_id>.jpg", bbox, bbox_384, conversations: [human, gpt]}`:
//!
//! ```text
//! bbox_input    human  <image>\nRegion: right lung [x1, y1, x2, y2]\n<question>
//!               gpt    <answer>
//! bbox_output   human  <image>\n<question> Answer and give the box of the right lung as
//!                      [x1, y1, x2, y2].
//!               gpt    <answer> <box>[x1, y1, x2, y2]</box>
//! ```
//!
//! Boxes in prompts are in the 384 × 384 frame the models see ([`bbox_to_384`]); `bbox` keeps
//! the original pixels. A sampled pair needs its image size.

use std::cmp::Ordering;
use std::collections::{BTreeMap, BTreeSet, BinaryHeap};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::time::Instant;

use cxrlake_lake::Lake;
use datafusion::prelude::col;
use serde::Serialize;
use serde_json::Value;
use sha2::{Digest, Sha256};

use cxrlake_export::error::{ExportError, Result};
use cxrlake_export::files::{patient_folder, write_atomic_with, write_file};
use cxrlake_export::flavour::{SplitExport, SplitFiles, write_versioned_splits};
use cxrlake_export::scan::{filtered_table, nothing_to_export};

/// The table it exports.
const TABLE: &str = "givcxr_dataset";

/// The flavour: the export's folder.
const FLAVOUR: &str = "givcxr";

/// The split the training subsets are drawn from.
const TRAIN: &str = "train";

/// The release's name.
pub const DATASET: &str = "GIV-CXR";

/// The release layout's version (each split file's `version`).
pub const VERSION: &str = "1.0";

/// The release's license.
pub const LICENSE: &str = "CC-BY-NC-4.0";

/// Who may use the release.
pub const ACCESS: &str = "PhysioNet credentialed access to MIMIC-CXR (and MIMIC-CXR-JPG for the \
                          images) is required: the records point into it and carry no images";

/// The frame of `bbox`.
pub const BBOX_FRAME: &str =
    "original image pixels, [x1, y1, x2, y2]; the subsets' bbox_384 is the 384x384 frame";

/// A record's fields, in the order they are written.
pub const FIELDS: [&str; 12] = [
    "image_id",
    "patient_id",
    "study_id",
    "anatomical_region",
    "bbox",
    "question",
    "answer",
    "reasoning_aspect",
    "clinical_finding",
    "bbox_size_category",
    "question_length",
    "answer_length",
];

/// The side of the square frame the subsets' prompts give boxes in.
pub const FRAME: u32 = 384;

/// What `cxrlake export givcxr` writes.
#[derive(Debug, Clone)]
pub struct GivcxrExport {
    out_dir: PathBuf,
    filter: Option<String>,
    sample: Option<Sample>,
}

/// A training subset: `pairs` train pairs drawn with `seed`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sample {
    /// Pairs to draw (all train pairs if fewer).
    pub pairs: usize,
    /// The seed of the hash order.
    pub seed: u64,
}

impl Sample {
    /// `sample-<N>-seed-<S>`: the subset's folder under `subsets/`.
    pub fn name(&self) -> String {
        format!("sample-{}-seed-{}", self.pairs, self.seed)
    }
}

impl GivcxrExport {
    /// Writes under `out_dir/givcxr/`.
    pub fn new(out_dir: impl Into<PathBuf>) -> Self {
        Self {
            out_dir: out_dir.into(),
            filter: None,
            sample: None,
        }
    }

    /// Only the pairs matching this SQL predicate over `givcxr_dataset` columns.
    pub fn with_filter(mut self, filter: impl Into<String>) -> Self {
        self.filter = Some(filter.into());
        self
    }

    /// Also writes the training subsets of `pairs` train pairs drawn with `seed`.
    pub fn with_sample(mut self, pairs: usize, seed: u64) -> Self {
        self.sample = Some(Sample { pairs, seed });
        self
    }
}

/// What a GIV-CXR export wrote: the split files (with the manifest and the subsets' files among
/// `files`) and the subset, if one was asked for.
#[derive(Debug, Clone, PartialEq)]
pub struct GivcxrSummary {
    /// Pairs per split, every file written, bytes and seconds.
    pub files: SplitFiles,
    /// The manifest.
    pub manifest: PathBuf,
    /// The training subset written.
    pub subset: Option<SubsetSummary>,
}

/// A training subset written.
#[derive(Debug, Clone, PartialEq)]
pub struct SubsetSummary {
    /// What was asked for.
    pub sample: Sample,
    /// Pairs in it.
    pub pairs: usize,
    /// Its folder.
    pub dir: PathBuf,
}

impl std::fmt::Display for GivcxrSummary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.files)?;
        if let Some(subset) = &self.subset {
            write!(
                f,
                "; subset {}: {} train pairs × 2 prompt variants in {}",
                subset.sample.name(),
                subset.pairs,
                subset.dir.display()
            )?;
        }
        Ok(())
    }
}

/// One record of the release (keys in [`FIELDS`] order).
#[derive(Debug, Clone, PartialEq, Serialize)]
struct Record {
    image_id: String,
    patient_id: String,
    study_id: String,
    anatomical_region: String,
    bbox: [f64; 4],
    question: String,
    answer: String,
    reasoning_aspect: Value,
    clinical_finding: Value,
    bbox_size_category: Value,
    question_length: Value,
    answer_length: Value,
}

/// The text of `key` in `row`, `None` when null or empty.
fn text<'a>(row: &'a Value, key: &str) -> Option<&'a str> {
    row.get(key)
        .and_then(Value::as_str)
        .filter(|text| !text.is_empty())
}

/// The text of `key` in `row`, or the reason the row cannot be exported.
fn required<'a>(row: &'a Value, key: &str) -> std::result::Result<&'a str, String> {
    text(row, key).ok_or_else(|| format!("the row has no {key}"))
}

/// The row's `bbox`: four numbers.
fn bbox_of(row: &Value) -> std::result::Result<[f64; 4], String> {
    let numbers: Vec<f64> = row
        .get("bbox")
        .and_then(Value::as_array)
        .map(|b| b.iter().filter_map(Value::as_f64).collect())
        .unwrap_or_default();
    numbers
        .try_into()
        .map_err(|_| "the row's bbox is not four numbers [x1, y1, x2, y2]".to_string())
}

/// The study's folder of a row: its `image_path`, else `pXX/pXXXXXXXX/sXXXXXXXX` from its ids.
fn study_folder(row: &Value) -> std::result::Result<String, String> {
    if let Some(path) = text(row, "image_path") {
        return Ok(path.to_string());
    }
    let patient = required(row, "patient_id")?;
    let study = required(row, "study_id")?;
    Ok(format!(
        "{}/{study}",
        patient_folder(patient).to_string_lossy()
    ))
}

/// The release record of a `givcxr_dataset` row (read as JSON).
fn record(row: &Value) -> std::result::Result<Record, String> {
    let field = |key: &str| row.get(key).cloned().unwrap_or(Value::Null);
    Ok(Record {
        image_id: study_folder(row)?,
        patient_id: required(row, "patient_id")?.to_string(),
        study_id: required(row, "study_id")?.to_string(),
        anatomical_region: required(row, "region")?.to_string(),
        bbox: bbox_of(row)?,
        question: required(row, "question")?.to_string(),
        answer: required(row, "answer")?.to_string(),
        reasoning_aspect: field("reasoning_aspect"),
        clinical_finding: field("clinical_finding"),
        bbox_size_category: field("bbox_size_category"),
        question_length: field("question_length"),
        answer_length: field("answer_length"),
    })
}

/// `bbox` (`[x1, y1, x2, y2]` in original pixels of a `width` × `height` image) in the
/// 384 × 384 frame: `x · 384 / width`, `y · 384 / height`, rounded and clamped to `[0, 384]`.
pub fn bbox_to_384(bbox: [f64; 4], width: u32, height: u32) -> [u32; 4] {
    let scale = |value: f64, side: u32| {
        let scaled = (value * f64::from(FRAME) / f64::from(side.max(1))).round();
        // Clamped to [0, 384] first, so the cast is exact.
        scaled.clamp(0.0, f64::from(FRAME)) as u32
    };
    [
        scale(bbox[0], width),
        scale(bbox[1], height),
        scale(bbox[2], width),
        scale(bbox[3], height),
    ]
}

/// The inverse of [`bbox_to_384`]: a 384 × 384 frame box in original pixels of a `width` ×
/// `height` image (within one 384-frame pixel, `width / 384` original pixels, of the box it came
/// from).
pub fn bbox_from_384(bbox: [u32; 4], width: u32, height: u32) -> [f64; 4] {
    let scale = |value: u32, side: u32| f64::from(value) * f64::from(side) / f64::from(FRAME);
    [
        scale(bbox[0], width),
        scale(bbox[1], height),
        scale(bbox[2], width),
        scale(bbox[3], height),
    ]
}

/// The sample order of a pair: `sha256("<seed>/givcxr-sample/<qa_id>")` in hex.
pub fn sample_key(seed: u64, qa_id: &str) -> String {
    hex::encode(Sha256::digest(format!("{seed}/givcxr-sample/{qa_id}")))
}

/// What a subset's records need of a train pair.
#[derive(Debug, Clone, PartialEq)]
struct Pair {
    qa_id: String,
    study_folder: String,
    image_id: String,
    region: String,
    bbox: [f64; 4],
    width: Option<i64>,
    height: Option<i64>,
    question: String,
    answer: String,
}

impl Pair {
    fn of(row: &Value, record: &Record) -> Self {
        let int = |key: &str| row.get(key).and_then(Value::as_i64);
        Pair {
            qa_id: text(row, "qa_id").unwrap_or_default().to_string(),
            study_folder: record.image_id.clone(),
            image_id: text(row, "image_id").unwrap_or_default().to_string(),
            region: record.anatomical_region.clone(),
            bbox: record.bbox,
            width: int("image_width"),
            height: int("image_height"),
            question: record.question.clone(),
            answer: record.answer.clone(),
        }
    }
}

/// A drawn item with its sample key, ordered by key (then id).
struct Keyed<T> {
    key: String,
    id: String,
    item: T,
}

impl<T> PartialEq for Keyed<T> {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl<T> Eq for Keyed<T> {}

impl<T> PartialOrd for Keyed<T> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl<T> Ord for Keyed<T> {
    fn cmp(&self, other: &Self) -> Ordering {
        (&self.key, &self.id).cmp(&(&other.key, &other.id))
    }
}

/// The `pairs` items with the smallest [`sample_key`]s seen, in bounded memory.
struct Sampler<T> {
    sample: Sample,
    kept: BinaryHeap<Keyed<T>>,
}

impl<T> Sampler<T> {
    fn new(sample: Sample) -> Self {
        Self {
            sample,
            kept: BinaryHeap::new(),
        }
    }

    /// Considers item `id`, made by `item` only if it is kept (for now).
    fn offer(&mut self, id: &str, item: impl FnOnce() -> T) {
        if self.sample.pairs == 0 {
            return;
        }
        let key = sample_key(self.sample.seed, id);
        if self.kept.len() == self.sample.pairs
            && self
                .kept
                .peek()
                .is_some_and(|largest| (&key, id) >= (&largest.key, largest.id.as_str()))
        {
            return;
        }
        self.kept.push(Keyed {
            key,
            id: id.to_string(),
            item: item(),
        });
        if self.kept.len() > self.sample.pairs {
            self.kept.pop();
        }
    }

    /// The kept items, smallest key first.
    fn finish(self) -> Vec<T> {
        self.kept
            .into_sorted_vec()
            .into_iter()
            .map(|keyed| keyed.item)
            .collect()
    }
}

/// A subset record (LLaVA style).
#[derive(Debug, Serialize)]
struct SubsetRecord<'a> {
    id: &'a str,
    image: String,
    bbox: [f64; 4],
    bbox_384: [u32; 4],
    conversations: [Turn; 2],
}

/// One turn of a conversation.
#[derive(Debug, Serialize)]
struct Turn {
    from: &'static str,
    value: String,
}

/// `[x1, y1, x2, y2]`.
fn box_text(bbox: [u32; 4]) -> String {
    format!("[{}, {}, {}, {}]", bbox[0], bbox[1], bbox[2], bbox[3])
}

/// A pair's image size, or the error saying what to do.
fn image_size(pair: &Pair) -> Result<(u32, u32)> {
    let side = |value: Option<i64>| value.and_then(|v| u32::try_from(v).ok()).filter(|v| *v > 0);
    match (side(pair.width), side(pair.height)) {
        (Some(width), Some(height)) => Ok((width, height)),
        _ => Err(ExportError::Usage(format!(
            "{TABLE} pair {} has no image size (image_width {}, image_height {}), which \
             --sample needs to map its box to the {FRAME} × {FRAME} frame; rerun \
             `cxrlake run --flavour givcxr` to refill it, or leave such pairs out with \
             --where \"image_width > 0 AND image_height > 0\"",
            pair.qa_id,
            pair.width.map_or("NULL".to_string(), |v| v.to_string()),
            pair.height.map_or("NULL".to_string(), |v| v.to_string()),
        ))),
    }
}

/// The two subset records of a pair: bbox as input, bbox as output.
fn subset_records(pair: &Pair) -> Result<[SubsetRecord<'_>; 2]> {
    let (width, height) = image_size(pair)?;
    let bbox_384 = bbox_to_384(pair.bbox, width, height);
    let boxed = box_text(bbox_384);
    let region = pair.region.replace('_', " ");
    let record = |human: String, gpt: String| SubsetRecord {
        id: &pair.qa_id,
        image: format!("{}/{}.jpg", pair.study_folder, pair.image_id),
        bbox: pair.bbox,
        bbox_384,
        conversations: [
            Turn {
                from: "human",
                value: human,
            },
            Turn {
                from: "gpt",
                value: gpt,
            },
        ],
    };
    Ok([
        record(
            format!("<image>\nRegion: {region} {boxed}\n{}", pair.question),
            pair.answer.clone(),
        ),
        record(
            format!(
                "<image>\n{} Answer and give the box of the {region} as [x1, y1, x2, y2].",
                pair.question
            ),
            format!("{} <box>{boxed}</box>", pair.answer),
        ),
    ])
}

/// Writes a subset's two JSON Lines files under `dir`: the files and their bytes.
fn write_subset(dir: &Path, pairs: &[Pair]) -> Result<(Vec<PathBuf>, u64)> {
    let mut inputs = Vec::new();
    let mut outputs = Vec::new();
    for pair in pairs {
        let [input, output] = subset_records(pair)?;
        serde_json::to_writer(&mut inputs, &input)?;
        inputs.push(b'\n');
        serde_json::to_writer(&mut outputs, &output)?;
        outputs.push(b'\n');
    }
    cxrlake_export::files::create_folder(dir)?;
    let mut files = Vec::new();
    let mut bytes = 0;
    for (name, lines) in [("bbox_input.jsonl", inputs), ("bbox_output.jsonl", outputs)] {
        let path = dir.join(name);
        write_atomic_with(&path, |file| {
            let mut writer = BufWriter::new(file);
            writer.write_all(&lines)?;
            writer.flush()
        })
        .map_err(|source| ExportError::Io {
            path: path.clone(),
            source,
        })?;
        bytes += lines.len() as u64;
        files.push(path);
    }
    Ok((files, bytes))
}

/// The manifest of an export.
#[derive(Debug, Serialize)]
struct Manifest<'a> {
    dataset: &'static str,
    version: &'static str,
    license: &'static str,
    access: &'static str,
    bbox_frame: &'static str,
    table: &'static str,
    filter: Option<&'a str>,
    pairs: usize,
    splits: &'a BTreeMap<String, usize>,
    fields: [&'static str; 12],
    generators: &'a BTreeSet<String>,
    prompt_versions: &'a BTreeSet<String>,
    judges: &'a BTreeSet<String>,
    subsets: Vec<ManifestSubset>,
}

/// A subset as the manifest lists it.
#[derive(Debug, Serialize)]
struct ManifestSubset {
    name: String,
    split: &'static str,
    requested: usize,
    seed: u64,
    pairs: usize,
    files: [&'static str; 2],
}

/// The exported rows' provenance, for the manifest.
#[derive(Debug, Default)]
struct Provenance {
    generators: BTreeSet<String>,
    prompt_versions: BTreeSet<String>,
    judges: BTreeSet<String>,
}

impl Provenance {
    fn add(&mut self, row: &Value) {
        for (set, key) in [
            (&mut self.generators, "generator"),
            (&mut self.prompt_versions, "prompt_version"),
            (&mut self.judges, "judge"),
        ] {
            if let Some(value) = text(row, key)
                && !set.contains(value)
            {
                set.insert(value.to_string());
            }
        }
    }
}

/// Writes the `givcxr_dataset` rows of `lake` (matching the export's filter) in the GIV-CXR
/// release layout, Parquet per split, the manifest and, if asked for, the training subsets.
pub async fn export_givcxr(lake: &Lake, export: &GivcxrExport) -> Result<GivcxrSummary> {
    let started = Instant::now();
    let frame = filtered_table(lake, TABLE, export.filter.as_deref()).await?;
    let frame = frame.sort(vec![col("qa_id").sort(true, false)])?;
    let mut provenance = Provenance::default();
    let mut sampler = export.sample.map(Sampler::new);
    let mut files = write_versioned_splits(
        frame,
        SplitExport {
            flavour: FLAVOUR,
            unit: "QA pairs",
            table: TABLE,
            out_dir: &export.out_dir,
        },
        VERSION,
        |row| {
            let record = record(row)?;
            provenance.add(row);
            if let Some(sampler) = sampler.as_mut()
                && text(row, "split") == Some(TRAIN)
            {
                let qa_id = required(row, "qa_id")?;
                sampler.offer(qa_id, || Pair::of(row, &record));
            }
            Ok(record)
        },
    )
    .await?;
    if files.splits.is_empty() {
        return Err(nothing_to_export(lake, TABLE, export.filter.as_deref()));
    }
    let dir = export.out_dir.join(FLAVOUR);
    let mut subsets = Vec::new();
    let mut subset = None;
    if let (Some(sample), Some(sampler)) = (export.sample, sampler) {
        let pairs = sampler.finish();
        let subset_dir = dir.join("subsets").join(sample.name());
        let (written, bytes) = write_subset(&subset_dir, &pairs)?;
        files.files.extend(written);
        files.bytes += bytes;
        subsets.push(ManifestSubset {
            name: sample.name(),
            split: TRAIN,
            requested: sample.pairs,
            seed: sample.seed,
            pairs: pairs.len(),
            files: ["bbox_input.jsonl", "bbox_output.jsonl"],
        });
        subset = Some(SubsetSummary {
            sample,
            pairs: pairs.len(),
            dir: subset_dir,
        });
    }
    let manifest = Manifest {
        dataset: DATASET,
        version: VERSION,
        license: LICENSE,
        access: ACCESS,
        bbox_frame: BBOX_FRAME,
        table: TABLE,
        filter: export.filter.as_deref(),
        pairs: files.splits.values().sum(),
        splits: &files.splits,
        fields: FIELDS,
        generators: &provenance.generators,
        prompt_versions: &provenance.prompt_versions,
        judges: &provenance.judges,
        subsets,
    };
    let mut json = serde_json::to_vec_pretty(&manifest)?;
    json.push(b'\n');
    let manifest = dir.join("manifest.json");
    write_file(&manifest, &json)?;
    files.files.push(manifest.clone());
    files.bytes += json.len() as u64;
    files.seconds = started.elapsed().as_secs_f64();
    Ok(GivcxrSummary {
        files,
        manifest,
        subset,
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use cxrlake_export::flavour::open_split;

    fn row(qa_id: &str) -> Value {
        json!({
            "qa_id": qa_id, "context_id": "8521533f/right_lung", "patient_id": "p10010525",
            "study_id": "s50019345", "image_id": "8521533f-d5e45b8d", "split": "train",
            "region": "right_lung", "bbox": [247.0, 302.0, 1137.0, 1977.0],
            "image_width": 2544, "image_height": 2992, "position": 1,
            "question": "Is there any abnormality in the right lung?",
            "answer": "No abnormality is seen.", "reasoning_aspect": "detection",
            "clinical_finding": "normal", "bbox_size_category": "medium",
            "question_length": 8, "answer_length": 4, "lint": [], "generator": "g",
            "prompt_version": "v1", "image_path": "p10/p10010525/s50019345",
            "is_hallucination": false, "score": 0.9, "explanation": "e", "rule": "supported",
            "judge": "j"
        })
    }

    /// The top-level keys of a JSON object in written order.
    fn keys_in_order(json: &str) -> Vec<String> {
        let object: serde_json::Map<String, Value> = serde_json::from_str(json).expect("object");
        let mut keys: Vec<(usize, String)> = object
            .keys()
            .map(|key| {
                let at = json.find(&format!("\"{key}\":")).expect("key written");
                (at, key.clone())
            })
            .collect();
        keys.sort();
        keys.into_iter().map(|(_, key)| key).collect()
    }

    #[test]
    fn records_have_the_twelve_release_fields_in_order() {
        let record = record(&row("a/right_lung/q01")).expect("record");
        let written = serde_json::to_string(&record).expect("json");
        assert_eq!(keys_in_order(&written), FIELDS);
        let value: Value = serde_json::from_str(&written).expect("value");
        assert_eq!(value["image_id"], "p10/p10010525/s50019345");
        assert_eq!(value["anatomical_region"], "right_lung");
        assert_eq!(value["bbox"], json!([247.0, 302.0, 1137.0, 1977.0]));
        assert_eq!(value["question_length"], 8);

        let mut no_path = row("a/right_lung/q01");
        no_path["image_path"] = Value::Null;
        assert_eq!(
            record_of(&no_path).image_id,
            "p10/p10010525/s50019345",
            "the folder follows from the ids"
        );
        let mut no_box = row("a/right_lung/q01");
        no_box["bbox"] = Value::Null;
        assert_eq!(
            super::record(&no_box).expect_err("no box"),
            "the row's bbox is not four numbers [x1, y1, x2, y2]"
        );
    }

    fn record_of(row: &Value) -> Record {
        record(row).expect("record")
    }

    #[test]
    fn split_files_are_one_versioned_object() {
        let dir = tempfile::tempdir().expect("tempdir");
        let target = dir.path().join("train.json");
        let mut output = open_split(target.clone(), "train", Some(VERSION)).expect("open");
        output.record(&record_of(&row("a/q01"))).expect("one");
        output.record(&record_of(&row("a/q02"))).expect("two");
        output.finish().expect("finish");
        let text = std::fs::read_to_string(&target).expect("read");
        assert!(text.starts_with(r#"{"version": "1.0", "split": "train", "data": ["#));
        let value: Value = serde_json::from_str(&text).expect("one JSON object");
        assert_eq!(value["version"], VERSION);
        assert_eq!(value["split"], "train");
        let data = value["data"].as_array().expect("data");
        assert_eq!(data.len(), 2);
        assert!(
            data.iter()
                .all(|r| r.as_object().is_some_and(|o| o.len() == 12))
        );

        let empty = dir.path().join("val.json");
        open_split(empty.clone(), "val", Some(VERSION))
            .expect("open")
            .finish()
            .expect("finish");
        let value: Value =
            serde_json::from_str(&std::fs::read_to_string(&empty).expect("read")).expect("json");
        assert_eq!(value, json!({"version": "1.0", "split": "val", "data": []}));
    }

    fn draw(pairs: usize, seed: u64, ids: &[String]) -> Vec<String> {
        let mut sampler = Sampler::new(Sample { pairs, seed });
        for id in ids {
            sampler.offer(id, || id.clone());
        }
        sampler.finish()
    }

    #[test]
    fn subsets_are_deterministic_per_seed_and_differ_across_seeds() {
        let ids: Vec<String> = (0..200).map(|i| format!("img{i}/left_lung/q01")).collect();
        let first = draw(20, 3, &ids);
        assert_eq!(first.len(), 20);
        assert_eq!(first, draw(20, 3, &ids), "same seed, same sample");
        let mut reversed = ids.clone();
        reversed.reverse();
        assert_eq!(
            first,
            draw(20, 3, &reversed),
            "the row order does not matter"
        );
        assert_ne!(first, draw(20, 4, &ids), "another seed, another sample");

        let mut by_key = ids.clone();
        by_key.sort_by_key(|id| sample_key(3, id));
        assert_eq!(first, by_key[..20], "the smallest keys, in key order");
        assert_eq!(
            draw(30, 3, &ids)[..20],
            first,
            "a larger sample extends a smaller"
        );
        assert_eq!(draw(500, 3, &ids).len(), 200, "all when fewer");
        assert!(draw(0, 3, &ids).is_empty());
        assert_eq!(
            sample_key(0, "x"),
            hex::encode(Sha256::digest("0/givcxr-sample/x"))
        );
    }

    #[test]
    fn boxes_round_trip_through_the_384_frame() {
        let (width, height) = (2544_u32, 2992_u32);
        let mut state = 7_u64;
        let mut next = |side: u32| {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            (state >> 33) as f64 % f64::from(side)
        };
        for _ in 0..1000 {
            let bbox = [next(width), next(height), next(width), next(height)];
            let frame = bbox_to_384(bbox, width, height);
            assert!(frame.iter().all(|v| *v <= FRAME));
            let back = bbox_from_384(frame, width, height);
            for (i, (original, restored)) in bbox.iter().zip(back).enumerate() {
                let side = if i % 2 == 0 { width } else { height };
                let pixel = f64::from(side) / f64::from(FRAME);
                assert!(
                    (original - restored).abs() <= pixel,
                    "{bbox:?} → {frame:?} → {back:?}"
                );
            }
        }
        assert_eq!(
            bbox_to_384(
                [0.0, 0.0, f64::from(width), f64::from(height)],
                width,
                height
            ),
            [0, 0, 384, 384]
        );
        assert_eq!(
            bbox_to_384([-5.0, -1.0, 9999.0, 9999.0], width, height),
            [0, 0, 384, 384],
            "clamped"
        );
    }

    #[test]
    fn subset_records_give_the_box_as_input_or_output() {
        let pair = Pair::of(&row("a/q01"), &record_of(&row("a/q01")));
        let [input, output] = subset_records(&pair).expect("records");
        let input = serde_json::to_value(&input).expect("json");
        assert_eq!(
            input["image"],
            "p10/p10010525/s50019345/8521533f-d5e45b8d.jpg"
        );
        assert_eq!(input["bbox_384"], json!([37, 39, 172, 254]));
        assert_eq!(
            input["conversations"][0]["value"],
            "<image>\nRegion: right lung [37, 39, 172, 254]\n\
             Is there any abnormality in the right lung?"
        );
        assert_eq!(
            input["conversations"][1]["value"],
            "No abnormality is seen."
        );
        let output = serde_json::to_value(&output).expect("json");
        assert_eq!(output["conversations"][1]["from"], "gpt");
        assert_eq!(
            output["conversations"][1]["value"],
            "No abnormality is seen. <box>[37, 39, 172, 254]</box>"
        );
        let mut unsized_pair = pair.clone();
        unsized_pair.width = Some(0);
        let error = subset_records(&unsized_pair)
            .expect_err("no size")
            .to_string();
        assert!(error.contains("image_width 0"), "{error}");
        assert!(error.contains("--where"), "{error}");
    }
}
