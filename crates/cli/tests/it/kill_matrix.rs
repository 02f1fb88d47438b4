//! `cxrlake run` (and `cxrlake ingest`) killed right after any of its commits resumes, on a plain
//! rerun, to exactly the tables of an uninterrupted run.
//!
//! A small ingested lake (6 synthetic studies) is run once uninterrupted (every core stage and
//! the GIV-CXR flavour, `run --flavour givcxr`): that run makes C Delta commits (the
//! `_delta_log/*.json` files it adds) and leaves the reference tables. For each kill point k, a
//! copy of the pre-run lake is run with the fault-injection knob
//! `CXRLAKE_FAULT_KILL_AFTER_COMMITS=k` (the process aborts right after its k-th commit, no
//! destructors, no flush: see `cxrlake_lake::commit`), then once more without it; every table
//! must then hold the reference rows (an order-independent comparison of rows as sorted JSON
//! lines). The killed run's write lease is left behind; its
//! holder is gone, so the rerun takes it over at once.
//!
//! In CI the kill points are a sample: the first commit of every stage that commits several times
//! (a kill inside a stage), every sixth commit, and the last. `KILL_MATRIX=full` kills at every
//! commit 1..=C (`scripts/kill-matrix`). The test prints `kill points survived: x / y`.
//!
//! Left out of the comparison, because they legitimately differ between two uninterrupted runs
//! (checked below: two uninterrupted runs on two copies must compare equal):
//! - the `runs` table: one row per invocation with its random run id, wall-clock time and
//!   settings (the lake's path among them), so a killed run adds a row of its own;
//! - the columns of [`EXCLUDED`].

use std::collections::{BTreeMap, BTreeSet};
use std::hash::{DefaultHasher, Hash, Hasher};
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Instant, SystemTime};

use cxrlake_lake::Lake;

use crate::{copy_dir, cxrlake, ingested_lake, ok};

/// The fault-injection knob (`cxrlake_lake::commit::FAULT_KILL_AFTER_COMMITS`).
const KNOB: &str = cxrlake_lake::commit::FAULT_KILL_AFTER_COMMITS;

/// The command under test: every core stage and one flavour, in chunks of two patients, so that
/// a stage commits several chunks and a kill can stop it between them (the rerun must redo the
/// stage, not take its first chunk for the whole).
const RUN: [&str; 5] = ["run", "--flavour", "givcxr", "--set", "chunk_patients=2"];

/// Tables left out of the comparison (see the module doc).
const EXCLUDED_TABLES: [&str; 1] = ["runs"];

/// `(table, column)` pairs left out of the comparison: wall-clock times and durations, stamped
/// when a row is written. (Two uninterrupted runs of the test lake leave these tables empty, so
/// only `runs` differed there; a row with one of these would differ between any two runs.)
const EXCLUDED: [(&str, &str); 3] = [
    ("quarantine", "recorded_at"),
    ("llm_calls", "created_at"),
    ("llm_calls", "latency_ms"),
];

/// Runs the built `cxrlake` on `lake` with `args`; with `kill_after`, under the fault-injection
/// knob. Core dumps are switched off (`ulimit -c 0`): an abort would otherwise leave one.
fn cxrlake_run(lake: &Path, args: &[&str], kill_after: Option<usize>) -> Output {
    let mut command = Command::new("sh");
    command
        .args(["-c", "ulimit -c 0; exec \"$0\" \"$@\""])
        .arg(env!("CARGO_BIN_EXE_cxrlake"))
        .arg("--lake")
        .arg(lake)
        .args(args)
        .env_remove("CXRLAKE_LAKE")
        .env_remove("CXRLAKE_CONFIG")
        .env_remove(KNOB);
    if let Some(k) = kill_after {
        command.env(KNOB, k.to_string());
    }
    command.output().expect("run cxrlake")
}

/// The commit files (`<table>/_delta_log/*.json`) of the lake at `lake`.
fn commit_files(lake: &Path) -> BTreeSet<PathBuf> {
    let mut files = BTreeSet::new();
    for table in std::fs::read_dir(lake).expect("read lake") {
        let log = table.expect("dir entry").path().join("_delta_log");
        let Ok(entries) = std::fs::read_dir(&log) else {
            continue;
        };
        for entry in entries {
            let path = entry.expect("dir entry").path();
            if path.extension().is_some_and(|e| e == "json") {
                files.insert(path.strip_prefix(lake).expect("inside").to_path_buf());
            }
        }
    }
    files
}

/// One commit of a run: its table and the stage that made it.
#[derive(Debug, Clone)]
struct Commit {
    table: String,
    stage: String,
}

/// The commits that `after` has and `before` had not, in the order they were made (commit
/// timestamp, then file time).
fn new_commits(before: &Path, after: &Path) -> Vec<Commit> {
    let old = commit_files(before);
    let mut made: Vec<(i64, SystemTime, Commit)> = Vec::new();
    for file in commit_files(after).difference(&old) {
        let path = after.join(file);
        let text = std::fs::read_to_string(&path).expect("commit file");
        let info = text
            .lines()
            .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
            .find_map(|action| action.get("commitInfo").cloned())
            .expect("a commitInfo action");
        let timestamp = info
            .get("timestamp")
            .and_then(serde_json::Value::as_i64)
            .unwrap_or_default();
        let stage = info
            .pointer("/cxrlake/stage")
            .and_then(serde_json::Value::as_str)
            .unwrap_or("?")
            .to_string();
        let table = file
            .components()
            .next()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .unwrap_or_default();
        let modified = std::fs::metadata(&path)
            .and_then(|m| m.modified())
            .expect("file time");
        made.push((timestamp, modified, Commit { table, stage }));
    }
    made.sort_by_key(|(timestamp, modified, _)| (*timestamp, *modified));
    made.into_iter().map(|(_, _, commit)| commit).collect()
}

/// Every compared table's rows, as sorted JSON lines of the compared columns.
type Tables = BTreeMap<String, Vec<String>>;

/// The rows of every table of the lake at `lake` but the excluded ones.
fn tables(lake: &Path) -> Tables {
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    runtime.block_on(async {
        let lake = Lake::open_url(lake.to_str().expect("utf8")).expect("open lake");
        let ctx = lake.session().await.expect("session");
        let mut out = Tables::new();
        for name in lake.table_names().await.expect("tables") {
            if EXCLUDED_TABLES.contains(&name.as_str()) {
                continue;
            }
            let frame = ctx.table(name.as_str()).await.expect("table");
            let columns: Vec<String> = frame
                .schema()
                .fields()
                .iter()
                .map(|f| f.name().clone())
                .filter(|column| !EXCLUDED.contains(&(name.as_str(), column.as_str())))
                .map(|column| format!("\"{column}\""))
                .collect();
            let sql = format!("SELECT {} FROM \"{name}\"", columns.join(", "));
            let batches = ctx
                .sql(&sql)
                .await
                .expect("plan")
                .collect()
                .await
                .expect("read");
            let mut lines = Vec::new();
            for batch in &batches {
                let mut writer = arrow::json::LineDelimitedWriter::new(Vec::new());
                writer.write(batch).expect("json");
                writer.finish().expect("json");
                let text = String::from_utf8(writer.into_inner()).expect("utf8");
                lines.extend(text.lines().map(str::to_string));
            }
            lines.sort();
            out.insert(name, lines);
        }
        out
    })
}

fn digest(lines: &[String]) -> u64 {
    let mut hasher = DefaultHasher::new();
    lines.hash(&mut hasher);
    hasher.finish()
}

/// How `actual` differs from `expected`: per differing table, the row counts, the digests and
/// the first rows found on one side only.
fn differences(expected: &Tables, actual: &Tables) -> Vec<String> {
    let names: BTreeSet<&String> = expected.keys().chain(actual.keys()).collect();
    let mut out = Vec::new();
    for name in names {
        let (Some(want), Some(got)) = (expected.get(name), actual.get(name)) else {
            out.push(format!("{name}: present on one side only"));
            continue;
        };
        if want == got {
            continue;
        }
        let want_set: BTreeSet<&String> = want.iter().collect();
        let got_set: BTreeSet<&String> = got.iter().collect();
        let missing: Vec<&&String> = want_set.difference(&got_set).take(2).collect();
        let extra: Vec<&&String> = got_set.difference(&want_set).take(2).collect();
        out.push(format!(
            "{name}: {} rows (digest {:016x}) instead of {} ({:016x}); missing e.g. {missing:?}; \
             extra e.g. {extra:?}",
            got.len(),
            digest(got),
            want.len(),
            digest(want),
        ));
    }
    out
}

/// The kill points: all of 1..=C with `KILL_MATRIX=full`, else the CI sample of the module doc.
fn kill_points(commits: &[Commit]) -> Vec<usize> {
    let count = commits.len();
    if std::env::var("KILL_MATRIX").is_ok_and(|v| v == "full") {
        return (1..=count).collect();
    }
    let mut points = BTreeSet::new();
    for (i, commit) in commits.iter().enumerate() {
        let first_of_stage = i == 0 || commits[i - 1].stage != commit.stage;
        let several = commits.get(i + 1).is_some_and(|c| c.stage == commit.stage);
        if first_of_stage && several {
            points.insert(i + 1);
        }
    }
    points.extend((1..=count).step_by(6));
    points.insert(count);
    points.into_iter().collect()
}

#[test]
fn a_run_killed_at_any_commit_resumes_to_the_uninterrupted_tables() {
    let dir = tempfile::tempdir().expect("tempdir");
    let pre = ingested_lake(dir.path(), 6, 3);
    killed_at_commits_resume_to_the_uninterrupted_tables(dir.path(), &pre, &RUN, 10);
}

/// `cxrlake ingest` too: it commits each chunk in the background while it parses the next, so
/// a kill can land while the next chunk is half parsed; one study per chunk gives a commit per
/// report, CSV and image file.
#[test]
fn an_ingest_killed_at_any_commit_resumes_to_the_uninterrupted_tables() {
    let dir = tempfile::tempdir().expect("tempdir");
    let pre = dir.path().join("lake");
    let corpus = dir.path().join("corpus");
    let corpus = corpus.to_str().expect("utf8");
    ok(cxrlake(&pre, &["init"]));
    ok(cxrlake(
        &pre,
        &["synth", "--studies", "6", "--seed", "3", "--out", corpus],
    ));
    let ingest = ["ingest", corpus, "--chunk-studies", "1"];
    killed_at_commits_resume_to_the_uninterrupted_tables(dir.path(), &pre, &ingest, 10);
}

/// Runs `args` on two copies of the lake `pre` uninterrupted (they must end equal; at least
/// `min_commits` commits), then on a copy per kill point, killed after that commit and rerun:
/// each must end with the uninterrupted tables.
#[allow(clippy::print_stdout)] // the figure `scripts/kill-matrix` reports
fn killed_at_commits_resume_to_the_uninterrupted_tables(
    dir: &Path,
    pre: &Path,
    args: &[&str],
    min_commits: usize,
) {
    let started = Instant::now();
    // The reference: two uninterrupted runs on two copies compare equal (so the exclusions are
    // complete), and the first one's commits are the kill points.
    let mut reference = None;
    let mut commits = Vec::new();
    for copy in ["uninterrupted-1", "uninterrupted-2"] {
        let lake = dir.join(copy);
        copy_dir(pre, &lake);
        ok(cxrlake_run(&lake, args, None));
        let rows = tables(&lake);
        match &reference {
            None => {
                commits = new_commits(pre, &lake);
                reference = Some(rows);
            }
            Some(first) => {
                let differ = differences(first, &rows);
                assert!(
                    differ.is_empty(),
                    "two uninterrupted runs differ (a column to exclude?):\n{}",
                    differ.join("\n")
                );
            }
        }
    }
    let reference = reference.expect("reference tables");
    assert!(commits.len() >= min_commits, "too few commits: {commits:?}");

    let points = kill_points(&commits);
    let mut survived = 0;
    let mut failures = Vec::new();
    for &k in &points {
        let Commit { table, stage } = &commits[k - 1];
        let at = format!(
            "kill after commit {k} of {} ({stage} → {table})",
            commits.len()
        );
        let lake = dir.join(format!("killed-{k}"));
        copy_dir(pre, &lake);
        let killed = cxrlake_run(&lake, args, Some(k));
        if killed.status.success() || killed.status.signal().is_none() {
            failures.push(format!(
                "{at}: the run was not aborted ({}): {}",
                killed.status,
                String::from_utf8_lossy(&killed.stderr)
            ));
            continue;
        }
        // Exactly k commits landed, and the write lease was left behind (its holder is gone,
        // so the rerun below takes it over at once).
        let landed = commit_files(&lake).len() - commit_files(pre).len();
        if landed != k || !lake.join("_cxrlake/lease.json").exists() {
            failures.push(format!(
                "{at}: {landed} commits landed, lease left: {}",
                lake.join("_cxrlake/lease.json").exists()
            ));
            continue;
        }
        let resumed = cxrlake_run(&lake, args, None);
        if !resumed.status.success() {
            failures.push(format!(
                "{at}: the rerun failed ({}): {}",
                resumed.status,
                String::from_utf8_lossy(&resumed.stderr)
            ));
            continue;
        }
        let differ = differences(&reference, &tables(&lake));
        if differ.is_empty() {
            survived += 1;
        } else {
            failures.push(format!("{at}: tables differ:\n  {}", differ.join("\n  ")));
        }
        std::fs::remove_dir_all(&lake).expect("remove copy");
    }
    println!(
        "kill points survived: {survived} / {} (of {} commits; {:.0} s)",
        points.len(),
        commits.len(),
        started.elapsed().as_secs_f64()
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
