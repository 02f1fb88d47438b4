//! Realistic `scene_graphs` rows, decoded against the table's schema, and a lake holding them.

use cxrlake_lake::Lake;
use datafusion::arrow::array::RecordBatch;
use serde_json::{Value, json};
use tempfile::TempDir;

pub const FRONTAL: &str = "02aa804e-bde0afdd-112c0b34-7bc16630-4e384014";
pub const LATERAL: &str = "174413ec-4ec4c1f7-34ea26b7-c5f994f8-79ef1962";

pub fn quality() -> Value {
    json!({
        "region_extract_quality": "RESOLVED_REGIONS_ONLY",
        "entity_extract_quality": "RESOLVED_ENTITIES_ONLY",
        "sentence_name_quality": "NO_ISSUES",
        "change_quality": "NO_ISSUES",
        "general_issue_level": "NO_ISSUES"
    })
}

/// One image's localization of a region.
fn localization(image_id: &str, bboxes: Value, reference_ids: &[&str], level: &str) -> Value {
    json!({
        "image_id": image_id,
        "bboxes": bboxes,
        "localization_reference_ids": reference_ids,
        "missing_localization": [],
        "is_fallback": false,
        "localization_quality": level
    })
}

/// The bilateral `lungs`: one reference id, one box per side.
fn lungs_on(image_id: &str) -> Value {
    localization(
        image_id,
        json!([
            [310.0, 402.5, 1380.0, 2300.0],
            [1520.5, 400.0, 2600.25, 2310.0]
        ]),
        &["lungs"],
        "BOX_AND_MASK_LOCALIZATION",
    )
}

fn left_lung_on(image_id: &str) -> Value {
    localization(
        image_id,
        json!([[1520.5, 400.0, 2600.25, 2310.0]]),
        &["left lung"],
        "BOX_AND_MASK_LOCALIZATION",
    )
}

fn observation(obs_id: &str, child_level: i32, name: &str, regions: &[&str]) -> Value {
    let regions: Vec<_> = regions
        .iter()
        .map(|r| json!({"region": r, "distances": []}))
        .collect();
    json!({
        "obs_id": obs_id,
        "summary_sentence": format!("{name}."),
        "name": name,
        "child_level": child_level,
        "regions": regions,
        "non_resolved_regions": [],
        "laterality": "left",
        "default_regions": [],
        "obs_entities": ["pleural effusion"],
        "obs_entities_parents": [],
        "non_resolved_obs_entities": [],
        "obs_categories": ["ANATOMICAL_FINDING"],
        "obs_subcategories": ["PLEURA"],
        "probability": "positive",
        "certainty": "certain",
        "positiveness": "pos",
        "modifiers": {"severity": ["small"], "texture": [], "spread": [], "temporal": ["new"]},
        "changes": [],
        "from_report": true,
        "obs_quality": quality(),
        "localization": [left_lung_on(FRONTAL), left_lung_on(LATERAL)]
    })
}

/// A study with an indication (and its `OIND` answer), a child observation, two images and the
/// bilateral `lungs` region with two boxes and one reference id.
pub fn full_study() -> Value {
    let mut child = observation(
        "O01.01",
        1,
        "Adjacent left basal atelectasis",
        &["left lung"],
    );
    child["child_type"] = json!("associated_with");
    child["obs_entities"] = json!(["atelectasis"]);
    child["obs_categories"] = json!(["ANATOMICAL_FINDING"]);
    child["obs_subcategories"] = json!(["LUNG_FIELD"]);
    child["modifiers"] = json!({"severity": [], "texture": [], "spread": ["focal"]});
    let mut negative = observation("O02", 0, "No pneumonia", &["lungs"]);
    negative["laterality"] = json!("bilateral");
    negative["obs_entities"] = json!(["pneumonia"]);
    negative["positiveness"] = json!("neg");
    negative["probability"] = json!("negative");
    negative["modifiers"] = Value::Null;
    negative["localization"] = json!([lungs_on(FRONTAL), lungs_on(LATERAL)]);
    let mut answer = observation("OIND", 0, "No evidence of pneumonia", &["lungs"]);
    answer["obs_entities"] = json!(["pneumonia"]);
    answer["positiveness"] = json!("neg");
    answer["laterality"] = json!("bilateral");
    answer["localization"] = json!([lungs_on(FRONTAL)]);
    json!({
        "patient_id": "p10000032",
        "study_id": "s50414267",
        "sentences": [
            {"sent_id": "S01", "section": "INDICATION", "section_type": "INDICATION",
             "sentence": "___F with cough and fever. Evaluate for pneumonia."},
            {"sent_id": "S02", "section": "FINDINGS", "section_type": "FINDINGS",
             "sentence": "Small left pleural effusion with adjacent atelectasis."},
            {"sent_id": "S03", "section": "IMPRESSION", "section_type": "IMPRESSION",
             "sentence": "No pneumonia."}
        ],
        "observations": [
            observation("O01", 0, "Small left pleural effusion", &["left lung"]),
            child,
            negative
        ],
        "top_level_obs_ids": ["O01", "O02"],
        "regions": [
            {"region": "left lung", "laterality": "left",
             "localization": [left_lung_on(FRONTAL), left_lung_on(LATERAL)],
             "region_localization_quality": "BOX_AND_MASK_LOCALIZATION"},
            {"region": "lungs", "laterality": "bilateral",
             "localization": [lungs_on(FRONTAL), lungs_on(LATERAL)],
             "region_localization_quality": "BOX_AND_MASK_LOCALIZATION"}
        ],
        "indication": {
            "indication_summary": "Female patient with cough and fever; evaluate for pneumonia.",
            "patient_info": "Female patient with cough and fever.",
            "indication": "cough and fever",
            "evaluation": "pneumonia",
            "associated_sentence_ids": ["S01"],
            "associated_obs_ids": ["O02"],
            "answer_for_indication": answer
        },
        "located_at_relations": [
            {"obs_id": "O01", "region": "left lung", "distances": [], "where_specified": "direct"},
            {"obs_id": "O01.01", "region": "left lung", "distances": ["1 cm above"],
             "where_specified": "direct"},
            {"obs_id": "O02", "region": "lungs", "distances": [], "where_specified": "bilateral"}
        ],
        "obs_relations": [
            {"parent_obs_id": "O01", "child_obs_id": "O01.01", "child_type": "associated_with"}
        ],
        "obs_sent_relations": [
            {"obs_id": "O01", "sent_id": "S02"},
            {"obs_id": "O01.01", "sent_id": "S02"},
            {"obs_id": "O02", "sent_id": "S03"}
        ],
        "region_region_relations": [
            {"region": "left lung", "related_region": "lungs", "relation_type": "left"}
        ],
        "study_quality": quality(),
        "study_img_localization_quality": [
            {"image_id": FRONTAL, "localization_quality": "BOX_AND_MASK_LOCALIZATION"},
            {"image_id": LATERAL, "localization_quality": "BOX_LOCALIZATION"}
        ],
        "extractor": "rules",
        "embedder": "lexical"
    })
}

/// A study with no indication and nothing found: empty lists and nulls everywhere.
pub fn empty_study() -> Value {
    json!({
        "patient_id": "p10000032",
        "study_id": "s53189527",
        "sentences": [],
        "observations": null,
        "top_level_obs_ids": null,
        "regions": [],
        "indication": null,
        "located_at_relations": null,
        "obs_relations": [],
        "obs_sent_relations": null,
        "region_region_relations": null,
        "study_quality": null,
        "study_img_localization_quality": null,
        "extractor": "rules",
        "embedder": "lexical"
    })
}

/// A one-observation study of another patient.
pub fn other_patient() -> Value {
    json!({
        "patient_id": "p19999987",
        "study_id": "s58971208",
        "sentences": [{"sent_id": "S01", "section": "FINDINGS", "section_type": "FINDINGS",
                       "sentence": "Small left pleural effusion."}],
        "observations": [observation("O01", 0, "Small left pleural effusion", &["left lung"])],
        "top_level_obs_ids": ["O01"],
        "regions": [{"region": "left lung", "laterality": "left",
                     "localization": [left_lung_on(FRONTAL)],
                     "region_localization_quality": "BOX_AND_MASK_LOCALIZATION"}],
        "obs_sent_relations": [{"obs_id": "O01", "sent_id": "S01"}],
        "study_quality": quality(),
        "study_img_localization_quality": [
            {"image_id": FRONTAL, "localization_quality": "BOX_AND_MASK_LOCALIZATION"}
        ],
        "extractor": "rules",
        "embedder": "lexical"
    })
}

/// Rows decoded against `scene_graphs`' schema, as the pipeline would build them.
pub fn decode(rows: &[Value]) -> RecordBatch {
    let lines: Vec<String> = rows.iter().map(Value::to_string).collect();
    let text = lines.join("\n");
    let schema = cxrlake_schemas::pipeline::scene_graphs();
    let reader = arrow::json::ReaderBuilder::new(schema)
        .with_batch_size(rows.len().max(1))
        .build(text.as_bytes())
        .expect("json reader");
    let mut batches = reader
        .collect::<Result<Vec<_>, _>>()
        .expect("decode scene_graphs rows");
    assert_eq!(batches.len(), 1);
    batches.remove(0)
}

/// A new lake in a temporary folder with `rows` written to `scene_graphs`.
pub async fn lake_with(rows: &[Value]) -> (TempDir, Lake) {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().join("lake");
    let lake = Lake::open_url(root.to_str().expect("utf-8 path"))
        .expect("open lake")
        .with_session_factory(cxrlake_udfs::session_context_on);
    lake.init().await.expect("init");
    if !rows.is_empty() {
        lake.write("scene_graphs")
            .execute(vec![decode(rows)])
            .await
            .expect("write scene_graphs");
    }
    (dir, lake)
}

/// Every file under `dir` (hidden ones too), relative, sorted.
pub fn files(dir: &std::path::Path) -> Vec<String> {
    fn walk(root: &std::path::Path, dir: &std::path::Path, out: &mut Vec<String>) {
        for entry in std::fs::read_dir(dir).expect("read dir") {
            let path = entry.expect("entry").path();
            if path.is_dir() {
                walk(root, &path, out);
            } else {
                let relative = path.strip_prefix(root).expect("under root");
                out.push(relative.to_string_lossy().replace('\\', "/"));
            }
        }
    }
    let mut out = Vec::new();
    if dir.exists() {
        walk(dir, dir, &mut out);
    }
    out.sort();
    out
}
