//! The incremental run equals a full rebuild: for each edit kind (add, remove a synonym; rename,
//! add a finding; change a region recipe; change the mapping threshold; edit a template
//! phrasing; edit a judge prompt), a lake built with the old definitions and then run
//! incrementally with the new ones holds exactly the rows (compared order-independently) of a
//! lake built from scratch with the new ones.

use std::path::{Path, PathBuf};
use std::time::Duration;

use cxrlake_ingest::{IngestOptions, ingest};
use cxrlake_lake::Lake;
use cxrlake_pipeline::{Plan, Scope};
use cxrlake_synth::{SynthOptions, generate};

use crate::common::{json_lines, open_lake, pipeline};
use crate::llm_server::ExtractionServer;

/// The per-study and dataset-wide tables the stages write.
const TABLES: [&str; 8] = [
    "region_boxes",
    "sentences",
    "observations_raw",
    "indications",
    "observations",
    "scene_graphs",
    "qa_balance",
    "qa",
];

/// One edit of the definitions.
struct Edit {
    name: &'static str,
    /// (file under refdefs/, old text, new text)
    refdefs: Option<(&'static str, &'static str, &'static str)>,
    /// (file under templates/, old text, new text)
    template: Option<(&'static str, &'static str, &'static str)>,
    threshold: Option<f32>,
}

const EDITS: [Edit; 7] = [
    Edit {
        name: "add a synonym",
        refdefs: Some((
            "findings.toml",
            r#"synonyms = ["effusion", "effusions", "pleural effusions", "pleural fluid", "hydrothorax"]"#,
            r#"synonyms = ["effusion", "effusions", "pleural effusions", "pleural fluid", "hydrothorax", "fluid in the pleural space"]"#,
        )),
        template: None,
        threshold: None,
    },
    Edit {
        name: "remove a synonym",
        refdefs: Some((
            "findings.toml",
            r#"synonyms = ["effusion", "effusions", "pleural effusions", "pleural fluid", "hydrothorax"]"#,
            r#"synonyms = ["effusions", "pleural effusions", "pleural fluid", "hydrothorax"]"#,
        )),
        template: None,
        threshold: None,
    },
    Edit {
        name: "rename a finding",
        refdefs: Some((
            "findings.toml",
            r#"name = "rounded atelectasis""#,
            r#"name = "rounded lung atelectasis""#,
        )),
        template: None,
        threshold: None,
    },
    Edit {
        name: "add a finding",
        refdefs: Some((
            "findings.toml",
            "[[finding]]\nname = \"pleural effusion\"",
            "[[finding]]\nname = \"loculated pleural fluid\"\nsynonyms = [\"pleural fluid loculation\", \
             \"loculated pleural collection\"]\ncategory = \"ANATOMICAL_FINDING\"\nsubcategories = \
             [\"PLEURA\"]\nparents = [\"pleural effusion\"]\ndefault_regions = [\"pleura\"]\n\n\
             [[finding]]\nname = \"pleural effusion\"",
        )),
        template: None,
        threshold: None,
    },
    Edit {
        name: "change a region recipe",
        refdefs: Some((
            "regions.toml",
            r#"children = ["lungs", "mediastinum", "diaphragm"]"#,
            r#"children = ["lungs", "mediastinum"]"#,
        )),
        template: None,
        threshold: None,
    },
    Edit {
        name: "change the mapping threshold",
        refdefs: None,
        template: None,
        threshold: Some(0.6),
    },
    Edit {
        name: "edit a template phrasing",
        refdefs: None,
        template: Some((
            "C07_describe_region_device.toml",
            r#""Check the {region} for {subcategory}.","#,
            r#""Examine the {region} for {subcategory}.","#,
        )),
        threshold: None,
    },
];

/// A corpus of `studies` in `dir/corpus`.
fn corpus(dir: &Path, studies: usize) -> PathBuf {
    let corpus = dir.join("corpus");
    generate(&SynthOptions::new(studies, 5, &corpus)).expect("synth");
    corpus
}

/// Settings as `(key, value)` pairs, as flags give them.
type Settings = Vec<(&'static str, String)>;

fn pairs(settings: &Settings) -> Vec<(&str, &str)> {
    settings.iter().map(|(k, v)| (*k, v.as_str())).collect()
}

/// What `cxrlake plan` with these settings says.
async fn plan(lake: &Lake, settings: &Settings) -> Plan {
    pipeline(lake, &pairs(settings))
        .await
        .plan(false)
        .await
        .expect("plan")
}

/// What `cxrlake run` with these settings does (`full`: `--full`).
async fn run(lake: &Lake, settings: &Settings, full: bool) -> Plan {
    pipeline(lake, &pairs(settings))
        .await
        .run(full, &mut |_| {})
        .await
        .expect("run")
}

/// A lake at `dir` with `corpus` ingested and run through every stage.
async fn built(dir: &Path, corpus: &Path, settings: &Settings) -> Lake {
    let lake = open_lake(dir).await;
    ingest(&lake, &IngestOptions::new(vec![corpus.to_path_buf()]))
        .await
        .expect("ingest");
    run(&lake, settings, true).await;
    lake
}

pub(crate) fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for entry in std::fs::read_dir(from).expect("read_dir") {
        let entry = entry.expect("entry");
        let target = to.join(entry.file_name());
        if entry.file_type().expect("type").is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).expect("copy");
        }
    }
}

/// The repository folder `name` with one text replaced, written under `dir`.
fn edited_folder(dir: &Path, name: &str, file: &str, old: &str, new: &str) -> PathBuf {
    let source = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(name);
    let target = dir.join(name);
    copy_dir(&source, &target);
    let path = target.join(file);
    let text = std::fs::read_to_string(&path).expect("read");
    assert!(text.contains(old), "{file} does not contain {old}");
    std::fs::write(&path, text.replacen(old, new, 1)).expect("write");
    target
}

/// Every row of `table` as a JSON line, sorted.
async fn rows(lake: &Lake, table: &str) -> Vec<String> {
    json_lines(lake, &format!("SELECT * FROM {table}")).await
}

/// Asserts that `incremental` holds the rows of `full` in every table, and every verdict of
/// `full` (the judge's cache may hold more).
async fn assert_same(edit: &str, incremental: &Lake, full: &Lake) {
    for table in TABLES {
        let (a, b) = (rows(incremental, table).await, rows(full, table).await);
        if a != b {
            let only_a = a
                .iter()
                .filter(|r| !b.contains(r))
                .take(2)
                .collect::<Vec<_>>();
            let only_b = b
                .iter()
                .filter(|r| !a.contains(r))
                .take(2)
                .collect::<Vec<_>>();
            panic!(
                "{edit}: {table} differs ({} incremental rows, {} full rows)\nonly incremental: \
                 {only_a:?}\nonly full: {only_b:?}",
                a.len(),
                b.len()
            );
        }
    }
    let verdicts = "SELECT criterion, content_hash, levels, explanation, error FROM qa_judgements";
    let (a, b) = (
        json_lines(incremental, verdicts).await,
        json_lines(full, verdicts).await,
    );
    let missing = b.iter().filter(|v| !a.contains(v)).count();
    assert_eq!(missing, 0, "{edit}: verdicts of the full rebuild missing");
}

fn ran(plan: &Plan, stage: &str) -> Scope {
    plan.stages
        .iter()
        .find(|s| s.stage == stage)
        .map(|s| s.scope.clone())
        .expect("stage")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn incremental_run_equals_full_rebuild_for_every_edit() {
    let dir = tempfile::tempdir().expect("tempdir");
    let corpus = corpus(dir.path(), 24);
    let defaults = Settings::new();
    let base_dir = dir.path().join("base");
    let base = built(&base_dir, &corpus, &defaults).await;

    // Nothing changed: nothing runs.
    let unchanged = plan(&base, &defaults).await;
    assert!(
        unchanged.stages.iter().all(|s| s.scope.is_empty()),
        "an unchanged lake is up to date:\n{unchanged}"
    );
    let noop = run(&base, &defaults, false).await;
    assert!(noop.stages.iter().all(|s| s.scope.is_empty()));
    drop(base);

    for (i, edit) in EDITS.iter().enumerate() {
        let case = dir.path().join(format!("case{i}"));
        let mut settings = Settings::new();
        if let Some((file, old, new)) = edit.refdefs {
            let folder = edited_folder(&case, "refdefs", file, old, new);
            settings.push(("refdefs", folder.display().to_string()));
        }
        if let Some((file, old, new)) = edit.template {
            let folder = edited_folder(&case, "templates", file, old, new);
            settings.push(("templates", folder.display().to_string()));
        }
        if let Some(threshold) = edit.threshold {
            settings.push(("match_threshold", threshold.to_string()));
        }
        let incremental_dir = case.join("incremental");
        copy_dir(&base_dir, &incremental_dir);
        let lake = Lake::open_url(incremental_dir.to_str().expect("utf8")).expect("open");
        let planned = plan(&lake, &settings).await;
        assert!(
            planned.stages.iter().any(|s| !s.scope.is_empty()),
            "{}: the plan names work\n{planned}",
            edit.name
        );
        assert!(
            !planned.settings.is_empty(),
            "{}: the plan names the changed setting\n{planned}",
            edit.name
        );
        let record = run(&lake, &settings, false).await;
        let full = built(&case.join("full"), &corpus, &settings).await;
        assert_same(edit.name, &lake, &full).await;
        // A second run has nothing left to do, with the settings given again or not at all
        // (the lake keeps them).
        for again in [
            plan(&lake, &settings).await,
            plan(&lake, &Settings::new()).await,
        ] {
            assert!(
                again.stages.iter().all(|s| s.scope.is_empty()),
                "{}: up to date after the run\n{again}",
                edit.name
            );
        }
        if edit.name == "add a synonym" {
            // Synonyms do not touch the boxes, and extraction reads only reports naming them.
            assert!(ran(&record, "localize").is_empty());
            assert!(!ran(&record, "extract").is_all());
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn editing_a_judge_prompt_rejudges_that_criterion_only() {
    let server =
        ExtractionServer::start_answering(crate::judge::judge_answer, Duration::ZERO, usize::MAX)
            .await;
    let dir = tempfile::tempdir().expect("tempdir");
    let corpus = corpus(dir.path(), 4);
    let options: Settings = vec![
        ("llm_endpoint", server.endpoint()),
        ("llm_model", "judge-model".into()),
        ("extractor", "rules".into()),
        ("judge", "llm".into()),
        ("llm_concurrency", "8".into()),
    ];
    let base_dir = dir.path().join("base");
    drop(built(&base_dir, &corpus, &options).await);
    let before = server.answers();

    let prompts = edited_folder(
        dir.path(),
        "prompts/judge",
        "question_clarity.md",
        "- Answer with a short explanation (a few words)",
        "- Answer with a very short explanation (a few words)",
    );
    let mut edited = options.clone();
    edited.push(("judge_prompts", prompts.display().to_string()));
    let incremental_dir = dir.path().join("incremental");
    copy_dir(&base_dir, &incremental_dir);
    let lake = Lake::open_url(incremental_dir.to_str().expect("utf8")).expect("open");
    let record = run(&lake, &edited, false).await;
    assert!(
        ran(&record, "qa").is_empty(),
        "a prompt edit regenerates no QA pair"
    );
    let asked = server.answers() - before;
    let questions =
        crate::common::number(&lake, "SELECT count(DISTINCT question) FROM qa").await as usize;
    assert!(
        asked > 0 && asked <= questions,
        "only question clarity is asked again: {asked} calls for {questions} distinct questions"
    );
    let full = built(&dir.path().join("full"), &corpus, &edited).await;
    assert_same("edit a judge prompt", &lake, &full).await;
}
