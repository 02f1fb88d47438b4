//! `export_qa` over a lake built by the pipeline (synthetic corpus → ingest → extract → localize
//! → map → graph → balance → qa): one D.2 file per study with questions, every file valid, the
//! counts and the answer hierarchy of the lake reproduced, filters, errors; and `validate_qa`
//! against hand-made deviations.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use cxrlake_export::{ExportError, QaExport, d2, export_qa, qa_path, validate_qa};
use cxrlake_ingest::{IngestOptions, ingest};
use cxrlake_lake::Lake;
use cxrlake_pipeline::{Pipeline, RunMode};
use cxrlake_synth::{SynthOptions, generate};
use datafusion::arrow::array::{AsArray, RecordBatch};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Int64Type};
use serde_json::{Value, json};

use crate::fixtures::files;

/// A lake in `dir/lake` holding `qa` for `studies` synthetic studies.
pub async fn qa_lake(dir: &Path, studies: usize) -> Lake {
    let corpus = dir.join("corpus");
    generate(&SynthOptions::new(studies, 11, &corpus)).expect("synth");
    let lake = Lake::open_url(dir.join("lake").to_str().expect("utf-8"))
        .expect("open")
        .with_session_factory(cxrlake_udfs::session_context_on);
    lake.init().await.expect("init");
    ingest(&lake, &IngestOptions::new(vec![corpus]))
        .await
        .expect("ingest");
    let pipeline = Pipeline::open(lake.clone(), &[]).await.expect("pipeline");
    cxrlake_pipeline::refdefs::load_reference_tables(&lake, pipeline.defs())
        .await
        .expect("ref tables");
    for stage in ["extract", "localize", "map", "graph", "balance", "qa"] {
        pipeline
            .run_stage(stage, RunMode::Write)
            .await
            .unwrap_or_else(|e| panic!("{stage}: {e}"));
    }
    lake
}

async fn query(lake: &Lake, sql: &str) -> Vec<RecordBatch> {
    let ctx = lake.session().await.expect("session");
    ctx.sql(sql)
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"))
        .collect()
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"))
}

async fn number(lake: &Lake, sql: &str) -> i64 {
    let batches = query(lake, sql).await;
    let column = cast(batches[0].column(0), &DataType::Int64).expect("int64");
    column.as_primitive::<Int64Type>().value(0)
}

/// `(study_id, question_id) → {(answer_id, parent_answer_id, answer_level)}` of the lake.
async fn lake_hierarchy(lake: &Lake) -> BTreeMap<(String, String), BTreeSet<(i64, i64, i64)>> {
    let sql = "SELECT study_id, question_id, a['answer_id'], \
               coalesce(a['parent_answer_id'], -1), a['answer_level'] \
               FROM (SELECT study_id, question_id, unnest(answers) AS a FROM qa)";
    let mut out: BTreeMap<_, BTreeSet<_>> = BTreeMap::new();
    for batch in query(lake, sql).await {
        let text = |i: usize| cast(batch.column(i), &DataType::Utf8).expect("utf8");
        let int = |i: usize| cast(batch.column(i), &DataType::Int64).expect("int64");
        let (studies, questions) = (text(0), text(1));
        let (ids, parents, levels) = (int(2), int(3), int(4));
        let (studies, questions) = (studies.as_string::<i32>(), questions.as_string::<i32>());
        let ids = ids.as_primitive::<Int64Type>();
        let parents = parents.as_primitive::<Int64Type>();
        let levels = levels.as_primitive::<Int64Type>();
        for row in 0..batch.num_rows() {
            let key = (
                studies.value(row).to_string(),
                questions.value(row).to_string(),
            );
            out.entry(key).or_default().insert((
                ids.value(row),
                parents.value(row),
                levels.value(row),
            ));
        }
    }
    out
}

fn read(dir: &Path, file: &str) -> (String, Value) {
    let text = std::fs::read_to_string(dir.join(file)).expect("read export");
    assert!(text.ends_with('\n'), "{file} ends with a newline");
    assert_eq!(text.lines().count(), 1, "{file} is compact");
    let value = serde_json::from_str(&text).expect("valid JSON");
    (text, value)
}

/// Whether the first occurrences of `"key":` after `from` come in the order of `keys`.
fn in_order(text: &str, from: usize, keys: &[&str]) -> bool {
    let positions: Vec<Option<usize>> = keys
        .iter()
        .map(|key| text[from..].find(&format!("\"{key}\":")))
        .collect();
    positions.iter().all(Option::is_some) && positions.windows(2).all(|pair| pair[0] < pair[1])
}

/// `(answer_id, parent or -1, answer_level)` of `parts` and their sub-answers, checking that
/// siblings come in answer_id order.
fn flatten(parts: &Value, parent: i64, out: &mut BTreeSet<(i64, i64, i64)>) {
    let mut previous = -1;
    for part in parts.as_array().expect("answer list") {
        // The release counts answer ids from 1, the lake from 0.
        let id = part["answer_id"].as_i64().expect("answer_id") - 1;
        assert!(id > previous, "siblings in answer_id order");
        previous = id;
        let level = part["answer_level"].as_i64().expect("answer_level");
        assert!(out.insert((id, parent, level)), "answer_id {id} once");
        flatten(&part["sub_answers"], id, out);
    }
}

/// The worst of a question's per-image localization levels: the smallest value (table 11).
fn worst_level(levels: &Value) -> Value {
    let value = |level: &Value| level.as_i64().expect("an integer level");
    levels
        .as_object()
        .expect("dict")
        .values()
        .min_by_key(|level| value(level))
        .cloned()
        .unwrap_or(Value::Null)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_study_with_questions_becomes_one_d2_file() {
    let dir = tempfile::tempdir().expect("tempdir");
    let lake = qa_lake(dir.path(), 16).await;
    let out = dir.path().join("qa");
    let summary = export_qa(&lake, &QaExport::new(&out))
        .await
        .expect("export");

    let written = files(&out);
    let studies = number(&lake, "SELECT count(DISTINCT study_id) FROM qa").await;
    let questions = number(&lake, "SELECT count(*) FROM qa").await;
    let parts = number(&lake, "SELECT sum(cardinality(answers)) FROM qa").await;
    assert!(studies >= 12 && questions > studies * 20, "{summary}");
    assert_eq!(written.len() as i64, studies, "{written:?}");
    assert_eq!(
        (summary.studies, summary.files),
        (written.len(), written.len())
    );
    assert_eq!(summary.questions as i64, questions);
    let on_disk: u64 = written
        .iter()
        .map(|f| std::fs::metadata(out.join(f)).expect("file").len())
        .sum();
    assert_eq!(summary.bytes, on_disk);
    let line = summary.to_string();
    assert!(line.starts_with(&format!(
        "qa: {questions} questions of {studies} studies → "
    )));

    let hierarchy = lake_hierarchy(&lake).await;
    let (mut question_total, mut part_total) = (0, 0);
    for file in &written {
        let (text, value) = read(&out, file);
        assert_eq!(validate_qa(&value), Vec::<String>::new(), "{file}");
        let (patient_id, study_id) = (
            value["patient_id"].as_str().expect("patient_id"),
            value["study_id"].as_str().expect("study_id"),
        );
        assert_eq!(qa_path(patient_id, study_id), Path::new(file));
        assert!(text.starts_with(&format!(
            r#"{{"patient_id":"{patient_id}","study_id":"{study_id}","questions":[{{"question_id":"#
        )));
        let question_keys: Vec<&str> = d2::QUESTION
            .iter()
            .chain(d2::CXRLAKE_QUESTION)
            .copied()
            .collect();
        assert!(
            in_order(&text, 0, &question_keys),
            "{file}: question keys in order"
        );
        let answers = text.find("\"answers\":").expect("answers");
        assert!(
            in_order(&text, answers, d2::ANSWER),
            "{file}: answer keys in order"
        );

        let questions = value["questions"].as_array().expect("questions");
        let ids: Vec<&str> = questions
            .iter()
            .map(|q| q["question_id"].as_str().expect("question_id"))
            .collect();
        assert!(
            ids.windows(2).all(|pair| pair[0] < pair[1]),
            "{file}: ordered"
        );
        question_total += questions.len();
        for question in questions {
            let question_id = question["question_id"].as_str().expect("id");
            let mut nested = BTreeSet::new();
            flatten(&question["answers"], -1, &mut nested);
            part_total += nested.len();
            let key = (study_id.to_string(), question_id.to_string());
            assert_eq!(Some(&nested), hierarchy.get(&key), "{file} {question_id}");

            assert_eq!(
                question["extraction_quality"]["localization_quality"],
                worst_level(&question["question_img_localization_quality"]),
                "{file} {question_id}"
            );
            assert_eq!(
                question["question_quality"],
                json!({"question_clarity": null, "completeness": null, "rating": null})
            );
            assert!(question["variables"].is_object());
            assert!(
                question["extractor"]
                    .as_str()
                    .is_some_and(|e| e.starts_with("rules"))
            );
        }
    }
    assert_eq!(question_total as i64, questions);
    assert_eq!(part_total as i64, parts);

    // The yes/no question of D02 binds its finding as a plain string.
    let d02 = number(
        &lake,
        "SELECT count(*) FROM qa WHERE question_type = 'D02_has_finding'",
    )
    .await;
    assert!(d02 > 0);

    // The same lake gives the same bytes.
    let again = dir.path().join("again");
    export_qa(&lake, &QaExport::new(&again))
        .await
        .expect("export again");
    assert_eq!(files(&again), written);
    for file in &written {
        assert_eq!(read(&again, file).0, read(&out, file).0, "{file}");
    }

    // A filter keeps the matching questions; studies without one get no file.
    let filtered = dir.path().join("d02");
    let export = QaExport::new(&filtered).with_filter("question_type = 'D02_has_finding'");
    let summary = export_qa(&lake, &export).await.expect("filtered export");
    assert_eq!(summary.questions as i64, d02);
    let d02_studies = number(
        &lake,
        "SELECT count(DISTINCT study_id) FROM qa WHERE question_type = 'D02_has_finding'",
    )
    .await;
    assert_eq!(files(&filtered).len() as i64, d02_studies);
    for file in files(&filtered) {
        let (_, value) = read(&filtered, &file);
        assert_eq!(validate_qa(&value), Vec::<String>::new(), "{file}");
        for question in value["questions"].as_array().expect("questions") {
            assert_eq!(question["question_type"], "D02_has_finding");
            let finding = &question["variables"]["finding"];
            assert!(finding.is_string(), "{finding}");
        }
    }

    let export = QaExport::new(dir.path().join("none")).with_filter("question_type = 'nope'");
    let err = export_qa(&lake, &export).await.expect_err("no match");
    assert!(
        matches!(err, ExportError::NoMatch { table: "qa", .. }),
        "{err}"
    );
    assert!(err.to_string().contains("FROM qa WHERE"), "{err}");
    let export = QaExport::new(dir.path().join("bad")).with_filter("no_such_column = 1");
    let err = export_qa(&lake, &export).await.expect_err("bad filter");
    assert!(matches!(err, ExportError::Filter { .. }), "{err}");
    assert!(err.to_string().contains("no_such_column"), "{err}");

    let bare = tempfile::tempdir().expect("tempdir");
    let lake = Lake::open_url(bare.path().to_str().expect("utf-8"))
        .expect("open")
        .with_session_factory(cxrlake_udfs::session_context_on);
    let err = export_qa(&lake, &QaExport::new(bare.path().join("out")))
        .await
        .expect_err("no table");
    assert!(
        matches!(err, ExportError::NoTable { table: "qa", .. }),
        "{err}"
    );
    assert!(err.to_string().contains("cxrlake run qa"), "{err}");
}

/// A conforming study: a question with a main answer and a nested detail, localized on one image.
fn study() -> Value {
    let localization = json!({
        "02aa804e": {
            "bboxes": [[1520.5, 400.0, 2600.25, 2310.0]],
            "localization_reference_ids": ["left lung"], "missing_localization": [],
            "is_fallback": false, "localization_quality": 4
        }
    });
    let quality = json!({
        "region_extract_quality": 4, "entity_extract_quality": 2,
        "sentence_name_quality": 2, "change_quality": 3,
        "general_issue_level": 4, "localization_quality": 4
    });
    let answer_quality = json!({
        "entailment": 3, "relevance": 1, "answer_clarity": 2, "rating": "6_A++"
    });
    let part = |id: i64, level: i64, answer_type: &str, from_report: bool| {
        json!({
            "answer_id": id, "answer_type": answer_type, "answer_level": level,
            "text": "Small left pleural effusion.", "name_tag": "pleural effusion",
            "laterality": "left", "regions": ["left lung"], "obs_entities": ["pleural effusion"],
            "obs_entities_parents": [], "obs_categories": ["ANATOMICAL_FINDING"],
            "obs_subcategories": ["PLEURA"], "certainty": "certain", "positiveness": "pos",
            "modifiers": [["severity", "small"]], "localization": localization,
            "from_report": from_report, "obs_ids": if from_report { json!(["O01"]) } else { json!([]) },
            "extraction_quality": quality, "answer_quality": answer_quality, "sub_answers": []
        })
    };
    let mut main = part(1, 0, "main_answer", false);
    main["sub_answers"] = json!([part(2, 1, "details", true)]);
    json!({
        "patient_id": "p10000032", "study_id": "s50414267",
        "questions": [{
            "question_id": "D02_has_finding_001", "question_type": "D02_has_finding",
            "question_strategy": "finding", "variables": {"finding": "pleural effusion"},
            "obs_ids": ["O01"], "contains_report_answers": true,
            "contains_template_answers": true, "extraction_quality": quality,
            "question_img_localization_quality": {"02aa804e": 4},
            "question": "Is there any indication of pleural effusion?",
            "answers": [main, part(3, 0, "related_information", false)],
            "question_quality": {"question_clarity": 2, "completeness": 2, "rating": "5_A+"},
            "extractor": "rules", "embedder": "lexical"
        }]
    })
}

fn deviations_after(edit: impl FnOnce(&mut Value)) -> Vec<String> {
    let mut value = study();
    edit(&mut value);
    validate_qa(&value)
}

#[test]
fn validate_qa_accepts_d2_and_names_each_deviation() {
    assert_eq!(validate_qa(&study()), Vec::<String>::new());
    // Release files have no provenance keys.
    let release = deviations_after(|s| {
        let question = s["questions"][0].as_object_mut().expect("question");
        question.remove("extractor");
        question.remove("embedder");
    });
    assert_eq!(release, Vec::<String>::new());

    let missing = deviations_after(|s| {
        s["questions"][0]
            .as_object_mut()
            .map(|o| o.remove("question_quality"));
    });
    assert_eq!(missing, ["questions[0]: missing key `question_quality`"]);

    let missing_sub_answers = deviations_after(|s| {
        s["questions"][0]["answers"][1]
            .as_object_mut()
            .map(|o| o.remove("sub_answers"));
    });
    assert_eq!(
        missing_sub_answers,
        ["questions[0].answers[1]: missing key `sub_answers`"]
    );

    let bad_type =
        deviations_after(|s| s["questions"][0]["answers"][0]["answer_type"] = json!("main"));
    assert_eq!(bad_type.len(), 2, "{bad_type:?}");
    assert!(bad_type[0].starts_with("questions[0].answers[0].answer_type: \"main\" is not one of"));
    assert_eq!(
        bad_type[1],
        "questions[0].answers: no answer part is a main_answer"
    );

    let laterality = deviations_after(|s| {
        s["questions"][0]["answers"][0]["laterality"] = json!("likely bilateral")
    });
    assert_eq!(laterality.len(), 1, "{laterality:?}");

    let level = deviations_after(|s| {
        s["questions"][0]["answers"][0]["sub_answers"][0]["answer_level"] = json!(2)
    });
    assert_eq!(
        level,
        [
            "questions[0].answers[0].sub_answers[0].answer_level: 2, expected 1, its parent's level + 1"
        ]
    );

    let duplicate = deviations_after(|s| s["questions"][0]["answers"][1]["answer_id"] = json!(1));
    assert_eq!(
        duplicate,
        ["questions[0].answers[1].answer_id: 1 is not unique in the question"]
    );

    let question_id = deviations_after(|s| s["questions"][0]["question_id"] = json!("D02_001"));
    assert_eq!(question_id.len(), 1, "{question_id:?}");
    assert!(question_id[0].starts_with("questions[0].question_id: D02_001 is not"));

    let image = deviations_after(|s| {
        s["questions"][0]["question_img_localization_quality"] = json!({"other": 3})
    });
    assert_eq!(image.len(), 3, "{image:?}");
    assert!(
        image
            .iter()
            .all(|d| d.ends_with("is not in the question's question_img_localization_quality"))
    );

    let modifiers = deviations_after(|s| {
        s["questions"][0]["answers"][1]["modifiers"] = json!([["color", "red"], ["severity"]])
    });
    assert_eq!(modifiers.len(), 2, "{modifiers:?}");

    let quality = deviations_after(|s| {
        s["questions"][0]["extraction_quality"]
            .as_object_mut()
            .map(|o| o.remove("localization_quality"));
    });
    assert_eq!(
        quality,
        ["questions[0].extraction_quality: missing key `localization_quality`"]
    );

    // Levels and ratings in their release codes only.
    let names = deviations_after(|s| {
        s["questions"][0]["question_quality"] =
            json!({"question_clarity": "OPTIMAL", "completeness": 3, "rating": "A+"})
    });
    assert_eq!(
        names,
        [
            "questions[0].question_quality.question_clarity: \"OPTIMAL\" is not a question_clarity value, one of -3, -2, -1, 0, 1, 2",
            "questions[0].question_quality.completeness: 3 is not a completeness value, one of -2, -1, 0, 1, 2",
            "questions[0].question_quality.rating: \"A+\" is not a rating code, one of 0_not rated, 1_D, 2_C, 3_B, 4_A, 5_A+, 6_A++"
        ]
    );

    let flags = deviations_after(|s| s["questions"][0]["contains_report_answers"] = json!(false));
    assert_eq!(
        flags,
        ["questions[0].contains_report_answers: false, but the answer parts say true"]
    );

    let not_a_dict = deviations_after(|s| s["questions"][0]["variables"] = json!([]));
    assert_eq!(
        not_a_dict,
        ["questions[0].variables: expected a dict, found list"]
    );

    let twice = deviations_after(|s| {
        let question = s["questions"][0].clone();
        s["questions"].as_array_mut().expect("list").push(question);
    });
    assert_eq!(
        twice,
        ["questions[1]: question_id D02_has_finding_001 is not unique in the study"]
    );

    assert_eq!(validate_qa(&json!([])).len(), 1);
}
