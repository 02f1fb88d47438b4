//! `export_scene_graphs` over a real Delta lake in a temporary folder: the files, their D.1 shape,
//! filters, the errors that say what to do, and files that are never half-written.

use std::path::Path;

use cxrlake_export::{
    ExportError, SceneGraphExport, d1, export_scene_graphs, scene_graph_json, validate_scene_graph,
};
use serde_json::{Value, json};

use crate::fixtures::{
    FRONTAL, LATERAL, decode, empty_study, files, full_study, lake_with, other_patient,
};

const FULL: &str = "p10/p10000032/s50414267.scene_graph.json";
const EMPTY: &str = "p10/p10000032/s53189527.scene_graph.json";
const OTHER: &str = "p19/p19999987/s58971208.scene_graph.json";

/// A file's text, with its keys in D.1 order.
fn text(dir: &Path, file: &str) -> String {
    std::fs::read_to_string(dir.join(file)).expect("read export")
}

fn read(dir: &Path, file: &str) -> Value {
    let text = text(dir, file);
    assert!(text.ends_with('\n'), "{file} ends with a newline");
    assert_eq!(text.lines().count(), 1, "{file} is compact");
    serde_json::from_str(&text).expect("valid JSON")
}

fn keys(value: &Value) -> Vec<&str> {
    let mut keys: Vec<_> = value
        .as_object()
        .expect("dict")
        .keys()
        .map(String::as_str)
        .collect();
    keys.sort_unstable();
    keys
}

fn sorted(keys: &[&'static str]) -> Vec<&'static str> {
    let mut keys = keys.to_vec();
    keys.sort_unstable();
    keys
}

#[tokio::test]
async fn every_study_becomes_one_d1_file_in_the_release_layout() {
    let (dir, lake) = lake_with(&[full_study(), empty_study(), other_patient()]).await;
    let out = dir.path().join("scene_data");
    let summary = export_scene_graphs(&lake, &SceneGraphExport::new(&out))
        .await
        .expect("export");

    assert_eq!(files(&out), [FULL, EMPTY, OTHER]);
    assert_eq!((summary.studies, summary.files), (3, 3));
    let on_disk: u64 = [FULL, EMPTY, OTHER]
        .iter()
        .map(|f| std::fs::metadata(out.join(f)).expect("file").len())
        .sum();
    assert_eq!(summary.bytes, on_disk);
    let line = summary.to_string();
    assert!(line.starts_with("scene graphs: 3 studies → "), "{line}");
    assert!(line.ends_with(" studies/s)"), "{line}");

    for file in [FULL, EMPTY, OTHER] {
        let graph = read(&out, file);
        assert_eq!(validate_scene_graph(&graph), Vec::<String>::new(), "{file}");
        let root: Vec<_> = d1::ROOT.iter().chain(d1::CXRLAKE_ROOT).copied().collect();
        assert_eq!(keys(&graph), sorted(&root), "{file}");
    }

    assert!(
        text(&out, FULL).starts_with(
            r#"{"patient_id":"p10000032","study_id":"s50414267","study_quality":{"region_extract"#
        ),
        "keys in D.1 order"
    );
    assert!(text(&out, FULL).contains(r#"{"O01":{"obs_id":"O01","summary_sentence":"#));
    let graph = read(&out, FULL);
    assert_eq!(graph["patient_id"], "p10000032");
    assert_eq!(graph["study_id"], "s50414267");
    // Levels become their values in tables 11 (NO_ISSUES of change_quality is 3).
    assert_eq!(
        graph["study_quality"],
        json!({"region_extract_quality": 4, "entity_extract_quality": 2,
               "sentence_name_quality": 2, "change_quality": 3, "general_issue_level": 4})
    );
    assert_eq!(
        graph["study_img_localization_quality"],
        json!({FRONTAL: 4, LATERAL: 3})
    );
    assert_eq!(keys(&graph["observations"]), ["O01", "O01.01", "O02"]);
    assert_eq!(graph["top_level_obs_ids"], json!(["O01", "O02"]));
    assert_eq!(keys(&graph["regions"]), ["left lung", "lungs"]);
    assert_eq!(graph["sentences"][0]["section_type"], "INDICATION");

    let child = &graph["observations"]["O01.01"];
    assert_eq!(child["obs_id"], "O01.01");
    assert_eq!(child["child_level"], json!(1));
    assert_eq!(child["child_type"], "associated_with");
    assert_eq!(
        child["regions"],
        json!([{"region": "left lung", "distances": []}])
    );
    assert_eq!(child["change_sentence"], Value::Null);
    // A modifier struct missing one key in the lake still has all four.
    assert_eq!(
        child["modifiers"],
        json!({"severity": [], "texture": [], "spread": ["focal"], "temporal": []})
    );
    // A null modifier struct too.
    assert_eq!(
        graph["observations"]["O02"]["modifiers"],
        json!({"severity": [], "texture": [], "spread": [], "temporal": []})
    );
    for (obs_id, observation) in graph["observations"].as_object().expect("dict") {
        assert_eq!(keys(observation), sorted(d1::OBSERVATION), "{obs_id}");
        assert_eq!(keys(&observation["modifiers"]), sorted(d1::MODIFIER_TYPES));
        assert_eq!(
            keys(&observation["localization"]),
            sorted(&[FRONTAL, LATERAL])
        );
    }

    // The bilateral region: one reference id, two boxes, per image, keyed by image id.
    let lungs = &graph["regions"]["lungs"];
    assert_eq!(lungs["laterality"], "bilateral");
    let frontal = &lungs["localization"][FRONTAL];
    assert_eq!(keys(frontal), sorted(d1::LOCALIZATION));
    assert_eq!(frontal["image_id"], FRONTAL);
    assert_eq!(frontal["localization_reference_ids"], json!(["lungs"]));
    assert_eq!(
        frontal["bboxes"],
        json!([
            [310.0, 402.5, 1380.0, 2300.0],
            [1520.5, 400.0, 2600.25, 2310.0]
        ])
    );
    assert_eq!(frontal["is_fallback"], json!(false));

    let indication = &graph["indication"];
    assert_eq!(keys(indication), sorted(d1::INDICATION));
    assert_eq!(indication["answer_for_indication"]["obs_id"], "OIND");
    assert_eq!(indication["associated_obs_ids"], json!(["O02"]));
    assert_eq!(
        keys(&indication["answer_for_indication"]),
        sorted(d1::OBSERVATION)
    );
    assert_eq!(
        graph["obs_relations"],
        json!([{"parent_obs_id": "O01", "child_obs_id": "O01.01", "child_type": "associated_with"}])
    );
    assert_eq!(
        graph["located_at_relations"][1]["distances"],
        json!(["1 cm above"])
    );

    // Nulls and empty lists: every key present, lists [], dicts {}, quality with every aspect.
    let empty = read(&out, EMPTY);
    assert_eq!(empty["indication"], Value::Null);
    assert_eq!(empty["observations"], json!({}));
    assert_eq!(empty["regions"], json!({}));
    assert_eq!(empty["study_img_localization_quality"], json!({}));
    for list in [
        "sentences",
        "top_level_obs_ids",
        "located_at_relations",
        "obs_relations",
        "obs_sent_relations",
        "region_region_relations",
    ] {
        assert_eq!(empty[list], json!([]), "{list}");
    }
    assert_eq!(keys(&empty["study_quality"]), sorted(d1::QUALITY));
    assert!(
        empty["study_quality"]
            .as_object()
            .expect("dict")
            .values()
            .all(Value::is_null)
    );
}

/// The lake reads boxes back as `list<f32>` and strings as views; the JSON must not change.
#[tokio::test]
async fn files_equal_the_json_of_the_rows_as_written() {
    let rows = [full_study(), empty_study(), other_patient()];
    let (dir, lake) = lake_with(&rows).await;
    let out = dir.path().join("out");
    export_scene_graphs(&lake, &SceneGraphExport::new(&out))
        .await
        .expect("export");
    let batch = decode(&rows);
    for (row, file) in [FULL, EMPTY, OTHER].into_iter().enumerate() {
        let expected = scene_graph_json(&batch, row).expect("row json");
        assert_eq!(read(&out, file), expected, "{file}");
    }
    assert!(matches!(
        scene_graph_json(&batch, 3),
        Err(ExportError::RowOutOfRange { row: 3, rows: 3 })
    ));
}

#[tokio::test]
async fn a_filter_exports_only_the_matching_studies() {
    let (dir, lake) = lake_with(&[full_study(), empty_study(), other_patient()]).await;
    let out = dir.path().join("one");
    let export = SceneGraphExport::new(&out).with_filter("study_id = 's50414267'");
    let summary = export_scene_graphs(&lake, &export).await.expect("export");
    assert_eq!(summary.studies, 1);
    assert_eq!(files(&out), [FULL]);

    let out = dir.path().join("patient");
    let export = SceneGraphExport::new(&out).with_filter("patient_id = 'p10000032'");
    export_scene_graphs(&lake, &export).await.expect("export");
    assert_eq!(files(&out), [FULL, EMPTY]);

    let export = SceneGraphExport::new(dir.path().join("none")).with_filter("study_id = 's1'");
    let err = export_scene_graphs(&lake, &export)
        .await
        .expect_err("no match");
    assert!(matches!(err, ExportError::NoMatch { .. }), "{err}");
    assert!(err.to_string().contains("cxrlake sql"), "{err}");

    let export = SceneGraphExport::new(dir.path().join("bad")).with_filter("no_such_column = 1");
    let err = export_scene_graphs(&lake, &export)
        .await
        .expect_err("bad filter");
    assert!(matches!(err, ExportError::Filter { .. }), "{err}");
    assert!(err.to_string().contains("no_such_column"), "{err}");
}

#[tokio::test]
async fn an_empty_or_missing_table_says_what_to_run() {
    let (dir, lake) = lake_with(&[]).await;
    let out = dir.path().join("out");
    let err = export_scene_graphs(&lake, &SceneGraphExport::new(&out))
        .await
        .expect_err("empty table");
    assert!(matches!(err, ExportError::Empty { .. }), "{err}");
    assert!(
        err.to_string().contains("run `cxrlake run graph` first"),
        "{err}"
    );
    assert!(files(&out).is_empty());

    let bare = tempfile::tempdir().expect("tempdir");
    let lake = cxrlake_lake::Lake::open_url(bare.path().to_str().expect("utf-8"))
        .expect("open")
        .with_session_factory(cxrlake_udfs::session_context_on);
    let err = export_scene_graphs(&lake, &SceneGraphExport::new(bare.path().join("out")))
        .await
        .expect_err("no table");
    assert!(
        matches!(
            err,
            ExportError::NoTable {
                table: "scene_graphs",
                ..
            }
        ),
        "{err}"
    );
    assert!(err.to_string().contains("cxrlake init"), "{err}");
}

#[tokio::test]
async fn a_malformed_id_names_its_row() {
    let mut bad = other_patient();
    bad["study_id"] = json!("58971208");
    let (dir, lake) = lake_with(&[full_study(), bad]).await;
    let err = export_scene_graphs(&lake, &SceneGraphExport::new(dir.path().join("out")))
        .await
        .expect_err("malformed study id");
    let message = err.to_string();
    assert!(
        matches!(
            err,
            ExportError::MalformedId {
                row: 1,
                field: "study_id",
                ..
            }
        ),
        "{message}"
    );
    assert!(message.contains("row 1"), "{message}");
    assert!(message.contains("\"58971208\""), "{message}");
    assert!(message.contains("e.g. s50414267"), "{message}");

    let mut bad = other_patient();
    bad["patient_id"] = json!("19999987");
    let (dir, lake) = lake_with(&[bad]).await;
    let err = export_scene_graphs(&lake, &SceneGraphExport::new(dir.path().join("out")))
        .await
        .expect_err("malformed patient id");
    assert!(
        matches!(
            err,
            ExportError::MalformedId {
                row: 0,
                field: "patient_id",
                ..
            }
        ),
        "{err}"
    );
}

#[tokio::test]
async fn a_study_exported_twice_is_an_error() {
    let (dir, lake) = lake_with(&[full_study(), other_patient(), full_study()]).await;
    let err = export_scene_graphs(&lake, &SceneGraphExport::new(dir.path().join("out")))
        .await
        .expect_err("duplicate");
    assert!(
        matches!(&err, ExportError::DuplicateStudy { study_id, row: 2 } if study_id == "s50414267"),
        "{err}"
    );
}

/// A re-export after an interrupted one: the truncated leftovers of the earlier run (a stale
/// temporary file, a damaged result) are replaced or ignored, never counted or left as results.
#[tokio::test]
async fn leftovers_of_an_interrupted_export_are_never_results() {
    let (dir, lake) = lake_with(&[full_study(), other_patient()]).await;
    let out = dir.path().join("out");
    let study_dir = out.join("p10/p10000032");
    std::fs::create_dir_all(&study_dir).expect("mkdir");
    let stale = ".s50414267.scene_graph.json.4242-7.tmp";
    std::fs::write(study_dir.join(stale), "{\"patient_id\":\"p1").expect("stale temp");
    std::fs::write(out.join(FULL), "{\"patient_id\":\"p100").expect("damaged result");

    let summary = export_scene_graphs(&lake, &SceneGraphExport::new(&out))
        .await
        .expect("export");
    assert_eq!(summary.files, 2);
    let results: Vec<_> = files(&out)
        .into_iter()
        .filter(|f| f.ends_with(cxrlake_export::SCENE_GRAPH_SUFFIX))
        .collect();
    assert_eq!(results, [FULL, OTHER]);
    for file in &results {
        assert_eq!(
            validate_scene_graph(&read(&out, file)),
            Vec::<String>::new()
        );
    }
    // Only the stale file of the other run is left besides the results: this run's temporary
    // files were all renamed.
    let others: Vec<_> = files(&out)
        .into_iter()
        .filter(|f| !f.ends_with(cxrlake_export::SCENE_GRAPH_SUFFIX))
        .collect();
    assert_eq!(others, [format!("p10/p10000032/{stale}")]);
}
