//! Runs the built `cxrlake` binary as a user would.

use std::path::Path;
use std::process::{Command, Output};

use crate::{count_by, cxrlake, ingested_lake, ok};

/// A copy of the shipped reference definitions at `to`.
pub(crate) fn copy_refdefs(to: &Path) -> std::path::PathBuf {
    let shipped = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../refdefs");
    std::fs::create_dir_all(to.join("sources")).expect("mkdir");
    for entry in [
        "regions.toml",
        "findings.toml",
        "modifiers.toml",
        "changes.toml",
        "sources/cxas_classes.toml",
        "sources/imagenome_boxes.toml",
    ] {
        std::fs::copy(shipped.join(entry), to.join(entry)).expect("copy");
    }
    to.to_path_buf()
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

#[test]
fn init_then_sql_tables_and_status() {
    let dir = tempfile::tempdir().expect("tempdir");
    let lake = dir.path().join("lake");

    let before = cxrlake(&lake, &["sql", "SELECT 1"]);
    assert_eq!(before.status.code(), Some(1));
    assert!(
        stderr(&before).contains("run `cxrlake init`"),
        "{}",
        stderr(&before)
    );

    let init = cxrlake(&lake, &["init"]);
    assert!(init.status.success(), "{}", stderr(&init));
    assert!(
        stdout(&init).contains("created 53 tables"),
        "{}",
        stdout(&init)
    );

    let query = cxrlake(
        &lake,
        &[
            "sql",
            "SELECT count(*) AS n FROM qa JOIN images USING (study_id)",
        ],
    );
    assert!(query.status.success(), "{}", stderr(&query));
    assert!(stdout(&query).contains("| 0 |"), "{}", stdout(&query));

    let tables = cxrlake(&lake, &["tables"]);
    assert!(
        stdout(&tables)
            .lines()
            .any(|l| l.starts_with("scene_graphs") && l.contains("init"))
    );

    let status = cxrlake(&lake, &["status"]);
    assert!(
        stdout(&status).contains("format version:  2"),
        "{}",
        stdout(&status)
    );
}

#[test]
fn output_formats_and_files() {
    let dir = tempfile::tempdir().expect("tempdir");
    let lake = dir.path().join("lake");
    assert!(cxrlake(&lake, &["init"]).status.success());
    let query = "SELECT 1 AS a, 'x,y' AS b";

    let csv = cxrlake(&lake, &["sql", query, "--format", "csv"]);
    assert_eq!(stdout(&csv), "a,b\n1,\"x,y\"\n");
    let json = cxrlake(&lake, &["sql", query, "--format", "json"]);
    assert_eq!(stdout(&json).trim(), r#"[{"a":1,"b":"x,y"}]"#);

    let file = dir.path().join("out.parquet");
    let parquet = cxrlake(
        &lake,
        &[
            "sql",
            query,
            "--format",
            "parquet",
            "--out",
            file.to_str().expect("utf8"),
        ],
    );
    assert!(parquet.status.success(), "{}", stderr(&parquet));
    assert_eq!(&std::fs::read(&file).expect("parquet file")[..4], b"PAR1");

    let no_file = cxrlake(&lake, &["sql", query, "--format", "parquet"]);
    assert_eq!(no_file.status.code(), Some(2));
    assert!(
        stderr(&no_file).contains("add --out"),
        "{}",
        stderr(&no_file)
    );
}

#[test]
fn user_errors_are_one_line_with_nonzero_exit() {
    let dir = tempfile::tempdir().expect("tempdir");
    let lake = dir.path().join("lake");
    assert!(cxrlake(&lake, &["init"]).status.success());

    let cases: [(&[&str], &str); 5] = [
        (
            &["sql", "SELECT * FROM qa WHERE rating >= 'E'"],
            "'E' is not a rating; valid ratings are 'A++'",
        ),
        (&["sql", "SELECT * FROM no_such_table"], "no_such_table"),
        (&["--set", "colour=red", "tables"], "valid keys"),
        (&["--set", "seed", "tables"], "--set expects KEY=VALUE"),
        (
            &["--set", "lake=ftp://host/x", "tables"],
            "scheme 'ftp' is not supported",
        ),
    ];
    for (args, expected) in cases {
        let output = cxrlake(&lake, args);
        let err = stderr(&output);
        assert_ne!(output.status.code(), Some(0), "{args:?}");
        assert!(err.contains(expected), "{args:?}: {err}");
        assert_eq!(
            err.trim_end()
                .lines()
                .filter(|l| l.starts_with("error:"))
                .count(),
            1,
            "{err}"
        );
        assert!(!err.contains("panicked"), "{err}");
    }
    let bad_flag = cxrlake(&lake, &["--no-such-flag"]);
    assert_eq!(bad_flag.status.code(), Some(2));

    // `cxrlake sql` writes nothing: no INSERT into a lake table, no COPY to a file; SET and
    // session-local views still work.
    let outside = dir.path().join("copied.csv");
    for query in [
        "INSERT INTO quarantine SELECT * FROM quarantine".to_string(),
        format!("COPY (SELECT 1 AS x) TO '{}'", outside.display()),
    ] {
        let refused = cxrlake(&lake, &["sql", &query]);
        assert_eq!(refused.status.code(), Some(2), "{query}");
        assert!(
            stderr(&refused).contains("cxrlake sql is read-only"),
            "{}",
            stderr(&refused)
        );
    }
    assert!(!outside.exists());
    // An object-store URL is written there (crates/cli/tests/it/s3.rs), never to a local
    // folder named after its scheme; an unknown scheme is refused before any work.
    let ftp = cxrlake(&lake, &["export", "qa", "--out", "ftp://host/qa"]);
    assert_eq!(ftp.status.code(), Some(1));
    assert!(
        stderr(&ftp).contains("scheme 'ftp' is not supported"),
        "{}",
        stderr(&ftp)
    );
    assert!(!Path::new("ftp:").exists());
    let versions = cxrlake(
        &lake,
        &[
            "sql",
            "SELECT count(*) AS n FROM quarantine",
            "--format",
            "csv",
        ],
    );
    assert_eq!(stdout(&versions).lines().nth(1), Some("0"));
    let session = cxrlake(
        &lake,
        &[
            "sql",
            "SET cxrlake.seed = 3; CREATE VIEW v AS SELECT 2 AS x; SELECT x FROM v",
            "--format",
            "csv",
        ],
    );
    assert_eq!(
        stdout(&session).lines().nth(1),
        Some("2"),
        "{}",
        stderr(&session)
    );
}

#[test]
fn config_file_and_environment_choose_the_lake() {
    let dir = tempfile::tempdir().expect("tempdir");
    let lake = dir.path().join("from-config");
    let config = dir.path().join("cxrlake.toml");
    std::fs::write(
        &config,
        format!("[cxrlake]\nlake = \"{}\"\n", lake.display()),
    )
    .expect("config");
    let run = |envs: &[(&str, &str)], args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_cxrlake"))
            .args(args)
            .current_dir(dir.path())
            .env_remove("CXRLAKE_LAKE")
            .envs(envs.iter().copied())
            .output()
            .expect("run")
    };
    assert!(
        run(&[], &["--config", config.to_str().expect("utf8"), "init"])
            .status
            .success()
    );
    assert!(lake.join("_cxrlake/lake.json").is_file());

    let env_lake = dir.path().join("from-env");
    let out = run(
        &[("CXRLAKE_LAKE", env_lake.to_str().expect("utf8"))],
        &["init"],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(env_lake.join("_cxrlake/lake.json").is_file());
}

#[test]
fn refdefs_check_diff_and_load() {
    let dir = tempfile::tempdir().expect("tempdir");
    let lake = dir.path().join("lake");
    let shipped = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../refdefs");

    let check = cxrlake(
        &lake,
        &["refdefs", "check", shipped.to_str().expect("utf8")],
    );
    assert!(
        check.status.success(),
        "{}{}",
        stdout(&check),
        stderr(&check)
    );

    let edited = copy_refdefs(&dir.path().join("edited"));
    let findings = std::fs::read_to_string(edited.join("findings.toml")).expect("read");
    let broken = findings.replacen("synonyms = [", "synonyms = [\"airspace disease\", ", 1);
    std::fs::write(edited.join("findings.toml"), broken).expect("write");
    let bad = cxrlake(&lake, &["refdefs", "check", edited.to_str().expect("utf8")]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(stdout(&bad).contains("findings.toml:"), "{}", stdout(&bad));

    let diff = cxrlake(
        &lake,
        &[
            "refdefs",
            "diff",
            shipped.to_str().expect("utf8"),
            edited.to_str().expect("utf8"),
        ],
    );
    assert!(
        !diff.status.success(),
        "an invalid folder cannot be diffed: {}",
        stdout(&diff)
    );

    assert!(cxrlake(&lake, &["init"]).status.success());
    let load = cxrlake(&lake, &["refdefs", "load"]);
    assert!(
        stdout(&load).starts_with("loaded reference definitions"),
        "{}",
        stderr(&load)
    );
    let again = cxrlake(&lake, &["refdefs", "load"]);
    assert!(
        stdout(&again).contains("already loaded"),
        "{}",
        stdout(&again)
    );
    let rows = cxrlake(
        &lake,
        &[
            "sql",
            "SELECT count(*) > 300, count(DISTINCT entry_hash) = count(*) FROM ref_regions",
            "--format",
            "csv",
        ],
    );
    assert!(stdout(&rows).ends_with("true,true\n"), "{}", stdout(&rows));
}

#[test]
fn synth_is_deterministic_and_checks_its_flags() {
    let dir = tempfile::tempdir().expect("tempdir");
    let lake = dir.path().join("lake");
    let run = |out: &str, seed: &str| {
        let out = dir.path().join(out);
        let output = cxrlake(
            &lake,
            &[
                "synth",
                "--studies",
                "40",
                "--seed",
                seed,
                "--out",
                out.to_str().expect("utf8"),
            ],
        );
        assert!(output.status.success(), "{}", stderr(&output));
        std::fs::read(out.join("mimic-cxr-2.0.0-metadata.csv.gz")).expect("metadata csv")
    };
    let first = run("a", "3");
    assert_eq!(first, run("b", "3"), "same seed, same bytes");
    assert_ne!(first, run("c", "4"), "another seed, another corpus");
    let again = cxrlake(
        &lake,
        &[
            "synth",
            "--studies",
            "40",
            "--out",
            dir.path().join("a").to_str().expect("utf8"),
        ],
    );
    assert!(
        stderr(&again).contains("is not empty"),
        "{}",
        stderr(&again)
    );
    let bad = cxrlake(&lake, &["synth", "--out", "x", "--cxas-fraction", "2"]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(stderr(&bad).contains("--cxas-fraction"), "{}", stderr(&bad));
    let bad = cxrlake(&lake, &["synth", "--out", "x", "--shard", "4/3"]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(stderr(&bad).contains("K/N"), "{}", stderr(&bad));
}

#[test]
fn run_extract_flags_are_checked_before_any_work() {
    let dir = tempfile::tempdir().expect("tempdir");
    let lake = dir.path().join("lake");
    assert!(cxrlake(&lake, &["init"]).status.success());

    let model_only = cxrlake(&lake, &["run", "extract", "--model", "m"]);
    assert_eq!(model_only.status.code(), Some(2), "{}", stderr(&model_only));
    assert!(
        stderr(&model_only).contains("need --llm-endpoint"),
        "{}",
        stderr(&model_only)
    );

    let no_model = cxrlake(
        &lake,
        &["run", "extract", "--llm-endpoint", "http://127.0.0.1:9/v1"],
    );
    assert_eq!(no_model.status.code(), Some(2), "{}", stderr(&no_model));
    assert!(
        stderr(&no_model).contains("needs --model"),
        "{}",
        stderr(&no_model)
    );

    let bad_url = cxrlake(
        &lake,
        &[
            "run",
            "extract",
            "--llm-endpoint",
            "localhost:8000",
            "--model",
            "m",
        ],
    );
    assert_eq!(bad_url.status.code(), Some(2), "{}", stderr(&bad_url));
    assert!(
        stderr(&bad_url).contains("expected e.g. http://"),
        "{}",
        stderr(&bad_url)
    );

    let remote = cxrlake(
        &lake,
        &[
            "run",
            "extract",
            "--llm-endpoint",
            "http://203.0.113.7:8000/v1",
            "--model",
            "m",
        ],
    );
    assert_eq!(remote.status.code(), Some(1), "{}", stderr(&remote));
    assert!(
        stderr(&remote).contains("--allow-remote-llm"),
        "{}",
        stderr(&remote)
    );

    // The rules backend over an empty lake writes empty tables.
    let rules = cxrlake(&lake, &["run", "extract"]);
    assert!(rules.status.success(), "{}", stderr(&rules));
    assert!(
        stdout(&rules).contains("extract (rules-2): 0 reports"),
        "{}",
        stdout(&rules)
    );
}

#[test]
fn templates_check_and_stats_listing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let lake = dir.path().join("lake");
    let ok = cxrlake(&lake, &["templates", "check"]);
    assert!(ok.status.success(), "{}", stderr(&ok));
    assert!(stdout(&ok).contains("27 templates ok"), "{}", stdout(&ok));
    assert!(stdout(&ok).contains("C08_has_region_device"));

    // An edited copy with a subset its strategy does not return names the file.
    let copy = dir.path().join("templates");
    std::fs::create_dir(&copy).expect("mkdir");
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../templates");
    for entry in std::fs::read_dir(&repo).expect("read") {
        let path = entry.expect("entry").path();
        if path.is_dir() {
            continue; // mimic_cxr_vqa/: another flavour's bank
        }
        let text = std::fs::read_to_string(&path).expect("read");
        let name = path.file_name().expect("name");
        let text = if name == "B02_describe_abnormal.toml" {
            text.replace("subset = \"device_pos\"", "subset = \"correlated\"")
        } else {
            text
        };
        std::fs::write(copy.join(name), text).expect("write");
    }
    let bad = cxrlake(
        &lake,
        &[
            "templates",
            "check",
            "--templates",
            copy.to_str().expect("utf8"),
        ],
    );
    assert!(!bad.status.success());
    assert!(
        stderr(&bad).contains("B02_describe_abnormal.toml"),
        "{}",
        stderr(&bad)
    );
    assert!(stderr(&bad).contains("correlated"), "{}", stderr(&bad));

    let list = cxrlake(&lake, &["stats"]);
    assert!(list.status.success(), "{}", stderr(&list));
    for name in [
        "qa_templates",
        "qa_balance",
        "qa_texts",
        "qa_answer_lengths",
    ] {
        assert!(stdout(&list).contains(name), "{}", stdout(&list));
    }
    let unknown = cxrlake(&lake, &["stats", "nope"]);
    assert!(!unknown.status.success());
    assert!(
        stderr(&unknown).contains("cxrlake stats"),
        "{}",
        stderr(&unknown)
    );
}

#[test]
fn the_lake_keeps_its_settings_and_plan_explains_a_change() {
    let dir = tempfile::tempdir().expect("tempdir");
    let lake = ingested_lake(dir.path(), 12, 3);

    // Edited definitions: one synonym more.
    let edited = copy_refdefs(&dir.path().join("refdefs"));
    let findings = std::fs::read_to_string(edited.join("findings.toml")).expect("read");
    let synonym = r#"synonyms = ["effusion", "effusions", "pleural effusions", "pleural fluid", "hydrothorax"]"#;
    assert!(findings.contains(synonym));
    std::fs::write(
        edited.join("findings.toml"),
        findings.replacen(
            synonym,
            r#"synonyms = ["effusion", "effusions", "pleural effusions", "pleural fluid", "hydrothorax", "fluid in the pleural space"]"#,
            1,
        ),
    )
    .expect("write");

    let run = ok(cxrlake(
        &lake,
        &["run", "--refdefs", edited.to_str().expect("utf8")],
    ));
    assert!(run.contains("QA pairs regenerated"), "{run}");

    // A plain run reuses the lake's settings: nothing to do, nothing done.
    let plan = ok(cxrlake(&lake, &["plan"]));
    assert_eq!(
        plan.lines().filter(|l| l.ends_with("up to date")).count(),
        8,
        "{plan}"
    );
    let again = ok(cxrlake(&lake, &["run"]));
    assert!(again.contains("QA pairs regenerated: 0 of"), "{again}");
    let status = ok(cxrlake(&lake, &["status"]));
    assert!(
        status.contains(&format!(
            "cxrlake.refdefs          {}",
            std::fs::canonicalize(&edited).expect("path").display()
        )),
        "{status}"
    );

    // A changed setting is explained, with what it recomputes.
    let plan = ok(cxrlake(&lake, &["plan", "--min-area", "32"]));
    assert!(plan.contains("cxrlake.min_area: 16 → 32 (flag)"), "{plan}");
    assert!(plan.contains("min_area 16 → 32"), "{plan}");
    assert!(
        plan.lines()
            .any(|l| l.starts_with("localize") && l.contains("all 12 studies")),
        "{plan}"
    );
    // --reset plans against the built-in definitions.
    let reset = ok(cxrlake(&lake, &["plan", "--reset"]));
    assert!(reset.contains("cxrlake.refdefs"), "{reset}");

    // An unknown stage lists the stages.
    let unknown = cxrlake(&lake, &["run", "gemex"]);
    assert_eq!(unknown.status.code(), Some(2), "{}", stderr(&unknown));
    assert!(
        stderr(&unknown).contains(
            "unknown stage 'gemex'; the stages are: localize, extract, map, graph, balance, qa, judge, grade"
        ),
        "{}",
        stderr(&unknown)
    );
}

#[test]
fn sql_set_changes_what_the_settings_functions_compute() {
    let dir = tempfile::tempdir().expect("tempdir");
    let lake = dir.path().join("lake");
    assert!(cxrlake(&lake, &["init"]).status.success());
    // A misspelling, cosine 0.706 with the lexical embedder: above the default threshold 0.5.
    let matched =
        "SELECT coalesce(match_concept('pleural effusoin', 'finding')['tag'], '-') AS tag";
    let default = cxrlake(&lake, &["sql", matched, "--format", "csv"]);
    assert!(default.status.success(), "{}", stderr(&default));
    assert_eq!(stdout(&default), "tag\npleural effusion\n");
    // SET in the same call, and --set on the command line, reach match_concept.
    let strict = format!("SET cxrlake.match_threshold = 0.9; {matched}");
    let set = cxrlake(&lake, &["sql", &strict, "--format", "csv"]);
    assert!(set.status.success(), "{}", stderr(&set));
    assert_eq!(stdout(&set), "tag\n-\n");
    let flag = cxrlake(
        &lake,
        &[
            "--set",
            "match_threshold=0.9",
            "sql",
            matched,
            "--format",
            "csv",
        ],
    );
    assert_eq!(stdout(&flag), "tag\n-\n");
    let empty = cxrlake(&lake, &["sql", " ; "]);
    assert_ne!(empty.status.code(), Some(0));
}

#[test]
fn evaluate_prints_stores_and_checks_its_inputs() {
    let dir = tempfile::tempdir().expect("tempdir");
    let lake = ingested_lake(dir.path(), 16, 9);
    ok(cxrlake(&lake, &["run"]));

    // Tags vs the ingested CheXpert labels: a printed table with intervals, stored in the lake.
    let labels = ok(cxrlake(&lake, &["evaluate", "labels", "--n-boot", "50"]));
    assert!(labels.contains("→ table eval_labels"), "{labels}");
    assert!(
        labels.contains("95 % CI") && labels.contains("CXP-13"),
        "{labels}"
    );
    let json = ok(cxrlake(
        &lake,
        &["evaluate", "labels", "--n-boot", "0", "--json"],
    ));
    let rows: serde_json::Value = serde_json::from_str(&json).expect("JSON array");
    assert!(
        rows.as_array()
            .is_some_and(|r| r.iter().any(|row| row["metric"] == "mcc")),
        "{json}"
    );
    let stored = ok(cxrlake(
        &lake,
        &[
            "sql",
            "SELECT count(DISTINCT eval_id) AS n FROM eval_labels",
            "--format",
            "csv",
        ],
    ));
    assert_eq!(stored.lines().nth(1), Some("2"), "{stored}");

    // The lake's own answers as RadStrucVQA predictions score 1.0 on every sub-metric.
    let predictions = dir.path().join("p.parquet");
    ok(cxrlake(
        &lake,
        &[
            "sql",
            "SELECT study_id, question_id, answers FROM qa",
            "--format",
            "parquet",
            "--out",
            predictions.to_str().expect("utf8"),
        ],
    ));
    let radstruct = ok(cxrlake(
        &lake,
        &[
            "evaluate",
            "radstruct",
            "--predictions",
            predictions.to_str().expect("utf8"),
            "--n-boot",
            "20",
            "--format",
            "csv",
        ],
    ));
    let mut scored = 0;
    for line in radstruct.lines().skip(1) {
        let fields: Vec<&str> = line.split(',').collect();
        if let Some(estimate) = fields.get(7).filter(|v| !v.is_empty()) {
            assert_eq!(*estimate, "1.0", "{line}");
            scored += 1;
        }
    }
    assert!(scored >= 24, "{radstruct}");

    // Wrong values and files: one line naming what to fix.
    let bad = cxrlake(&lake, &["evaluate", "labels", "--uncertain", "maybe"]);
    assert!(!bad.status.success());
    assert!(
        stderr(&bad).contains("--uncertain takes ignore, positive or negative"),
        "{}",
        stderr(&bad)
    );
    let ratings = dir.path().join("ratings.csv");
    std::fs::write(&ratings, "item,judge,value\n1,a,A\n").expect("write");
    let bad = cxrlake(
        &lake,
        &[
            "evaluate",
            "agreement",
            "--ratings",
            ratings.to_str().expect("utf8"),
        ],
    );
    assert!(!bad.status.success());
    assert!(
        stderr(&bad).contains("missing column(s) rater"),
        "{}",
        stderr(&bad)
    );
}

#[test]
fn mimic_cxr_vqa_runs_exports_takes_ratings_and_measures_agreement() {
    let dir = tempfile::tempdir().expect("tempdir");
    let lake = ingested_lake(dir.path(), 12, 4);
    let run = ok(cxrlake(
        &lake,
        &["run", "--flavour", "mimic_cxr_vqa", "--vqa-qc-reports", "4"],
    ));
    assert!(
        run.contains("mimic_cxr_vqa_answer (offline-mimic-cxr-vqa-answer-1)"),
        "{run}"
    );

    let table1 = ok(cxrlake(
        &lake,
        &["stats", "mimic_cxr_vqa_table1", "--format", "csv"],
    ));
    assert!(
        table1.starts_with("split,images,qa_pairs,open,closed"),
        "{table1}"
    );
    let table3 = ok(cxrlake(&lake, &["stats", "mimic_cxr_vqa_table3"]));
    assert!(table3.contains("correctness"), "{table3}");

    let out = dir.path().join("out");
    let export = ok(cxrlake(
        &lake,
        &[
            "export",
            "mimic-cxr-vqa",
            "--out",
            out.to_str().expect("utf8"),
            "--where",
            "category <> 'heart'",
        ],
    ));
    assert!(
        export.contains("mimic_cxr_vqa:") && export.contains("QA pairs"),
        "{export}"
    );
    assert!(
        out.join("mimic_cxr_vqa/train.json").is_file()
            && out.join("mimic_cxr_vqa/train.parquet").is_file()
    );

    // Two human raters on the judged pairs who agree with each other (not always with the
    // judge): kappa 1 between them, and every pair of raters over the 20 shared items.
    let judged = ok(cxrlake(
        &lake,
        &[
            "sql",
            "SELECT question_id FROM mimic_cxr_vqa_judgements ORDER BY 1 LIMIT 20",
            "--format",
            "csv",
        ],
    ));
    let mut ratings = String::from("item,rater,rubric,value\n");
    for (n, item) in judged.lines().skip(1).enumerate() {
        let value = if n % 2 == 0 { "Correct" } else { "incorrect" };
        ratings.push_str(&format!(
            "{item},human-a,correctness,{value}\n{item},human-b,Correctness,{value}\n"
        ));
    }
    let file = dir.path().join("ratings.csv");
    std::fs::write(&file, ratings).expect("write");
    let added = ok(cxrlake(
        &lake,
        &["ratings", "add", file.to_str().expect("utf8")],
    ));
    assert!(
        added.contains("40 ratings added (0 replaced), 40 in all"),
        "{added}"
    );
    let agreement = ok(cxrlake(
        &lake,
        &[
            "evaluate",
            "agreement",
            "--rubric",
            "correctness",
            "--n-boot",
            "0",
            "--format",
            "csv",
        ],
    ));
    let row = |pair: &str| -> Vec<String> {
        agreement
            .lines()
            .find(|l| l.contains(&format!(",{pair},")))
            .map(|l| l.split(',').map(str::to_string).collect())
            .unwrap_or_else(|| panic!("{pair} in {agreement}"))
    };
    assert_eq!(row("human-a vs human-b")[7], "1.0", "{agreement}");
    assert_eq!(
        row("human-a vs offline-mimic-cxr-vqa-judge-1")[10],
        "20",
        "{agreement}"
    );

    let bad = dir.path().join("bad.csv");
    std::fs::write(&bad, "item,rater,rubric,value\ns1_x,a,correctness,maybe\n").expect("write");
    let refused = cxrlake(&lake, &["ratings", "add", bad.to_str().expect("utf8")]);
    assert_eq!(refused.status.code(), Some(2));
    assert!(
        stderr(&refused).contains("row 1: item 's1_x' is not a question_id"),
        "{}",
        stderr(&refused)
    );
}

#[test]
fn one_writer_at_a_time() {
    let dir = tempfile::tempdir().expect("tempdir");
    let lake = dir.path().join("lake");
    let corpus = dir.path().join("corpus");
    let corpus_arg = corpus.to_str().expect("utf8");
    assert!(cxrlake(&lake, &["init"]).status.success());
    assert!(
        cxrlake(
            &lake,
            &[
                "synth",
                "--studies",
                "30",
                "--seed",
                "2",
                "--out",
                corpus_arg
            ]
        )
        .status
        .success()
    );

    // Two ingests at once: one holds the lake, the other is refused (or, if the first was done
    // before the second started, finds nothing new); never doubled rows.
    let spawn = || {
        Command::new(env!("CARGO_BIN_EXE_cxrlake"))
            .arg("--lake")
            .arg(&lake)
            .args(["ingest", corpus_arg])
            .env_remove("CXRLAKE_LAKE")
            .env_remove("CXRLAKE_CONFIG")
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("spawn")
    };
    let (a, b) = (spawn(), spawn());
    let outputs = [
        a.wait_with_output().expect("a"),
        b.wait_with_output().expect("b"),
    ];
    assert!(outputs.iter().any(|o| o.status.success()));
    for output in &outputs {
        if !output.status.success() {
            assert_eq!(output.status.code(), Some(1));
            assert!(
                stderr(output).contains("holds the lake"),
                "{}",
                stderr(output)
            );
        }
    }
    let reports = cxrlake(
        &lake,
        &[
            "sql",
            "SELECT count(*) AS n FROM reports",
            "--format",
            "csv",
        ],
    );
    assert_eq!(
        stdout(&reports).lines().nth(1),
        Some("30"),
        "{}",
        stdout(&reports)
    );
    assert!(!lake.join("_cxrlake/lease.json").exists(), "released");

    // A live holder's lease refuses writers, not readers.
    let now = chrono_like_now();
    std::fs::write(
        lake.join("_cxrlake/lease.json"),
        format!(
            "{{\"token\":\"t\",\"command\":\"run\",\"pid\":4242,\"host\":\"other\",\
             \"since\":\"{now}\",\"heartbeat\":\"{now}\"}}"
        ),
    )
    .expect("lease");
    let refused = cxrlake(&lake, &["run"]);
    assert_eq!(refused.status.code(), Some(1));
    assert!(
        stderr(&refused).contains("another cxrlake command (`run`, pid 4242 on other)"),
        "{}",
        stderr(&refused)
    );
    assert!(cxrlake(&lake, &["sql", "SELECT 1"]).status.success());
    // --wait: still refused when the holder keeps it, taken when it lets go meanwhile.
    let started = std::time::Instant::now();
    let waited = cxrlake(&lake, &["run", "extract", "--wait", "1"]);
    assert_eq!(waited.status.code(), Some(1));
    assert!(started.elapsed() >= std::time::Duration::from_secs(1));
    assert!(
        stderr(&waited).contains("waiting up to 1 s for `run` (pid 4242 on other)")
            && stderr(&waited).contains("another cxrlake command"),
        "{}",
        stderr(&waited)
    );
    let lease = lake.join("_cxrlake/lease.json");
    let releaser = std::thread::spawn(move || {
        std::thread::sleep(std::time::Duration::from_secs(2));
        std::fs::remove_file(lease).expect("remove");
    });
    let taken = cxrlake(&lake, &["run", "extract", "--wait", "60"]);
    releaser.join().expect("releaser");
    assert!(taken.status.success(), "{}", stderr(&taken));
    assert!(cxrlake(&lake, &["run", "extract"]).status.success());
}

/// Now as RFC 3339, from the `date` command's clock (the test crate has no chrono).
fn chrono_like_now() -> String {
    let output = Command::new("date")
        .args(["-u", "+%Y-%m-%dT%H:%M:%S+00:00"])
        .output()
        .expect("date");
    String::from_utf8_lossy(&output.stdout).trim().to_string()
}

#[test]
fn a_memory_lake_is_refused_outside_demo() {
    let refused = Command::new(env!("CARGO_BIN_EXE_cxrlake"))
        .args(["--lake", "memory:///lake", "init"])
        .env_remove("CXRLAKE_LAKE")
        .env_remove("CXRLAKE_CONFIG")
        .output()
        .expect("run cxrlake");
    assert_eq!(refused.status.code(), Some(2));
    assert!(
        stderr(&refused).contains("lives only as long as one cxrlake process"),
        "{}",
        stderr(&refused)
    );
}

#[test]
fn rexvqa_runs_checks_its_settings_reports_and_exports_kept_mcqs() {
    let dir = tempfile::tempdir().expect("tempdir");
    let lake = ingested_lake(dir.path(), 12, 6);
    let bad = cxrlake(
        &lake,
        &[
            "run",
            "--flavour",
            "rexvqa",
            "--rexvqa-duplicate-threshold",
            "1.5",
        ],
    );
    assert_eq!(bad.status.code(), Some(2), "{}", stdout(&bad));
    assert!(
        stderr(&bad).contains("cxrlake.rexvqa_duplicate_threshold = 1.5"),
        "{}",
        stderr(&bad)
    );
    let run = ok(cxrlake(
        &lake,
        &[
            "run",
            "--flavour",
            "rexvqa",
            "--rexvqa-duplicate-threshold",
            "0.9",
        ],
    ));
    assert!(
        run.contains("rexvqa_generate (offline-rexvqa-mcq-1)") && run.contains("rexvqa_filter"),
        "{run}"
    );

    let validators = ok(cxrlake(
        &lake,
        &["stats", "rexvqa_validators", "--format", "csv"],
    ));
    assert!(
        validators.starts_with("check_name,checked,passed,failed,pass_percent\nv1 schema,"),
        "{validators}"
    );
    let positions = ok(cxrlake(
        &lake,
        &["stats", "rexvqa_positions", "--format", "csv"],
    ));
    assert_eq!(positions.lines().count(), 5, "{positions}");

    let out = dir.path().join("out");
    let out_arg = out.to_str().expect("utf8");
    let export = ok(cxrlake(
        &lake,
        &[
            "export",
            "rexvqa",
            "--out",
            out_arg,
            "--where",
            "difficulty = 'hard'",
        ],
    ));
    assert!(
        export.contains("rexvqa:") && export.contains("MCQs"),
        "{export}"
    );
    let text = std::fs::read_to_string(out.join("rexvqa/train.json")).expect("train.json");
    let records: Vec<serde_json::Value> = serde_json::from_str(&text).expect("json array");
    assert!(!records.is_empty());
    assert!(records.iter().all(|r| r["difficulty"] == "hard"), "{text}");
    assert!(out.join("rexvqa/train.parquet").is_file());
    let none = cxrlake(
        &lake,
        &[
            "export",
            "rexvqa",
            "--out",
            out_arg,
            "--where",
            "difficulty = 'trivial'",
        ],
    );
    assert_ne!(none.status.code(), Some(0));
    assert!(
        stderr(&none).contains("no row of rexvqa_questions matches"),
        "{}",
        stderr(&none)
    );
}

#[test]
fn vacuum_deletes_orphans_and_replaced_files_past_the_retention() {
    let dir = tempfile::tempdir().expect("tempdir");
    let lake = ingested_lake(dir.path(), 6, 2);
    ok(cxrlake(&lake, &["run", "extract"]));
    ok(cxrlake(&lake, &["run", "extract"]));
    let orphan = lake.join("reports/part-00000-orphan-of-a-killed-writer.parquet");
    std::fs::write(&orphan, b"PAR1 not committed").expect("orphan");
    let count = |table: &str| {
        ok(cxrlake(
            &lake,
            &[
                "sql",
                &format!("SELECT count(*) AS n FROM {table}"),
                "--format",
                "csv",
            ],
        ))
    };
    let (reports, sentences) = (count("reports"), count("sentences"));
    let versions = ok(cxrlake(&lake, &["tables"]));

    // Within the default retention (7 days) nothing goes.
    let kept = ok(cxrlake(&lake, &["vacuum"]));
    assert!(kept.contains("0 files in 0 tables deleted"), "{kept}");
    assert!(orphan.exists());
    // A dry run lists the orphan and the files the rerun replaced, and deletes nothing.
    let listed = ok(cxrlake(
        &lake,
        &["vacuum", "--retention-hours", "0", "--dry-run"],
    ));
    assert!(
        listed.contains("reports: would delete 1 files")
            && listed.contains("part-00000-orphan-of-a-killed-writer.parquet")
            && listed.contains("sentences: would delete"),
        "{listed}"
    );
    assert!(orphan.exists());
    let deleted = ok(cxrlake(&lake, &["vacuum", "--retention-hours", "0"]));
    assert!(deleted.contains("reports: deleted 1 files"), "{deleted}");
    assert!(!orphan.exists());
    assert_eq!((count("reports"), count("sentences")), (reports, sentences));
    // Nothing committed: every table keeps its version (the planner sees no rewrite).
    assert_eq!(ok(cxrlake(&lake, &["tables"])), versions);
    let again = ok(cxrlake(&lake, &["vacuum", "--retention-hours", "0"]));
    assert!(again.contains("0 files in 0 tables deleted"), "{again}");
    assert!(cxrlake(&lake, &["run", "extract"]).status.success());
}

#[test]
fn sql_reads_a_delta_table_of_another_lake_and_outside_files() {
    let dir = tempfile::tempdir().expect("tempdir");
    let other = ingested_lake(dir.path(), 6, 3);
    let lake = dir.path().join("mine");
    ok(cxrlake(&lake, &["init"]));
    let reports = other.join("reports");
    let query = format!(
        "SELECT count(*) AS n FROM '{}' WHERE study_id LIKE 's%'",
        reports.display()
    );
    let counted = ok(cxrlake(&lake, &["sql", &query, "--format", "csv"]));
    assert_eq!(counted.lines().nth(1), Some("6"), "{counted}");
    // The same folder's Parquet files, read as files.
    let file = std::fs::read_dir(&reports)
        .expect("reports")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| p.extension().is_some_and(|x| x == "parquet"))
        .expect("a data file");
    let query = format!("SELECT count(*) AS n FROM '{}'", file.display());
    let counted = ok(cxrlake(&lake, &["sql", &query, "--format", "csv"]));
    assert_eq!(counted.lines().nth(1), Some("6"), "{counted}");
    let missing = cxrlake(&lake, &["sql", "SELECT * FROM '/nonexistent/cxrlake/qa'"]);
    assert_ne!(missing.status.code(), Some(0));
    assert!(
        stderr(&missing).contains("not found"),
        "{}",
        stderr(&missing)
    );
}

#[test]
fn givcxr_runs_checks_its_settings_reports_reviews_and_exports_the_release_layout() {
    let dir = tempfile::tempdir().expect("tempdir");
    let lake = ingested_lake(dir.path(), 12, 6);
    let bad = cxrlake(
        &lake,
        &["run", "--flavour", "givcxr", "--givcxr-split", "0.5:0.5"],
    );
    assert_eq!(bad.status.code(), Some(2), "{}", stdout(&bad));
    assert!(
        stderr(&bad).contains("cxrlake.givcxr_split = '0.5:0.5'"),
        "{}",
        stderr(&bad)
    );
    let run = ok(cxrlake(&lake, &["run", "--flavour", "givcxr"]));
    assert!(
        run.contains("givcxr_answers (offline-givcxr-answers-1)") && run.contains("givcxr_filter:"),
        "{run}"
    );
    let regions = ok(cxrlake(
        &lake,
        &["stats", "givcxr_regions", "--format", "csv"],
    ));
    assert!(
        regions.starts_with("region,qa_pairs,percent,bboxes,avg_aspects\n"),
        "{regions}"
    );
    assert!(
        regions
            .lines()
            .last()
            .unwrap_or_default()
            .starts_with("total,"),
        "{regions}"
    );
    let rates = ok(cxrlake(
        &lake,
        &["stats", "givcxr_hallucination", "--format", "csv"],
    ));
    assert!(
        rates
            .lines()
            .last()
            .unwrap_or_default()
            .starts_with("overall,"),
        "{rates}"
    );

    // Radiologists' reviews: an unknown pair names the row; good ones give an acceptance rate.
    let first = ok(cxrlake(
        &lake,
        &[
            "sql",
            "--format",
            "csv",
            "SELECT qa_id FROM givcxr_review ORDER BY priority LIMIT 2",
        ],
    ));
    let ids: Vec<&str> = first.lines().skip(1).collect();
    assert_eq!(ids.len(), 2, "{first}");
    let reviews = dir.path().join("reviews.csv");
    std::fs::write(&reviews, "qa_id,reviewer,accepted\nnot-a-pair,r1,yes\n").expect("write");
    let refused = cxrlake(
        &lake,
        &[
            "ratings",
            "add",
            "--flavour",
            "givcxr",
            reviews.to_str().expect("utf8"),
        ],
    );
    assert_ne!(refused.status.code(), Some(0));
    assert!(
        stderr(&refused).contains("row 1: qa_id 'not-a-pair' is not a pair of givcxr_qa"),
        "{}",
        stderr(&refused)
    );
    std::fs::write(
        &reviews,
        format!(
            "qa_id,reviewer,accepted\n{},r1,yes\n{},r1,no\n{},r2,accept\n",
            ids[0], ids[1], ids[0]
        ),
    )
    .expect("write");
    let added = ok(cxrlake(
        &lake,
        &[
            "ratings",
            "add",
            "--flavour",
            "givcxr",
            reviews.to_str().expect("utf8"),
        ],
    ));
    assert!(added.contains("givcxr_reviews: 3 reviews added"), "{added}");
    let acceptance = ok(cxrlake(
        &lake,
        &["stats", "givcxr_review", "--format", "csv"],
    ));
    assert!(
        acceptance.lines().any(|l| l.starts_with("all,3,2,66.67,")),
        "{acceptance}"
    );

    // The export: the paper's layout, twelve fields per record.
    let out = dir.path().join("out");
    let out_arg = out.to_str().expect("utf8");
    let export = ok(cxrlake(
        &lake,
        &[
            "export", "givcxr", "--out", out_arg, "--sample", "5", "--seed", "1",
        ],
    ));
    assert!(export.contains("givcxr"), "{export}");
    let mut exported = 0;
    for split in ["train", "val", "test"] {
        let path = out.join(format!("givcxr/{split}.json"));
        if !path.is_file() {
            continue;
        }
        let file: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&path).expect("read")).expect("json");
        assert_eq!(file["version"], "1.0");
        assert_eq!(file["split"], split);
        for record in file["data"].as_array().expect("data") {
            let keys: Vec<&str> = record
                .as_object()
                .expect("object")
                .keys()
                .map(String::as_str)
                .collect();
            assert_eq!(keys.len(), 12, "{record}");
            let image = record["image_id"].as_str().expect("image_id");
            assert!(
                image.len() == 23 && image.starts_with('p') && image.contains("/s"),
                "{image}"
            );
            let bbox: Vec<f64> = record["bbox"]
                .as_array()
                .expect("bbox")
                .iter()
                .map(|v| v.as_f64().expect("number"))
                .collect();
            assert!(
                bbox.len() == 4 && bbox[0] < bbox[2] && bbox[1] < bbox[3],
                "{record}"
            );
            exported += 1;
        }
    }
    let kept = ok(cxrlake(
        &lake,
        &[
            "sql",
            "--format",
            "csv",
            "SELECT count(*) AS n FROM givcxr_dataset",
        ],
    ));
    assert_eq!(kept.lines().nth(1), Some(exported.to_string().as_str()));
    let manifest: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(out.join("givcxr/manifest.json")).expect("manifest"),
    )
    .expect("json");
    assert_eq!(manifest["license"], "CC-BY-NC-4.0");
    for variant in ["bbox_input", "bbox_output"] {
        let lines = std::fs::read_to_string(
            out.join(format!("givcxr/subsets/sample-5-seed-1/{variant}.jsonl")),
        )
        .expect("subset");
        assert_eq!(lines.lines().count(), 5, "{variant}");
    }
}

/// Runs `cxrlake` with `args` under Python's `resource` module; its output and peak resident
/// memory in bytes.
fn with_peak_rss(lake: &Path, args: &[&str]) -> (Output, u64) {
    const MEASURE: &str = "import resource, subprocess, sys\n\
        code = subprocess.run(sys.argv[1:]).returncode\n\
        print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, file=sys.stderr)\n\
        sys.exit(code)";
    let output = Command::new("python3")
        .args(["-c", MEASURE, env!("CARGO_BIN_EXE_cxrlake"), "--lake"])
        .arg(lake)
        .args(args)
        .env_remove("CXRLAKE_LAKE")
        .env_remove("CXRLAKE_CONFIG")
        .env_remove("CXRLAKE_ENGINE")
        .output()
        .expect("python3");
    let kilobytes = stderr(&output)
        .lines()
        .last()
        .and_then(|line| line.trim().parse::<u64>().ok())
        .unwrap_or_else(|| panic!("no peak RSS: {}", stderr(&output)));
    (output, kilobytes << 10)
}

/// A report of 4 MB stays one report's worth of memory in every stage: the judge and grade
/// stages joined the report's text onto each QA pair and judge group of its study, one copy per
/// row. Measured on 2026-12-06: judge 4,215 MB before, 154 MB after; every other stage 132-157
/// MB.
#[test]
fn a_4_mb_report_keeps_every_stage_under_a_bounded_memory() {
    const LIMIT: u64 = 512 << 20;
    let dir = tempfile::tempdir().expect("tempdir");
    let (lake, corpus) = (dir.path().join("lake"), dir.path().join("corpus"));
    let corpus_arg = corpus.to_str().expect("utf8");
    ok(cxrlake(&lake, &["init"]));
    ok(cxrlake(
        &lake,
        &[
            "synth",
            "--studies",
            "3",
            "--seed",
            "4",
            "--out",
            corpus_arg,
        ],
    ));
    let mut reports = Vec::new();
    let mut folders = vec![corpus.join("files")];
    while let Some(folder) = folders.pop() {
        for entry in std::fs::read_dir(&folder).expect("read_dir") {
            let path = entry.expect("entry").path();
            if path.is_dir() {
                folders.push(path);
            } else if path.extension().is_some_and(|e| e == "txt") {
                reports.push(path);
            }
        }
    }
    reports.sort();
    let report = &reports[0];
    let mut text = std::fs::read_to_string(report).expect("report");
    text.push_str(&"\n".repeat(4 << 20));
    std::fs::write(report, text).expect("write");
    ok(cxrlake(
        &lake,
        &[
            "--set",
            "ingest_max_report_bytes=8388608",
            "ingest",
            corpus_arg,
        ],
    ));
    let mut peaks = Vec::new();
    for stage in [
        "localize", "extract", "map", "graph", "balance", "qa", "judge", "grade",
    ] {
        let (output, peak) = with_peak_rss(&lake, &["run", stage]);
        ok(output);
        peaks.push((stage, peak >> 20));
    }
    assert!(
        peaks.iter().all(|(_, mb)| *mb < LIMIT >> 20),
        "peak RSS in MB per stage, limit {}: {peaks:?}",
        LIMIT >> 20
    );
    let study = report
        .file_stem()
        .and_then(|s| s.to_str())
        .expect("study id");
    let graded =
        format!("SELECT count(*) FROM qa WHERE study_id = '{study}' AND rating IS NOT NULL");
    assert!(
        count_by(&|args| cxrlake(&lake, args), &graded) > 0,
        "the big report's QA pairs were judged and graded: {peaks:?}"
    );
}
