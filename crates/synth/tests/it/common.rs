//! Shared fixtures: one 200-study corpus per test process, and file readers.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use cxrlake_synth::{SynthOptions, SynthSummary, generate};

/// Studies in the shared corpus.
pub const STUDIES: usize = 200;

/// A fresh, empty directory under cargo's per-target test scratch dir.
pub fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("synth-it-{name}"));
    if dir.exists() {
        std::fs::remove_dir_all(&dir).expect("remove old scratch dir");
    }
    dir
}

/// The shared 200-study corpus (seed 7, with zip and masks for every image).
pub fn corpus() -> &'static (PathBuf, SynthSummary) {
    static CORPUS: OnceLock<(PathBuf, SynthSummary)> = OnceLock::new();
    CORPUS.get_or_init(|| {
        let dir = scratch("corpus");
        let summary =
            generate(&SynthOptions::new(STUDIES, 7, &dir).with_zip(true)).expect("generate corpus");
        (dir, summary)
    })
}

/// Reads a gzipped file to a string.
pub fn read_gz(path: &Path) -> String {
    let file = std::fs::File::open(path).expect("open gz");
    let mut text = String::new();
    flate2::read::GzDecoder::new(file)
        .read_to_string(&mut text)
        .expect("gunzip");
    text
}

/// Parses a gzipped CSV into (header, rows).
pub fn read_csv(path: &Path) -> (Vec<String>, Vec<Vec<String>>) {
    let text = read_gz(path);
    let mut reader = csv::Reader::from_reader(text.as_bytes());
    let header = reader
        .headers()
        .expect("header")
        .iter()
        .map(str::to_owned)
        .collect();
    let rows = reader
        .records()
        .map(|r| r.expect("row").iter().map(str::to_owned).collect())
        .collect();
    (header, rows)
}

/// `ground_truth.jsonl` as JSON values.
pub fn truth(dir: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(dir.join("ground_truth.jsonl"))
        .expect("read truth")
        .lines()
        .map(|l| serde_json::from_str(l).expect("truth line is JSON"))
        .collect()
}

/// Every file under `dir`, relative, sorted.
pub fn all_files(dir: &Path) -> Vec<PathBuf> {
    fn walk(root: &Path, dir: &Path, out: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).expect("read dir") {
            let path = entry.expect("entry").path();
            if path.is_dir() {
                walk(root, &path, out);
            } else {
                out.push(path.strip_prefix(root).expect("prefix").to_path_buf());
            }
        }
    }
    let mut out = Vec::new();
    walk(dir, dir, &mut out);
    out.sort();
    out
}
