//! Two writers at once never change the result: concurrent `cxrlake run`s, concurrent
//! `cxrlake ingest`s and a run racing an ingest, as real processes on a folder lake, end in the
//! same tables as the same commands one after the other (the write lease serializes them).
//!
//! Each scenario is repeated `CONCURRENCY_TRIALS` times (default 2). A table is compared by an
//! order-independent digest of its rows (`cxrlake sql --format json "SELECT * FROM <t>"`, each
//! row serialized, the lines sorted and hashed) and by its `cxrlake tables` line (Delta version,
//! row count, stage, fingerprint), so an extra commit counts as a change too. What legitimately
//! differs between two runs of the same input, found by comparing two sequential runs on copies
//! of one ingested lake (every other table and column was equal):
//!
//! - `runs.run_id`: a fresh id per invocation (time and a random suffix);
//! - `runs.started_at`: the invocation's wall-clock time;
//! - the `lake` entry of `runs.settings`: the lake's path (the reference lake is another folder);
//! - the `source` of each `runs.settings` entry: the first run of a lake stores its settings in
//!   the lake (`default`), later runs read them from there (`lake`); the values are compared;
//! - the `run` key of a stage table's fingerprint in `cxrlake tables`: the id of the run that
//!   wrote it;
//! - the number of `runs` rows (and so its Delta version): one per `cxrlake run` that succeeded,
//!   an "up to date" one included; so `runs` is compared as its set of distinct rows, and its row
//!   count against the number of successful runs.

// The tests print the trial figures (seen with `--nocapture`).
#![allow(clippy::print_stdout)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};

use crate::snapshot::Snapshot;
use crate::{copy_dir, cxrlake, ok};

/// Studies in the synthetic corpus: small, so a debug run takes seconds.
const STUDIES: &str = "8";

/// The trials per scenario: `CONCURRENCY_TRIALS`, default 2.
fn trials() -> usize {
    std::env::var("CONCURRENCY_TRIALS")
        .ok()
        .map(|n| n.trim().parse().expect("CONCURRENCY_TRIALS is a number"))
        .unwrap_or(2)
}

/// Starts `cxrlake --lake <lake> args…` without waiting for it.
fn spawn(lake: &Path, args: &[&str]) -> Child {
    Command::new(env!("CARGO_BIN_EXE_cxrlake"))
        .arg("--lake")
        .arg(lake)
        .args(args)
        .env_remove("CXRLAKE_LAKE")
        .env_remove("CXRLAKE_CONFIG")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn cxrlake")
}

/// Both streams, for messages and checks.
fn text(output: &Output) -> String {
    format!(
        "{}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

/// Starts `a` and `b` on `lake` at once (both spawned before either is waited on); their
/// outputs and process ids.
fn race(lake: &Path, a: &[&str], b: &[&str]) -> [(Output, u32); 2] {
    let (first, second) = (spawn(lake, a), spawn(lake, b));
    let (first_pid, second_pid) = (first.id(), second.id());
    [
        (first.wait_with_output().expect("wait a"), first_pid),
        (second.wait_with_output().expect("wait b"), second_pid),
    ]
}

/// An initialized empty lake at `<dir>/lake` and a synthetic corpus at `<dir>/corpus`.
fn empty_lake_and_corpus(dir: &Path, seed: &str) -> (PathBuf, PathBuf) {
    let (lake, corpus) = (dir.join("lake"), dir.join("corpus"));
    ok(cxrlake(&lake, &["init"]));
    ok(cxrlake(
        &lake,
        &[
            "synth",
            "--studies",
            STUDIES,
            "--seed",
            seed,
            "--out",
            corpus.to_str().expect("utf8"),
        ],
    ));
    (lake, corpus)
}

/// Fails with the tables that differ between `got` and `want`.
fn assert_same(what: &str, got: &Snapshot, want: &Snapshot) {
    if got == want {
        return;
    }
    let mut differences = Vec::new();
    for (name, want_state) in &want.tables {
        match got.tables.get(name) {
            Some(got_state) if got_state == want_state => {}
            got_state => {
                differences.push(format!("{name}: got {got_state:?}, want {want_state:?}"))
            }
        }
    }
    for name in got.tables.keys().filter(|n| !want.tables.contains_key(*n)) {
        differences.push(format!("{name}: an extra table"));
    }
    if got.runs != want.runs {
        differences.push(format!("runs rows: got {}, want {}", got.runs, want.runs));
    }
    panic!("{what}: the tables differ\n{}", differences.join("\n"));
}

/// No lease left behind.
fn assert_released(lake: &Path) {
    assert!(
        !lake.join("_cxrlake/lease.json").exists(),
        "the write lease of {} was not released",
        lake.display()
    );
}

/// Checks a race without `--wait` between two writers of `command`: both succeeded (the second
/// started after the first ended, and `idle` says it found nothing to do), or one succeeded and
/// the other was refused naming the winner. Returns whether one was refused.
fn check_unwaited(
    command: &str,
    outputs: &[(Output, u32); 2],
    idle: impl Fn(&str) -> bool,
) -> bool {
    let [(a, a_pid), (b, b_pid)] = outputs;
    match (a.status.success(), b.status.success()) {
        (true, true) => {
            assert!(
                idle(&text(a)) || idle(&text(b)),
                "both {command}s succeeded and neither found the lake up to date:\n{}\n{}",
                text(a),
                text(b)
            );
            false
        }
        (true, false) | (false, true) => {
            let (refused, winner) = if a.status.success() {
                (b, a_pid)
            } else {
                (a, b_pid)
            };
            let message = String::from_utf8_lossy(&refused.stderr);
            assert_eq!(refused.status.code(), Some(1), "{}", text(refused));
            assert!(
                message.contains(&format!(
                    "another cxrlake command (`{command}`, pid {winner} on"
                )) && message.contains("holds the lake"),
                "the refused {command} does not name the winner (pid {winner}):\n{message}"
            );
            true
        }
        (false, false) => panic!("both {command}s failed:\n{}\n{}", text(a), text(b)),
    }
}

/// Both succeeded.
fn check_both_ok(command: &str, outputs: &[(Output, u32); 2]) {
    for (output, _) in outputs {
        assert!(
            output.status.success(),
            "a {command} with --wait failed:\n{}",
            text(output)
        );
    }
}

/// A `cxrlake run` that found every stage up to date.
fn run_was_idle(output: &str) -> bool {
    output.contains("QA pairs regenerated: 0 of")
}

/// A `cxrlake ingest` that found nothing new (its `total` line has 0 new rows).
fn ingest_was_idle(output: &str) -> bool {
    output.lines().any(|line| {
        let fields: Vec<&str> = line.split_whitespace().collect();
        fields.first() == Some(&"total") && fields.get(3) == Some(&"0")
    })
}

#[test]
fn concurrent_runs_end_like_one_run() {
    let started = std::time::Instant::now();
    let dir = tempfile::tempdir().expect("tempdir");
    let base = crate::ingested_lake(dir.path(), STUDIES.parse().expect("studies"), 3);
    let reference = dir.path().join("reference");
    copy_dir(&base, &reference);
    ok(cxrlake(&reference, &["run"]));
    let want = Snapshot::of(&reference);
    assert_eq!(want.runs, 1);
    assert!(want.rows("qa") > 0 && want.rows("qa_judgements") > 0 && want.rows("region_boxes") > 0);

    let trials = trials();
    let (mut refused, mut idle) = (0, 0);
    for trial in 0..trials {
        for wait in [false, true] {
            let lake = dir.path().join(format!("run-{trial}-{wait}"));
            copy_dir(&base, &lake);
            let args: &[&str] = if wait {
                &["run", "--wait", "120"]
            } else {
                &["run"]
            };
            let outputs = race(&lake, args, args);
            let successes = if wait {
                check_both_ok("run", &outputs);
                2
            } else if check_unwaited("run", &outputs, run_was_idle) {
                refused += 1;
                1
            } else {
                idle += 1;
                2
            };
            assert_released(&lake);
            let got = Snapshot::of(&lake);
            let what = format!("concurrent runs (trial {trial}, --wait {wait})");
            for table in ["qa", "qa_judgements", "region_boxes"] {
                assert_eq!(got.rows(table), want.rows(table), "{what}: {table} rows");
            }
            assert_eq!(
                got.runs, successes,
                "{what}: one runs row per successful run"
            );
            assert_same(&what, &Snapshot { runs: 1, ..got }, &want);
        }
    }
    println!(
        "concurrent-run trials: {trials}, all equal (without --wait: {refused} refused, {idle} \
         found it up to date; with --wait: {trials} both succeeded) in {:.0?}",
        started.elapsed()
    );
}

#[test]
fn concurrent_ingests_end_like_one_ingest() {
    let started = std::time::Instant::now();
    let dir = tempfile::tempdir().expect("tempdir");
    let (base, corpus) = empty_lake_and_corpus(dir.path(), "4");
    let corpus = corpus.to_str().expect("utf8");
    let reference = dir.path().join("reference");
    copy_dir(&base, &reference);
    ok(cxrlake(&reference, &["ingest", corpus]));
    let want = Snapshot::of(&reference);
    assert_eq!(
        want.rows("reports"),
        STUDIES.parse::<u64>().expect("studies")
    );

    let trials = trials();
    let (mut refused, mut idle) = (0, 0);
    for trial in 0..trials {
        for wait in [false, true] {
            let lake = dir.path().join(format!("ingest-{trial}-{wait}"));
            copy_dir(&base, &lake);
            let args: Vec<&str> = if wait {
                vec!["ingest", corpus, "--wait", "120"]
            } else {
                vec!["ingest", corpus]
            };
            let outputs = race(&lake, &args, &args);
            if wait {
                check_both_ok("ingest", &outputs);
            } else if check_unwaited("ingest", &outputs, ingest_was_idle) {
                refused += 1;
            } else {
                idle += 1;
            }
            assert_released(&lake);
            let got = Snapshot::of(&lake);
            let what = format!("concurrent ingests (trial {trial}, --wait {wait})");
            for table in ["reports", "images", "imagenome_boxes"] {
                assert_eq!(got.rows(table), want.rows(table), "{what}: {table} rows");
            }
            assert_same(&what, &got, &want);
        }
    }
    println!(
        "concurrent-ingest trials: {trials}, all equal (without --wait: {refused} refused, \
         {idle} found nothing new; with --wait: {trials} both succeeded) in {:.0?}",
        started.elapsed()
    );
}

/// A run and an ingest started together on an empty lake, both with `--wait`: the lease
/// serializes them in either order, so the end state is that of ingest-then-run or of
/// run-then-ingest (the run then found no reports), whichever the waiting one says; one more
/// run after either ends like ingest-then-run.
#[test]
fn a_run_racing_an_ingest_ends_like_one_serial_order() {
    let started = std::time::Instant::now();
    let dir = tempfile::tempdir().expect("tempdir");
    let (base, corpus) = empty_lake_and_corpus(dir.path(), "5");
    let corpus = corpus.to_str().expect("utf8");
    let ingest_first = dir.path().join("ingest-then-run");
    copy_dir(&base, &ingest_first);
    ok(cxrlake(&ingest_first, &["ingest", corpus]));
    ok(cxrlake(&ingest_first, &["run"]));
    let ingest_first = Snapshot::of(&ingest_first);
    let run_first = dir.path().join("run-then-ingest");
    copy_dir(&base, &run_first);
    ok(cxrlake(&run_first, &["run"]));
    ok(cxrlake(&run_first, &["ingest", corpus]));
    let run_first = Snapshot::of(&run_first);
    assert!(ingest_first.rows("qa") > 0 && run_first.rows("qa") == 0);

    let trials = trials();
    let mut orders = BTreeMap::new();
    for trial in 0..trials {
        let lake = dir.path().join(format!("race-{trial}"));
        copy_dir(&base, &lake);
        let outputs = race(
            &lake,
            &["ingest", corpus, "--wait", "120"],
            &["run", "--wait", "120"],
        );
        check_both_ok("ingest or run", &outputs);
        assert_released(&lake);
        let waited = |output: &Output| {
            String::from_utf8_lossy(&output.stderr).contains("waiting up to 120 s for")
        };
        let got = Snapshot::of(&lake);
        let what = format!("a run racing an ingest (trial {trial})");
        // The one that waited went second; if neither had to, the end state says which.
        let order = match (waited(&outputs[0].0), waited(&outputs[1].0)) {
            (true, false) => "run first",
            (false, true) => "ingest first",
            (false, false) if got == run_first => "run first",
            (false, false) => "ingest first",
            (true, true) => panic!("{what}: both waited for the other"),
        };
        let want = if order == "ingest first" {
            &ingest_first
        } else {
            &run_first
        };
        assert_same(&format!("{what}, {order}"), &got, want);
        *orders.entry(order).or_insert(0) += 1;
        ok(cxrlake(&lake, &["run"]));
        assert_eq!(
            Snapshot::of(&lake).content(),
            ingest_first.content(),
            "{what}, {order}: one more run does not end like ingest-then-run"
        );
    }
    println!(
        "run-vs-ingest race trials: {trials}, all equal to the serial order that happened \
         ({orders:?}) in {:.0?}",
        started.elapsed()
    );
}
