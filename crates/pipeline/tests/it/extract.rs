//! The `extract` stage: the rules backend over a synthetic corpus, and the LLM backend against a
//! loopback server (cache replay, resume after an interrupted run, parse errors quarantined).

use std::sync::Arc;
use std::time::Duration;

use cxrlake_ingest::{IngestOptions, ingest};
use cxrlake_lake::Lake;
use cxrlake_pipeline::{Fingerprint, PipelineError, RunMode, Scope, StageReport, statements};
use cxrlake_synth::{SynthOptions, generate};
use datafusion::arrow::array::{ArrayRef, RecordBatch, StringArray};

use crate::common::{number, pipeline, strings};

/// Runs extract with these settings.
async fn run(lake: &Lake, settings: &[(String, String)]) -> Result<StageReport, PipelineError> {
    pipeline(lake, &pairs(settings))
        .await
        .run_stage("extract", RunMode::Write)
        .await
}

/// `settings` as the `(key, value)` pairs the pipeline takes.
fn pairs(settings: &[(String, String)]) -> Vec<(&str, &str)> {
    settings
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect()
}

/// The rules backend.
fn rules() -> Vec<(String, String)> {
    Vec::new()
}
use crate::llm_server::ExtractionServer;

#[test]
fn the_stage_sql_has_named_steps_and_tables() {
    let def = &cxrlake_pipeline::extract::DEF;
    let outputs = |t: &str| def.outputs.contains(&t);
    let parsed = statements("sql/extract.sql", def.sql, &outputs).expect("statements");
    let tables: Vec<_> = parsed
        .iter()
        .filter(|s| s.is_table)
        .map(|s| s.name.as_str())
        .collect();
    assert_eq!(
        tables,
        ["sentences", "observations_raw", "indications", "quarantine"]
    );
    assert!(statements("sql/extract.sql", "-- @view x\nSELECT 1", &outputs).is_err());
    assert!(statements("sql/extract.sql", "-- @table\nSELECT 1", &outputs).is_err());
    assert!(statements("sql/extract.sql", "-- @table qa\nSELECT 1", &outputs).is_err());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rules_backend_extracts_the_synthetic_corpus() {
    let dir = tempfile::tempdir().expect("tempdir");
    let corpus = dir.path().join("corpus");
    generate(&SynthOptions::new(30, 5, &corpus)).expect("synth");
    let lake = crate::common::open_lake(&dir.path().join("lake")).await;
    ingest(&lake, &IngestOptions::new(vec![corpus]))
        .await
        .expect("ingest");

    let summary = run(&lake, &rules()).await.expect("extract");
    assert_eq!(summary.units, (30, "studies"));
    assert_eq!(summary.metric("failures"), 0, "{summary}");
    assert!(summary.rows("sentences") >= 30 * 4, "{summary}");
    assert!(summary.rows("observations_raw") >= 30, "{summary}");
    assert!(!summary.metrics.contains_key("llm_requested"));

    // Every report has sentences, every study with FINDINGS has observations.
    assert_eq!(
        number(&lake, "SELECT count(DISTINCT study_id) FROM sentences").await,
        30
    );
    let extractors = strings(&lake, "SELECT DISTINCT extractor FROM observations_raw").await;
    assert_eq!(extractors, [cxrlake_extract::rules::RULES_VERSION]);
    // Ids follow appendix D: S01…, O01…, children O01.01 with their parent.
    let bad_ids = number(
        &lake,
        "SELECT count(*) FROM observations_raw WHERE NOT regexp_like(obs_id, '^O[0-9]{2}(\\.[0-9]{2})?$') \
         OR (parent_obs_id IS NULL) <> (strpos(obs_id, '.') = 0)",
    )
    .await;
    assert_eq!(bad_ids, 0);
    assert_eq!(
        number(
            &lake,
            "SELECT count(*) FROM sentences WHERE NOT regexp_like(sent_id, '^S[0-9]{2,}$')"
        )
        .await,
        0
    );
    // Negative and positive observations both occur (the corpus writes negations and findings).
    let probabilities = strings(
        &lake,
        "SELECT DISTINCT probability FROM observations_raw WHERE probability IS NOT NULL ORDER BY 1",
    )
    .await;
    assert!(
        probabilities.contains(&"negative".to_string()),
        "{probabilities:?}"
    );
    assert!(
        probabilities.contains(&"positive".to_string()),
        "{probabilities:?}"
    );
    // Observations only come from FINDINGS/IMPRESSION sentences of their cluster.
    let foreign = number(
        &lake,
        "SELECT count(*) FROM (SELECT o.study_id, unnest(o.sent_ids) AS sent_id FROM observations_raw o) x \
         JOIN sentences s USING (study_id, sent_id) WHERE s.section_type NOT IN ('FINDINGS', 'IMPRESSION')",
    )
    .await;
    assert_eq!(foreign, 0);
    // Indications exist for studies with an INDICATION section, with an answer.
    let with_indication = number(
        &lake,
        "SELECT count(DISTINCT study_id) FROM sentences WHERE section_type = 'INDICATION'",
    )
    .await;
    assert!(with_indication > 0);
    assert_eq!(
        number(
            &lake,
            "SELECT count(*) FROM indications WHERE indication_summary IS NOT NULL"
        )
        .await,
        with_indication
    );

    // A second run gives the same rows.
    let before = strings(
        &lake,
        "SELECT study_id || obs_id || name FROM observations_raw ORDER BY 1",
    )
    .await;
    let again = run(&lake, &rules()).await.expect("rerun");
    assert_eq!(again.rows, summary.rows);
    let after = strings(
        &lake,
        "SELECT study_id || obs_id || name FROM observations_raw ORDER BY 1",
    )
    .await;
    assert_eq!(before, after);
    // The commit carries the stage and fingerprint.
    let history = lake
        .history("observations_raw", Some(1))
        .await
        .expect("history");
    let info = history[0].stage.as_ref().expect("commit info");
    assert_eq!(info.stage, "extract");
    let fingerprint = Fingerprint::from_json(&info.fingerprint).expect("fingerprint");
    assert_eq!(
        fingerprint.definitions["extractor"],
        cxrlake_extract::rules::RULES_VERSION
    );
}

const REPORTS: [(&str, &str, &str); 3] = [
    (
        "p10000001",
        "s50000001",
        "FINAL REPORT\nEXAMINATION: CHEST (PA AND LAT)\nINDICATION: ___F with cough, eval for pneumonia\nCOMPARISON: None.\nFINDINGS: Small left pleural effusion.\nNo pneumothorax.\nIMPRESSION: Small left effusion.\n",
    ),
    (
        "p10000002",
        "s50000002",
        "FINAL REPORT\nINDICATION: ___M with dyspnea\nFINDINGS: GARBLE the lungs are clear.\nHeart size is normal.\n",
    ),
    (
        "p10000003",
        "s50000003",
        "FINAL REPORT\nFINDINGS: Moderate cardiomegaly.\n",
    ),
];

async fn lake_with_reports(dir: &std::path::Path) -> Lake {
    let lake = crate::common::open_lake(&dir.join("lake")).await;
    let column = |index: usize| -> ArrayRef {
        let values = REPORTS.iter().map(|r| Some([r.0, r.1, r.2][index]));
        Arc::new(values.collect::<StringArray>())
    };
    let batch = RecordBatch::try_new(
        cxrlake_schemas::sources::reports(),
        vec![column(0), column(1), column(2), column(1), column(1)],
    )
    .expect("batch");
    lake.write("reports")
        .execute(vec![batch])
        .await
        .expect("write reports");
    lake
}

/// The LLM backend at `endpoint` (model `test-model`, the embedded prompts) with `extra`
/// settings.
fn llm_backend(endpoint: &str, extra: &[(&str, &str)]) -> Vec<(String, String)> {
    let mut settings = vec![
        ("llm_endpoint".to_string(), endpoint.to_string()),
        ("llm_model".to_string(), "test-model".to_string()),
        ("extractor".to_string(), "llm".to_string()),
    ];
    settings.extend(extra.iter().map(|(k, v)| (k.to_string(), v.to_string())));
    settings
}

fn llm_options(server: &ExtractionServer, max_requests: Option<u64>) -> Vec<(String, String)> {
    let max = max_requests.unwrap_or(0).to_string();
    llm_backend(
        &server.endpoint(),
        &[
            ("llm_concurrency", "4"),
            ("llm_max_retries", "0"),
            ("llm_max_requests", max.as_str()),
        ],
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn llm_backend_caches_resumes_and_quarantines_parse_errors() {
    let dir = tempfile::tempdir().expect("tempdir");
    let lake = lake_with_reports(dir.path()).await;
    let server = ExtractionServer::start(Duration::from_millis(5), usize::MAX).await;

    // A run cut short by its request budget fails, but keeps what was answered.
    let cut = run(&lake, &llm_options(&server, Some(2))).await;
    let error = cut
        .expect_err("a spent budget must fail the stage")
        .to_string();
    assert!(error.contains("budget exhausted"), "{error}");
    assert_eq!(server.answers(), 2);

    let summary = run(&lake, &llm_options(&server, None))
        .await
        .expect("extract");
    assert_eq!(
        server.repeated(),
        0,
        "a resumed run asked an answered prompt again"
    );
    assert_eq!(summary.metric("llm_cache_hits"), 2, "{summary}");
    assert_eq!(
        summary.metric("llm_sent") as usize + 2,
        server.answers(),
        "{summary}"
    );
    // 3 sentence prompts + one per FINDINGS/IMPRESSION cluster + 2 indication prompts.
    assert!(server.answers() >= 3 + 4 + 2, "{summary}");

    let extractor = strings(&lake, "SELECT DISTINCT extractor FROM sentences").await;
    assert_eq!(extractor.len(), 1);
    assert!(
        extractor[0].starts_with("llm:test-model@prompts-"),
        "{extractor:?}"
    );
    // The unparseable cluster answer is quarantined with the answer; its siblings are not lost.
    let quarantined = strings(
        &lake,
        "SELECT source || ' ' || location || ' ' || CAST(raw AS VARCHAR) FROM quarantine WHERE stage = 'extract'",
    )
    .await;
    assert_eq!(quarantined.len(), 1, "{quarantined:?}");
    assert!(
        quarantined[0].starts_with("llm:observations s50000002/"),
        "{quarantined:?}"
    );
    assert!(quarantined[0].contains("cannot help"), "{quarantined:?}");
    assert_eq!(summary.metric("failures"), 1);
    let names = strings(
        &lake,
        "SELECT name FROM observations_raw WHERE study_id = 's50000002'",
    )
    .await;
    assert_eq!(names, ["Heart size is normal"]);
    let indications = number(&lake, "SELECT count(*) FROM indications").await;
    assert_eq!(indications, 2);
    let answered = number(
        &lake,
        "SELECT count(*) FROM llm_calls WHERE response IS NOT NULL",
    )
    .await;
    assert_eq!(answered as usize, server.answers());

    // A re-run sends only the unusable answer again (not replayed from llm_calls) and writes the
    // same rows.
    let before = server.answers();
    let again = run(&lake, &llm_options(&server, None))
        .await
        .expect("rerun");
    assert_eq!(server.answers(), before + 1, "{again}");
    assert_eq!(again.rows, summary.rows);
    assert_eq!(again.metric("llm_sent"), 1);
    assert_eq!(again.metric("llm_rejected"), 1);
}

/// A lake of [`REPORTS`] extracted by the rules backend, with its sentence count.
async fn extracted_by_rules(dir: &std::path::Path) -> (Lake, i64) {
    let lake = lake_with_reports(dir).await;
    run(&lake, &rules()).await.expect("rules");
    let sentences = number(&lake, "SELECT count(*) FROM sentences").await;
    assert!(sentences > 0);
    (lake, sentences)
}

/// What `plan` says extract recomputes with `settings`, and why.
async fn extract_plan(lake: &Lake, settings: &[(String, String)]) -> (Scope, Vec<String>) {
    let plan = pipeline(lake, &pairs(settings))
        .await
        .plan(false)
        .await
        .expect("plan");
    let extract = plan.stage("extract").expect("extract");
    (extract.scope.clone(), extract.reasons.clone())
}

/// An LLM that answers nothing usable must not leave a lake that claims to be up to date over
/// missing rows: every answer unusable fails the step (the earlier rows stay), more than
/// `llm_max_failure_share` fails it too, and below that the studies of the unusable answers
/// stay stale in `plan` until a plain run asks them again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unusable_llm_answers_fail_the_step_or_keep_their_studies_stale() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (lake, sentences) = extracted_by_rules(dir.path()).await;

    let prose = ExtractionServer::start_answering(
        |_| "I am sorry, I cannot help with that.".to_string(),
        Duration::ZERO,
        usize::MAX,
    )
    .await;
    let error = run(&lake, &llm_options(&prose, None))
        .await
        .expect_err("every answer unusable")
        .to_string();
    assert!(
        error.contains("every LLM answer of step 'extracted_sentences' was unusable (3 answers"),
        "{error}"
    );
    assert_eq!(
        number(&lake, "SELECT count(*) FROM sentences").await,
        sentences,
        "the rows of the earlier run stay"
    );

    // One cluster's answer of s50000002 is unparseable (GARBLE).
    let server = ExtractionServer::start(Duration::from_millis(1), usize::MAX).await;
    let mut strict = llm_options(&server, None);
    strict.push(("llm_max_failure_share".into(), "0.1".into()));
    let error = run(&lake, &strict)
        .await
        .expect_err("more unusable answers than allowed")
        .to_string();
    assert!(
        error.contains("LLM answers of step 'extracted_observations' were unusable")
            && error.contains("more than llm_max_failure_share = 0.1"),
        "{error}"
    );

    let settings = llm_options(&server, None);
    run(&lake, &settings).await.expect("within the share");
    let unfinished = Scope::Studies(["s50000002".to_string()].into());
    let (scope, reasons) = extract_plan(&lake, &settings).await;
    assert_eq!(scope, unfinished, "{reasons:?}");
    assert!(
        reasons
            .iter()
            .any(|r| r == "1 study whose LLM answers the last run could not use"),
        "{reasons:?}"
    );
    let before = server.answers();
    let rerun = pipeline(&lake, &pairs(&settings))
        .await
        .run(false, &mut |_| {})
        .await
        .expect("a plain run");
    assert_eq!(rerun.stage("extract").expect("extract").scope, unfinished);
    assert_eq!(
        server.answers(),
        before + 1,
        "only the unusable answer is asked again"
    );
    // Unusable again: not counted against the share (the run succeeded), still stale.
    assert_eq!(extract_plan(&lake, &settings).await.0, unfinished);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dead_endpoint_fails_the_stage_and_keeps_earlier_tables() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (lake, sentences) = extracted_by_rules(dir.path()).await;

    // Nothing listens on the port of a server that was started and dropped.
    let endpoint = ExtractionServer::start(Duration::ZERO, usize::MAX)
        .await
        .endpoint();
    let options = llm_backend(&endpoint, &[("llm_max_retries", "0")]);
    let error = run(&lake, &options).await.expect_err("down").to_string();
    assert!(
        error.contains("every LLM call of step 'extracted_sentences' failed (3 calls"),
        "{error}"
    );
    assert_eq!(
        number(&lake, "SELECT count(*) FROM sentences").await,
        sentences
    );
    // The failures are on record with their attempts, and will be sent again by the next run.
    let failed = "SELECT count(*) FROM llm_calls WHERE error IS NOT NULL AND attempts = 1";
    assert_eq!(number(&lake, failed).await, 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn remote_llm_endpoints_are_refused_without_permission() {
    let dir = tempfile::tempdir().expect("tempdir");
    let lake = lake_with_reports(dir.path()).await;
    let options = llm_backend("http://203.0.113.7:8000/v1", &[]);
    let error = run(&lake, &options).await.expect_err("refused").to_string();
    assert!(error.contains("refusing LLM endpoint"), "{error}");
    assert_eq!(number(&lake, "SELECT count(*) FROM sentences").await, 0);
}

const CHILD_LAKE: &str = "CXRLAKE_EXTRACT_CHILD_LAKE";
const CHILD_ENDPOINT: &str = "CXRLAKE_EXTRACT_CHILD_ENDPOINT";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "run as a child process by a_killed_llm_run_resumes_without_repeating_answered_calls"]
async fn child_llm_extract() {
    let (Ok(root), Ok(endpoint)) = (std::env::var(CHILD_LAKE), std::env::var(CHILD_ENDPOINT))
    else {
        return;
    };
    let lake = Lake::open_url(&root).expect("open");
    let options = llm_backend(&endpoint, &[("llm_concurrency", "2")]);
    let _ = run(&lake, &options).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_llm_run_resumes_without_repeating_answered_calls() {
    let dir = tempfile::tempdir().expect("tempdir");
    let lake = lake_with_reports(dir.path()).await;
    // 3 sentence answers, then 1 observation answer; the next requests hang until the kill.
    let server = ExtractionServer::start(Duration::from_millis(5), 4).await;
    let mut child = std::process::Command::new(std::env::current_exe().expect("test binary"))
        .args([
            "--exact",
            "extract::child_llm_extract",
            "--ignored",
            "--nocapture",
        ])
        .env(CHILD_LAKE, lake.root().as_str())
        .env(CHILD_ENDPOINT, server.endpoint())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("spawn child");
    let deadline = std::time::Instant::now() + Duration::from_secs(120);
    while server.answers() < 4 {
        assert!(
            std::time::Instant::now() < deadline,
            "the child never got 4 answers"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // Let the child journal the last answer, then SIGKILL it with requests in flight.
    tokio::time::sleep(Duration::from_millis(500)).await;
    child.kill().expect("kill");
    child.wait().expect("reap");

    server.unlimit();
    let summary = run(&lake, &llm_options(&server, None))
        .await
        .expect("resume");
    assert_eq!(
        server.repeated(),
        0,
        "an answered prompt was asked again: {summary}"
    );
    assert_eq!(summary.metric("llm_cache_hits"), 4, "{summary}");
    assert_eq!(summary.metric("failures"), 1, "{summary}");
}
