//! The GEMeX flavour (paper 004) on a small synthetic lake: offline, every re-grounded sentence
//! has one of the 30 regions, every image with a long enough report gets 3 open-ended, 2
//! closed-ended, 3 single-choice and 3 multi-choice questions whose boxes lie on the image in
//! both frames, no banned term and valid choices; a second run has nothing to do; the export
//! writes GEMeX and LLaVA files per split. With an LLM on loopback: answers are normalised,
//! quota misses asked again, unusable answers quarantined with the raw answer, and a rerun
//! sends nothing.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use cxrlake_gemex::export::{GemexExport, GemexFormat, export_gemex};
use cxrlake_gemex::regions::Regions;
use serde_json::{Value, json};

use crate::common::{
    graph_lake, json_lines, localized_lake, number, pipeline, run_stage, strings, unusable_answers,
};
use crate::llm_server::ExtractionServer;

const FLAVOUR: (&str, &str) = ("flavours", "gemex");

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn offline_gemex_builds_exports_and_stays_up_to_date() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (lake, _) = localized_lake(dir.path(), 24, 7).await;
    let settings = [FLAVOUR];
    let run = pipeline(&lake, &settings)
        .await
        .run(false, &mut |_| {})
        .await
        .expect("run");
    assert!(
        run.stages.iter().any(|s| s.stage == "gemex_generate"),
        "the flavour's stages are in the graph:\n{run}"
    );

    // Stage I: one region of the 30 per sentence, from FINDINGS and IMPRESSION only.
    let names: BTreeSet<String> = Regions::embedded()
        .expect("regions")
        .names()
        .map(str::to_string)
        .collect();
    assert_eq!(names.len(), 30);
    let regions = strings(&lake, "SELECT DISTINCT region FROM gemex_sentences").await;
    assert!(regions.len() >= 5, "{regions:?}");
    for region in &regions {
        assert!(names.contains(region), "{region} is not a GEMeX region");
    }
    assert_eq!(
        number(
            &lake,
            "SELECT count(*) FROM gemex_sentences WHERE grounder <> 'offline-gemex-reground-1'"
        )
        .await,
        0
    );

    // Stage II: 3/2/3/3 questions per image, for frontal images of reports with ≥ 3 sentences.
    let per_image = strings(
        &lake,
        "SELECT string_agg(question_type || ':' || CAST(n AS VARCHAR), ' ' ORDER BY question_type) \
         FROM (SELECT image_id, question_type, count(*) AS n FROM gemex_qa \
               GROUP BY image_id, question_type) GROUP BY image_id",
    )
    .await;
    assert!(per_image.len() >= 10, "{per_image:?}");
    for counts in &per_image {
        assert_eq!(
            counts,
            "closed-ended:2 multi-choice:3 open-ended:3 single-choice:3"
        );
    }
    assert_eq!(
        number(
            &lake,
            "SELECT count(*) FROM gemex_qa q JOIN images i ON i.image_id = q.image_id \
             WHERE NOT i.is_frontal"
        )
        .await,
        0,
        "frontal images only"
    );
    assert_eq!(
        number(
            &lake,
            "SELECT count(*) FROM gemex_qa WHERE study_id NOT IN \
             (SELECT study_id FROM gemex_sentences GROUP BY study_id HAVING count(*) >= 3)"
        )
        .await,
        0,
        "reports with fewer than three re-grounded sentences are left out"
    );
    assert_eq!(
        number(
            &lake,
            "SELECT count(*) FROM gemex_qa WHERE check_choices(question_type, choices, answer) \
             IS NOT NULL OR cardinality(lint_banned_terms(question || ' ' || answer)) > 0"
        )
        .await,
        0
    );
    let content_types = strings(&lake, "SELECT DISTINCT content_type FROM gemex_qa").await;
    assert!(content_types.len() >= 5, "{content_types:?}");
    let rows = json_lines(
        &lake,
        "SELECT width, height, regions, location, location_224 FROM gemex_qa",
    )
    .await;
    let mut boxed = 0;
    for row in &rows {
        let row: Value = serde_json::from_str(row).expect("json");
        for region in row["regions"].as_array().expect("regions") {
            assert!(names.contains(region.as_str().expect("text")), "{row}");
        }
        let (width, height) = (
            row["width"].as_f64().expect("number"),
            row["height"].as_f64().expect("number"),
        );
        let original = row["location"].as_array().expect("location");
        let framed = row["location_224"].as_array().expect("location_224");
        assert_eq!(original.len(), framed.len(), "{row}");
        for (bbox, bbox_224) in original.iter().zip(framed) {
            let b: Vec<f64> = serde_json::from_value(bbox.clone()).expect("box");
            let f: Vec<f64> = serde_json::from_value(bbox_224.clone()).expect("box");
            assert!(
                b[0] >= 0.0 && b[1] >= 0.0 && b[0] < b[2] && b[1] < b[3],
                "{row}"
            );
            assert!(b[2] <= width && b[3] <= height, "{row}");
            assert!(f.iter().all(|v| (0.0..=224.0).contains(v)), "{row}");
            boxed += 1;
        }
    }
    assert!(boxed > rows.len(), "most questions carry boxes: {boxed}");

    // The statistics file reads the table; nothing is left to do.
    let total = number(&lake, "SELECT count(*) FROM gemex_qa").await;
    let again = pipeline(&lake, &settings)
        .await
        .plan(false)
        .await
        .expect("plan");
    assert!(
        again.stages.iter().all(|s| s.scope.is_empty()),
        "up to date after the run:\n{again}"
    );

    // Export: one file per split and format, every question once.
    let out = dir.path().join("gemex-out");
    let summary = export_gemex(&lake, &GemexExport::new(&out))
        .await
        .expect("export");
    assert_eq!(summary.splits.values().sum::<usize>() as i64, total);
    let mut exported = 0;
    for (split, count) in &summary.splits {
        let gemex: Vec<Value> = read_json(&out.join("gemex").join(format!("{split}.json")));
        let llava: Vec<Value> = read_json(&out.join("llava").join(format!("{split}.json")));
        assert_eq!(gemex.len(), *count);
        assert_eq!(llava.len(), *count);
        for (record, conversation) in gemex.iter().zip(&llava) {
            assert_eq!(record["split"], json!(split));
            assert_eq!(record["question_id"], conversation["id"]);
            let human = conversation["conversations"][0]["value"]
                .as_str()
                .expect("text");
            assert!(human.starts_with("<image>\n"), "{conversation}");
            let gpt = conversation["conversations"][1]["value"]
                .as_str()
                .expect("text");
            assert!(
                gpt.starts_with("<answer>") && gpt.contains("<reason>"),
                "{gpt}"
            );
        }
        exported += gemex.len();
    }
    assert_eq!(exported as i64, total);
    let only = export_gemex(
        &lake,
        &GemexExport::new(dir.path().join("closed"))
            .with_filter("question_type = 'closed-ended'")
            .with_format(GemexFormat::Llava),
    )
    .await
    .expect("filtered export");
    assert_eq!(
        only.splits.values().sum::<usize>() as i64,
        number(
            &lake,
            "SELECT count(*) FROM gemex_qa WHERE question_type = 'closed-ended'"
        )
        .await
    );
    assert!(
        only.files
            .iter()
            .all(|f| f.starts_with(dir.path().join("closed/llava")))
    );

    crate::evaluations::gemex_own_answers_score_one(&lake, dir.path()).await;
}

fn read_json(path: &std::path::Path) -> Vec<Value> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Quota misses answered correctly on the second ask.
static QUOTA_RETRIES: AtomicUsize = AtomicUsize::new(0);

/// Re-grounds sentences naming the heart to "Heart" (a synonym of cardiac silhouette), those of
/// a byte length divisible by 5 to a region that does not exist (asked again: prose, so
/// rejected), the rest to "Bilateral Lung"; answers a report whose length is divisible by 3
/// with prose (rejected), one of length 1 mod 3 with 10 questions (asked again: 11), the rest
/// with 11 questions.
fn gemex_answer(prompt: &str) -> String {
    if let Some(sentence) = prompt
        .trim()
        .strip_prefix("Input: \"")
        .and_then(|s| s.strip_suffix('"'))
    {
        let region = if sentence.to_lowercase().contains("heart") {
            "Heart"
        } else if sentence.len() % 5 == 0 {
            "spleen"
        } else {
            "Bilateral Lung"
        };
        return json!({ sentence: region }).to_string();
    }
    if let Some(report) = prompt.trim().strip_prefix("Chest X-ray: ") {
        return match report.len() % 3 {
            0 => "I am sorry, I cannot read this image.".to_string(),
            1 => questions(10),
            _ => format!("```json\n{}\n```", questions(11)),
        };
    }
    if prompt.starts_with("Your answer is not valid: expected 3 open-ended") {
        QUOTA_RETRIES.fetch_add(1, Ordering::SeqCst);
        return questions(11);
    }
    "Still no JSON, sorry.".to_string()
}

/// The first `n` of 11 valid questions (3 open, 2 closed, 3 single, 3 multi).
fn questions(n: usize) -> String {
    let q = |kind: &str, content: &str, question: &str, choices: &[&str], answer: &str| {
        json!({"question_type": kind, "content_type": content, "question": question,
               "choices": choices, "answer": answer, "reason": "The CXR shows it.",
               "regions": ["left lung", "Heart"]})
    };
    let choices = [
        "A: Pleural effusion",
        "B: Cardiomegaly",
        "C: Pneumothorax",
        "D: Rib fracture",
    ];
    let all = vec![
        q(
            "open-ended",
            "abnormality",
            "What is seen in the left lung?",
            &[],
            "Opacity.",
        ),
        q(
            "open-ended",
            "location",
            "Where is the opacity?",
            &[],
            "Left lung.",
        ),
        q(
            "open-ended",
            "implication",
            "What does the opacity suggest?",
            &[],
            "Infection.",
        ),
        q(
            "closed-ended",
            "disease",
            "Is there a pneumothorax?",
            &[],
            "no",
        ),
        q(
            "closed-ended",
            "size",
            "Is the heart enlarged?",
            &[],
            "Yes.",
        ),
        q(
            "single-choice",
            "abnormality",
            "Which finding is present?",
            &choices,
            "B",
        ),
        q(
            "single-choice",
            "disease",
            "Which disease is likely?",
            &choices,
            "A",
        ),
        q(
            "single-choice",
            "severity",
            "Which finding is most severe?",
            &choices,
            "B",
        ),
        q(
            "multi-choice",
            "abnormality",
            "Which findings are present?",
            &choices,
            "[A, B]",
        ),
        q(
            "multi-choice",
            "location",
            "Which findings are in the chest?",
            &choices,
            "A and B",
        ),
        q(
            "multi-choice",
            "cause",
            "Which findings can cause dyspnea?",
            &choices,
            "A, B",
        ),
    ];
    json!({ "questions": all[..n] }).to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn llm_gemex_normalises_retries_quarantines_and_caches() {
    let server = ExtractionServer::start_answering(gemex_answer, Duration::ZERO, usize::MAX).await;
    let endpoint = server.endpoint();
    let dir = tempfile::tempdir().expect("tempdir");
    let (lake, _) = graph_lake(dir.path(), 16, 3).await;
    let settings = [
        FLAVOUR,
        ("generator", "llm"),
        ("llm_endpoint", endpoint.as_str()),
        ("llm_model", "gemex-model"),
    ];
    let reground = run_stage(&lake, "gemex_reground", &settings).await;
    let generate = run_stage(&lake, "gemex_generate", &settings).await;
    let answered = server.answers();
    assert!(answered > 0);

    // Stage I: normalised regions; a region outside the 30 is asked again, then quarantined.
    let grounders = strings(&lake, "SELECT DISTINCT grounder FROM gemex_sentences").await;
    assert_eq!(grounders.len(), 1, "{grounders:?}");
    assert!(
        grounders[0].starts_with("llm:gemex-model@1+"),
        "{grounders:?}"
    );
    assert_eq!(
        strings(
            &lake,
            "SELECT DISTINCT region FROM gemex_sentences ORDER BY 1"
        )
        .await,
        ["bilateral lung", "cardiac silhouette"]
    );
    let expected_rejects = number(
        &lake,
        "SELECT count(*) FROM sentences WHERE section_type IN ('FINDINGS', 'IMPRESSION') \
         AND octet_length(sentence) % 5 = 0 AND strpos(lower(sentence), 'heart') = 0",
    )
    .await;
    assert!(expected_rejects > 0, "the corpus exercises rejects");
    assert_eq!(
        reground.metric("rejects"),
        expected_rejects as u64,
        "{reground}"
    );
    let rejected = strings(
        &lake,
        "SELECT reason || ' | ' || CAST(raw AS VARCHAR) FROM quarantine \
         WHERE stage = 'gemex_reground'",
    )
    .await;
    assert_eq!(rejected.len() as i64, expected_rejects);
    assert!(
        rejected.iter().all(|r| r.contains("Still no JSON")),
        "the raw answer is kept: {rejected:?}"
    );

    // Stage II: prose rejected, a quota miss asked again and kept, the rest kept as answered.
    let images = number(&lake, "SELECT count(DISTINCT image_id) FROM gemex_qa").await;
    let generate_rejects = strings(
        &lake,
        "SELECT reason FROM quarantine WHERE stage = 'gemex_generate'",
    )
    .await;
    assert!(images > 0 && !generate_rejects.is_empty(), "{generate}");
    assert_eq!(
        images as u64 + generate_rejects.len() as u64,
        generate.metric("inputs"),
        "every frontal image is answered or quarantined: {generate}"
    );
    assert!(
        QUOTA_RETRIES.load(Ordering::SeqCst) > 0,
        "a quota miss was asked again"
    );
    assert!(
        generate_rejects
            .iter()
            .all(|r| !r.contains("expected 3 open-ended")),
        "{generate_rejects:?}"
    );
    let per_image: BTreeMap<String, String> = strings(
        &lake,
        "SELECT image_id || '=' || CAST(count(*) AS VARCHAR) FROM gemex_qa GROUP BY image_id",
    )
    .await
    .into_iter()
    .map(|s| {
        let (image, n) = s.split_once('=').expect("pair");
        (image.to_string(), n.to_string())
    })
    .collect();
    assert!(per_image.values().all(|n| n == "11"), "{per_image:?}");
    // Answers are canonical; "left lung" and "Heart" are the regions left lung and cardiac
    // silhouette with their boxes.
    assert_eq!(
        strings(
            &lake,
            "SELECT DISTINCT answer FROM gemex_qa WHERE question_type = 'closed-ended' ORDER BY 1"
        )
        .await,
        ["No", "Yes"]
    );
    assert_eq!(
        strings(
            &lake,
            "SELECT DISTINCT array_to_string(regions, '+') FROM gemex_qa"
        )
        .await,
        ["left lung+cardiac silhouette"]
    );

    // A rerun is answered from the lake's llm_calls, except the answers that were unusable: those
    // are sent again (and are unusable again).
    let reports = [
        run_stage(&lake, "gemex_reground", &settings).await,
        run_stage(&lake, "gemex_generate", &settings).await,
    ];
    let rejected = unusable_answers(&reports);
    assert!(rejected > 0, "the prose answers are unusable");
    assert_eq!(
        server.answers(),
        answered + rejected,
        "a rerun sends only the unusable answers"
    );
    assert_eq!(
        number(&lake, "SELECT count(DISTINCT image_id) FROM gemex_qa").await,
        images
    );
    assert_eq!(
        number(
            &lake,
            "SELECT count(*) FROM quarantine WHERE stage LIKE 'gemex_%'"
        )
        .await,
        expected_rejects + generate_rejects.len() as i64,
        "the rerun replaces its rejects, it does not add them twice"
    );
}
