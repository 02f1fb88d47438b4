//! Real duckdb and pandas (pyarrow) read Parquet written by cxrlake — nested list-of-struct answer
//! parts with per-image box lists — unnest them and must get the values we wrote.
//!
//! Needs `python3` with duckdb, pyarrow and pandas (the README's test command installs them).

use std::path::Path;
use std::process::Command;

use cxrlake_lake::Lake;

const QA_ROWS: &str = r#"
{"patient_id":"p10000032","study_id":"s50414267","question_id":"D02_has_finding_001","question_type":"D02_has_finding","question_strategy":"finding","variables":[{"name":"finding","value_json":"\"pneumonia\""}],"obs_ids":["O01"],"contains_report_answers":true,"contains_template_answers":true,"question":"Is there any indication of pneumonia?","answers":[{"answer_id":0,"answer_level":0,"answer_type":"main_answer","text":"Yes.","from_report":false,"regions":[],"modifiers":[],"localization":[]},{"answer_id":1,"parent_answer_id":0,"answer_level":1,"answer_type":"details","text":"Left lower lobe opacity concerning for pneumonia.","from_report":true,"regions":["left lower lobe"],"modifiers":[{"modifier_type":"temporal","value":"new"}],"localization":[{"image_id":"02aa804e-bde0afdd-112c0b34-7bc16630-4e384014","bboxes":[[1520.5,1400.0,2300.25,2210.0]],"localization_reference_ids":["left lower lobe"],"missing_localization":[],"is_fallback":false,"localization_quality":"BOX_AND_MASK_LOCALIZATION"},{"image_id":"174413ec-4ec4c1f7-34ea26b7-c5f994f8-79ef1962","bboxes":[[10.0,20.0,30.0,40.0],[50.0,60.0,70.0,80.0]],"localization_reference_ids":["lungs"],"missing_localization":["left lower lobe"],"is_fallback":true,"localization_quality":"FALLBACK_LOCALIZATION"}]}],"rating":"A+","rating_rank":5,"extractor":"rules","embedder":"lexical"}
{"patient_id":"p10000032","study_id":"s50414267","question_id":"C03_is_abnormal_region_004","question_type":"C03_is_abnormal_region","question_strategy":"region_abnormal","variables":[],"obs_ids":[],"contains_report_answers":false,"contains_template_answers":true,"question":"Are there any abnormal findings in the right lung?","answers":[{"answer_id":0,"answer_level":0,"answer_type":"main_answer","text":"No.","from_report":false,"regions":["right lung"],"modifiers":[],"localization":[]}],"rating":"B","rating_rank":3,"extractor":"rules","embedder":"lexical"}
"#;

fn write_sample(lake: &Lake) {
    let schema = cxrlake_schemas::pipeline::qa();
    let reader = arrow::json::ReaderBuilder::new(schema)
        .build(QA_ROWS.trim().as_bytes())
        .expect("json reader");
    let batches = reader
        .collect::<Result<Vec<_>, _>>()
        .expect("decode sample rows");
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    runtime.block_on(async {
        lake.init().await.expect("init");
        lake.write("qa").execute(batches).await.expect("write qa");
    });
}

fn export(lake: &Path, query: &str, file: &Path) {
    let output = Command::new(env!("CARGO_BIN_EXE_cxrlake"))
        .arg("--lake")
        .arg(lake)
        .args(["sql", query, "--format", "parquet", "--out"])
        .arg(file)
        .output()
        .expect("run cxrlake");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

#[test]
fn duckdb_and_pandas_read_nested_answers_and_boxes() {
    let dir = tempfile::tempdir().expect("tempdir");
    let lake_dir = dir.path().join("lake");
    write_sample(
        &Lake::open_url(lake_dir.to_str().expect("utf8"))
            .expect("open")
            .with_session_factory(cxrlake_udfs::session_context_on),
    );

    let all = dir.path().join("qa.parquet");
    export(&lake_dir, "SELECT * FROM qa", &all);
    let ft = dir.path().join("qa_ft.parquet");
    export(&lake_dir, "SELECT * FROM qa WHERE rating >= 'A'", &ft);

    crate::python_check(
        "interop.py",
        &[all.as_os_str(), ft.as_os_str()],
        "interop ok",
    );
}

#[test]
fn deltalake_reads_the_lake_after_a_replace_into_pandas_and_duckdb() {
    let dir = tempfile::tempdir().expect("tempdir");
    let lake_dir = dir.path().join("lake");
    let lake = Lake::open_url(lake_dir.to_str().expect("utf8"))
        .expect("open")
        .with_session_factory(cxrlake_udfs::session_context_on);
    let decode = |json: &str| {
        arrow::json::ReaderBuilder::new(cxrlake_schemas::pipeline::qa())
            .build(json.trim().as_bytes())
            .expect("json reader")
            .collect::<Result<Vec<_>, _>>()
            .expect("decode sample rows")
    };
    // One data file with two studies; the replace of the second deletes its two old rows with a
    // deletion vector (half the file), and its new row (rated A) lies in a file of its own.
    let second = QA_ROWS.replace("s50414267", "s50414268");
    let both = format!("{}\n{}", QA_ROWS.trim(), second.trim());
    let replacement = second.trim().lines().next().expect("a row").replace(
        r#""rating":"A+","rating_rank":5"#,
        r#""rating":"A","rating_rank":4"#,
    );
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    runtime.block_on(async {
        lake.init().await.expect("init");
        lake.write("qa")
            .overwrite()
            .execute(decode(&both))
            .await
            .expect("write qa");
        lake.write("qa")
            .replace_studies(vec!["s50414268".into()])
            .execute(decode(&replacement))
            .await
            .expect("replace");
    });

    crate::python_check("lake.py", &[lake_dir.join("qa").as_os_str()], "lake ok");
}
