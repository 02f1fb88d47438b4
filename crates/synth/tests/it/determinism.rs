//! Same seed → byte-identical files whatever the thread count; another seed → different files.

use std::collections::BTreeMap;
use std::path::Path;

use cxrlake_synth::{SynthOptions, generate};
use sha2::{Digest, Sha256};

use crate::common::{all_files, scratch};

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
