//! judge → grade on a small synthetic lake: the heuristic judge rates each distinct input once
//! (and nothing on a rerun), grade fills every judged column in rating order; the LLM judge
//! against a loopback server: unparseable judgements make pairs `not rated`, never a crash, and
//! a rerun sends nothing.

use std::time::Duration;

use cxrlake_lake::Lake;
use cxrlake_pipeline::{Fingerprint, RunMode};

use crate::common::{number, pipeline, qa_lake, run_stage, strings};
use crate::llm_server::{ExtractionServer, last_between};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn heuristic_judge_and_grade() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (lake, _) = qa_lake(dir.path(), 24, 11).await;
    let questions = number(&lake, "SELECT count(*) FROM qa").await as usize;
    let options = [("chunk_patients", "7")];

    // A plan counts without writing.
    let plan = pipeline(&lake, &options)
        .await
        .run_stage("judge", RunMode::CountOnly)
        .await
        .expect("plan");
    assert_eq!(number(&lake, "SELECT count(*) FROM qa_judgements").await, 0);

    let judged = run_stage(&lake, "judge", &options).await;
    let judged_inputs = judged.metric("judged") as usize;
    assert!(judged.chunks >= 2, "{judged}");
    assert_eq!(judged.metric("questions") as usize, questions);
    assert_eq!(
        judged.metric("requests") as usize,
        5 * questions,
        "{judged}"
    );
    assert_eq!(
        judged_inputs,
        plan.metric("judged") as usize,
        "the plan counts what the run judges"
    );
    assert_eq!(judged.metric("unusable"), 0, "{judged}");
    // Content dedup across chunks: each distinct input once, far fewer than the requests (the
    // ratio falls with the lake's size: 16.5 % at 60 studies, ~26 % at these 24).
    assert!(
        (judged_inputs as f64) < 0.4 * judged.metric("requests") as f64,
        "{judged}"
    );
    assert_eq!(
        number(&lake, "SELECT count(*) FROM qa_judgements").await as usize,
        judged_inputs
    );
    assert_eq!(
        number(
            &lake,
            "SELECT count(*) FROM (SELECT DISTINCT judge, criterion, content_hash FROM qa_judgements)"
        )
        .await as usize,
        judged_inputs,
        "one verdict per (judge, criterion, content hash)"
    );
    // Question clarity reads the question text only: one verdict per distinct question text.
    assert_eq!(
        number(
            &lake,
            "SELECT count(*) FROM qa_judgements WHERE criterion = 'question_clarity'"
        )
        .await,
        number(&lake, "SELECT count(DISTINCT question) FROM qa").await
    );
    // A rerun judges nothing.
    let again = run_stage(&lake, "judge", &options).await;
    assert_eq!(again.metric("judged"), 0, "{again}");

    let graded = run_stage(&lake, "grade", &options).await;
    assert_eq!(graded.rows("qa"), questions, "{graded}");
    let source = graded_source(&lake).await;
    assert_eq!(
        number(&lake, "SELECT count(*) FROM qa").await as usize,
        questions
    );
    assert_eq!(
        number(&lake, "SELECT count(*) FROM qa WHERE rating IS NULL OR rating = 'not rated' OR judge <> 'heuristic-1'").await,
        0,
        "every pair is rated by the heuristic judge"
    );
    // rating_rank is the rating's rank, and ratings compare in rating order.
    assert_eq!(
        number(
            &lake,
            "SELECT count(*) FROM qa WHERE rating_rank <> rating_rank(rating)"
        )
        .await,
        0
    );
    assert_eq!(
        number(&lake, "SELECT count(*) FROM qa WHERE rating >= 'A'").await,
        number(&lake, "SELECT count(*) FROM qa WHERE rating_rank >= 4").await
    );
    assert!(number(&lake, "SELECT count(*) FROM qa WHERE rating >= 'A'").await > 0);
    assert!(number(&lake, "SELECT count(*) FROM qa WHERE rating < 'A'").await > 0);
    // The rating is never better than the text rating, nor than any part's.
    assert_eq!(
        number(
            &lake,
            "SELECT count(*) FROM qa WHERE rating > question_quality['rating']"
        )
        .await,
        0
    );
    assert_eq!(
        number(
            &lake,
            "SELECT count(*) FROM (SELECT unnest(answers) AS a FROM qa) \
             WHERE a['answer_quality']['rating'] IS NULL",
        )
        .await,
        0,
        "every answer part is graded"
    );
    // Table 11: an issue level of DISCARDED caps a pair at D, fallback localization at B.
    assert_eq!(
        number(
            &lake,
            "SELECT count(*) FROM qa WHERE extraction_quality['general_issue_level'] = 'DISCARDED' AND rating > 'D'"
        )
        .await,
        0
    );
    // Table 12: a template negative for an unmentioned finding is at most A+.
    assert_eq!(
        number(
            &lake,
            "SELECT count(*) FROM (SELECT unnest(answers) AS a FROM qa) \
             WHERE a['answer_quality']['entailment'] = 'ALIGNED_NEGATIVE_NOT_MENTIONED' \
             AND to_rating(a['answer_quality']['rating']) > 'A+'"
        )
        .await,
        0
    );
    let levels = strings(
        &lake,
        "SELECT DISTINCT a['answer_quality']['entailment'] FROM (SELECT unnest(answers) AS a FROM qa) ORDER BY 1",
    )
    .await;
    assert!(
        levels.contains(&"ALIGNED_MENTIONED".to_string()),
        "{levels:?}"
    );

    // Grading again reads the qa stage's version, not its own output: same rows, same ratings.
    let regraded = run_stage(&lake, "grade", &options).await;
    assert_eq!(regraded.rows("qa"), questions);
    assert_eq!(
        cxrlake_pipeline::grade::ratings(&regraded),
        cxrlake_pipeline::grade::ratings(&graded)
    );
    assert!(!cxrlake_pipeline::grade::ratings(&graded).is_empty());
    assert_eq!(graded_source(&lake).await, source);
}

/// The `qa` version the newest grade commit read.
async fn graded_source(lake: &Lake) -> u64 {
    let commit = lake
        .history("qa", Some(1))
        .await
        .expect("history")
        .remove(0);
    let stage = commit.stage.expect("grade commit");
    assert_eq!(stage.stage, "grade");
    Fingerprint::from_json(&stage.fingerprint)
        .expect("fingerprint")
        .inputs["qa"]
}

/// Answers the judge prompts: every part OPTIMAL/aligned, except that question clarity of a
/// question naming a pneumothorax gets prose without a level. A batched prompt gets one
/// `**Item N:**` block per item, the items in reverse order.
pub(crate) fn judge_answer(prompt: &str) -> String {
    if prompt.contains("# Several items") {
        return batch_answer(prompt);
    }
    let count: usize = last_between(prompt, "Rating (provide ", " ratings)")
        .parse()
        .unwrap_or(0);
    let question = last_between(prompt, "Question (to rate):", "Rating (your task):");
    rate(prompt, count, question)
}

/// The rating of one item of `prompt`'s criterion with `count` answer parts.
fn rate(prompt: &str, count: usize, question: &str) -> String {
    let parts = |label: &str| {
        (1..=count)
            .map(|i| format!("- **[{i:02}]** {label}"))
            .collect::<Vec<_>>()
            .join("\n")
    };
    if prompt.contains("known as entailment verification") {
        return format!(
            "Rating (provide {count} ratings):\n{}",
            parts("ALIGNED_MENTIONED")
        );
    }
    if prompt.contains("relevant to answer the question or is redundant") {
        return parts("RELEVANT_MAIN_ANSWER");
    }
    if prompt.contains("clarity of each sentence of the Answer") {
        return parts("OPTIMAL");
    }
    if prompt.contains("contains all the necessary information") {
        return "all facts are there -> FULLY_COMPLETE".into();
    }
    if question.contains("pneumothorax") {
        return "I would rather not say.".into();
    }
    "clear -> OPTIMAL".into()
}

/// The answer to a batched prompt: its `Item N:` blocks after `# Proceed`, rated in reverse.
fn batch_answer(prompt: &str) -> String {
    let items = prompt
        .rsplit_once("# Proceed with the following")
        .map_or("", |(_, items)| items);
    let mut blocks: Vec<(usize, Vec<&str>)> = Vec::new();
    for line in items.lines() {
        if line.starts_with("Rating (one block per item") {
            break;
        }
        let number = line
            .strip_prefix("Item ")
            .and_then(|rest| rest.strip_suffix(':'))
            .and_then(|n| n.parse().ok());
        match (number, blocks.last_mut()) {
            (Some(n), _) => blocks.push((n, Vec::new())),
            (None, Some((_, lines))) => lines.push(line),
            (None, None) => {}
        }
    }
    blocks
        .iter()
        .rev()
        .map(|(n, lines)| {
            let count = lines.iter().filter(|l| l.starts_with('[')).count();
            let question = lines
                .iter()
                .find_map(|l| l.strip_prefix("Question (to rate):"))
                .unwrap_or("");
            format!("**Item {n}:**\n{}", rate(prompt, count, question))
        })
        .collect::<Vec<_>>()
        .join("\n\n")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn llm_judge_with_unparseable_answers() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (lake, _) = qa_lake(dir.path(), 6, 11).await;
    // A judge whose endpoint is down stops and writes nothing (nothing listens on the port of a
    // server that was started and dropped).
    let endpoint = ExtractionServer::start_answering(judge_answer, Duration::ZERO, usize::MAX)
        .await
        .endpoint();
    let down = [
        ("llm_endpoint", endpoint.as_str()),
        ("llm_model", "judge-model"),
        ("judge", "llm"),
        ("llm_max_retries", "0"),
    ];
    let error = pipeline(&lake, &down)
        .await
        .run_stage("judge", RunMode::Write)
        .await
        .expect_err("down")
        .to_string();
    assert!(
        error.contains("every LLM call of step 'qa_judgements' failed"),
        "{error}"
    );
    assert_eq!(number(&lake, "SELECT count(*) FROM qa_judgements").await, 0);

    let server =
        ExtractionServer::start_answering(judge_answer, Duration::from_millis(0), usize::MAX).await;
    let endpoint = server.endpoint();
    let options = [
        ("llm_endpoint", endpoint.as_str()),
        ("llm_model", "judge-model"),
        ("judge", "llm"),
        ("llm_concurrency", "8"),
        // One QA pair per call: `llm_judge_batches_calls` covers batched calls.
        ("judge_batch", "1"),
    ];
    let judged = run_stage(&lake, "judge", &options).await;
    let questions = number(&lake, "SELECT count(*) FROM qa").await as usize;
    assert_eq!(judged.metric("requests") as usize, 5 * questions);
    assert_eq!(
        server.answers(),
        judged.metric("judged") as usize,
        "one call per distinct input"
    );
    assert_eq!(server.repeated(), 0);
    assert_eq!(
        judged.metric("llm_requested"),
        judged.metric("judged"),
        "each verdict computed once, not once per field it unnests to"
    );
    let pneumothorax = number(
        &lake,
        "SELECT count(DISTINCT question) FROM qa WHERE question LIKE '%pneumothorax%'",
    )
    .await as usize;
    assert!(
        pneumothorax > 0,
        "the sampled questions ask about pneumothorax"
    );
    assert_eq!(judged.metric("unusable") as usize, pneumothorax, "{judged}");

    let graded = run_stage(&lake, "grade", &options).await;
    assert!(
        graded
            .metric_text("judge")
            .starts_with("llm:judge-model@judge-prompts-2+"),
        "{graded}"
    );
    assert_eq!(
        number(&lake, "SELECT count(*) FROM qa WHERE rating = 'not rated'").await,
        number(
            &lake,
            "SELECT count(*) FROM qa WHERE question LIKE '%pneumothorax%'"
        )
        .await,
        "exactly the pairs with an unparseable judgement are not rated"
    );
    assert_eq!(
        number(&lake, "SELECT count(*) FROM qa WHERE rating_rank = 0").await,
        number(&lake, "SELECT count(*) FROM qa WHERE rating = 'not rated'").await
    );

    // A rerun asks again only what was unusable: the unusable answers are not replayed from
    // llm_calls but sent again, and their failed rows are replaced, not duplicated.
    let rows = number(&lake, "SELECT count(*) FROM qa_judgements").await;
    for run in 1..=2 {
        let before = server.answers();
        let again = run_stage(&lake, "judge", &options).await;
        assert_eq!(again.metric("judged") as usize, pneumothorax, "{again}");
        assert_eq!(
            server.answers(),
            before + pneumothorax,
            "run {run}: only the unusable answers are asked again"
        );
        assert_eq!(
            again.metric("llm_rejected") as usize,
            pneumothorax,
            "{again}"
        );
        assert_eq!(
            number(&lake, "SELECT count(*) FROM qa_judgements").await,
            rows,
            "run {run}: one row per judged input"
        );
        assert_eq!(
            number(
                &lake,
                "SELECT count(*) FROM (SELECT content_hash FROM qa_judgements \
                 GROUP BY content_hash HAVING count(*) > 1)"
            )
            .await,
            0
        );
    }
    assert_eq!(
        number(
            &lake,
            "SELECT count(*) FROM qa_judgements WHERE error IS NOT NULL"
        )
        .await as usize,
        pneumothorax
    );
    // A plain `cxrlake run` plans the judge again while failed verdicts remain.
    let plan = pipeline(&lake, &options)
        .await
        .plan(false)
        .await
        .expect("plan");
    let lines = plan.stage("judge").expect("judge").lines(None).join(" ");
    assert!(
        lines.contains(&format!("{pneumothorax} failed verdicts are asked again")),
        "{lines}"
    );
}

/// The verdicts of the LLM judge on `model`, as `criterion|levels|error` lines in order.
async fn verdicts_of(lake: &Lake, model: &str) -> Vec<String> {
    strings(
        lake,
        &format!(
            "SELECT criterion || '|' || coalesce(array_to_string(levels, ','), '') || '|' || \
             coalesce(error, '') AS line FROM qa_judgements WHERE judge LIKE 'llm:{model}@%' \
             ORDER BY line"
        ),
    )
    .await
}

/// The LLM fault matrix: the judge stage meets each fault of its server on every call, then runs
/// again against the healthy server. A run whose calls all failed stops with an error and writes
/// nothing; the rerun gives exactly the verdicts of a run that met no fault, except after a
/// refusal of the request itself (HTTP 400), which is its answer and is replayed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn llm_fault_matrix() {
    use crate::llm_server::Fault;
    let dir = tempfile::tempdir().expect("tempdir");
    let (lake, _) = qa_lake(dir.path(), 2, 5).await;
    let server = ExtractionServer::start_answering(judge_answer, Duration::ZERO, usize::MAX).await;
    let endpoint = server.endpoint();
    let settings = |model: &str, retries: &str| {
        vec![
            ("llm_endpoint".to_string(), endpoint.clone()),
            ("llm_model".to_string(), model.to_string()),
            ("judge".to_string(), "llm".to_string()),
            ("llm_request_timeout".to_string(), "1".to_string()),
            ("llm_max_retries".to_string(), retries.to_string()),
            // Every input at once: a hang costs one timeout, not one per input.
            ("llm_concurrency".to_string(), "512".to_string()),
        ]
    };
    let run_as = |stage: &'static str, model: String, retries: &'static str| {
        let settings = settings(&model, retries);
        let lake = lake.clone();
        async move {
            let settings: Vec<(&str, &str)> = settings
                .iter()
                .map(|(k, v)| (k.as_str(), v.as_str()))
                .collect();
            pipeline(&lake, &settings)
                .await
                .run_stage(stage, RunMode::Write)
                .await
        }
    };
    let run = |model: String, retries: &'static str| run_as("judge", model, retries);
    run("baseline".into(), "0").await.expect("baseline");
    let baseline = verdicts_of(&lake, "baseline").await;
    assert!(!baseline.is_empty());

    let faults = [
        ("500", Fault::Status(500), "0"),
        ("503", Fault::Status(503), "0"),
        ("429", Fault::Status(429), "1"),
        ("hang", Fault::Hang, "0"),
        ("reset", Fault::Reset, "0"),
        ("truncated", Fault::Truncated, "0"),
        ("wrong-schema", Fault::WrongSchema, "0"),
        ("empty-choices", Fault::EmptyChoices, "0"),
        ("huge", Fault::Huge, "0"),
        ("404", Fault::Status(404), "0"),
        ("redirect", Fault::Redirect, "0"),
        ("400", Fault::Status(400), "0"),
    ];
    let (mut survived, mut recovered) = (0, 0);
    for (name, fault, retries) in faults {
        let model = format!("fault-{name}");
        let started = std::time::Instant::now();
        server.set_fault(fault);
        let error = run(model.clone(), retries)
            .await
            .expect_err(name)
            .to_string();
        assert!(error.contains("every LLM call"), "{name}: {error}");
        assert!(
            verdicts_of(&lake, &model).await.is_empty(),
            "{name}: nothing written"
        );
        survived += 1;
        server.set_fault(Fault::None);
        let before = server.answers();
        match run(model.clone(), retries).await {
            Ok(_) => {
                assert_eq!(verdicts_of(&lake, &model).await, baseline, "{name}");
                recovered += 1;
            }
            Err(error) => {
                assert_eq!(name, "400", "only a refusal of the request stays: {error}");
                assert!(error.to_string().contains("HTTP 400"), "{error}");
                assert_eq!(server.answers(), before, "a refusal is replayed, not sent");
            }
        }
        note(&format!(
            "fault {name}: {:.1} s",
            started.elapsed().as_secs_f64()
        ));
    }
    note(&format!(
        "LLM fault matrix: {survived}/{} faults survived, {recovered} recovered on a rerun \
         (400 replayed as designed)",
        faults.len()
    ));
    assert_eq!((survived, recovered), (faults.len(), faults.len() - 1));

    // Grading with a judge that has no verdicts (a mistyped model) is refused before any write.
    let qa = lake.table("qa").await.expect("qa").version();
    let error = run_as("grade", "judge-modle".into(), "0")
        .await
        .expect_err("unknown judge")
        .to_string();
    assert!(
        error.contains("has no verdicts in qa_judgements"),
        "{error}"
    );
    assert!(
        error.contains("llm:fault-500@"),
        "names the judges there: {error}"
    );
    assert_eq!(lake.table("qa").await.expect("qa").version(), qa);
}

/// `criterion|levels|usable` of every verdict of `judge_like`, sorted.
async fn levels_of(lake: &Lake, judge_like: &str) -> Vec<String> {
    strings(
        lake,
        &format!(
            "SELECT criterion || '|' || coalesce(array_to_string(levels, ','), '') || '|' || \
             CAST(error IS NULL AS VARCHAR) AS line FROM qa_judgements \
             WHERE judge LIKE '{judge_like}' ORDER BY line"
        ),
    )
    .await
}

/// Batched LLM judge calls: the default `judge_batch` sends at most 20 % of the paper's naive
/// 5 calls per QA pair, gives the verdicts and ratings of single-item calls, and an item it
/// cannot read fails alone and is asked again by the next run.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn llm_judge_batches_calls() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (lake, _) = qa_lake(dir.path(), 6, 11).await;
    let server = ExtractionServer::start_answering(judge_answer, Duration::ZERO, usize::MAX).await;
    let endpoint = server.endpoint();
    let options = |model: &'static str, batch: &'static str| {
        vec![
            ("llm_endpoint", endpoint.clone()),
            ("llm_model", model.to_string()),
            ("judge", "llm".to_string()),
            ("llm_concurrency", "8".to_string()),
            ("judge_batch", batch.to_string()),
        ]
    };
    let questions = number(&lake, "SELECT count(*) FROM qa").await as usize;
    let mut measured = Vec::new();
    let mut ratings = Vec::new();
    for (model, batch) in [("single", "1"), ("batched", "8")] {
        let owned = options(model, batch);
        let settings: Vec<(&str, &str)> = owned.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let plan = pipeline(&lake, &settings)
            .await
            .run_stage("judge", RunMode::CountOnly)
            .await
            .expect("plan");
        let before = server.answers();
        let judged = run_stage(&lake, "judge", &settings).await;
        let calls = server.answers() - before;
        assert_eq!(judged.metric("calls") as usize, calls, "{judged}");
        assert_eq!(plan.metric("calls"), judged.metric("calls"), "{plan}");
        let naive = 5 * questions;
        note(&format!(
            "judge_batch {batch}: {questions} QA pairs, {} distinct inputs, {calls} calls \
             ({:.1} % of {naive} naive, {:.2} per QA pair), {:.0} prompt + {:.0} completion \
             tokens per QA pair",
            judged.metric("judged"),
            100.0 * calls as f64 / naive as f64,
            calls as f64 / questions as f64,
            judged.metric("llm_prompt_tokens") as f64 / questions as f64,
            judged.metric("llm_completion_tokens") as f64 / questions as f64,
        ));
        measured.push(calls);
        // The calls are the judge's, in llm_calls under its prompt version.
        let commit = lake
            .history("llm_calls", Some(1))
            .await
            .expect("history")
            .remove(0);
        assert_eq!(commit.stage.expect("stage commit").stage, "judge");
        let id = judged.metric_text("judge");
        assert_eq!(id.ends_with("/batch-8"), batch == "8", "{id}");
        assert!(
            number(
                &lake,
                &format!("SELECT count(*) FROM llm_calls WHERE prompt_version = 'judge-{id}'")
            )
            .await
                > 0
        );
        run_stage(&lake, "grade", &settings).await;
        ratings.push(
            strings(
                &lake,
                "SELECT question_id || '|' || rating AS line FROM qa ORDER BY line",
            )
            .await,
        );
    }
    let naive = 5 * questions;
    assert!(
        measured[1] * 5 <= naive,
        "{} calls for {naive} naive ones",
        measured[1]
    );
    assert!(measured[1] < measured[0]);
    assert_eq!(
        levels_of(&lake, "llm:single@%").await,
        levels_of(&lake, "llm:batched@%").await,
        "batched verdicts equal single-item ones"
    );
    assert_eq!(ratings[0], ratings[1], "and so do the ratings");

    // The unreadable items (question clarity of pneumothorax questions) failed alone, and only
    // they are asked again; their groups' answers are not replayed from llm_calls.
    let pneumothorax = number(
        &lake,
        "SELECT count(DISTINCT question) FROM qa WHERE question LIKE '%pneumothorax%'",
    )
    .await;
    assert!(pneumothorax > 0);
    let failed = |judge: &'static str| {
        let lake = lake.clone();
        async move {
            number(
                &lake,
                &format!(
                    "SELECT count(*) FROM qa_judgements WHERE judge LIKE '{judge}' \
                     AND error IS NOT NULL"
                ),
            )
            .await
        }
    };
    assert_eq!(failed("llm:batched@%").await, pneumothorax);
    let owned = options("batched", "8");
    let settings: Vec<(&str, &str)> = owned.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let rows = number(&lake, "SELECT count(*) FROM qa_judgements").await;
    let before = server.answers();
    let again = run_stage(&lake, "judge", &settings).await;
    assert_eq!(again.metric("judged") as i64, pneumothorax, "{again}");
    assert_eq!(server.answers() - before, again.metric("calls") as usize);
    assert_eq!(again.metric("unusable") as i64, pneumothorax, "{again}");
    assert_eq!(failed("llm:batched@%").await, pneumothorax);
    assert_eq!(
        number(&lake, "SELECT count(*) FROM qa_judgements").await,
        rows,
        "failed rows replaced, not duplicated"
    );
}

/// A line for whoever runs the test (measurements), on stderr.
fn note(line: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "{line}");
}
