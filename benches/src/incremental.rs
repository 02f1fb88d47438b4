//! Benchmark of an incremental run after one added synonym against a full rebuild (DESIGN 2.5,
//! `crates/pipeline/src/incremental.rs`), on the synthetic corpus.
//!
//! ```text
//! synth → ingest → run --full (old definitions)          the base lake, kept in base/
//! base/ ──hard-link copy──► work/
//!   plan, run (new definitions: one synonym added)      "incremental", per stage
//!   study digests of every per-study table, qa_balance
//!   run --full (new definitions)                        "full rebuild"
//!   study digests again: must be equal
//! ```
//!
//! The edit is what a curator does after `SELECT unnest(non_resolved_regions) …`: the corpus
//! writes "bibasal" for the lung bases, which the definitions do not know, so it becomes a
//! synonym of `lower lung zones`.
//!
//! Scale: `INCREMENTAL_BENCH_STUDIES` (default 20,000); folder `INCREMENTAL_BENCH_DIR`
//! (default: a temporary folder); `INCREMENTAL_BENCH_REUSE=1` reuses `base/` (else `corpus/`)
//! from an earlier run; `INCREMENTAL_BENCH_REBUILD=0` stops after the incremental run.
//! `RUST_LOG=cxrlake_pipeline=info` logs every statement's time.

use std::collections::HashMap;
use std::path::Path;
use std::time::Instant;

use cxrlake_benches::{bench_dir, env_number, init_logging, pipeline};
use cxrlake_ingest::{IngestOptions, ingest};
use cxrlake_lake::Lake;
use cxrlake_pipeline::Plan;
use cxrlake_pipeline::scope::{StudyDigests, study_digests};
use cxrlake_refdefs::RefDefs;
use cxrlake_synth::{SynthOptions, generate};

/// The per-study tables the stages write.
const TABLES: [&str; 7] = [
    "region_boxes",
    "sentences",
    "observations_raw",
    "indications",
    "observations",
    "scene_graphs",
    "qa",
];

/// The edit: (file, old text, new text).
const EDIT: (&str, &str, &str) = (
    "regions.toml",
    r#"synonyms = ["lung bases", "bases", "lower lungs", "bibasilar regions", "lower zones", "both bases"]"#,
    r#"synonyms = ["lung bases", "bases", "lower lungs", "bibasilar regions", "lower zones", "both bases", "bibasal"]"#,
);

#[tokio::main]
#[allow(clippy::print_stdout)]
async fn main() {
    init_logging();
    let studies = env_number("INCREMENTAL_BENCH_STUDIES", 20_000);
    let (_temp, root) = bench_dir("INCREMENTAL_BENCH_DIR");
    let base_dir = root.join("base");
    let defs = RefDefs::embedded().expect("refdefs");
    let edited = edited(&defs, &root.join("refdefs-edited"));
    let edited = [("refdefs", edited.as_str())];

    let reuse = std::env::var_os("INCREMENTAL_BENCH_REUSE").is_some();
    if !reuse || !base_dir.exists() {
        let corpus = root.join("corpus");
        let _ = std::fs::remove_dir_all(&base_dir);
        if !reuse || !corpus.exists() {
            generate(&SynthOptions::new(studies, 0, &corpus)).expect("synth");
        }
        let lake = open(&base_dir);
        lake.init().await.expect("init");
        ingest(&lake, &IngestOptions::new(vec![corpus]))
            .await
            .expect("ingest");
        let started = Instant::now();
        let record = run(&lake, &[], true).await;
        println!(
            "full run (old definitions): {:.1} s\n{record}",
            started.elapsed().as_secs_f64()
        );
    }

    let work_dir = root.join("work");
    let _ = std::fs::remove_dir_all(&work_dir);
    link_tree(&base_dir, &work_dir);
    let lake = open(&work_dir);
    let started = Instant::now();
    let plan = pipeline(&lake, &edited)
        .await
        .plan(false)
        .await
        .expect("plan");
    println!("plan: {:.2} s\n{plan}", started.elapsed().as_secs_f64());
    let started = Instant::now();
    let record = run(&lake, &edited, false).await;
    let incremental_s = started.elapsed().as_secs_f64();
    println!("incremental run: {incremental_s:.2} s\n{record}");
    let after = digests(&lake).await;

    if std::env::var("INCREMENTAL_BENCH_REBUILD").is_ok_and(|v| v == "0") {
        return;
    }
    let started = Instant::now();
    let rebuilt = run(&lake, &edited, true).await;
    let full_s = started.elapsed().as_secs_f64();
    println!("full rebuild (new definitions): {full_s:.2} s\n{rebuilt}");
    let rebuilt_digests = digests(&lake).await;
    for (table, digest) in &after {
        assert!(
            rebuilt_digests.get(table) == Some(digest),
            "{table}: the incremental run differs from the full rebuild"
        );
    }
    println!(
        "{studies} studies: incremental {incremental_s:.2} s = {:.1} % of the full rebuild \
         ({full_s:.2} s); QA pairs regenerated {} of {}; every per-study table and qa_balance \
         equal to the full rebuild's",
        100.0 * incremental_s / full_s,
        record.qa_pairs_touched,
        record.qa_pairs
    );
}

/// A `cxrlake run` (`full`: `--full`) with these settings.
async fn run(lake: &Lake, settings: &[(&str, &str)], full: bool) -> Plan {
    pipeline(lake, settings)
        .await
        .run(full, &mut |_| {})
        .await
        .expect("run")
}

/// The embedded definitions with [`EDIT`] applied, written to `dir`; its path.
fn edited(defs: &RefDefs, dir: &Path) -> String {
    let (file, old, new) = EDIT;
    std::fs::create_dir_all(dir).expect("mkdir");
    for (name, text) in defs.sources().texts() {
        let text = if name == file {
            assert!(text.contains(old), "{file} does not contain {old}");
            text.replacen(old, new, 1)
        } else {
            text
        };
        let path = dir.join(&name);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(path, text).expect("write refdefs");
    }
    dir.display().to_string()
}

fn open(dir: &Path) -> Lake {
    Lake::open_url(dir.to_str().expect("utf8")).expect("open")
}

/// A copy of `from` at `to` made of hard links (Delta never rewrites a file in place).
fn link_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for entry in std::fs::read_dir(from).expect("read_dir") {
        let entry = entry.expect("entry");
        let target = to.join(entry.file_name());
        if entry.file_type().expect("type").is_dir() {
            link_tree(&entry.path(), &target);
        } else {
            std::fs::hard_link(entry.path(), &target).expect("link");
        }
    }
}

/// Study digests of every per-study table, and qa_balance's rows as one digest.
async fn digests(lake: &Lake) -> HashMap<&'static str, StudyDigests> {
    let mut out = HashMap::new();
    for table in TABLES.into_iter().chain(["qa_balance"]) {
        out.insert(table, study_digests(lake, table).await.expect("digests"));
    }
    out
}
