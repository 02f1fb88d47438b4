//! The incremental run equals a full rebuild: for each edit kind (add, remove a synonym; rename,
//! add a finding; change a region recipe; change the mapping threshold; edit a template
//! phrasing; edit a judge prompt), a lake built with the old definitions and then run
//! incrementally with the new ones holds exactly the rows (compared order-independently) of a
//! lake built from scratch with the new ones.

use std::path::{Path, PathBuf};
use std::time::Duration;

use cxrlake_ingest::{IngestOptions, ingest};
use cxrlake_lake::Lake;
use cxrlake_llm::LlmConfig;
use cxrlake_pipeline::incremental::{self, PipelineOptions, Plan};
use cxrlake_pipeline::judge::JudgeBackend;
use cxrlake_pipeline::scope::Scope;
use cxrlake_refdefs::RefDefs;
use cxrlake_synth::{SynthOptions, generate};
use datafusion::arrow::json::LineDelimitedWriter;

use crate::common::query;
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

/// A lake at `dir` with `corpus` ingested and run through every stage.
async fn built(dir: &Path, corpus: &Path, defs: &RefDefs, options: &PipelineOptions) -> Lake {
    let lake = Lake::open_url(dir.to_str().expect("utf8"))
        .expect("open")
        .with_session_factory(cxrlake_udfs::session_context_on);
    lake.init().await.expect("init");
    ingest(&lake, &IngestOptions::new(vec![corpus.to_path_buf()]))
        .await
        .expect("ingest");
    let mut full = options.clone();
    full.full = true;
    incremental::run(&lake, defs, &full)
        .await
        .expect("full run");
    lake
}

fn copy_dir(from: &Path, to: &Path) {
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
    let batches = query(lake, &format!("SELECT * FROM {table}")).await;
    let mut lines = Vec::new();
    for batch in &batches {
        let mut writer = LineDelimitedWriter::new(Vec::new());
        writer.write(batch).expect("json");
        writer.finish().expect("json");
        let text = String::from_utf8(writer.into_inner()).expect("utf8");
        lines.extend(text.lines().map(str::to_string));
    }
    lines.sort();
    lines
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
        query_lines(incremental, verdicts).await,
        query_lines(full, verdicts).await,
    );
    let missing = b.iter().filter(|v| !a.contains(v)).count();
    assert_eq!(missing, 0, "{edit}: verdicts of the full rebuild missing");
}

async fn query_lines(lake: &Lake, sql: &str) -> Vec<String> {
    let mut lines = Vec::new();
    for batch in query(lake, sql).await {
        let mut writer = LineDelimitedWriter::new(Vec::new());
        writer.write(&batch).expect("json");
        writer.finish().expect("json");
        let text = String::from_utf8(writer.into_inner()).expect("utf8");
        lines.extend(text.lines().map(str::to_string));
    }
    lines.sort();
    lines
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
    let defs = RefDefs::embedded().expect("refdefs");
    let options = PipelineOptions::default();
    let base_dir = dir.path().join("base");
    let base = built(&base_dir, &corpus, &defs, &options).await;

    // Nothing changed: nothing runs.
    let plan = incremental::plan(&base, &defs, &options)
        .await
        .expect("plan");
    assert!(
        plan.stages.iter().all(|s| s.scope.is_empty()),
        "an unchanged lake is up to date:\n{plan}"
    );
    let noop = incremental::run(&base, &defs, &options).await.expect("run");
    assert!(noop.stages.iter().all(|s| s.scope.is_empty()));
    drop(base);

    for (i, edit) in EDITS.iter().enumerate() {
        let case = dir.path().join(format!("case{i}"));
        let mut new_defs = defs.clone();
        let mut new_options = options.clone();
        if let Some((file, old, new)) = edit.refdefs {
            let folder = edited_folder(&case, "refdefs", file, old, new);
            new_defs = RefDefs::load(&folder).expect("edited refdefs load");
        }
        if let Some((file, old, new)) = edit.template {
            new_options.qa.templates = Some(edited_folder(&case, "templates", file, old, new));
        }
        if let Some(threshold) = edit.threshold {
            new_options.map.threshold = threshold;
        }
        let incremental_dir = case.join("incremental");
        copy_dir(&base_dir, &incremental_dir);
        let lake = Lake::open_url(incremental_dir.to_str().expect("utf8"))
            .expect("open")
            .with_session_factory(cxrlake_udfs::session_context_on);
        let plan = incremental::plan(&lake, &new_defs, &new_options)
            .await
            .expect("plan");
        assert!(
            plan.stages.iter().any(|s| !s.scope.is_empty()),
            "{}: the plan names work\n{plan}",
            edit.name
        );
        let record = incremental::run(&lake, &new_defs, &new_options)
            .await
            .expect("incremental run");
        eprintln!("{}:\n{record}", edit.name);
        let full = built(&case.join("full"), &corpus, &new_defs, &new_options).await;
        assert_same(edit.name, &lake, &full).await;
        // A second run has nothing left to do.
        let again = incremental::plan(&lake, &new_defs, &new_options)
            .await
            .expect("plan");
        assert!(
            again.stages.iter().all(|s| s.scope.is_empty()),
            "{}: up to date after the run\n{again}",
            edit.name
        );
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
    let defs = RefDefs::embedded().expect("refdefs");
    let mut options = PipelineOptions::default();
    let mut config = LlmConfig::new(server.endpoint().parse().expect("url"), "judge-model");
    config.concurrency = 8;
    options.judge.backend = JudgeBackend::Llm(Box::new(config));
    let base_dir = dir.path().join("base");
    drop(built(&base_dir, &corpus, &defs, &options).await);
    let before = server.answers();

    let prompts = edited_folder(
        dir.path(),
        "prompts/judge",
        "question_clarity.md",
        "- Answer with a short explanation (a few words)",
        "- Answer with a very short explanation (a few words)",
    );
    let mut edited = options.clone();
    edited.judge.prompts = Some(prompts);
    let incremental_dir = dir.path().join("incremental");
    copy_dir(&base_dir, &incremental_dir);
    let lake = Lake::open_url(incremental_dir.to_str().expect("utf8"))
        .expect("open")
        .with_session_factory(cxrlake_udfs::session_context_on);
    let record = incremental::run(&lake, &defs, &edited)
        .await
        .expect("incremental run");
    eprintln!("{record}");
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
    let full = built(&dir.path().join("full"), &corpus, &defs, &edited).await;
    assert_same("edit a judge prompt", &lake, &full).await;
}
