//! Same seed → byte-identical files whatever the thread count; another seed → different files.

use std::collections::BTreeMap;
use std::path::Path;

use cxrlake_synth::{Shard, SynthOptions, generate};
use sha2::{Digest, Sha256};

use crate::common::{all_files, read_gz, scratch};

fn digest(dir: &Path) -> BTreeMap<String, String> {
    all_files(dir)
        .into_iter()
        .map(|rel| {
            let bytes = std::fs::read(dir.join(&rel)).expect("read");
            (
                rel.display().to_string(),
                hex::encode(Sha256::digest(&bytes)),
            )
        })
        .collect()
}

fn run(name: &str, seed: u64, threads: usize) -> BTreeMap<String, String> {
    let dir = scratch(name);
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .expect("pool");
    pool.install(|| {
        generate(
            &SynthOptions::new(40, seed, &dir)
                .with_zip(true)
                .with_cxas_fraction(0.5),
        )
    })
    .expect("generate");
    let digests = digest(&dir);
    std::fs::remove_dir_all(&dir).expect("cleanup");
    digests
}

#[test]
fn same_seed_same_bytes_regardless_of_threads() {
    let one = run("det-a", 11, 1);
    let four = run("det-b", 11, 4);
    assert!(
        one.len() > 100,
        "expected a full corpus, got {} files",
        one.len()
    );
    assert_eq!(one, four);
}

#[test]
fn different_seed_different_bytes() {
    let a = run("det-c", 11, 2);
    let b = run("det-d", 12, 2);
    let key = "mimic-cxr-2.0.0-metadata.csv.gz";
    assert_ne!(a.get(key), b.get(key));
    assert_ne!(a.get("ground_truth.jsonl"), b.get("ground_truth.jsonl"));
}

#[test]
fn refuses_a_non_empty_output_dir() {
    let dir = scratch("det-nonempty");
    std::fs::create_dir_all(&dir).expect("mkdir");
    std::fs::write(dir.join("x"), b"x").expect("write");
    let err = generate(&SynthOptions::new(5, 1, &dir)).expect_err("must refuse");
    assert!(err.to_string().contains("not empty"));
    std::fs::remove_dir_all(&dir).expect("cleanup");
}

/// The files of the shards of a corpus, put together, are the whole corpus's: per-study files
/// byte for byte, CSV and ground-truth rows in patient order; only the manifest differs.
#[test]
fn shards_put_together_are_the_whole_corpus() {
    let options = |dir: &Path| SynthOptions::new(60, 5, dir).with_cxas_fraction(0.5);
    let whole_dir = scratch("shard-whole");
    let whole = generate(&options(&whole_dir)).expect("generate whole");
    let mut files = BTreeMap::new();
    let mut tables: BTreeMap<String, String> = BTreeMap::new();
    let (mut studies, mut patients) = (0, 0);
    for part in 1..=3 {
        let dir = scratch(&format!("shard-{part}"));
        let shard: Shard = format!("{part}/3").parse().expect("shard");
        let summary = generate(&options(&dir).with_shard(shard)).expect("generate shard");
        assert_eq!(summary.shard, Some(shard));
        assert!(summary.studies > 0, "shard {part} is empty");
        (studies, patients) = (studies + summary.studies, patients + summary.patients);
        for rel in all_files(&dir) {
            let name = rel.display().to_string();
            let path = dir.join(&rel);
            if name.ends_with(".csv.gz") {
                let text = read_gz(&path);
                let table = tables.entry(name).or_default();
                let rows = if table.is_empty() {
                    text.as_str()
                } else {
                    text.split_once('\n').expect("a header").1
                };
                table.push_str(rows);
            } else if name == "ground_truth.jsonl" {
                tables
                    .entry(name)
                    .or_default()
                    .push_str(&std::fs::read_to_string(&path).expect("read truth"));
            } else if name != "manifest.json" {
                let bytes = std::fs::read(&path).expect("read");
                assert!(
                    files.insert(name.clone(), bytes).is_none(),
                    "{name} in two shards"
                );
            }
        }
        std::fs::remove_dir_all(&dir).expect("cleanup");
    }
    assert_eq!((studies, patients), (whole.studies, whole.patients));
    for rel in all_files(&whole_dir) {
        let name = rel.display().to_string();
        let path = whole_dir.join(&rel);
        if name.ends_with(".csv.gz") {
            assert_eq!(tables.get(&name), Some(&read_gz(&path)), "{name}");
        } else if name == "ground_truth.jsonl" {
            let text = std::fs::read_to_string(&path).expect("read truth");
            assert_eq!(tables.get(&name), Some(&text), "{name}");
        } else if name != "manifest.json" {
            let bytes = std::fs::read(&path).expect("read");
            assert_eq!(files.remove(&name).as_ref(), Some(&bytes), "{name}");
        }
    }
    assert!(
        files.is_empty(),
        "files no whole corpus has: {:?}",
        files.keys()
    );
    std::fs::remove_dir_all(&whole_dir).expect("cleanup");
}

#[test]
fn refuses_a_bad_shard() {
    for text in ["0/3", "4/3", "3", "a/b", "1/0"] {
        let err = text.parse::<Shard>().expect_err(text);
        assert!(err.to_string().contains("K/N"), "{err}");
    }
}
