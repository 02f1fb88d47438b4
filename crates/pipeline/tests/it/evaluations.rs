//! `cxrlake evaluate <kind>` over a synthetic lake: labels, boxes, RadStrucVQA, text, GEMeX-style
//! choice and agreement, each against inputs whose right answer is known (the lake's own data
//! scores 1, a corrupted copy scores lower on exactly what was corrupted), the `eval_*` tables,
//! intervals and the errors on bad input files.

use std::collections::BTreeMap;
use std::path::Path;

use cxrlake_evaluate::agreement::Weights;
use cxrlake_lake::Lake;
use cxrlake_pipeline::evaluate::{
    self as eval, AgreementOptions, BoxOptions, ChoiceOptions, EvalOptions, Evaluation,
    LabelOptions, LabelSource, RadStructOptions, TextOptions, TextTargets, Uncertain,
};
use serde_json::Value;

use crate::common::{json_lines, number, qa_lake, strings};

fn options(n_boot: usize) -> EvalOptions {
    EvalOptions {
        n_boot,
        seed: 7,
        level: 0.95,
    }
}

/// The estimate of (system, scope, name, metric).
fn score(evaluation: &Evaluation, system: &str, scope: &str, name: &str, metric: &str) -> f64 {
    evaluation
        .scores
        .iter()
        .find(|s| s.system == system && s.scope == scope && s.name == name && s.metric == metric)
        .and_then(|s| s.estimate)
        .unwrap_or_else(|| panic!("no {system}/{scope}/{name}/{metric} in\n{evaluation}"))
}

fn write(path: &Path, text: &str) {
    std::fs::write(path, text).expect("write input file");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_evaluation_scores_known_answers() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (lake, defs) = qa_lake(dir.path(), 40, 23).await;
    labels(&lake, &defs, dir.path()).await;
    boxes(&lake, &defs, dir.path()).await;
    text(&lake, dir.path()).await;
    radstruct(&lake, dir.path()).await;
    choice(dir.path()).await;
    agreement(&lake, dir.path()).await;
}

async fn labels(lake: &Lake, defs: &cxrlake_refdefs::RefDefs, dir: &Path) {
    let label_options = LabelOptions {
        source: LabelSource::Lake {
            labeler: "chexpert".into(),
        },
        mapping: None,
        subsets: vec![(
            "effusion".into(),
            vec!["Pleural Effusion".into(), "Pleural Other".into()],
        )],
        uncertain: Uncertain::Ignore,
        missing_negative: true,
        eval: options(200),
    };
    let evaluation = eval::labels_vs_scene_graphs(lake, defs, &label_options, Some(("same", lake)))
        .await
        .expect("labels");
    // The synthetic labels are derived from the corpus's truth, which the rules pipeline
    // recovers well; the same lake as its own baseline differs by exactly 0.
    let micro_f1 = score(&evaluation, "lake", "micro", "all classes", "f1");
    assert!(micro_f1 >= 0.7, "{evaluation}");
    assert!(
        score(&evaluation, "lake", "micro", "all classes", "mcc") >= 0.6,
        "{evaluation}"
    );
    for s in evaluation
        .scores
        .iter()
        .filter(|s| s.system == "difference")
    {
        assert_eq!(
            (s.estimate, s.ci_low, s.ci_high),
            (Some(0.0), Some(0.0), Some(0.0)),
            "{s:?}"
        );
    }
    for s in evaluation.scores.iter().filter(|s| s.system == "lake") {
        let (e, lo, hi) = (
            s.estimate.expect("estimate"),
            s.ci_low.expect("low"),
            s.ci_high.expect("high"),
        );
        assert!(lo <= e + 1e-12 && e <= hi + 1e-12, "{s:?}");
    }
    assert!(
        evaluation
            .scores
            .iter()
            .any(|s| s.scope == "macro" && s.name == "CXP-5")
    );
    assert!(
        evaluation
            .scores
            .iter()
            .any(|s| s.scope == "macro" && s.name == "effusion")
    );
    assert!(
        evaluation
            .notes
            .iter()
            .any(|n| n.contains("Tortuous Aorta")),
        "LT classes have no CheXpert labels"
    );
    evaluation.commit(lake).await.expect("commit");
    let rows = number(lake, "SELECT count(*) FROM eval_labels").await;
    assert_eq!(rows as usize, evaluation.scores.len());

    // A labels CSV with the same values gives the same scores; a bad value names its line.
    let csv = dir.join("labels.csv");
    let mut text = String::from("study_id,class,label\n");
    for line in json_lines(
        lake,
        "SELECT study_id, pleural_effusion FROM chexpert_labels WHERE labeler = 'chexpert'",
    )
    .await
    {
        let row: Value = serde_json::from_str(&line).expect("json");
        let value = row["pleural_effusion"]
            .as_f64()
            .map(|v| format!("{v}"))
            .unwrap_or_default();
        text.push_str(&format!(
            "{},pleural_effusion,{value}\n",
            row["study_id"].as_str().expect("id")
        ));
    }
    write(&csv, &text);
    let from_csv = eval::labels_vs_scene_graphs(
        lake,
        defs,
        &LabelOptions {
            source: LabelSource::Csv(csv.clone()),
            subsets: Vec::new(),
            ..label_options.clone()
        },
        None,
    )
    .await
    .expect("labels from csv");
    for metric in ["precision", "recall", "f1", "mcc"] {
        assert_eq!(
            score(&from_csv, "lake", "class", "Pleural Effusion", metric),
            score(&evaluation, "lake", "class", "Pleural Effusion", metric),
            "{metric}"
        );
    }
    write(&csv, "study_id,class,label\ns1,pleural_effusion,maybe\n");
    let error = eval::labels_vs_scene_graphs(
        lake,
        defs,
        &LabelOptions {
            source: LabelSource::Csv(csv),
            ..label_options
        },
        None,
    )
    .await
    .expect_err("bad label");
    assert!(
        error.to_string().contains("line 2") && error.to_string().contains("maybe"),
        "{error}"
    );
}

/// The lake's own boxes of its positive observations, as reference rows of `class`.
async fn own_boxes(lake: &Lake, finding: &str, dx: f64) -> Vec<String> {
    let sql = format!(
        "WITH obs AS (SELECT unnest(observations) AS o FROM scene_graphs), \
         pos AS (SELECT unnest(o['localization']) AS l FROM obs \
                 WHERE o['positiveness'] = 'pos' AND array_has(o['obs_entities'], '{finding}')), \
         b AS (SELECT l['image_id'] AS image_id, unnest(l['bboxes']) AS b FROM pos) \
         SELECT image_id || ',' || CAST(array_element(b, 1) AS VARCHAR) || ',' || \
                CAST(array_element(b, 2) AS VARCHAR) || ',' || CAST(array_element(b, 3) AS VARCHAR) \
                || ',' || CAST(array_element(b, 4) AS VARCHAR) FROM b"
    );
    strings(lake, &sql)
        .await
        .into_iter()
        .map(|row| {
            let parts: Vec<&str> = row.split(',').collect();
            let n = |i: usize| parts[i].parse::<f64>().expect("number");
            format!(
                "{},Pleural Effusion,{},{},{},{}",
                parts[0],
                n(1) + dx,
                n(2),
                n(3) + dx,
                n(4)
            )
        })
        .collect()
}

async fn boxes(lake: &Lake, defs: &cxrlake_refdefs::RefDefs, dir: &Path) {
    let reference = dir.join("boxes.csv");
    let rows = own_boxes(lake, "pleural effusion", 0.0).await;
    assert!(
        !rows.is_empty(),
        "the synthetic lake has localized effusions"
    );
    write(
        &reference,
        &format!("image_id,class,x1,y1,x2,y2\n{}\n", rows.join("\n")),
    );
    let box_options = BoxOptions {
        reference: reference.clone(),
        mapping: None,
        threshold: 0.3,
        eval: options(100),
    };
    let same = eval::boxes_vs_reference(lake, defs, &box_options)
        .await
        .expect("boxes");
    for metric in ["iou@30", "iop@30", "iot@30", "iou", "iop", "iot"] {
        let value = score(&same, "lake", "class", "Pleural Effusion", metric);
        assert!((value - 1.0).abs() < 1e-9, "{metric}: {same}");
    }
    // Shifted by 10 000 pixels, nothing overlaps.
    let rows = own_boxes(lake, "pleural effusion", 10_000.0).await;
    write(
        &reference,
        &format!("image_id,class,x1,y1,x2,y2\n{}\n", rows.join("\n")),
    );
    let shifted = eval::boxes_vs_reference(lake, defs, &box_options)
        .await
        .expect("boxes");
    assert_eq!(
        score(&shifted, "lake", "micro", "pairs", "iou"),
        0.0,
        "{shifted}"
    );
    write(&reference, "image_id,class,x1,y1,x2,y2\ni1,Edema,1,2,x,4\n");
    let error = eval::boxes_vs_reference(lake, defs, &box_options)
        .await
        .expect_err("bad box");
    assert!(
        error.to_string().contains("line 2") && error.to_string().contains("'x'"),
        "{error}"
    );
}

async fn text(lake: &Lake, dir: &Path) {
    // The answers' own texts as predictions: every n-gram metric is perfect.
    let predictions = dir.join("text.jsonl");
    let lines = json_lines(
        lake,
        "SELECT study_id, question_id, string_agg(a['text'], ' ' ORDER BY a['answer_id']) AS answer \
         FROM (SELECT study_id, question_id, unnest(answers) AS a FROM qa) \
         GROUP BY study_id, question_id",
    )
    .await;
    write(&predictions, &lines.join("\n"));
    let text_options = TextOptions {
        predictions: predictions.clone(),
        targets: TextTargets::Qa,
        embedder: None,
        baseline: None,
        eval: options(20),
    };
    let evaluation = eval::text_scores(lake, &text_options).await.expect("text");
    for metric in ["bleu_1", "bleu_4", "meteor", "rouge_l"] {
        let value = score(&evaluation, "predictions", "overall", "all", metric);
        assert!(value > 0.99, "{metric}: {evaluation}");
    }
    // BERTScore through the ONNX embedder's token embeddings: identical texts score 1.
    crate::graph::required_path("ORT_DYLIB_PATH");
    let embedder = cxrlake_embed::OnnxEmbedder::load(
        &crate::graph::required_path("ONNX_TEST_MODEL"),
        &crate::graph::required_path("ONNX_TEST_TOKENIZER"),
        256,
    )
    .expect("ONNX embedder");
    // On 40 answers (ONNX inference in a debug build is slow): the same texts as a references
    // file and as the predictions.
    let few = dir.join("few.jsonl");
    write(&few, &lines[..40.min(lines.len())].join("\n"));
    let with_bertscore = eval::text_scores(
        lake,
        &TextOptions {
            predictions: few.clone(),
            targets: TextTargets::File(few),
            embedder: Some(std::sync::Arc::new(embedder)),
            ..text_options.clone()
        },
    )
    .await
    .expect("text with BERTScore");
    let bertscore = score(
        &with_bertscore,
        "predictions",
        "overall",
        "all",
        "bertscore_f1",
    );
    assert!(bertscore > 0.999, "{with_bertscore}");
    // Half of the answers replaced by a fixed sentence: every metric drops.
    let halved: Vec<String> = lines
        .iter()
        .enumerate()
        .map(|(i, line)| {
            let mut row: Value = serde_json::from_str(line).expect("json");
            if i % 2 == 0 {
                row["answer"] = Value::from("the heart is enlarged");
            }
            row.to_string()
        })
        .collect();
    write(&predictions, &halved.join("\n"));
    let worse = eval::text_scores(lake, &text_options).await.expect("text");
    for metric in ["bleu_1", "bleu_4", "meteor", "rouge_l", "cider_d"] {
        assert!(
            score(&worse, "predictions", "overall", "all", metric)
                < score(&evaluation, "predictions", "overall", "all", metric),
            "{metric}"
        );
    }
    // The exact answers against the halved ones as a baseline: positive paired differences
    // equal to the two systems' difference.
    let exact = dir.join("exact-text.jsonl");
    write(&exact, &lines.join("\n"));
    let paired = eval::text_scores(
        lake,
        &TextOptions {
            predictions: exact,
            baseline: Some(predictions.clone()),
            ..text_options.clone()
        },
    )
    .await
    .expect("text with a baseline");
    for metric in ["bleu_4", "meteor", "rouge_l", "cider_d"] {
        let difference = score(&paired, "difference", "overall", "all", metric);
        let expected = score(&evaluation, "predictions", "overall", "all", metric)
            - score(&worse, "predictions", "overall", "all", metric);
        assert!(
            difference > 0.0 && (difference - expected).abs() < 1e-9,
            "{metric}: {paired}"
        );
    }
}

async fn radstruct(lake: &Lake, dir: &Path) {
    let predictions = dir.join("radstruct.jsonl");
    let lines = json_lines(lake, "SELECT study_id, question_id, answers FROM qa").await;
    write(&predictions, &lines.join("\n"));
    let rs_options = RadStructOptions {
        predictions: predictions.clone(),
        baseline: None,
        entailer: eval::Entailer::Offline,
        eval: options(50),
    };
    let same = eval::radstruct_scores(lake, &rs_options)
        .await
        .expect("radstruct");
    let all: BTreeMap<(String, String), f64> = same
        .scores
        .iter()
        .filter_map(|s| Some(((s.name.clone(), s.metric.clone()), s.estimate?)))
        .collect();
    assert!(all.len() >= 24, "{same}");
    for ((name, metric), value) in &all {
        assert!(
            (value - 1.0).abs() < 1e-9,
            "{name} {metric} = {value}\n{same}"
        );
    }
    // Boxes shifted far away: grounding falls, the tags do not.
    let shifted: Vec<String> = lines
        .iter()
        .map(|line| {
            let mut row: Value = serde_json::from_str(line).expect("json");
            for part in row["answers"].as_array_mut().into_iter().flatten() {
                for l in part["localization"].as_array_mut().into_iter().flatten() {
                    for b in l["bboxes"].as_array_mut().into_iter().flatten() {
                        for k in [0, 2] {
                            let x = b[k].as_f64().unwrap_or(0.0);
                            b[k] = Value::from(x + 100_000.0);
                        }
                    }
                }
            }
            row.to_string()
        })
        .collect();
    write(&predictions, &shifted.join("\n"));
    let moved = eval::radstruct_scores(lake, &rs_options)
        .await
        .expect("radstruct");
    let value = |e: &Evaluation, name: &str, metric: &str| {
        score(e, "predictions", "sub-metric", name, metric)
    };
    assert!(value(&moved, "grounding", "precision") < 0.5, "{moved}");
    assert!(value(&moved, "spatial", "recall") < 0.5, "{moved}");
    for name in ["logical", "finding", "region"] {
        assert!(
            (value(&moved, name, "precision") - 1.0).abs() < 1e-9,
            "{name}: {moved}"
        );
    }
    // Flipped positiveness: the logical sub-metric falls.
    let flipped: Vec<String> = lines
        .iter()
        .map(|line| {
            let mut row: Value = serde_json::from_str(line).expect("json");
            for part in row["answers"].as_array_mut().into_iter().flatten() {
                let flip = match part["positiveness"].as_str() {
                    Some("pos") => "neg",
                    Some("neg") => "pos",
                    _ => continue,
                };
                part["positiveness"] = Value::from(flip);
            }
            row.to_string()
        })
        .collect();
    write(&predictions, &flipped.join("\n"));
    let contradicted = eval::radstruct_scores(lake, &rs_options)
        .await
        .expect("radstruct");
    assert!(
        value(&contradicted, "logical", "precision") < 0.9,
        "{contradicted}"
    );
    assert!(
        value(&contradicted, "finding-pos", "recall") < 0.9,
        "{contradicted}"
    );
}

async fn choice(dir: &Path) {
    let targets = dir.join("mcq.csv");
    let predictions = dir.join("answers.csv");
    write(
        &targets,
        "question_id,answer,category,task_type\nq1,A,presence,diagnosis\nq2,B,location,diagnosis\n\
         q3,C,presence,negation\nq4,D,location,negation\n",
    );
    write(
        &predictions,
        "question_id,answer\nq1,(A)\nq2,The answer is C\nq3,C. Effusion\n",
    );
    let evaluation = eval::choice_accuracy(&ChoiceOptions {
        targets: targets.clone(),
        predictions: predictions.clone(),
        baseline: None,
        eval: options(100),
    })
    .await
    .expect("choice");
    assert_eq!(
        score(&evaluation, "predictions", "overall", "all", "accuracy"),
        0.5
    );
    assert_eq!(
        score(
            &evaluation,
            "predictions",
            "category",
            "presence",
            "accuracy"
        ),
        1.0
    );
    assert_eq!(
        score(
            &evaluation,
            "predictions",
            "category",
            "location",
            "accuracy"
        ),
        0.0
    );
    assert_eq!(
        score(
            &evaluation,
            "predictions",
            "task_type",
            "negation",
            "accuracy"
        ),
        0.5
    );
    assert!(
        evaluation
            .notes
            .iter()
            .any(|n| n.contains("1 without a prediction"))
    );
}

async fn agreement(lake: &Lake, dir: &Path) {
    // Two raters, 4 items: observed agreement 3/4; marginals A: 2 yes 2 no, B: 3 yes 1 no;
    // expected agreement 2/4·3/4 + 2/4·1/4 = 0.5; Cohen's kappa = (0.75 − 0.5) / 0.5 = 0.5.
    let ratings = dir.join("ratings.csv");
    write(
        &ratings,
        "item,rater,value\n1,a,yes\n1,b,yes\n2,a,yes\n2,b,yes\n3,a,no\n3,b,yes\n4,a,no\n4,b,no\n",
    );
    let evaluation = eval::rater_agreement(
        lake,
        &AgreementOptions {
            ratings: eval::RatingsSource::File(ratings),
            categories: None,
            weights: Weights::Identity,
            eval: options(100),
        },
    )
    .await
    .expect("agreement");
    let kappa = score(
        &evaluation,
        "ratings",
        "pair",
        "a vs b",
        "cohen_kappa (identity)",
    );
    assert!((kappa - 0.5).abs() < 1e-12, "{evaluation}");
}

/// A very literal entailment LLM: a hypothesis phrase is ENTAILED by the reference phrases with
/// the same text; prompts whose task mentions "pneumothorax" get prose instead of JSON.
fn entailment_answer(prompt: &str) -> String {
    let task = &prompt[prompt.rfind("Reference phrases:").expect("task")..];
    if task.to_lowercase().contains("pneumothorax") {
        return "I think these phrases mostly agree.".into();
    }
    let (references, hypotheses) = task.split_once("Hypothesis phrases:").expect("hypotheses");
    let numbered = |block: &str| -> Vec<String> {
        block
            .lines()
            .filter_map(|l| {
                l.split_once(". ")
                    .filter(|(n, _)| n.trim().parse::<usize>().is_ok())
            })
            .map(|(_, text)| text.trim().to_string())
            .collect()
    };
    let references = numbered(references);
    let phrases: Vec<Value> = numbered(hypotheses.split("Answer:").next().unwrap_or_default())
        .iter()
        .enumerate()
        .map(|(i, h)| {
            let evidence: Vec<usize> = references
                .iter()
                .enumerate()
                .filter(|(_, r)| *r == h)
                .map(|(j, _)| j + 1)
                .collect();
            let status = if evidence.is_empty() {
                "NOT_ENTAILED"
            } else {
                "ENTAILED"
            };
            serde_json::json!({"index": i + 1, "status": status, "evidence": evidence})
        })
        .collect();
    serde_json::json!({ "phrases": phrases }).to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn llm_entailment_scores_parses_and_caches() {
    let server = crate::llm_server::ExtractionServer::start_answering(
        entailment_answer,
        std::time::Duration::ZERO,
        usize::MAX,
    )
    .await;
    let dir = tempfile::tempdir().expect("tempdir");
    let (lake, _) = qa_lake(dir.path(), 12, 5).await;
    let predictions = dir.path().join("radstruct.jsonl");
    let lines = json_lines(&lake, "SELECT study_id, question_id, answers FROM qa").await;
    write(&predictions, &lines.join("\n"));
    let mut settings = cxrlake_lake::Settings::load(None).expect("settings");
    settings
        .set("llm_endpoint", &server.endpoint())
        .expect("endpoint");
    settings.set("llm_model", "entail-model").expect("model");
    let entailer = eval::LlmEntailer::open(&lake, &settings.cxrlake)
        .await
        .expect("entailer");
    let rs_options = RadStructOptions {
        predictions,
        baseline: None,
        entailer: eval::Entailer::Llm(std::sync::Arc::new(entailer)),
        eval: options(20),
    };
    let first = eval::radstruct_scores(&lake, &rs_options)
        .await
        .expect("radstruct");
    let asked = server.answers();
    assert!(asked > 0);
    // Every parsed sample entails itself; the prose answers make their samples invalid.
    for s in first
        .scores
        .iter()
        .filter(|s| s.metric != "f1" || s.estimate.is_some())
    {
        if let Some(value) = s.estimate {
            assert!((value - 1.0).abs() < 1e-9, "{s:?}\n{first}");
        }
    }
    assert!(
        first.settings["entailer"]
            .as_str()
            .expect("id")
            .starts_with("llm:entail-model@evaluate-entailment-")
    );
    let note = first.notes.join(" ");
    let invalid: usize = note
        .split(" invalid")
        .next()
        .and_then(|head| head.rsplit(' ').next())
        .and_then(|n| n.parse().ok())
        .expect("invalid count in the note");
    assert!(invalid > 0, "{note}");
    // A second evaluation is answered from llm_calls.
    let entailer = eval::LlmEntailer::open(&lake, &settings.cxrlake)
        .await
        .expect("entailer");
    let again = eval::radstruct_scores(
        &lake,
        &RadStructOptions {
            entailer: eval::Entailer::Llm(std::sync::Arc::new(entailer)),
            ..rs_options
        },
    )
    .await
    .expect("radstruct");
    assert_eq!(server.answers(), asked, "nothing asked again");
    assert_eq!(again.scores, first.scores);
}

/// `cxrlake evaluate gemex` with the lake's own `gemex_qa` answers and boxes as predictions:
/// A-score and V-score 1 for every question type that has them; answers and boxes replaced on
/// half of the questions score lower (called by the offline GEMeX test, which builds the lake).
pub async fn gemex_own_answers_score_one(lake: &Lake, dir: &Path) {
    let predictions = dir.join("gemex-answers.jsonl");
    let lines = json_lines(
        lake,
        "SELECT image_id, question_id, answer, arrow_cast(location, 'List(List(Float64))') AS location \
         FROM gemex_qa",
    )
    .await;
    write(&predictions, &lines.join("\n"));
    let gemex_options = cxrlake_gemex::evaluate::GemexOptions {
        predictions: predictions.clone(),
        baseline: None,
        eval: options(50),
    };
    let same = cxrlake_gemex::evaluate::gemex_scores(lake, &gemex_options)
        .await
        .expect("gemex");
    for kind in ["closed-ended", "single-choice", "multi-choice"] {
        assert_eq!(
            score(&same, "predictions", "question_type", kind, "a_score"),
            1.0,
            "{same}"
        );
    }
    assert_eq!(
        score(&same, "predictions", "overall", "all", "v_score"),
        1.0,
        "{same}"
    );
    let wrong: Vec<String> = lines
        .iter()
        .enumerate()
        .map(|(i, line)| {
            let mut row: Value = serde_json::from_str(line).expect("json");
            if i % 2 == 0 {
                row["answer"] = Value::from("I cannot tell.");
                row["location"] = Value::Null;
            }
            row.to_string()
        })
        .collect();
    write(&predictions, &wrong.join("\n"));
    let worse = cxrlake_gemex::evaluate::gemex_scores(lake, &gemex_options)
        .await
        .expect("gemex");
    for metric in ["a_score", "v_score"] {
        let value = score(&worse, "predictions", "overall", "all", metric);
        assert!(value < 0.75 && value > 0.25, "{metric} = {value}\n{worse}");
    }
    let exact = dir.join("gemex-exact.jsonl");
    write(&exact, &lines.join("\n"));
    let paired = cxrlake_gemex::evaluate::gemex_scores(
        lake,
        &cxrlake_gemex::evaluate::GemexOptions {
            predictions: exact,
            baseline: Some(predictions),
            eval: options(50),
        },
    )
    .await
    .expect("gemex with a baseline");
    for metric in ["a_score", "v_score"] {
        let difference = score(&paired, "difference", "overall", "all", metric);
        let expected = 1.0 - score(&worse, "predictions", "overall", "all", metric);
        assert!((difference - expected).abs() < 1e-9, "{metric}: {paired}");
    }
}
