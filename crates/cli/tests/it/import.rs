//! `cxrlake import release` on releases written by `cxrlake export release` (a synthetic lake
//! through every stage): the round trip gives the same zip members (as JSON values) and
//! metadata tables, a repeated import commits nothing, an `exports/<subset>` folder imports its
//! subset with ordered ratings, members in the public release's encodings (level names, `0_`
//! ratings, no provenance keys) are read, broken members are quarantined by name, an import
//! killed with SIGKILL resumes to the same lake, stages refuse to rebuild imported tables, and
//! `cxrlake sql` reads the release's Parquet and CSV files in place with ordered ratings.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::{cxrlake, ok};

/// The single number a `SELECT count(*) …` prints as CSV.
fn count(lake: &Path, sql: &str) -> u64 {
    crate::count_by(&|args| cxrlake(lake, args), sql)
}

/// Every member of a zip, parsed as JSON.
fn members(zip: &Path) -> BTreeMap<String, Value> {
    let file = std::fs::File::open(zip).unwrap_or_else(|e| panic!("{}: {e}", zip.display()));
    let mut archive = zip::ZipArchive::new(file).expect("zip");
    (0..archive.len())
        .map(|i| {
            let mut entry = archive.by_index(i).expect("member");
            let mut text = String::new();
            entry.read_to_string(&mut text).expect("utf8");
            (
                entry.name().to_string(),
                serde_json::from_str(&text).expect("json"),
            )
        })
        .collect()
}

/// The lines of a `.csv.gz`, sorted.
fn csv_lines(file: &Path) -> Vec<String> {
    let mut text = String::new();
    flate2::read::GzDecoder::new(std::fs::File::open(file).expect("open"))
        .read_to_string(&mut text)
        .expect("gzip");
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    lines.sort();
    lines
}

/// Asserts that two releases hold the same zip members and metadata tables.
fn assert_same_release(a: &Path, b: &Path) {
    for folder in ["", "exports/A_frontal", "exports/B_frontal"] {
        for zip in ["qa.zip", "scene_data.zip", "scene_graph.zip"] {
            let (left, right) = (a.join(folder).join(zip), b.join(folder).join(zip));
            if left.exists() {
                let (left, right) = (members(&left), members(&right));
                assert_eq!(
                    left.keys().collect::<Vec<_>>(),
                    right.keys().collect::<Vec<_>>()
                );
                for (name, value) in &left {
                    assert_eq!(value, &right[name], "{folder}/{zip}: {name}");
                }
            }
        }
        for entry in std::fs::read_dir(a.join(folder).join("metadata")).expect("metadata") {
            let path = entry.expect("entry").path();
            if path.to_string_lossy().ends_with(".csv.gz") {
                let name = path.file_name().expect("name");
                assert_eq!(
                    csv_lines(&path),
                    csv_lines(&b.join(folder).join("metadata").join(name)),
                    "{folder}/metadata/{}",
                    name.to_string_lossy()
                );
            }
        }
    }
}

/// A lake built from a synthetic corpus through every stage, exported as a release (both
/// layouts) under `<dir>/mimic-ext-cxr-qba/1.0.0`.
fn built_release(dir: &Path) -> PathBuf {
    let corpus = dir.join("corpus");
    let lake = dir.join("source-lake");
    let corpus_arg = corpus.to_str().expect("utf8");
    ok(cxrlake(
        &lake,
        &[
            "synth",
            "--studies",
            "16",
            "--seed",
            "5",
            "--out",
            corpus_arg,
        ],
    ));
    ok(cxrlake(&lake, &["init"]));
    ok(cxrlake(&lake, &["-q", "ingest", corpus_arg]));
    ok(cxrlake(&lake, &["-q", "run"]));
    let release = dir.join("mimic-ext-cxr-qba/1.0.0");
    ok(cxrlake(
        &lake,
        &[
            "export",
            "release",
            "--out",
            release.to_str().expect("utf8"),
        ],
    ));
    release
}

#[test]
fn a_release_round_trips_and_imports_resumably() {
    let dir = tempfile::tempdir().expect("tempdir");
    let release = built_release(dir.path());
    let path = release.to_str().expect("utf8");

    // Import, then export again: the same release.
    let lake = dir.path().join("imported");
    let summary = ok(cxrlake(&lake, &["import", "release", path]));
    assert!(
        summary.contains("imported release 1.0.0 (4 files)"),
        "{summary}"
    );
    assert!(summary.contains("0 quarantined"), "{summary}");
    let again = dir.path().join("again");
    ok(cxrlake(
        &lake,
        &["export", "release", "--out", again.to_str().expect("utf8")],
    ));
    assert_same_release(&release, &again);

    // A repeated import commits nothing; ratings are ordered; stages refuse to rebuild it.
    let versions = ok(cxrlake(&lake, &["tables"]));
    let repeated = ok(cxrlake(&lake, &["import", "release", path]));
    assert!(repeated.contains("nothing new in 0 commits"), "{repeated}");
    assert_eq!(ok(cxrlake(&lake, &["tables"])), versions);
    let ft = count(&lake, "SELECT count(*) FROM qa WHERE rating >= 'A'");
    assert!(ft > 0);
    assert_eq!(
        ft,
        count(&lake, "SELECT count(*) FROM qa WHERE rating_rank >= 4")
    );
    let refused = cxrlake(&lake, &["run"]);
    assert!(!refused.status.success());
    let message = String::from_utf8_lossy(&refused.stderr);
    assert!(
        message.contains("imported with `cxrlake import release`"),
        "{message}"
    );
    assert_eq!(
        count(&lake, "SELECT count(*) FROM qa WHERE rating >= 'A'"),
        ft
    );
    // A flavour that reads the reports says what the release lacks; GIV-CXR, which reads only
    // scene graphs and images, builds on it (boxes from the scene graphs' region nodes) and
    // leaves the imported tables as they are.
    let gemex = cxrlake(&lake, &["run", "--flavour", "gemex"]);
    assert!(!gemex.status.success());
    let message = String::from_utf8_lossy(&gemex.stderr);
    assert!(
        message.contains("reads table sentences") && message.contains("--flavour givcxr"),
        "{message}"
    );
    let qa_version = count(&lake, "SELECT count(*) FROM qa");
    ok(cxrlake(&lake, &["-q", "run", "--flavour", "givcxr"]));
    assert!(count(&lake, "SELECT count(*) FROM givcxr_dataset") > 0);
    assert_eq!(
        count(
            &lake,
            "SELECT count(*) FROM givcxr_regions WHERE bbox IS NULL"
        ),
        0
    );
    assert_eq!(count(&lake, "SELECT count(*) FROM qa"), qa_version);

    // The evaluations read an imported lake: its own answers score 1.0 on RadStrucVQA, and its
    // scene graphs score against a labels file.
    let predictions = dir.path().join("imported-answers.parquet");
    let predictions_arg = predictions.to_str().expect("utf8");
    ok(cxrlake(
        &lake,
        &[
            "sql",
            "SELECT study_id, question_id, answers FROM qa",
            "--format",
            "parquet",
            "--out",
            predictions_arg,
        ],
    ));
    let radstruct = ok(cxrlake(
        &lake,
        &[
            "evaluate",
            "radstruct",
            "--predictions",
            predictions_arg,
            "--n-boot",
            "0",
            "--format",
            "csv",
        ],
    ));
    let estimates: Vec<&str> = radstruct
        .lines()
        .skip(1)
        .filter_map(|line| line.split(',').nth(7).filter(|v| !v.is_empty()))
        .collect();
    assert!(
        estimates.len() >= 24 && estimates.iter().all(|v| *v == "1.0"),
        "{radstruct}"
    );
    let labels = dir.path().join("labels.csv");
    ok(cxrlake(
        &dir.path().join("source-lake"),
        &[
            "sql",
            "SELECT study_id, 'pleural_effusion' AS class, pleural_effusion AS label FROM chexpert_labels WHERE labeler = 'chexpert'",
            "--format",
            "csv",
            "--out",
            labels.to_str().expect("utf8"),
        ],
    ));
    let scored = ok(cxrlake(
        &lake,
        &[
            "evaluate",
            "labels",
            "--labels",
            labels.to_str().expect("utf8"),
            "--n-boot",
            "0",
        ],
    ));
    assert!(
        scored.contains("Pleural Effusion") && scored.contains("16 studies with labels"),
        "{scored}"
    );

    // SQL over the release's own files, ordered ratings on its `<rank>_<grade>` codes.
    let metadata = release.join("metadata/question_metadata");
    for (extension, reader) in [("parquet", "parquet"), ("csv.gz", "csv")] {
        let file = format!("{}.{extension}", metadata.display());
        assert_eq!(
            count(
                &lake,
                &format!("SELECT count(*) FROM '{file}' WHERE \"question.quality.rating\" >= 'A'")
            ),
            ft,
            "{reader}"
        );
    }

    // An exports/<subset> folder: its subset, frontal images only.
    let subset = dir.path().join("ft-only");
    ok(cxrlake(
        &subset,
        &[
            "import",
            "release",
            release.join("exports/A_frontal").to_str().expect("utf8"),
        ],
    ));
    assert_eq!(count(&subset, "SELECT count(*) FROM qa"), ft);
    assert_eq!(
        count(&subset, "SELECT count(*) FROM qa WHERE rating < 'A'"),
        0
    );
    assert_eq!(
        count(&subset, "SELECT count(*) FROM images WHERE NOT is_frontal"),
        0
    );

    // SIGKILL after a few commits (one study per commit); the rerun equals the import above.
    let killed = dir.path().join("killed");
    ok(cxrlake(&killed, &["init"]));
    let mut child = Command::new(env!("CARGO_BIN_EXE_cxrlake"))
        .arg("--lake")
        .arg(&killed)
        .args(["import", "release", path, "--chunk-studies", "1"])
        .spawn()
        .expect("spawn");
    let log = killed.join("qa/_delta_log");
    let started = Instant::now();
    let commits = || {
        std::fs::read_dir(&log)
            .map(|d| {
                d.filter(|e| {
                    e.as_ref()
                        .is_ok_and(|e| e.file_name().to_string_lossy().ends_with(".json"))
                })
                .count()
            })
            .unwrap_or(0)
    };
    while commits() < 3 && started.elapsed() < Duration::from_secs(120) {
        if child.try_wait().expect("wait").is_some() {
            break;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    let _ = child.kill();
    let status = child.wait().expect("wait");
    assert!(
        !status.success(),
        "the import was killed before it ended ({} qa commits)",
        commits()
    );
    let partial = count(&killed, "SELECT count(*) FROM qa");
    let total = count(&lake, "SELECT count(*) FROM qa");
    assert!(partial < total, "{partial} of {total}");
    ok(cxrlake(&killed, &["import", "release", path]));
    let resumed = dir.path().join("resumed");
    ok(cxrlake(
        &killed,
        &[
            "export",
            "release",
            "--out",
            resumed.to_str().expect("utf8"),
        ],
    ));
    assert_same_release(&release, &resumed);
}

/// Rewrites member `name` of `zip` (read) into `out` (written) with `edit` (None: drop it), and
/// adds `extra` members.
fn rewrite_zip(
    zip: &Path,
    out: &Path,
    edit: impl Fn(&str, Vec<u8>) -> Option<(String, Vec<u8>)>,
) -> Vec<String> {
    let mut archive = zip::ZipArchive::new(std::fs::File::open(zip).expect("open")).expect("zip");
    let mut writer = zip::ZipWriter::new(std::fs::File::create(out).expect("create"));
    let mut names = Vec::new();
    for i in 0..archive.len() {
        let mut entry = archive.by_index(i).expect("member");
        let name = entry.name().to_string();
        let mut bytes = Vec::new();
        entry.read_to_end(&mut bytes).expect("read");
        if let Some((name, bytes)) = edit(&name, bytes) {
            writer
                .start_file(name.as_str(), zip::write::SimpleFileOptions::default())
                .expect("start");
            writer.write_all(&bytes).expect("write");
            names.push(name);
        }
    }
    writer.finish().expect("finish");
    names
}

/// Level names instead of codes, `0_…` ratings as the public release may write them, no
/// provenance keys.
fn public_encodings(value: &mut Value) {
    match value {
        Value::Object(map) => {
            map.remove("extractor");
            map.remove("embedder");
            if let Some(level) = map.get_mut("general_issue_level")
                && level.as_i64() == Some(4)
            {
                *level = Value::String("NO_ISSUES".into());
            }
            if let Some(rating) = map.get_mut("rating")
                && rating.as_str().is_some_and(|r| r.starts_with("0_"))
            {
                *rating = Value::String("0_unrated".into());
            }
            map.values_mut().for_each(public_encodings);
        }
        Value::Array(items) => items.iter_mut().for_each(public_encodings),
        _ => {}
    }
}

#[test]
fn broken_members_are_quarantined_and_public_encodings_read() {
    let dir = tempfile::tempdir().expect("tempdir");
    let release = built_release(dir.path());
    let broken = dir.path().join("broken");
    std::fs::create_dir_all(&broken).expect("mkdir");
    std::fs::copy(
        release.join("quality_mappings.csv"),
        broken.join("quality_mappings.csv"),
    )
    .expect("copy");
    let names = rewrite_zip(
        &release.join("qa.zip"),
        &broken.join("qa.zip"),
        |name, bytes| {
            let index = name.bytes().map(usize::from).sum::<usize>() % 5;
            let mut json: Value = serde_json::from_slice(&bytes).expect("json");
            match index {
                0 => Some((name.to_string(), b"{\"questions\": [".to_vec())),
                1 => {
                    json["questions"][0]["extraction_quality"]["change_quality"] = 42.into();
                    Some((name.to_string(), serde_json::to_vec(&json).expect("json")))
                }
                2 => Some((name.replace("/s", "/s9"), bytes)),
                _ => {
                    public_encodings(&mut json);
                    Some((name.to_string(), serde_json::to_vec(&json).expect("json")))
                }
            }
        },
    );
    let bad: Vec<&String> = names
        .iter()
        .filter(|n| {
            let original = n.replace("/s9", "/s");
            original.bytes().map(usize::from).sum::<usize>() % 5 < 3
        })
        .collect();
    assert!(!bad.is_empty() && bad.len() < names.len(), "{names:?}");

    let lake = dir.path().join("lake");
    let output = cxrlake(
        &lake,
        &[
            "import",
            "release",
            broken.to_str().expect("utf8"),
            "--strict",
        ],
    );
    assert_eq!(
        output.status.code(),
        Some(1),
        "--strict fails on quarantined members with exit 1 (2 is for usage errors)"
    );
    let quarantined = ok(cxrlake(
        &lake,
        &[
            "sql",
            "SELECT location, reason FROM quarantine WHERE stage = 'import' ORDER BY location",
            "--format",
            "csv",
        ],
    ));
    assert_eq!(quarantined.lines().count() - 1, bad.len(), "{quarantined}");
    for name in &bad {
        assert!(quarantined.contains(name.as_str()), "{name}: {quarantined}");
    }
    assert!(quarantined.contains("invalid JSON"), "{quarantined}");
    assert!(
        quarantined.contains("unknown change_quality code 42"),
        "{quarantined}"
    );
    assert!(
        quarantined.contains("do not match the member's path"),
        "{quarantined}"
    );
    // The others are in, with the release as their provenance; a rerun adds nothing.
    let studies = count(&lake, "SELECT count(DISTINCT study_id) FROM qa") as usize;
    assert_eq!(studies, names.len() - bad.len());
    assert_eq!(
        count(
            &lake,
            "SELECT count(*) FROM qa WHERE extractor <> 'release:unknown'"
        ),
        0
    );
    let versions = ok(cxrlake(&lake, &["tables"]));
    ok(cxrlake(
        &lake,
        &["import", "release", broken.to_str().expect("utf8")],
    ));
    assert_eq!(ok(cxrlake(&lake, &["tables"])), versions);
}
