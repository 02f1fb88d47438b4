//! Shared helpers: synthetic corpora, temporary lakes, table dumps.

use std::path::{Path, PathBuf};

use arrow::array::{Array, AsArray, RecordBatch};
use arrow::datatypes::Int64Type;
use cxrlake_ingest::{IngestOptions, IngestSummary, ingest};
use cxrlake_lake::Lake;
use cxrlake_synth::{SynthOptions, SynthSummary};
use tempfile::TempDir;

/// The source tables ingest fills.
pub const SOURCE_TABLES: [&str; 6] = [
    "reports",
    "images",
    "splits",
    "chexpert_labels",
    "imagenome_boxes",
    "cxas_masks",
];

/// A synthetic corpus in a temp dir.
pub fn corpus(studies: usize, seed: u64, zip: bool) -> (TempDir, SynthSummary) {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("corpus");
    let summary = cxrlake_synth::generate(&SynthOptions::new(studies, seed, &out).with_zip(zip))
        .expect("synth");
    (dir, summary)
}

/// An initialised lake in a temp dir.
pub async fn lake() -> (TempDir, Lake) {
    let dir = tempfile::tempdir().expect("tempdir");
    let lake = Lake::open_url(dir.path().to_str().expect("utf8")).expect("open");
    lake.init().await.expect("init");
    (dir, lake)
}

/// Ingests `inputs` with small chunks (several commits per table).
pub async fn run(lake: &Lake, inputs: Vec<PathBuf>) -> IngestSummary {
    let options = IngestOptions::new(inputs).with_chunk_studies(64);
    ingest(lake, &options).await.expect("ingest")
}

/// `SELECT count(*) …`.
pub async fn count(lake: &Lake, sql: &str) -> i64 {
    let ctx = lake.session().await.expect("session");
    let batches = ctx
        .sql(sql)
        .await
        .expect("plan")
        .collect()
        .await
        .expect("run");
    batches[0].column(0).as_primitive::<Int64Type>().value(0)
}

/// Every row of a table as text, sorted.
pub async fn dump(lake: &Lake, table: &str) -> Vec<String> {
    let ctx = lake.session().await.expect("session");
    let batches: Vec<RecordBatch> = ctx
        .sql(&format!("SELECT * FROM {table}"))
        .await
        .expect("plan")
        .collect()
        .await
        .expect("run");
    let mut rows = Vec::new();
    for batch in &batches {
        let formatters: Vec<_> = batch
            .columns()
            .iter()
            .map(|c| {
                arrow::util::display::ArrayFormatter::try_new(c.as_ref(), &Default::default())
                    .expect("formatter")
            })
            .collect();
        for row in 0..batch.num_rows() {
            let cells: Vec<String> = formatters
                .iter()
                .map(|f| f.value(row).to_string())
                .collect();
            rows.push(cells.join(" | "));
        }
    }
    rows.sort();
    rows
}

/// Current version of every source table and `quarantine`.
pub async fn versions(lake: &Lake) -> Vec<(String, u64)> {
    let mut out = Vec::new();
    for name in SOURCE_TABLES.iter().chain(&["quarantine"]) {
        let table = lake.table(name).await.expect("table");
        out.push((name.to_string(), table.version().unwrap_or(0) as u64));
    }
    out
}

/// One quarantine row: (source, location, reason, raw bytes length).
#[derive(Debug, Clone)]
pub struct QuarantineRow {
    pub source: String,
    pub location: String,
    pub reason: String,
    pub raw: Vec<u8>,
}

/// All `quarantine` rows.
pub async fn quarantine(lake: &Lake) -> Vec<QuarantineRow> {
    let ctx = lake.session().await.expect("session");
    let batches = ctx
        .sql("SELECT CAST(source AS VARCHAR), CAST(location AS VARCHAR), CAST(reason AS VARCHAR), raw, stage FROM quarantine")
        .await
        .expect("plan")
        .collect()
        .await
        .expect("run");
    let mut rows = Vec::new();
    for batch in batches {
        let text = |i: usize| {
            arrow::compute::cast(batch.column(i), &arrow::datatypes::DataType::Utf8).expect("cast")
        };
        let (source, location, reason, stage) = (text(0), text(1), text(2), text(4));
        let raw = arrow::compute::cast(batch.column(3), &arrow::datatypes::DataType::Binary)
            .expect("cast");
        for row in 0..batch.num_rows() {
            assert_eq!(stage.as_string::<i32>().value(row), "ingest");
            rows.push(QuarantineRow {
                source: source.as_string::<i32>().value(row).to_string(),
                location: location.as_string::<i32>().value(row).to_string(),
                reason: reason.as_string::<i32>().value(row).to_string(),
                raw: if raw.is_null(row) {
                    Vec::new()
                } else {
                    raw.as_binary::<i32>().value(row).to_vec()
                },
            });
        }
    }
    rows
}

/// All files under `dir` (relative paths with `/`), sorted.
pub fn files_under(dir: &Path) -> Vec<String> {
    fn walk(root: &Path, dir: &Path, out: &mut Vec<String>) {
        for entry in std::fs::read_dir(dir).expect("read_dir") {
            let path = entry.expect("entry").path();
            if path.is_dir() {
                walk(root, &path, out);
            } else {
                let rel = path.strip_prefix(root).expect("under root");
                out.push(rel.to_string_lossy().replace('\\', "/"));
            }
        }
    }
    let mut out = Vec::new();
    walk(dir, dir, &mut out);
    out.sort();
    out
}

/// Writes the files under `root`'s `folders` into a zip with the same relative names.
pub fn zip_folders(root: &Path, folders: &[&str], zip_path: &Path) {
    use std::io::Write;
    let file = std::fs::File::create(zip_path).expect("create zip");
    let mut zip = zip::ZipWriter::new(file);
    let options = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated);
    for rel in files_under(root) {
        if folders.iter().any(|f| rel.starts_with(&format!("{f}/"))) {
            zip.start_file(rel.as_str(), options).expect("start");
            zip.write_all(&std::fs::read(root.join(&rel)).expect("read"))
                .expect("write");
        }
    }
    zip.finish().expect("finish");
}

/// The CSV files of a corpus.
pub fn csvs(root: &Path) -> Vec<PathBuf> {
    [
        "mimic-cxr-2.0.0-metadata.csv.gz",
        "mimic-cxr-2.0.0-split.csv.gz",
        "mimic-cxr-2.0.0-chexpert.csv.gz",
        "mimic-cxr-2.0.0-negbio.csv.gz",
    ]
    .iter()
    .map(|name| root.join(name))
    .collect()
}
