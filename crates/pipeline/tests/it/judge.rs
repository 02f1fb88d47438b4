//! judge → grade on a small synthetic lake: the heuristic judge rates each distinct input once
//! (and nothing on a rerun), grade fills every judged column in rating order; the LLM judge
//! against a loopback server: unparseable judgements make pairs `not rated`, never a crash, and
//! a rerun sends nothing.

use std::time::Duration;

use cxrlake_llm::LlmConfig;
use cxrlake_pipeline::judge::{JudgeBackend, JudgeOptions};

use crate::common::{number, qa_lake, strings};
use crate::llm_server::{ExtractionServer, last_between};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn heuristic_judge_and_grade() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (lake, _) = qa_lake(dir.path(), 24, 11).await;
    let questions = number(&lake, "SELECT count(*) FROM qa").await as usize;
    let options = JudgeOptions {
        chunk_patients: 7,
        ..JudgeOptions::default()
    };

    // A plan counts without writing.
    let plan = cxrlake_pipeline::judge::run(
        &lake,
        &JudgeOptions {
            plan_only: true,
            ..options.clone()
        },
    )
    .await
    .expect("plan");
    assert_eq!(number(&lake, "SELECT count(*) FROM qa_judgements").await, 0);

    let judged = cxrlake_pipeline::judge::run(&lake, &options)
        .await
        .expect("judge");
    assert_eq!(judged.questions, questions);
    assert_eq!(judged.requests, 5 * questions, "{judged}");
    assert_eq!(
        judged.judged, plan.judged,
        "the plan counts what the run judges"
    );
    assert_eq!(judged.unusable, 0, "{judged}");
    // Content dedup across chunks: each distinct input once, far fewer than the requests (the
    // ratio falls with the lake's size: 16.5 % at 60 studies, ~26 % at these 24).
    assert!(judged.call_ratio() < 0.4, "{judged}");
    assert_eq!(
        number(&lake, "SELECT count(*) FROM qa_judgements").await as usize,
        judged.judged
    );
    assert_eq!(
        number(
            &lake,
            "SELECT count(*) FROM (SELECT DISTINCT judge, criterion, content_hash FROM qa_judgements)"
        )
        .await as usize,
        judged.judged,
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
    let again = cxrlake_pipeline::judge::run(&lake, &options)
        .await
        .expect("judge again");
    assert_eq!(again.judged, 0, "{again}");

    let graded = cxrlake_pipeline::grade::run(&lake, &options)
        .await
        .expect("grade");
    assert_eq!(graded.questions, questions, "{graded}");
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
    let regraded = cxrlake_pipeline::grade::run(&lake, &options)
        .await
        .expect("grade again");
    assert_eq!(regraded.questions, questions);
    assert_eq!(regraded.ratings, graded.ratings);
    assert_eq!(regraded.source_version, graded.source_version);
}

/// Answers the judge prompts: every part OPTIMAL/aligned, except that question clarity of a
/// question naming a pneumothorax gets prose without a level.
pub(crate) fn judge_answer(prompt: &str) -> String {
    let count: usize = last_between(prompt, "Rating (provide ", " ratings)")
        .parse()
        .unwrap_or(0);
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
    let question = last_between(prompt, "Question (to rate):", "Rating (your task):");
    if question.contains("pneumothorax") {
        return "I would rather not say.".into();
    }
    "clear -> OPTIMAL".into()
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
    let mut down = LlmConfig::new(endpoint.parse().expect("url"), "judge-model");
    down.max_retries = 0;
    let error = cxrlake_pipeline::judge::run(
        &lake,
        &JudgeOptions {
            backend: JudgeBackend::Llm(Box::new(down)),
            ..JudgeOptions::default()
        },
    )
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
    let mut config = LlmConfig::new(server.endpoint().parse().expect("url"), "judge-model");
    config.concurrency = 8;
    let options = JudgeOptions {
        backend: JudgeBackend::Llm(Box::new(config)),
        ..JudgeOptions::default()
    };
    let judged = cxrlake_pipeline::judge::run(&lake, &options)
        .await
        .expect("judge");
    let questions = number(&lake, "SELECT count(*) FROM qa").await as usize;
    assert_eq!(judged.requests, 5 * questions);
    assert_eq!(
        server.answers(),
        judged.judged,
        "one call per distinct input"
    );
    assert_eq!(server.repeated(), 0);
    let pneumothorax = number(
        &lake,
        "SELECT count(DISTINCT question) FROM qa WHERE question LIKE '%pneumothorax%'",
    )
    .await as usize;
    assert!(
        pneumothorax > 0,
        "the sampled questions ask about pneumothorax"
    );
    assert_eq!(judged.unusable, pneumothorax, "{judged}");

    let graded = cxrlake_pipeline::grade::run(&lake, &options)
        .await
        .expect("grade");
    assert!(
        graded.judge.starts_with("llm:judge-model@judge-prompts-1+"),
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

    // A rerun asks again only what was unusable, and the llm_calls cache answers it.
    let before = server.answers();
    let again = cxrlake_pipeline::judge::run(&lake, &options)
        .await
        .expect("judge again");
    assert_eq!(again.judged, pneumothorax, "{again}");
    assert_eq!(
        server.answers(),
        before,
        "cached answers are not asked again"
    );
}
