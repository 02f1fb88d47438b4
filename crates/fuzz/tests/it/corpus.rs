//! Seeds from a small synthetic corpus (`cxrlake-synth`, 6 studies, generated once per test
//! process): reports, the three kinds of CSV, scene graphs, CXAS files and the report zip.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use cxrlake_synth::{SynthOptions, generate};

/// The seed files, in memory.
#[derive(Debug)]
pub struct Corpus {
    /// Report texts with their release paths (`files/p10/p1000…/s5….txt`).
    pub reports: Vec<(String, Vec<u8>)>,
    /// The metadata CSV: header and the first rows, uncompressed.
    pub metadata_csv: Vec<u8>,
    /// The split CSV, the same way.
    pub split_csv: Vec<u8>,
    /// The CheXpert labels CSV, the same way.
    pub chexpert_csv: Vec<u8>,
    /// Scene graphs with their file names.
    pub scene_graphs: Vec<(String, Vec<u8>)>,
    /// CXAS files with their paths relative to the corpus (`cxas/p10/p1000…/s5….json`).
    pub cxas: Vec<(String, Vec<u8>)>,
    /// `mimic-cxr-reports.zip`.
    pub reports_zip: Vec<u8>,
    /// The corpus folder (for the metadata CSV on disk).
    pub dir: PathBuf,
}

/// Rows kept of each CSV (after the header).
const CSV_ROWS: usize = 8;

/// The shared corpus.
pub fn corpus() -> &'static Corpus {
    static CORPUS: OnceLock<Corpus> = OnceLock::new();
    CORPUS.get_or_init(|| {
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("fuzz-corpus");
        if dir.exists() {
            std::fs::remove_dir_all(&dir).expect("remove the old corpus");
        }
        generate(&SynthOptions::new(6, 33, &dir).with_zip(true)).expect("generate the corpus");
        let mut reports = Vec::new();
        let mut scene_graphs = Vec::new();
        let mut cxas = Vec::new();
        for path in files_under(&dir) {
            let rel = path
                .strip_prefix(&dir)
                .expect("under the corpus")
                .to_string_lossy()
                .replace('\\', "/");
            if rel.starts_with("files/") && rel.ends_with(".txt") {
                reports.push((rel, std::fs::read(&path).expect("read report")));
            } else if rel.ends_with("_SceneGraph.json") {
                let name = rel.rsplit('/').next().unwrap_or(&rel).to_string();
                scene_graphs.push((name, std::fs::read(&path).expect("read scene graph")));
            } else if rel.starts_with("cxas/") && rel.ends_with(".json") {
                cxas.push((rel, std::fs::read(&path).expect("read CXAS file")));
            }
        }
        assert!(!reports.is_empty() && !scene_graphs.is_empty() && !cxas.is_empty());
        scene_graphs.truncate(3);
        cxas.truncate(2);
        Corpus {
            reports,
            metadata_csv: csv_head(&dir.join("mimic-cxr-2.0.0-metadata.csv.gz")),
            split_csv: csv_head(&dir.join("mimic-cxr-2.0.0-split.csv.gz")),
            chexpert_csv: csv_head(&dir.join("mimic-cxr-2.0.0-chexpert.csv.gz")),
            scene_graphs,
            cxas,
            reports_zip: std::fs::read(dir.join("mimic-cxr-reports.zip")).expect("read the zip"),
            dir,
        }
    })
}

/// Every file under `dir`, sorted.
fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(folder) = stack.pop() {
        for entry in std::fs::read_dir(&folder).expect("read dir") {
            let path = entry.expect("dir entry").path();
            if path.is_dir() {
                stack.push(path);
            } else {
                out.push(path);
            }
        }
    }
    out.sort();
    out
}

/// The header and first [`CSV_ROWS`] lines of a gzipped CSV (no field of these CSVs spans
/// lines).
fn csv_head(path: &Path) -> Vec<u8> {
    let mut text = String::new();
    flate2::read::MultiGzDecoder::new(std::fs::File::open(path).expect("open CSV"))
        .read_to_string(&mut text)
        .expect("gunzip CSV");
    let mut head: String = text
        .lines()
        .take(1 + CSV_ROWS)
        .collect::<Vec<_>>()
        .join("\n");
    head.push('\n');
    head.into_bytes()
}
