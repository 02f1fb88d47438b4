//! The ReXVQA flavour (paper 003) on a small synthetic lake: offline, every study's report is
//! bulleted and asked about in the five task types with four distinct options, the structural
//! and content validators, PHI and near-duplicate filters decide what is kept, no kept pair of a
//! study is a near-duplicate (also at a low threshold, with a stable choice), the QC sample is
//! even over the tiers, the export holds the kept MCQs only, and a second plan has nothing to
//! do. With an LLM on loopback: the two-step chain, malformed answers asked again and
//! quarantined, three-option and duplicate-option MCQs kept with their failing validator, PHI
//! caught, a near-duplicate dropped, a misaligned MCQ rejected by the judge, and a rerun sends
//! nothing.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use cxrlake_embed::{Embedder, LexicalEmbedder};
use cxrlake_rexvqa::export::{RexvqaExport, export_rexvqa};
use serde_json::{Value, json};

use crate::common::{graph_lake, number, pipeline, run_stage, strings, unusable_answers};
use crate::llm_server::ExtractionServer;

const FLAVOUR: (&str, &str) = ("flavours", "rexvqa");
const STAGES: [&str; 4] = [
    "rexvqa_bullets",
    "rexvqa_generate",
    "rexvqa_judge",
    "rexvqa_filter",
];

/// The kept MCQs' compared texts per study.
async fn kept_texts(lake: &cxrlake_lake::Lake) -> BTreeMap<String, Vec<String>> {
    let rows = strings(
        lake,
        "SELECT study_id || '|' || question || ' ' || array_to_string(options, ' | ') \
         FROM rexvqa_questions WHERE kept ORDER BY mcq_id",
    )
    .await;
    let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for row in rows {
        let (study, text) = row.split_once('|').expect("study|text");
        out.entry(study.to_string())
            .or_default()
            .push(text.to_string());
    }
    out
}

/// The highest cosine between two kept MCQs of one study.
fn max_similarity(texts: &BTreeMap<String, Vec<String>>) -> f32 {
    let embedder = LexicalEmbedder::new();
    let mut max = 0f32;
    for group in texts.values() {
        let refs: Vec<&str> = group.iter().map(String::as_str).collect();
        let vectors = embedder.embed(&refs).expect("embed");
        for i in 0..vectors.len() {
            for j in 0..i {
                max = max.max(cxrlake_embed::cosine(&vectors[i], &vectors[j]));
            }
        }
    }
    max
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn offline_rexvqa_generates_validates_filters_and_exports() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (lake, _) = graph_lake(dir.path(), 30, 5).await;
    for stage in STAGES {
        run_stage(&lake, stage, &[FLAVOUR]).await;
    }
    let studies = number(&lake, "SELECT count(DISTINCT study_id) FROM sentences").await;
    assert_eq!(
        number(&lake, "SELECT count(*) FROM rexvqa_bullets").await,
        studies
    );
    assert_eq!(
        strings(&lake, "SELECT DISTINCT generator FROM rexvqa_bullets").await,
        ["offline-rexvqa-bullets-1"]
    );

    // Five task types, four distinct options, the correct one moved off position A.
    let types = strings(
        &lake,
        "SELECT DISTINCT task_type FROM rexvqa_mcq ORDER BY 1",
    )
    .await;
    assert_eq!(
        types,
        [
            "differential_diagnosis",
            "geometric",
            "location",
            "negation",
            "presence"
        ]
    );
    assert_eq!(
        number(
            &lake,
            "SELECT count(*) FROM rexvqa_mcq WHERE cardinality(options) <> 4 \
             OR cardinality(array_distinct(options)) <> 4 OR generated_index <> 0"
        )
        .await,
        0
    );
    assert_eq!(
        number(&lake, "SELECT count(DISTINCT answer_index) FROM rexvqa_mcq").await,
        4
    );
    assert_eq!(
        number(
            &lake,
            "SELECT count(*) FROM rexvqa_mcq WHERE category IS NULL"
        )
        .await,
        0,
        "offline MCQs are categorised on table A2"
    );

    // Kept = V(Q), no PHI, no near-duplicate; every rejection says why.
    let total = number(&lake, "SELECT count(*) FROM rexvqa_questions").await;
    let kept = number(&lake, "SELECT count(*) FROM rexvqa_questions WHERE kept").await;
    assert!(kept * 10 > total * 8, "{kept} of {total} kept");
    assert_eq!(
        number(
            &lake,
            "SELECT count(*) FROM rexvqa_questions WHERE kept AND NOT (valid \
             AND cardinality(phi) = 0 AND duplicate_of IS NULL AND v1_schema AND v2_types \
             AND v3_format AND v4_complete AND c1_domain AND c2_depth AND c3_alignment)"
        )
        .await,
        0
    );
    assert_eq!(
        number(
            &lake,
            "SELECT count(*) FROM rexvqa_questions WHERE NOT kept AND cardinality(reasons) = 0"
        )
        .await,
        0
    );
    assert!(max_similarity(&kept_texts(&lake).await) < 0.9);
    assert_eq!(
        number(&lake, "SELECT count(*) FROM rexvqa_taxonomy").await,
        45
    );

    // The QC sample: 100 per 1,000 kept MCQs, even across the three tiers.
    let tiers = strings(
        &lake,
        "SELECT CAST(n AS VARCHAR) FROM (SELECT count(*) AS n FROM rexvqa_questions \
         WHERE qc_sample GROUP BY difficulty) ORDER BY n",
    )
    .await;
    let sampled: Vec<i64> = tiers.iter().map(|n| n.parse().expect("count")).collect();
    assert_eq!(
        sampled.iter().sum::<i64>(),
        ((kept as f64) / 10.0).round() as i64
    );
    assert!(
        sampled.len() == 3 && sampled[2] - sampled[0] <= 1,
        "{tiers:?}"
    );

    // A low threshold finds near-duplicates: the later of each pair goes, the same on a rerun.
    let low = [FLAVOUR, ("rexvqa_duplicate_threshold", "0.3")];
    run_stage(&lake, "rexvqa_filter", &low).await;
    let duplicates = strings(
        &lake,
        "SELECT mcq_id || '>' || duplicate_of FROM rexvqa_questions \
         WHERE duplicate_of IS NOT NULL ORDER BY 1",
    )
    .await;
    assert!(!duplicates.is_empty());
    for pair in &duplicates {
        let (later, earlier) = pair.split_once('>').expect("pair");
        assert!(earlier < later, "{pair}");
        assert_eq!(later.split('_').next(), earlier.split('_').next(), "{pair}");
    }
    assert!(max_similarity(&kept_texts(&lake).await) < 0.3);
    run_stage(&lake, "rexvqa_filter", &low).await;
    assert_eq!(
        strings(
            &lake,
            "SELECT mcq_id || '>' || duplicate_of FROM rexvqa_questions \
             WHERE duplicate_of IS NOT NULL ORDER BY 1",
        )
        .await,
        duplicates
    );
    // Back to the paper's threshold (a plain run would reuse the lake's stored 0.3).
    let paper = [FLAVOUR, ("rexvqa_duplicate_threshold", "0.9")];
    run_stage(&lake, "rexvqa_filter", &paper).await;

    // The export: the kept MCQs, lettered.
    let out = dir.path().join("rexvqa-out");
    let summary = export_rexvqa(&lake, &RexvqaExport::new(&out))
        .await
        .expect("export");
    assert_eq!(summary.splits.values().sum::<usize>() as i64, kept);
    let mut exported = 0;
    for split in summary.splits.keys() {
        let text = std::fs::read_to_string(out.join("rexvqa").join(format!("{split}.json")))
            .expect("json");
        let records: Vec<Value> = serde_json::from_str(&text).expect("array");
        for record in &records {
            let letter = record["correct_answer"].as_str().expect("letter");
            assert!(["A", "B", "C", "D"].contains(&letter), "{record}");
            assert!(record["options"][0].as_str().expect("A").starts_with("A. "));
        }
        exported += records.len();
        assert!(
            out.join("rexvqa")
                .join(format!("{split}.parquet"))
                .is_file()
        );
    }
    assert_eq!(exported as i64, kept);

    let again = pipeline(&lake, &paper)
        .await
        .plan(false)
        .await
        .expect("plan");
    assert!(
        again
            .stages
            .iter()
            .filter(|s| s.stage.starts_with("rexvqa_"))
            .all(|s| s.scope.is_empty()),
        "up to date after the run:\n{again}"
    );
}

/// Answers the chain: bullets from the report's findings; for studies whose bullets have an
/// even number of characters six MCQs (valid, three options, a repeated option, PHI in the
/// explanation, a near-duplicate of the first, a laterality question the judge rejects), else
/// prose (asked again, still prose: quarantined); the judge accepts all but the laterality one.
fn rexvqa_answer(prompt: &str) -> String {
    if let Some(report) = prompt.strip_prefix("INDICATION: ") {
        let findings = report
            .lines()
            .find_map(|l| {
                l.strip_prefix("FINDINGS: ")
                    .or(l.strip_prefix("IMPRESSION: "))
            })
            .unwrap_or("Normal chest radiograph.");
        return json!({"bullets": [
            {"section": "findings", "text": findings, "level": 0},
            {"section": "findings", "text": "Small left pleural effusion.", "level": 0}
        ]})
        .to_string();
    }
    if prompt.starts_with("FINDINGS:") || prompt.starts_with("IMPRESSION:") {
        if prompt.len() % 2 == 1 {
            return "Here are some questions about the radiograph!".to_string();
        }
        let valid = json!({"question": "Which finding is present on this chest radiograph?",
            "options": ["Pleural effusion", "Pneumothorax", "Pulmonary edema", "Rib fracture"],
            "answer_index": 0,
            "explanation": "Small left pleural effusion is seen; the other findings are not.",
            "difficulty": "Easy", "category": "Other Pulmonary Diagnosis",
            "subcategory": "Miscellaneous Pulmonary Disease", "task_type": "Presence assessment"});
        let mut three = valid.clone();
        three["question"] = json!("Where is the effusion on this chest radiograph?");
        three["options"] = json!(["Left", "Right", "Both sides"]);
        let mut repeated = valid.clone();
        repeated["question"] = json!("What lies at the left base on this radiograph?");
        repeated["options"] = json!(["A. Effusion", "B. Atelectasis", "C. effusion", "D. Mass"]);
        let mut phi = valid.clone();
        phi["question"] = json!("What does the left costophrenic angle show on this image?");
        phi["options"] = json!(["Blunting", "Sharp angle", "Free air", "Calcification"]);
        phi["explanation"] = json!("Blunting was discussed with Dr. Hartley on 03/14/2021.");
        let mut near = valid.clone();
        near["options"] = json!([
            "Pneumothorax",
            "Pleural effusion",
            "Pulmonary edema",
            "Rib fracture"
        ]);
        near["answer_index"] = json!(1);
        let mut side = valid.clone();
        side["question"] = json!("Which side shows the pleural effusion on this radiograph?");
        side["options"] = json!(["Right", "Left", "Both sides", "Neither side"]);
        side["task_type"] = json!("geometric");
        side["difficulty"] = json!("hard");
        return json!({"questions": [valid, three, repeated, phi, near, side]}).to_string();
    }
    if prompt.contains("MARKED ANSWER:") {
        let aligned = !prompt.contains("Which side shows");
        return json!({"domain_specific": true, "cognitive_depth": true,
                      "clinical_alignment": aligned, "rationale": "Checked against the bullets."})
        .to_string();
    }
    "Still no JSON, sorry.".to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn llm_rexvqa_chain_validates_filters_quarantines_and_caches() {
    let server = ExtractionServer::start_answering(rexvqa_answer, Duration::ZERO, usize::MAX).await;
    let endpoint = server.endpoint();
    let dir = tempfile::tempdir().expect("tempdir");
    let (lake, _) = graph_lake(dir.path(), 16, 3).await;
    let settings = [
        FLAVOUR,
        ("generator", "llm"),
        ("llm_endpoint", endpoint.as_str()),
        ("llm_model", "rex-model"),
    ];
    for stage in STAGES {
        run_stage(&lake, stage, &settings).await;
    }
    let bulleted = number(&lake, "SELECT count(*) FROM rexvqa_bullets").await;
    assert!(bulleted > 0);
    // The calls' commits name the stage that made them (the judge ran last).
    let last = lake.history("llm_calls", Some(1)).await.expect("history");
    assert_eq!(
        last[0].stage.as_ref().map(|s| s.stage.as_str()),
        Some("rexvqa_judge")
    );
    assert!(
        strings(&lake, "SELECT DISTINCT generator FROM rexvqa_bullets").await[0]
            .starts_with("llm:rex-model@2+")
    );
    // Malformed answers: asked again, then quarantined with the last answer.
    let generated = number(&lake, "SELECT count(DISTINCT study_id) FROM rexvqa_mcq").await;
    let quarantined = strings(
        &lake,
        "SELECT CAST(raw AS VARCHAR) FROM quarantine WHERE stage = 'rexvqa_generate'",
    )
    .await;
    assert!(
        generated > 0 && !quarantined.is_empty(),
        "{generated} / {quarantined:?}"
    );
    assert_eq!(generated + quarantined.len() as i64, bulleted);
    assert!(quarantined.iter().all(|r| r.contains("Still no JSON")));

    let column = |position: &str, expr: &str| {
        format!(
            "SELECT DISTINCT CAST({expr} AS VARCHAR) FROM rexvqa_questions \
             WHERE mcq_id LIKE '%_q{position}'"
        )
    };
    // q00 valid and kept, normalised, its correct option wherever balancing put it.
    assert_eq!(strings(&lake, &column("00", "kept")).await, ["true"]);
    assert_eq!(
        strings(&lake, &column("00", "task_type")).await,
        ["presence"]
    );
    assert_eq!(strings(&lake, &column("00", "difficulty")).await, ["easy"]);
    assert_eq!(
        strings(&lake, &column("00", "subcategory")).await,
        ["miscellaneous_pulmonary_disease"]
    );
    assert_eq!(
        strings(&lake, &column("00", "options[answer_index + 1]")).await,
        ["Pleural effusion"]
    );
    // q01 three options, q02 a repeated option: v3 fails alone, not judged, not kept.
    for (position, reason) in [
        ("01", "v3: 3 options (four are needed)"),
        ("02", "v3: option 'effusion' is repeated"),
    ] {
        assert_eq!(
            strings(
                &lake,
                &column(
                    position,
                    "concat_ws('/', v1_schema, v2_types, v3_format, v4_complete, judge IS NULL, kept)"
                )
            )
            .await,
            ["true/true/false/true/true/false"]
        );
        assert_eq!(
            strings(&lake, &column(position, "array_to_string(reasons, ';')")).await,
            [reason]
        );
    }
    // q03: PHI caught.
    assert_eq!(
        strings(&lake, &column("03", "concat_ws('/', valid, kept)")).await,
        ["true/false"]
    );
    assert_eq!(
        strings(&lake, &column("03", "array_to_string(phi, ';')")).await,
        ["date: 03/14/2021;name: Dr. Hartley"]
    );
    // q04 nearly repeats q00; q05 rejected by the judge.
    let duplicates: BTreeSet<String> = strings(
        &lake,
        "SELECT DISTINCT substr(mcq_id, length(mcq_id) - 2) || '>' || \
         substr(duplicate_of, length(duplicate_of) - 2) FROM rexvqa_questions \
         WHERE duplicate_of IS NOT NULL",
    )
    .await
    .into_iter()
    .collect();
    assert_eq!(duplicates, BTreeSet::from(["q04>q00".to_string()]));
    assert_eq!(
        strings(
            &lake,
            &column("05", "concat_ws('/', c3_alignment, valid, kept)")
        )
        .await,
        ["false/false/false"]
    );
    assert_eq!(
        number(&lake, "SELECT count(*) FROM rexvqa_questions WHERE kept").await,
        generated
    );

    // A rerun asks only the unusable answers again: every other answer comes from llm_calls.
    let sent = server.answers();
    let mut reports = Vec::new();
    for stage in STAGES {
        reports.push(run_stage(&lake, stage, &settings).await);
    }
    assert!(
        unusable_answers(&reports) > 0,
        "the prose answers are unusable"
    );
    assert_eq!(server.answers(), sent + unusable_answers(&reports));
}
