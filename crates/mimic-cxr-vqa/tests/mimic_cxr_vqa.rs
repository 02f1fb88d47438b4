//! The MIMIC-CXR-VQA flavour (paper 001) on a small synthetic lake: offline, every question is
//! one of the bank's 90, sampled per CheXpert label value (Heart only where the report says
//! "heart"), answered linter-clean with the absence stated for negatives, no patient in two
//! splits, the judge rates every QA pair of its QC sample of reports, and a second run has
//! nothing to do. With an LLM on loopback: answers kept with the echo flag and linter counts,
//! prose asked again and quarantined, `vqa_lint = drop` quarantines what the linter flags, and
//! a rerun sends nothing.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use cxrlake_mimic_cxr_vqa::bank::{Bank, mentions_heart};
use cxrlake_mimic_cxr_vqa::export::{MimicVqaExport, export_mimic_cxr_vqa};
use serde_json::json;

use crate::common::{
    graph_lake, localized_lake, number, pipeline, run_stage, strings, unusable_answers,
};
use crate::llm_server::ExtractionServer;

const FLAVOUR: (&str, &str) = ("flavours", "mimic_cxr_vqa");

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn offline_mimic_cxr_vqa_samples_answers_judges_and_stays_up_to_date() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (lake, _) = localized_lake(dir.path(), 30, 11).await;
    let settings = [FLAVOUR, ("vqa_qc_reports", "6")];
    let run = pipeline(&lake, &settings)
        .await
        .run(false, &mut |_| {})
        .await
        .expect("run");
    assert!(
        run.stages.iter().any(|s| s.stage == "mimic_cxr_vqa_judge"),
        "the flavour's stages are in the graph:\n{run}"
    );

    // Every question is the bank's, under its template id; one row per question id.
    let bank = Bank::embedded().expect("bank");
    let templates: BTreeMap<String, String> = bank
        .categories()
        .iter()
        .flat_map(|c| (0..6).map(move |i| (c.template_id(i), c.question(i, true).to_string())))
        .collect();
    assert_eq!(templates.len(), 90);
    let rows = strings(
        &lake,
        "SELECT template_id || '|' || question || '|' || category FROM mimic_cxr_vqa_questions",
    )
    .await;
    assert!(rows.len() > 100, "{}", rows.len());
    for row in &rows {
        let parts: Vec<&str> = row.split('|').collect();
        assert_eq!(
            templates.get(parts[0]).map(String::as_str),
            Some(parts[1]),
            "{row}"
        );
        assert!(parts[0].starts_with(parts[2]), "{row}");
    }
    assert_eq!(
        number(
            &lake,
            "SELECT count(DISTINCT question_id) FROM mimic_cxr_vqa_questions"
        )
        .await,
        rows.len() as i64
    );

    // Sampling: each (study, category) asks what the bank's sampling gives its value.
    let cells = strings(
        &lake,
        "SELECT study_id || '|' || category || '|' || label_value || '|' || CAST(count(*) AS VARCHAR) \
         FROM mimic_cxr_vqa_questions GROUP BY study_id, category, label_value",
    )
    .await;
    for cell in &cells {
        let parts: Vec<&str> = cell.split('|').collect();
        let category = bank.category(parts[1]).expect("category");
        let value = cxrlake_mimic_cxr_vqa::bank::LabelValue::parse(parts[2]).expect("value");
        assert_eq!(
            bank.sample(0, parts[0], category, value).len().to_string(),
            parts[3],
            "{cell}"
        );
    }
    let values = strings(
        &lake,
        "SELECT DISTINCT label_value FROM mimic_cxr_vqa_questions ORDER BY 1",
    )
    .await;
    assert!(
        values.contains(&"1.0".to_string()) && values.contains(&"NaN".to_string()),
        "{values:?}"
    );

    // The Heart rule: heart questions exactly for the studies whose report says "heart", as 1.0.
    let reports = strings(
        &lake,
        "SELECT study_id || '|' || text FROM reports WHERE study_id IN \
         (SELECT study_id FROM mimic_cxr_vqa_reports)",
    )
    .await;
    let heart_studies: BTreeSet<String> = reports
        .iter()
        .filter_map(|r| r.split_once('|'))
        .filter(|(_, text)| mentions_heart(text))
        .map(|(id, _)| id.to_string())
        .collect();
    let asked: BTreeSet<String> = strings(
        &lake,
        "SELECT DISTINCT study_id FROM mimic_cxr_vqa_questions WHERE category = 'heart'",
    )
    .await
    .into_iter()
    .collect();
    assert!(!heart_studies.is_empty());
    // A study can draw zero questions only when k < 1; the heart's k is 3.75.
    assert_eq!(asked, heart_studies);
    assert_eq!(
        strings(
            &lake,
            "SELECT DISTINCT label_value FROM mimic_cxr_vqa_questions WHERE category = 'heart'"
        )
        .await,
        ["1.0"]
    );

    // Answers: one per question, offline answers linter-clean and echoing the question, the
    // absence stated for negatives, each linked to the study's images with view positions.
    assert_eq!(
        number(&lake, "SELECT count(*) FROM mimic_cxr_vqa_qa").await,
        rows.len() as i64
    );
    assert_eq!(
        number(
            &lake,
            "SELECT count(*) FROM mimic_cxr_vqa_qa WHERE prohibited_count + report_reference_count > 0 \
             OR NOT question_echoed OR answer_type <> 'open'"
        )
        .await,
        0
    );
    let negatives = strings(
        &lake,
        "SELECT answer FROM mimic_cxr_vqa_qa WHERE label_value IN ('NaN', '0.0') \
         AND category NOT IN ('no_finding', 'heart')",
    )
    .await;
    assert!(!negatives.is_empty());
    for answer in &negatives {
        assert!(answer.starts_with("No"), "{answer}");
    }
    assert_eq!(
        number(
            &lake,
            "SELECT count(*) FROM mimic_cxr_vqa_qa WHERE cardinality(images) = 0 OR images IS NULL \
             OR images[1]['view_position'] IS NULL"
        )
        .await,
        0
    );
    // Split isolation: no patient (hence no study) in two splits.
    assert_eq!(
        number(
            &lake,
            "SELECT count(*) FROM (SELECT patient_id FROM mimic_cxr_vqa_qa \
             GROUP BY patient_id HAVING count(DISTINCT split) > 1)"
        )
        .await,
        0
    );

    // The judge: every QA pair of exactly 6 reports, with table 3's levels.
    assert_eq!(
        number(
            &lake,
            "SELECT count(DISTINCT study_id) FROM mimic_cxr_vqa_judgements"
        )
        .await,
        6
    );
    assert_eq!(
        number(&lake, "SELECT count(*) FROM mimic_cxr_vqa_judgements").await,
        number(
            &lake,
            "SELECT count(*) FROM mimic_cxr_vqa_qa WHERE study_id IN \
             (SELECT study_id FROM mimic_cxr_vqa_judgements)"
        )
        .await
    );
    assert_eq!(
        number(
            &lake,
            "SELECT count(*) FROM mimic_cxr_vqa_judgements WHERE correctness NOT IN ('Correct', 'Incorrect') \
             OR consistency NOT IN ('Fully Consistent', 'Partially Consistent', 'Inconsistent') \
             OR completeness NOT IN ('Complete', 'Partially Complete', 'Incomplete') \
             OR relevance NOT IN ('Essential', 'Non-essential but Correct', 'Incorrect and Misleading')"
        )
        .await,
        0
    );
    let correct = number(
        &lake,
        "SELECT count(*) FROM mimic_cxr_vqa_judgements WHERE correctness = 'Correct'",
    )
    .await;
    let judged = number(&lake, "SELECT count(*) FROM mimic_cxr_vqa_judgements").await;
    assert!(correct * 2 > judged, "{correct} of {judged}");

    let again = pipeline(&lake, &settings)
        .await
        .plan(false)
        .await
        .expect("plan");
    assert!(
        again.stages.iter().all(|s| s.scope.is_empty()),
        "up to date after the run:\n{again}"
    );

    // Export: JSON and Parquet per split, every QA pair once, with the dataset id.
    let out = dir.path().join("vqa-out");
    let summary = export_mimic_cxr_vqa(&lake, &MimicVqaExport::new(&out, bank.dataset_id()))
        .await
        .expect("export");
    let total = number(&lake, "SELECT count(*) FROM mimic_cxr_vqa_qa").await;
    assert_eq!(summary.splits.values().sum::<usize>() as i64, total);
    let ctx = datafusion::prelude::SessionContext::new();
    for (split, count) in &summary.splits {
        let path = out.join("mimic_cxr_vqa").join(format!("{split}.json"));
        let records: Vec<serde_json::Value> =
            serde_json::from_str(&std::fs::read_to_string(&path).expect("json")).expect("array");
        assert_eq!(records.len(), *count);
        assert!(records.iter().all(|r| {
            r["dataset_id"] == json!("mimic_cxr_vqa_upv_llama")
                && r["split"] == json!(split)
                && r["images"][0]["path"]
                    .as_str()
                    .is_some_and(|p| p.ends_with(".jpg"))
        }));
        let parquet = out.join("mimic_cxr_vqa").join(format!("{split}.parquet"));
        let rows = ctx
            .read_parquet(parquet.to_string_lossy().as_ref(), Default::default())
            .await
            .expect("parquet")
            .count()
            .await
            .expect("count");
        assert_eq!(rows, *count);
    }

    // Another seed asks other phrasings.
    run_stage(&lake, "mimic_cxr_vqa_questions", &[FLAVOUR, ("seed", "5")]).await;
    let reseeded = strings(
        &lake,
        "SELECT template_id FROM mimic_cxr_vqa_questions ORDER BY question_id",
    )
    .await;
    let first: Vec<String> = rows
        .iter()
        .map(|r| r.split('|').next().unwrap_or_default().to_string())
        .collect();
    assert_ne!(reseeded, first);
}

/// Answers `{question, answer}` by the question's category: pneumothorax answered well, edema
/// with prose (asked again, still prose: quarantined), heart questions with another question
/// (kept, flagged), atelectasis with a comparison term (kept and counted, or dropped); judges
/// every answer correct.
fn vqa_answer(prompt: &str) -> String {
    if prompt.contains("\nanswer: ") {
        return json!({"correctness": "Correct", "consistency": "Fully Consistent",
                      "completeness": "Complete", "relevance": "Essential",
                      "rationale": "Supported by the findings."})
        .to_string();
    }
    let Some(question) = prompt.rsplit_once("question: ").map(|(_, q)| q.trim()) else {
        return "Still no JSON, sorry.".to_string();
    };
    if question.contains("Edema") {
        return "I cannot answer that.".to_string();
    }
    let (echo, answer) = if question.to_lowercase().contains("heart") {
        ("How big is the heart?", "The heart size is normal.")
    } else if question.contains("Atelectasis") {
        (question, "Atelectasis is unchanged in the left lower lobe.")
    } else {
        (question, "No pneumothorax is seen in the radiograph.")
    };
    json!({"question": echo, "answer": answer}).to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn llm_mimic_cxr_vqa_flags_lints_quarantines_and_caches() {
    let server = ExtractionServer::start_answering(vqa_answer, Duration::ZERO, usize::MAX).await;
    let endpoint = server.endpoint();
    let dir = tempfile::tempdir().expect("tempdir");
    let (lake, _) = graph_lake(dir.path(), 16, 3).await;
    let settings = [
        FLAVOUR,
        ("generator", "llm"),
        ("llm_endpoint", endpoint.as_str()),
        ("llm_model", "vqa-model"),
    ];
    run_stage(&lake, "mimic_cxr_vqa_questions", &settings).await;
    let answer = run_stage(&lake, "mimic_cxr_vqa_answer", &settings).await;
    let questions = number(&lake, "SELECT count(*) FROM mimic_cxr_vqa_questions").await;
    let edema = number(
        &lake,
        "SELECT count(*) FROM mimic_cxr_vqa_questions WHERE category = 'edema'",
    )
    .await;
    assert!(edema > 0, "the corpus asks about edema");
    assert_eq!(answer.metric("rejects"), edema as u64, "{answer}");
    assert_eq!(
        number(&lake, "SELECT count(*) FROM mimic_cxr_vqa_qa").await,
        questions - edema
    );
    let rejected = strings(
        &lake,
        "SELECT CAST(raw AS VARCHAR) FROM quarantine WHERE stage = 'mimic_cxr_vqa_answer'",
    )
    .await;
    assert_eq!(rejected.len() as i64, edema);
    // The last answer (to the request that said what was wrong) is kept.
    assert!(
        rejected.iter().all(|r| r.contains("Still no JSON")),
        "{rejected:?}"
    );
    let generators = strings(&lake, "SELECT DISTINCT generator FROM mimic_cxr_vqa_qa").await;
    assert!(
        generators[0].starts_with("llm:vqa-model@1+"),
        "{generators:?}"
    );
    // Heart questions echoed another question: kept, flagged.
    assert_eq!(
        number(
            &lake,
            "SELECT count(*) FROM mimic_cxr_vqa_qa WHERE NOT question_echoed"
        )
        .await,
        number(
            &lake,
            "SELECT count(*) FROM mimic_cxr_vqa_qa WHERE category = 'heart'"
        )
        .await
    );
    // The linter counts "unchanged" in atelectasis answers (vqa_lint = flag keeps them).
    let atelectasis = number(
        &lake,
        "SELECT count(*) FROM mimic_cxr_vqa_qa WHERE category = 'atelectasis'",
    )
    .await;
    assert!(atelectasis > 0);
    assert_eq!(
        strings(
            &lake,
            "SELECT DISTINCT array_to_string(prohibited_terms, ',') || '/' || \
             CAST(prohibited_count AS VARCHAR) FROM mimic_cxr_vqa_qa WHERE category = 'atelectasis'"
        )
        .await,
        ["unchanged/1"]
    );

    // The judge over the LLM.
    let judge = run_stage(&lake, "mimic_cxr_vqa_judge", &settings).await;
    assert!(judge.rows("mimic_cxr_vqa_judgements") > 0, "{judge}");
    assert_eq!(
        strings(
            &lake,
            "SELECT DISTINCT correctness FROM mimic_cxr_vqa_judgements"
        )
        .await,
        ["Correct"]
    );

    // A rerun with vqa_lint = drop asks nothing new and quarantines the flagged answers.
    let sent = server.answers();
    let dropped = [
        FLAVOUR,
        ("generator", "llm"),
        ("llm_endpoint", endpoint.as_str()),
        ("llm_model", "vqa-model"),
        ("vqa_lint", "drop"),
    ];
    let report = run_stage(&lake, "mimic_cxr_vqa_answer", &dropped).await;
    assert_eq!(
        server.answers(),
        sent + unusable_answers(std::slice::from_ref(&report)),
        "answers come from llm_calls, except the unusable ones"
    );
    assert_eq!(
        number(
            &lake,
            "SELECT count(*) FROM mimic_cxr_vqa_qa WHERE category = 'atelectasis'"
        )
        .await,
        0
    );
    assert_eq!(
        number(
            &lake,
            "SELECT count(*) FROM quarantine WHERE stage = 'mimic_cxr_vqa_answer' \
             AND reason LIKE 'dropped by cxrlake.vqa_lint = drop: unchanged%'"
        )
        .await,
        atelectasis
    );
    let bad = pipeline(&lake, &[FLAVOUR, ("vqa_lint", "strict")])
        .await
        .run_stage(
            "mimic_cxr_vqa_answer",
            cxrlake_pipeline::stage::RunMode::Write,
        )
        .await
        .expect_err("unknown policy")
        .to_string();
    assert!(bad.contains("cxrlake.vqa_lint = 'strict'"), "{bad}");
}
