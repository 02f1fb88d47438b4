//! Export speed on typical graphs (10 observations, 2 images, 15 regions, ~29 kB of JSON each),
//! and on the questions of a pipeline-built lake. Ignored by default; run
//! `TMPDIR=/dev/shm cargo test --release -p cxrlake-export --test it -- --ignored --nocapture speed`.
//! `TMPDIR` on a RAM disk times the export itself: a small VM's disk can create fewer files per
//! second than the target (one such disk took 430–660 files/s from a plain Python loop).

use cxrlake_export::{
    QaExport, SceneGraphExport, export_qa, export_scene_graphs, validate_scene_graph,
};
use serde_json::{Value, json};

use crate::fixtures::{FRONTAL, LATERAL, decode, lake_with, quality};
use crate::qa::qa_lake;

const STUDIES: usize = 5000;

fn localization(image_id: &str, region: &str, boxes: usize) -> Value {
    let bboxes: Vec<_> = (0..boxes)
        .map(|b| json!([100.5 + b as f64, 200.0, 1300.25, 2210.0 + b as f64]))
        .collect();
    json!({
        "image_id": image_id, "bboxes": bboxes, "localization_reference_ids": [region],
        "missing_localization": [], "is_fallback": false,
        "localization_quality": "BOX_AND_MASK_LOCALIZATION"
    })
}

/// `O01`, `O01.01`, `O02`, … : five top-level observations with one child each.
fn obs_id(o: usize) -> (String, i32) {
    if o.is_multiple_of(2) {
        (format!("O{:02}", o / 2 + 1), 0)
    } else {
        (format!("O{:02}.01", o / 2 + 1), 1)
    }
}

fn typical_study(i: usize) -> Value {
    let regions: Vec<String> = (0..15).map(|r| format!("region {r}")).collect();
    let observations: Vec<Value> = (0..10)
        .map(|o| {
            let (obs_id, level) = obs_id(o);
            let region = &regions[o];
            json!({
                "obs_id": obs_id, "summary_sentence": "Small left pleural effusion is present.",
                "name": "left pleural effusion", "child_level": level,
                "child_type": if level == 1 { json!("associated_with") } else { Value::Null },
                "regions": [{"region": region, "distances": []}], "non_resolved_regions": [],
                "laterality": "left", "default_regions": [], "obs_entities": ["pleural effusion"],
                "obs_entities_parents": ["pleural abnormality"], "non_resolved_obs_entities": [],
                "obs_categories": ["ANATOMICAL_FINDING"], "obs_subcategories": ["PLEURA"],
                "probability": "positive", "certainty": "certain", "positiveness": "pos",
                "modifiers": {"severity": ["small"], "texture": [], "spread": [], "temporal": []},
                "change_sentence": null, "changes": [], "from_report": true,
                "obs_quality": quality(),
                "localization": [localization(FRONTAL, region, 1), localization(LATERAL, region, 1)]
            })
        })
        .collect();
    let region_nodes: Vec<Value> = regions
        .iter()
        .enumerate()
        .map(|(r, region)| {
            json!({
                "region": region, "laterality": "left",
                "localization": [
                    localization(FRONTAL, region, 1 + r % 2),
                    localization(LATERAL, region, 1 + r % 2)
                ],
                "region_localization_quality": "BOX_AND_MASK_LOCALIZATION"
            })
        })
        .collect();
    let top: Vec<_> = (1..=5).map(|o| format!("O{o:02}")).collect();
    json!({
        "patient_id": format!("p1{:07}", i / 3), "study_id": format!("s5{i:07}"),
        "sentences": (1..=8).map(|s| json!({
            "sent_id": format!("S{s:02}"), "section": "FINDINGS", "section_type": "FINDINGS",
            "sentence": "There is a small left pleural effusion with adjacent atelectasis."
        })).collect::<Vec<_>>(),
        "observations": observations,
        "top_level_obs_ids": top,
        "regions": region_nodes,
        "located_at_relations": (0..10).map(|o| json!({
            "obs_id": obs_id(o).0, "region": regions[o], "distances": [],
            "where_specified": "direct"
        })).collect::<Vec<_>>(),
        "obs_relations": (1..=5).map(|o| json!({
            "parent_obs_id": format!("O{o:02}"), "child_obs_id": format!("O{o:02}.01"),
            "child_type": "associated_with"
        })).collect::<Vec<_>>(),
        "obs_sent_relations": top.iter().map(|o| json!({"obs_id": o, "sent_id": "S01"}))
            .collect::<Vec<_>>(),
        "region_region_relations": [],
        "study_quality": quality(),
        "study_img_localization_quality": [
            {"image_id": FRONTAL, "localization_quality": "BOX_AND_MASK_LOCALIZATION"},
            {"image_id": LATERAL, "localization_quality": "BOX_AND_MASK_LOCALIZATION"}
        ],
        "extractor": "rules", "embedder": "lexical"
    })
}

/// Exports the same lake three times (fresh folders) and checks the best run: timings on a shared
/// machine vary with its load.
#[tokio::test]
#[ignore = "timing; run with --release"]
#[allow(clippy::print_stderr)]
async fn export_speed_of_typical_graphs() {
    let rows: Vec<Value> = (0..STUDIES).map(typical_study).collect();
    let (dir, lake) = lake_with(&[]).await;
    let batches = rows.chunks(1000).map(decode).collect();
    lake.write("scene_graphs")
        .execute(batches)
        .await
        .expect("write scene_graphs");
    let mut best = 0.0_f64;
    for run in 0..3 {
        let out = dir.path().join(format!("out{run}"));
        let summary = export_scene_graphs(&lake, &SceneGraphExport::new(&out))
            .await
            .expect("export");
        eprintln!("{summary}");
        assert_eq!(summary.studies, STUDIES);
        best = best.max(summary.studies as f64 / summary.seconds);
        let sample = std::fs::read_to_string(out.join("p10/p10000000/s50000000.scene_graph.json"))
            .expect("first study");
        let sample: Value = serde_json::from_str(&sample).expect("json");
        assert_eq!(validate_scene_graph(&sample), Vec::<String>::new());
    }
    if !cfg!(debug_assertions) {
        assert!(best >= 2000.0, "best run: {best:.0} studies/s");
    }
}

/// Studies of the QA speed lake (about 60 questions each).
const QA_STUDIES: usize = 500;

/// Exports the questions of a pipeline-built lake three times (fresh folders); reports the best
/// run.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "timing; run with --release"]
#[allow(clippy::print_stderr)]
async fn qa_export_speed() {
    let dir = tempfile::tempdir().expect("tempdir");
    let lake = qa_lake(dir.path(), QA_STUDIES).await;
    let mut best = 0.0_f64;
    for run in 0..3 {
        let out = dir.path().join(format!("qa{run}"));
        let summary = export_qa(&lake, &QaExport::new(&out))
            .await
            .expect("export");
        eprintln!("{summary}");
        best = best.max(summary.questions as f64 / summary.seconds);
    }
    eprintln!("best run: {best:.0} questions/s");
}
