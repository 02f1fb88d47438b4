//! A stage's declaration is its identity: every setting a stage declares reaches its
//! fingerprint, and a setting that changes what a stage computes is one it declares.
//!
//! - `every_declared_setting_changes_the_identity`: for every stage of every flavour and every
//!   setting it declares, another value (another folder, for the folder settings) changes what
//!   its fingerprint records ([`cxrlake_pipeline::stage::identity`]).
//! - `an_undeclared_setting_does_not_reach_a_stage`: for every stage and every value setting it
//!   does not declare, another value leaves its run's functions and parameters
//!   ([`Stage::prepare`]) unchanged.
//! - `changed_settings_make_their_stages_stale_and_the_rerun_equals_a_fresh_build`: on a built
//!   lake with the four flavours, each changed value setting makes `plan` list every stage that
//!   declares it; a synonym-only definitions edit recomputes no flavour stage over every study;
//!   one incremental run with all the changed settings equals a `--full` run with them, and
//!   afterwards the lake is up to date and remembers the values it was built with.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use cxrlake_ingest::{IngestOptions, ingest};
use cxrlake_lake::Lake;
use cxrlake_pipeline::settings::{BACKEND_PARTS, OPERATIONAL_KEYS, RESULT_KEYS};
use cxrlake_pipeline::stage::identity;
use cxrlake_pipeline::{Pipeline, Plan, RunMode};
use cxrlake_synth::{SynthOptions, generate};
use datafusion::logical_expr::ScalarUDF;
use datafusion::scalar::ScalarValue;

use crate::common::{json_lines, open_lake};

const FLAVOURS: (&str, &str) = ("flavours", "gemex,mimic_cxr_vqa,rexvqa,givcxr");
/// A loopback endpoint nothing listens on: planning and fingerprints never call it.
const ENDPOINT: &str = "http://127.0.0.1:9/v1";

/// Settings as `(key, value)` pairs, as flags give them.
type Settings = Vec<(&'static str, String)>;

/// Another valid value of every value setting a stage may declare, offline.
const OTHER_VALUES: &[(&str, &str)] = &[
    ("seed", "7"),
    ("match_threshold", "0.6"),
    ("min_area", "400"),
    ("judge_batch", "3"),
    ("judge", "reading"),
    ("vqa_paper_typos", "false"),
    ("vqa_lint", "drop"),
    ("vqa_qc_reports", "3"),
    ("rexvqa_min_explanation", "200"),
    ("rexvqa_duplicate_threshold", "0.3"),
    ("rexvqa_qc_per_1000", "500"),
    ("givcxr_split", "0.5:0.1:0.4"),
    ("givcxr_bbox_small", "0.1"),
    ("givcxr_bbox_large", "0.3"),
];

/// Every LLM backend on, at `model`.
fn llm(model: &str) -> Settings {
    vec![
        ("llm_endpoint", ENDPOINT.to_string()),
        ("llm_model", model.to_string()),
        ("extractor", "llm".to_string()),
        ("judge", "llm".to_string()),
        ("generator", "llm".to_string()),
    ]
}

/// The ONNX embedder on the test model (`scripts/test` installs it).
fn onnx(model: &Path, tokenizer: &Path) -> Settings {
    vec![
        ("embedder", "onnx".to_string()),
        ("onnx_model", model.display().to_string()),
        ("onnx_tokenizer", tokenizer.display().to_string()),
    ]
}

fn repository(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(name)
}

/// A copy of the repository folder `name` under `dir` with `edit` applied to each
/// `(file, old, new)`.
fn edited(dir: &Path, name: &str, edits: &[(&str, &str, &str)]) -> PathBuf {
    let target = dir.join(name);
    crate::incremental::copy_dir(&repository(name), &target);
    for (file, old, new) in edits {
        let path = target.join(file);
        let text = std::fs::read_to_string(&path).expect("read");
        assert!(text.contains(old), "{file} does not contain {old}");
        std::fs::write(&path, text.replacen(old, new, 1)).expect("write");
    }
    target
}

/// A file's copy under `dir` with bytes appended (an ONNX model stays valid: an unknown
/// protobuf field; a tokenizer stays valid JSON: trailing whitespace).
fn appended(dir: &Path, file: &Path, bytes: &[u8]) -> PathBuf {
    let target = dir.join(file.file_name().expect("name"));
    let mut content = std::fs::read(file).expect("read");
    content.extend_from_slice(bytes);
    std::fs::write(&target, content).expect("write");
    target
}

/// For each setting: the settings of the base and of the changed pipeline.
fn variants(dir: &Path) -> Vec<(&'static str, Settings, Settings)> {
    let base = |extra: Settings| {
        let mut settings = vec![(FLAVOURS.0, FLAVOURS.1.to_string())];
        settings.extend(extra);
        settings
    };
    let with = |mut settings: Settings, key: &'static str, value: String| {
        settings.retain(|(k, _)| *k != key);
        settings.push((key, value));
        settings
    };
    let mut out = Vec::new();
    for (key, value) in OTHER_VALUES {
        out.push((
            *key,
            base(Vec::new()),
            with(base(Vec::new()), key, value.to_string()),
        ));
    }
    // The backends: rules/heuristic/offline against the LLM, and one model against another.
    for key in ["extractor", "generator"] {
        out.push((key, base(Vec::new()), base(llm("m"))));
    }
    out.push(("llm_model", base(llm("m")), base(llm("n"))));
    // The folders, each read by an LLM backend or the definitions.
    let refdefs = edited(
        &dir.join("refdefs-edit"),
        "refdefs",
        &[
            (
                "findings.toml",
                "[[finding]]\nname = \"pleural effusion\"",
                "[[finding]]\nname = \"loculated pleural fluid\"\ncategory = \
                 \"ANATOMICAL_FINDING\"\nsubcategories = [\"PLEURA\"]\nparents = [\"pleural \
                 effusion\"]\ndefault_regions = [\"pleura\"]\n\n[[finding]]\nname = \"pleural \
                 effusion\"",
            ),
            ("rexvqa/taxonomy.toml", "\n", "\n# edited\n"),
            ("givcxr/vocabulary.toml", "\n", "\n# edited\n"),
            ("gemex/regions.toml", "\n", "\n# edited\n"),
        ],
    );
    out.push((
        "refdefs",
        base(Vec::new()),
        base(vec![("refdefs", refdefs.display().to_string())]),
    ));
    let templates = edited(
        &dir.join("templates-edit"),
        "templates",
        &[
            (
                "C07_describe_region_device.toml",
                r#""Check the {region} for {subcategory}.","#,
                r#""Examine the {region} for {subcategory}.","#,
            ),
            ("mimic_cxr_vqa/questions.toml", "\n", "\n# edited\n"),
        ],
    );
    out.push((
        "templates",
        base(Vec::new()),
        base(vec![("templates", templates.display().to_string())]),
    ));
    for (key, folder, file) in [
        ("prompts", "prompts", "sentences.md"),
        ("judge_prompts", "prompts/judge", "entailment.md"),
        ("flavour_prompts", "prompts", "gemex/prompts.toml"),
    ] {
        let dir = dir.join(format!("{key}-edit"));
        let copy = edited(&dir, folder, &[(file, "\n", "\n# edited\n")]);
        // The flavours' prompts: every flavour's folder edited.
        if key == "flavour_prompts" {
            for flavour in ["mimic_cxr_vqa", "rexvqa", "givcxr"] {
                let path = copy.join(flavour).join("prompts.toml");
                let text = std::fs::read_to_string(&path).expect("read");
                std::fs::write(&path, text.replacen('\n', "\n# edited\n", 1)).expect("write");
            }
        }
        let original = (key, repository(folder).display().to_string());
        let mut before = base(llm("m"));
        before.push(original);
        let after = with(base(llm("m")), key, copy.display().to_string());
        out.push((key, before, after));
    }
    // The ONNX embedder: the lexical one against it, and one model or tokenizer against another.
    let model = crate::graph::required_path("ONNX_TEST_MODEL");
    let tokenizer = crate::graph::required_path("ONNX_TEST_TOKENIZER");
    let onnx_dir = dir.join("onnx-edit");
    std::fs::create_dir_all(&onnx_dir).expect("mkdir");
    // Field 1000 (length-delimited, one byte): unknown to ONNX, kept by protobuf.
    let other_model = appended(&onnx_dir, &model, &[0xC2, 0x3E, 0x01, b'x']);
    let other_tokenizer = appended(&onnx_dir, &tokenizer, b"\n");
    out.push(("embedder", base(Vec::new()), base(onnx(&model, &tokenizer))));
    out.push((
        "onnx_model",
        base(onnx(&model, &tokenizer)),
        base(onnx(&other_model, &tokenizer)),
    ));
    out.push((
        "onnx_tokenizer",
        base(onnx(&model, &tokenizer)),
        base(onnx(&model, &other_tokenizer)),
    ));
    out
}

async fn open(lake: &Lake, settings: &Settings) -> Pipeline {
    let mut builder =
        Pipeline::builder(lake.clone(), cxrlake_flavours::ALL).reuse_stored_settings(false);
    for (key, value) in settings {
        builder = builder.set(key, value).expect("setting");
    }
    builder.open().await.expect("pipeline")
}

/// Every stage's identity under `settings`.
async fn identities(
    lake: &Lake,
    settings: &Settings,
) -> BTreeMap<&'static str, BTreeMap<String, String>> {
    let pipeline = open(lake, settings).await;
    let mut out = BTreeMap::new();
    for stage in pipeline.stages() {
        let id = identity(stage.as_ref(), &pipeline)
            .await
            .unwrap_or_else(|e| panic!("{}: {e}", stage.def().name));
        out.insert(stage.def().name, id);
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_declared_setting_changes_the_identity() {
    let dir = tempfile::tempdir().expect("tempdir");
    let lake = open_lake(&dir.path().join("lake")).await;
    let variants = variants(dir.path());
    let pipeline = open(&lake, &vec![(FLAVOURS.0, FLAVOURS.1.to_string())]).await;
    let mut covered = 0;
    let mut missing = Vec::new();
    for stage in pipeline.stages() {
        let def = stage.def();
        for key in def.settings {
            if OPERATIONAL_KEYS.contains(key) || *key == "llm_endpoint" {
                continue;
            }
            assert!(
                RESULT_KEYS.contains(key),
                "{}: {key} is neither operational nor kept by the lake (RESULT_KEYS)",
                def.name
            );
            if let Some((_, backends)) = BACKEND_PARTS.iter().find(|(part, _)| part == key) {
                assert!(
                    backends.iter().any(|b| def.settings.contains(b)),
                    "{}: {key} is recorded through a backend id it does not declare",
                    def.name
                );
            }
            let mut seen = false;
            for (setting, before, after) in variants.iter().filter(|(k, _, _)| k == key) {
                seen = true;
                let (a, b) = (
                    identities(&lake, before).await,
                    identities(&lake, after).await,
                );
                if a[def.name] == b[def.name] {
                    missing.push(format!(
                        "{}: another {setting} leaves its fingerprint at {:?}",
                        def.name, a[def.name]
                    ));
                }
            }
            assert!(
                seen,
                "no other value of {key} to try: add it to OTHER_VALUES"
            );
            covered += 1;
        }
    }
    assert!(missing.is_empty(), "{}", missing.join("\n"));
    assert!(covered > 60, "{covered} (stage, setting) pairs");
}

/// A run's functions and parameters.
async fn prepared(
    pipeline: &Pipeline,
    stage: &str,
) -> (Vec<ScalarUDF>, Vec<(&'static str, ScalarValue)>) {
    let stage = pipeline.stage(stage).expect("stage").clone();
    let prepared = stage
        .prepare(pipeline, RunMode::CountOnly)
        .await
        .unwrap_or_else(|e| panic!("{}: {e}", stage.def().name));
    (prepared.functions, prepared.params)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_undeclared_setting_does_not_reach_a_stage() {
    let dir = tempfile::tempdir().expect("tempdir");
    let lake = open_lake(&dir.path().join("lake")).await;
    let base: Settings = vec![(FLAVOURS.0, FLAVOURS.1.to_string())];
    let pipeline = open(&lake, &base).await;
    // The comparison sees a stage only if its functions compare by value.
    let again = open(&lake, &base).await;
    for stage in pipeline.stages() {
        let name = stage.def().name;
        assert!(
            prepared(&pipeline, name).await == prepared(&again, name).await,
            "{name}: two runs with the same settings prepare functions that compare unequal; \
             compare them by what they compute, not by instance"
        );
    }
    let mut undeclared = Vec::new();
    for (key, value) in OTHER_VALUES {
        let mut changed = base.clone();
        changed.push((key, value.to_string()));
        let other = open(&lake, &changed).await;
        for stage in pipeline.stages() {
            let def = stage.def();
            if def.settings.contains(key) {
                continue;
            }
            if prepared(&pipeline, def.name).await != prepared(&other, def.name).await {
                undeclared.push(format!("{} reads {key} without declaring it", def.name));
            }
        }
    }
    assert!(undeclared.is_empty(), "{}", undeclared.join("\n"));
}

/// Every row of every table a stage of `pipeline` writes, sorted, by table.
async fn tables(lake: &Lake, pipeline: &Pipeline) -> BTreeMap<&'static str, Vec<String>> {
    let mut out = BTreeMap::new();
    for stage in pipeline.stages() {
        for table in stage.def().outputs {
            // The verdict cache is append-only; quarantine rows name their run.
            if matches!(*table, "qa_judgements" | "llm_calls" | "quarantine") {
                continue;
            }
            out.insert(
                *table,
                json_lines(lake, &format!("SELECT * FROM {table}")).await,
            );
        }
    }
    out
}

/// `cxrlake plan` on `lake` with `key = value` over its kept settings, and its pipeline.
async fn plan_with(lake: &Lake, key: &str, value: &str) -> (Pipeline, Plan) {
    let pipeline = Pipeline::builder(lake.clone(), cxrlake_flavours::ALL)
        .set(key, value)
        .expect("set")
        .open()
        .await
        .expect("pipeline");
    let plan = pipeline.plan(false).await.expect("plan");
    (pipeline, plan)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn changed_settings_make_their_stages_stale_and_the_rerun_equals_a_fresh_build() {
    let dir = tempfile::tempdir().expect("tempdir");
    let corpus = dir.path().join("corpus");
    generate(&SynthOptions::new(8, 3, &corpus)).expect("synth");
    let base_dir = dir.path().join("base");
    let lake = open_lake(&base_dir).await;
    ingest(&lake, &IngestOptions::new(vec![corpus]))
        .await
        .expect("ingest");
    let flavours: Settings = vec![(FLAVOURS.0, FLAVOURS.1.to_string())];
    let built = open(&lake, &flavours).await;
    built.run(true, &mut |_| {}).await.expect("build");

    // Each changed setting: every stage declaring it is stale, and says why.
    for (key, value) in OTHER_VALUES {
        let (pipeline, plan) = plan_with(&lake, key, value).await;
        for stage in pipeline.stages() {
            let def = stage.def();
            if !def.settings.contains(key) {
                continue;
            }
            let entry = plan.stage(def.name).expect("planned");
            let named = |r: &String| r.contains(key) || r.contains(&key.replace('_', " "));
            assert!(
                !entry.scope.is_empty() && entry.reasons.iter().any(named),
                "{key} = {value}: {} is not stale\n{plan}",
                def.name
            );
        }
    }

    // A synonym-only edit of the definitions: the flavours' per-study stages recompute only the
    // studies whose scene graphs may change, as the core stages do (not every study).
    let refdefs = edited(
        &dir.path().join("synonym-edit"),
        "refdefs",
        &[(
            "findings.toml",
            r#"synonyms = ["effusion", "effusions", "pleural effusions", "pleural fluid", "hydrothorax"]"#,
            r#"synonyms = ["effusions", "pleural effusions", "pleural fluid", "hydrothorax"]"#,
        )],
    );
    let (pipeline, plan) = plan_with(&lake, "refdefs", &refdefs.display().to_string()).await;
    for stage in pipeline.stages() {
        let def = stage.def();
        if def.coverage == cxrlake_pipeline::Coverage::PerStudy
            && cxrlake_pipeline::flavours::owning(cxrlake_flavours::ALL, def.name).is_some()
        {
            let entry = plan.stage(def.name).expect("planned");
            assert!(
                !entry.scope.is_all(),
                "{}: a synonym edit recomputes every study\n{plan}",
                def.name
            );
        }
    }

    // All of them at once: the incremental run equals a full one.
    let changed: Settings = OTHER_VALUES
        .iter()
        .map(|(k, v)| (*k, v.to_string()))
        .collect();
    let full_dir = dir.path().join("full");
    crate::incremental::copy_dir(&base_dir, &full_dir);
    let full = Lake::open_url(full_dir.to_str().expect("utf8")).expect("open");
    let mut builder = Pipeline::builder(lake.clone(), cxrlake_flavours::ALL);
    let mut full_builder = Pipeline::builder(full.clone(), cxrlake_flavours::ALL);
    for (key, value) in &changed {
        builder = builder.set(key, value).expect("set");
        full_builder = full_builder.set(key, value).expect("set");
    }
    let incremental = builder.open().await.expect("pipeline");
    incremental
        .run(false, &mut |_| {})
        .await
        .expect("incremental run");
    let rebuilt = full_builder.open().await.expect("pipeline");
    rebuilt.run(true, &mut |_| {}).await.expect("full run");
    let (a, b) = (
        tables(&lake, &incremental).await,
        tables(&full, &rebuilt).await,
    );
    for (table, rows) in &b {
        assert_eq!(
            a.get(table),
            Some(rows),
            "{table}: the incremental run differs from the full one"
        );
    }

    // Up to date afterwards, and the lake remembers what it was built with.
    let again = Pipeline::open(lake.clone(), cxrlake_flavours::ALL)
        .await
        .expect("pipeline");
    let plan = again.plan(false).await.expect("plan");
    assert!(
        plan.stages.iter().all(|s| s.scope.is_empty()),
        "up to date after the run\n{plan}"
    );
    for (key, value) in &changed {
        let stored = again
            .stored()
            .and_then(|s| s.value(key))
            .unwrap_or_default();
        assert_eq!(stored, *value, "{key} as stored");
    }
}

/// A setting's bad value is refused before any work by an error that names its key
/// (`PipelineError::Setting`), for the core's settings and each flavour's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bad_setting_is_refused_naming_its_key() {
    let dir = tempfile::tempdir().expect("tempdir");
    let lake = open_lake(dir.path()).await;
    for (key, value) in [
        ("embedder", "word2vec"),
        ("vqa_lint", "sometimes"),
        ("rexvqa_duplicate_threshold", "1.5"),
        ("givcxr_split", "a:b:c"),
        ("givcxr_bbox_small", "0.9"),
        ("generator", "oracle"),
    ] {
        let pipeline = Pipeline::builder(lake.clone(), cxrlake_flavours::ALL)
            .set(key, value)
            .expect("a value of the right type");
        let error = match pipeline.open().await {
            Ok(pipeline) => pipeline.validate().expect_err(key),
            Err(error) => error,
        };
        match &error {
            cxrlake_pipeline::PipelineError::Setting { key: named, .. } => {
                assert_eq!(*named, key, "{error}")
            }
            other => panic!("{key} = {value}: {other:?}"),
        }
        assert!(error.to_string().contains(key), "{error}");
    }
}

/// Every stage names its SQL file as it is in the repository (errors and plans show it).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_stage_names_its_sql_file() {
    let dir = tempfile::tempdir().expect("tempdir");
    let lake = open_lake(dir.path()).await;
    let pipeline = open(&lake, &vec![(FLAVOURS.0, FLAVOURS.1.to_string())]).await;
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    for stage in pipeline.stages() {
        let def = stage.def();
        let text = std::fs::read_to_string(root.join(def.file))
            .unwrap_or_else(|e| panic!("stage {}: {}: {e}", def.name, def.file));
        assert_eq!(
            text, def.sql,
            "stage {}: {} is not its SQL",
            def.name, def.file
        );
    }
}
