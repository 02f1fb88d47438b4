//! The GIV-CXR flavour (paper 002) on a small synthetic lake. Offline: region contexts on the
//! 36-region vocabulary with attributes in the pipe syntax and boxes inside their images,
//! region-specific questions answered one to one, every pair with one clinical finding (or
//! rejected for lacking one), a patient-disjoint split, the region map covering the 36 regions,
//! the changelog, the review queue least confident first, and a second plan with nothing to do.
//! With an LLM on loopback: misaligned answer and verdict arrays are rejected (quarantined, the
//! pairs not judged are rejects), nothing shifted; reverse-negation questions are flagged even
//! when the LLM passes them; questions naming the report are rejected; a rerun sends nothing.

use std::collections::BTreeSet;
use std::time::Duration;

use serde_json::{Value, json};

use crate::common::{graph_lake, number, pipeline, run_stage, strings, unusable_answers};
use crate::llm_server::ExtractionServer;

const FLAVOUR: (&str, &str) = ("flavours", "givcxr");
const STAGES: [&str; 5] = [
    "givcxr_context",
    "givcxr_questions",
    "givcxr_answers",
    "givcxr_judge",
    "givcxr_filter",
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn offline_givcxr_builds_contexts_pairs_verdicts_and_splits() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (lake, _) = graph_lake(dir.path(), 30, 5).await;
    for stage in STAGES {
        run_stage(&lake, stage, &[FLAVOUR]).await;
    }
    let contexts = number(&lake, "SELECT count(*) FROM givcxr_regions").await;
    assert!(contexts > 30, "{contexts} region contexts");
    // Regions from the vocabulary, facts in the pipe syntax, one nlp verdict each.
    let vocabulary = cxrlake_givcxr::vocab::Vocabulary::embedded().expect("vocabulary");
    let ids: BTreeSet<String> = vocabulary.regions().iter().map(|r| r.id.clone()).collect();
    for region in strings(&lake, "SELECT DISTINCT region FROM givcxr_regions").await {
        assert!(ids.contains(&region), "{region}");
    }
    assert_eq!(
        number(
            &lake,
            "SELECT count(*) FROM (SELECT unnest(attributes) AS a FROM givcxr_regions) \
             WHERE NOT regexp_like(a, '^(anatomicalfinding|disease|tubesandlines|nlp)\\|(yes|no)\\|[^|]+$')"
        )
        .await,
        0
    );
    assert_eq!(
        number(
            &lake,
            "SELECT count(*) FROM givcxr_regions WHERE cardinality(array_intersect(attributes, \
             make_array('nlp|yes|normal', 'nlp|yes|abnormal'))) <> 1 \
             OR array_has(attributes, 'nlp|yes|abnormal') <> abnormal"
        )
        .await,
        0
    );
    // Boxes inside their images, in the recorded (original pixel) frame.
    assert_eq!(
        number(
            &lake,
            "SELECT count(*) FROM givcxr_regions WHERE NOT (bbox[1] >= 0 AND bbox[2] >= 0 \
             AND bbox[1] < bbox[3] AND bbox[2] < bbox[4] AND bbox[3] <= image_width \
             AND bbox[4] <= image_height)"
        )
        .await,
        0
    );
    // Questions answered one to one, region-specific, and judged.
    let pairs = number(&lake, "SELECT count(*) FROM givcxr_qa").await;
    assert_eq!(
        number(&lake, "SELECT count(*) FROM givcxr_questions").await,
        pairs
    );
    assert_eq!(
        number(&lake, "SELECT count(*) FROM givcxr_verdicts").await,
        pairs
    );
    assert_eq!(
        number(
            &lake,
            "SELECT count(*) FROM givcxr_questions WHERE cardinality(lint) > 0"
        )
        .await,
        0
    );
    assert_eq!(
        strings(&lake, "SELECT DISTINCT generator FROM givcxr_qa").await,
        ["offline-givcxr-answers-1"]
    );
    // Every pair has one clinical finding of the vocabulary, or is rejected for lacking one.
    for finding in strings(
        &lake,
        "SELECT DISTINCT clinical_finding FROM givcxr_qa WHERE clinical_finding IS NOT NULL",
    )
    .await
    {
        assert!(vocabulary.is_finding(&finding), "{finding}");
    }
    assert_eq!(
        number(
            &lake,
            "SELECT count(*) FROM givcxr_qa q LEFT JOIN givcxr_rejects r USING (qa_id) \
             WHERE q.clinical_finding IS NULL \
             AND NOT coalesce(array_has(r.reasons, 'no_clinical_finding'), false)"
        )
        .await,
        0
    );
    let kept = number(&lake, "SELECT count(*) FROM givcxr_dataset").await;
    let rejected = number(&lake, "SELECT count(*) FROM givcxr_rejects").await;
    assert_eq!(kept + rejected, pairs);
    assert!(kept > pairs / 2, "{kept} of {pairs} kept");
    // Derived fields.
    assert_eq!(
        number(
            &lake,
            "SELECT count(*) FROM givcxr_dataset WHERE reasoning_aspect NOT IN ('detection', \
             'localization', 'cause', 'suspicious_area', 'disease', 'texture') \
             OR bbox_size_category NOT IN ('small', 'medium', 'large') \
             OR question_length <> cardinality(string_to_array(question, ' ')) \
             OR answer_length < 1 OR prompt_version <> generator \
             OR NOT regexp_like(image_path, '^p[0-9]{2}/p[0-9]{8}/s[0-9]{8}$')"
        )
        .await,
        0
    );
    // Patient-disjoint split.
    assert_eq!(
        number(
            &lake,
            "SELECT count(*) FROM (SELECT patient_id FROM givcxr_qa GROUP BY patient_id \
             HAVING count(DISTINCT split) > 1)"
        )
        .await,
        0
    );
    // The region map reaches all 36 regions and reports the unmapped cxrlake regions.
    assert_eq!(
        number(
            &lake,
            "SELECT count(DISTINCT region) FROM givcxr_region_map WHERE region IS NOT NULL"
        )
        .await,
        36
    );
    assert!(
        number(
            &lake,
            "SELECT count(*) FROM givcxr_region_map WHERE kind = 'unmapped'"
        )
        .await
            > 0
    );
    assert_eq!(
        strings(
            &lake,
            "SELECT version FROM givcxr_prompt_versions ORDER BY version LIMIT 5"
        )
        .await,
        ["0.1", "0.2", "0.3", "0.4", "1.0"]
    );
    // The review queue: every judged pair, least confident first.
    assert_eq!(
        number(&lake, "SELECT count(*) FROM givcxr_review").await,
        pairs
    );
    assert_eq!(
        number(
            &lake,
            "SELECT count(*) FROM (SELECT score, lag(score) OVER (ORDER BY priority) AS before \
             FROM givcxr_review) WHERE score < before"
        )
        .await,
        0
    );
    // Nothing left to do.
    let again = pipeline(&lake, &[FLAVOUR])
        .await
        .plan(false)
        .await
        .expect("plan");
    assert!(
        again
            .stages
            .iter()
            .filter(|s| s.stage.starts_with("givcxr_"))
            .all(|s| s.scope.is_empty()),
        "up to date after the run:\n{again}"
    );
}

/// The region name of a prompt's context ("Finding Location: [..] (right lung)", or "Region of
/// interest: right lung").
fn region_of(prompt: &str) -> String {
    if let Some(rest) = prompt.split("Region of interest: ").nth(1) {
        return rest.lines().next().unwrap_or_default().trim().to_string();
    }
    prompt
        .split("Finding Location: ")
        .nth(1)
        .and_then(|l| l.lines().next())
        .and_then(|l| {
            l.rsplit_once('(')
                .map(|(_, r)| r.trim_end_matches(')').to_string())
        })
        .unwrap_or_default()
}

/// Three questions per context: a fair one, a reverse negation, one naming the report; answers
/// one per question, except one short where the region's name has an odd length; verdicts one
/// per pair (all 0, missing the reverse negation), except one short for left-sided regions with
/// an even-length name; asked again, the same short list.
fn givcxr_answer(prompt: &str) -> String {
    // Asked again with the reason: the same short list.
    if let Some(reason) = prompt.strip_prefix("Your answer is not valid: ") {
        let n: usize = reason
            .split(' ')
            .next()
            .and_then(|n| n.parse().ok())
            .unwrap_or(0);
        if reason.contains(" answers for ") {
            let answers: Vec<String> = (0..n).map(|i| format!("Answer {i} again.")).collect();
            return json!({ "answers": answers }).to_string();
        }
        let verdicts: Vec<Value> = (0..n)
            .map(|_| json!({"is_hallucination": 0, "explanation": "Again.", "score": 0.8}))
            .collect();
        return Value::Array(verdicts).to_string();
    }
    let region = region_of(prompt);
    if prompt.starts_with("GIVEN MEDICAL REPORT INFORMATION:") {
        let pairs = prompt
            .split("QUESTION-ANSWER PAIRS TO EVALUATE:")
            .nth(1)
            .and_then(|p| serde_json::from_str::<Value>(p.trim()).ok())
            .and_then(|p| p.as_array().map(Vec::len))
            .unwrap_or(0);
        let n = if region.starts_with("left") {
            pairs - 1
        } else {
            pairs
        };
        let verdicts: Vec<Value> = (0..n)
            .map(|_| json!({"is_hallucination": 0, "explanation": "Supported.", "score": 0.8}))
            .collect();
        return Value::Array(verdicts).to_string();
    }
    if prompt.contains("\nQuestions:\n") {
        let n = if region.len() % 2 == 1 { 2 } else { 3 };
        let answers: Vec<String> = (0..n)
            .map(|i| format!("Answer {i} about the {region}."))
            .collect();
        return json!({ "answers": answers }).to_string();
    }
    json!({"questions": [
        format!("Is there any abnormality in the {region}?"),
        format!("What might be the reason for the absence of pneumothorax in the {region}?"),
        format!("What does the report say about the {region}?"),
    ]})
    .to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn llm_givcxr_rejects_misaligned_lists_and_flags_reverse_negation() {
    let server = ExtractionServer::start_answering(givcxr_answer, Duration::ZERO, usize::MAX).await;
    let endpoint = server.endpoint();
    let dir = tempfile::tempdir().expect("tempdir");
    let (lake, _) = graph_lake(dir.path(), 16, 3).await;
    let settings = [
        FLAVOUR,
        ("generator", "llm"),
        ("llm_endpoint", endpoint.as_str()),
        ("llm_model", "giv-model"),
    ];
    for stage in STAGES {
        run_stage(&lake, stage, &settings).await;
    }
    let contexts = number(&lake, "SELECT count(*) FROM givcxr_regions").await;
    assert_eq!(
        number(&lake, "SELECT count(*) FROM givcxr_questions").await,
        3 * contexts
    );
    // Odd-length region names got two answers for three questions: quarantined, no pair.
    let odd = number(
        &lake,
        "SELECT count(*) FROM givcxr_regions WHERE length(region_name) % 2 = 1",
    )
    .await;
    assert!(odd > 0 && odd < contexts, "{odd} of {contexts}");
    assert_eq!(
        number(
            &lake,
            "SELECT count(*) FROM givcxr_qa q JOIN givcxr_regions r USING (context_id) \
             WHERE length(r.region_name) % 2 = 1"
        )
        .await,
        0
    );
    let reasons = strings(
        &lake,
        "SELECT DISTINCT reason FROM quarantine WHERE stage = 'givcxr_answers'",
    )
    .await;
    assert_eq!(reasons.len(), 1, "{reasons:?}");
    assert!(
        reasons[0].contains("2 answers for 3 questions"),
        "{reasons:?}"
    );
    assert_eq!(
        number(
            &lake,
            "SELECT count(*) FROM quarantine WHERE stage = 'givcxr_answers'"
        )
        .await,
        odd
    );
    // Answers are in the questions' order: answer i belongs to question i.
    assert_eq!(
        number(
            &lake,
            "SELECT count(*) FROM givcxr_qa WHERE answer NOT LIKE 'Answer ' || \
             CAST(position - 1 AS VARCHAR) || ' %'"
        )
        .await,
        0
    );
    // Left-sided even-length regions got one verdict short: quarantined, their pairs unjudged.
    let short = number(
        &lake,
        "SELECT count(*) FROM givcxr_qa q JOIN givcxr_regions r USING (context_id) \
         WHERE r.region_name LIKE 'left%'",
    )
    .await;
    assert!(short > 0, "no left-sided pairs");
    assert_eq!(
        number(
            &lake,
            "SELECT count(*) FROM givcxr_verdicts v JOIN givcxr_regions r USING (context_id) \
             WHERE r.region_name LIKE 'left%'"
        )
        .await,
        0
    );
    assert_eq!(
        number(
            &lake,
            "SELECT count(*) FROM givcxr_rejects r JOIN givcxr_regions c USING (context_id) \
             WHERE c.region_name LIKE 'left%' AND array_has(r.reasons, 'not_judged')"
        )
        .await,
        short
    );
    assert!(
        strings(
            &lake,
            "SELECT DISTINCT reason FROM quarantine WHERE stage = 'givcxr_judge'"
        )
        .await
        .iter()
        .all(|r| r.contains("2 verdicts for 3 QA pairs"))
    );
    // Reverse negation: 100 % flagged although the LLM passed every pair; the fair question
    // kept; the report question rejected for naming the report.
    let judged_reverse = number(
        &lake,
        "SELECT count(*) FROM givcxr_verdicts v JOIN givcxr_qa q USING (qa_id) \
         WHERE q.position = 2",
    )
    .await;
    assert!(judged_reverse > 0);
    assert_eq!(
        number(
            &lake,
            "SELECT count(*) FROM givcxr_verdicts v JOIN givcxr_qa q USING (qa_id) \
             WHERE q.position = 2 AND v.is_hallucination AND v.rule = 'reverse_negation'"
        )
        .await,
        judged_reverse
    );
    assert_eq!(
        number(
            &lake,
            "SELECT count(*) FROM givcxr_verdicts v JOIN givcxr_qa q USING (qa_id) \
             WHERE q.position <> 2 AND v.is_hallucination"
        )
        .await,
        0
    );
    assert_eq!(
        number(
            &lake,
            "SELECT count(*) FROM givcxr_dataset WHERE position <> 1"
        )
        .await,
        0
    );
    assert_eq!(
        number(
            &lake,
            "SELECT count(*) FROM givcxr_rejects WHERE position = 3 \
             AND NOT array_has(reasons, 'mentions_report')"
        )
        .await,
        0
    );
    assert!(
        strings(&lake, "SELECT DISTINCT prompt_version FROM givcxr_qa").await[0]
            .starts_with("1.0+")
    );
    // A rerun asks only the unusable answers again: every other answer comes from llm_calls
    // (the pairs the filter rejected included).
    let sent = server.answers();
    let mut reports = Vec::new();
    for stage in STAGES {
        reports.push(run_stage(&lake, stage, &settings).await);
    }
    assert_eq!(server.answers(), sent + unusable_answers(&reports));
}
