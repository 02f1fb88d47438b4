//! `cxrlake export release` on a hand-made graded lake (two studies: one with a frontal and a
//! lateral image, one with a lateral image only), read back by real duckdb, pandas and Python's
//! zipfile (`tests/python/release.py`): every table and file, the subsets' counts against the
//! summary the command printed, frontal-only images, rating_rank filters.
//!
//! Needs `python3` with duckdb, pyarrow and pandas (the README's test command installs them).

use cxrlake_lake::Lake;
use serde_json::{Value, json};

use crate::cxrlake;

const FRONTAL: &str = "02aa804e-bde0afdd-112c0b34-7bc16630-4e384014";
const LATERAL: &str = "174413ec-4ec4c1f7-34ea26b7-c5f994f8-79ef1962";
const LATERAL_ONLY: &str = "2a2277a9-b0ded155-c0de8eb9-c124d10e-82c5caab";

fn image(image_id: &str, study_id: &str, frontal: bool, split: &str) -> Value {
    json!({
        "image_id": image_id, "patient_id": "p10000032", "study_id": study_id,
        "view_position": if frontal { "PA" } else { "LATERAL" },
        "view": if frontal { "frontal" } else { "lateral" }, "is_frontal": frontal,
        "rows": 3056, "columns": 2544, "study_date": "21800506", "procedure": "CHEST (PA AND LAT)",
        "split": split
    })
}

fn localization(image_id: &str, boxes: Value, level: &str) -> Value {
    json!({"image_id": image_id, "bboxes": boxes, "localization_reference_ids": ["left lung"],
           "missing_localization": [], "is_fallback": false, "localization_quality": level})
}

fn question(study_id: &str, question_id: &str, rating: &str, rank: i8, images: &[&str]) -> Value {
    let localizations: Vec<Value> = images
        .iter()
        .map(|image| {
            if *image == FRONTAL {
                localization(
                    image,
                    json!([[1520.5, 400.0, 2300.25, 2210.0]]),
                    "BOX_AND_MASK_LOCALIZATION",
                )
            } else {
                localization(
                    image,
                    json!([[10.0, 20.0, 30.0, 40.0], [50.0, 60.0, 70.0, 80.0]]),
                    "FALLBACK_LOCALIZATION",
                )
            }
        })
        .collect();
    let levels: Vec<Value> = localizations
        .iter()
        .map(|l| json!({"image_id": l["image_id"], "localization_quality": l["localization_quality"]}))
        .collect();
    let question_type = question_id.rsplit_once('_').map_or(question_id, |(t, _)| t);
    json!({
        "patient_id": "p10000032", "study_id": study_id, "question_id": question_id,
        "question_type": question_type, "question_strategy": "finding",
        "variables": [{"name": "finding", "value_json": "\"pleural effusion\""}],
        "obs_ids": ["O01"], "contains_report_answers": true, "contains_template_answers": true,
        "extraction_quality": {"region_extract_quality": "RESOLVED_REGIONS_ONLY",
            "entity_extract_quality": "RESOLVED_ENTITIES_ONLY", "sentence_name_quality": "NO_ISSUES",
            "change_quality": "NO_ISSUES", "general_issue_level": "FIXABLE"},
        "question_img_localization_quality": levels,
        "question": "Is there a pleural effusion?",
        "answers": [
            {"answer_id": 0, "answer_level": 0, "answer_type": "main_answer", "text": "Yes.",
             "from_report": false, "regions": [], "modifiers": [], "localization": []},
            {"answer_id": 1, "parent_answer_id": 0, "answer_level": 1, "answer_type": "details",
             "text": "Small left pleural effusion.", "from_report": true, "regions": ["left lung"],
             "positiveness": "pos", "modifiers": [{"modifier_type": "severity", "value": "small"}],
             "localization": localizations,
             "answer_quality": {"entailment": "ALIGNED_MENTIONED", "relevance": "RELEVANT_MAIN_ANSWER",
                                "answer_clarity": "OPTIMAL", "rating": rating}}
        ],
        "question_quality": {"question_clarity": "OPTIMAL", "completeness": "FULLY_COMPLETE", "rating": rating},
        "rating": rating, "rating_rank": rank, "extractor": "rules", "embedder": "lexical"
    })
}

fn scene_graph(study_id: &str, images: &[&str]) -> Value {
    let levels: Vec<Value> = images
        .iter()
        .map(|i| json!({"image_id": i, "localization_quality": "BOX_LOCALIZATION"}))
        .collect();
    json!({"patient_id": "p10000032", "study_id": study_id, "observations": [],
           "study_quality": {"region_extract_quality": "RESOLVED_REGIONS_ONLY", "general_issue_level": "IGNORABLE"},
           "study_img_localization_quality": levels, "extractor": "rules", "embedder": "lexical"})
}

fn decode(schema: arrow::datatypes::SchemaRef, rows: &[Value]) -> Vec<arrow::array::RecordBatch> {
    let text: Vec<String> = rows.iter().map(Value::to_string).collect();
    arrow::json::ReaderBuilder::new(schema)
        .build(text.join("\n").as_bytes())
        .expect("reader")
        .collect::<Result<Vec<_>, _>>()
        .expect("decode")
}

fn write_lake(lake: &Lake) {
    use cxrlake_schemas::{pipeline, sources};
    let images = [
        image(FRONTAL, "s50414267", true, "train"),
        image(LATERAL, "s50414267", false, "train"),
        image(LATERAL_ONLY, "s53189527", false, "train"),
    ];
    let qa = [
        question(
            "s50414267",
            "D02_has_finding_001",
            "A+",
            5,
            &[FRONTAL, LATERAL],
        ),
        question("s50414267", "D02_has_finding_002", "B", 3, &[FRONTAL]),
        question("s53189527", "D02_has_finding_001", "A", 4, &[LATERAL_ONLY]),
    ];
    let graphs = [
        scene_graph("s50414267", &[FRONTAL, LATERAL]),
        scene_graph("s53189527", &[LATERAL_ONLY]),
    ];
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    runtime.block_on(async {
        lake.init().await.expect("init");
        lake.write("images")
            .execute(decode(sources::images(), &images))
            .await
            .expect("images");
        lake.write("qa")
            .execute(decode(pipeline::qa(), &qa))
            .await
            .expect("qa");
        lake.write("scene_graphs")
            .execute(decode(pipeline::scene_graphs(), &graphs))
            .await
            .expect("scene_graphs");
    });
}

#[test]
fn duckdb_pandas_and_zipfile_read_every_release_file() {
    let dir = tempfile::tempdir().expect("tempdir");
    let lake_dir = dir.path().join("lake");
    write_lake(
        &Lake::open_url(lake_dir.to_str().expect("utf8"))
            .expect("open")
            .with_session_factory(cxrlake_udfs::session_context_on),
    );
    let out = dir.path().join("release");
    let output = cxrlake(
        &lake_dir,
        &[
            "export",
            "release",
            "--out",
            out.to_str().expect("utf8"),
            "--sample",
            "1",
        ],
    );
    let stdout = String::from_utf8_lossy(&output.stdout).to_string();
    assert!(
        output.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        stdout.contains("exports/A_frontal (ft): 1 questions"),
        "{stdout}"
    );
    assert!(
        stdout.contains("exports/B_frontal (pt): 2 questions"),
        "{stdout}"
    );

    crate::python_check(
        "release.py",
        &[out.as_os_str(), std::ffi::OsStr::new(&stdout)],
        "release ok",
    );

    // Bad flags say what to do, with exit code 2.
    let bad = cxrlake(
        &lake_dir,
        &["export", "release", "--out", "x", "--subset", "gold"],
    );
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("use one of all, pt, ft, a+, a++"));
    let bad = cxrlake(
        &lake_dir,
        &["export", "release", "--out", "x", "--split", "dev"],
    );
    assert_eq!(bad.status.code(), Some(2));
    let none = cxrlake(
        &lake_dir,
        &["export", "release", "--out", "y", "--subset", "a++"],
    );
    assert_eq!(none.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&none.stderr).contains("the a++ release has no question"));
}
