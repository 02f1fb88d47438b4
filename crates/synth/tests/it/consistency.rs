//! Cross-file consistency: masks vs boxes, images per study, splits, labels vs ground truth.

use std::collections::HashMap;

use cxrlake_synth::rle;

use crate::common::{corpus, read_csv, truth};

#[test]
fn masks_round_trip_and_agree_with_imagenome_boxes() {
    let (dir, _) = corpus();
    let mut checked = 0;
    let mut agreeing = 0;
    for rel in crate::common::all_files(&dir.join("cxas")).iter().take(25) {
        let coco: serde_json::Value =
            serde_json::from_slice(&std::fs::read(dir.join("cxas").join(rel)).expect("read"))
                .expect("json");
        let names: HashMap<u64, String> = coco["categories"]
            .as_array()
            .expect("categories")
            .iter()
            .map(|c| {
                (
                    c["id"].as_u64().expect("id"),
                    c["name"].as_str().expect("name").to_owned(),
                )
            })
            .collect();
        for image in coco["images"].as_array().expect("images") {
            let dicom = image["file_name"]
                .as_str()
                .expect("file_name")
                .trim_end_matches(".jpg")
                .to_owned();
            let (w, h) = (
                image["width"].as_u64().expect("w") as u32,
                image["height"].as_u64().expect("h") as u32,
            );
            let graph_path = dir.join(format!("imagenome/scene_graph/{dicom}_SceneGraph.json"));
            let graph: Option<serde_json::Value> = std::fs::read(&graph_path)
                .ok()
                .map(|b| serde_json::from_slice(&b).expect("graph json"));
            let mut mask_boxes: HashMap<String, Vec<u64>> = HashMap::new();
            for annotation in coco["annotations"].as_array().expect("annotations") {
                if annotation["image_id"] != image["id"] {
                    continue;
                }
                let counts = annotation["segmentation"]["counts"]
                    .as_str()
                    .expect("counts");
                let parsed = rle::Rle::from_compressed_string(counts, h, w).expect("valid RLE");
                assert_eq!(
                    parsed.to_compressed_string(),
                    counts,
                    "re-encoding is stable"
                );
                assert_eq!(parsed.area(), annotation["area"].as_u64().expect("area"));
                let b = parsed.bbox().expect("non-empty mask");
                let bbox: Vec<u64> = [b[0], b[1], b[2] - b[0], b[3] - b[1]]
                    .iter()
                    .map(|v| *v as u64)
                    .collect();
                let stated: Vec<u64> = annotation["bbox"]
                    .as_array()
                    .expect("bbox")
                    .iter()
                    .map(|v| v.as_u64().expect("int"))
                    .collect();
                assert_eq!(bbox, stated);
                if checked < 3 {
                    // Full dense round trip on a few masks (dense images are large).
                    let dense = parsed.to_dense();
                    assert_eq!(
                        rle::Rle::from_dense(&dense, h, w)
                            .expect("encode")
                            .to_compressed_string(),
                        counts
                    );
                    assert_eq!(
                        dense.iter().map(|&v| u64::from(v)).sum::<u64>(),
                        parsed.area()
                    );
                }
                checked += 1;
                let name = names[&annotation["category_id"].as_u64().expect("category")].clone();
                mask_boxes.insert(name, bbox);
            }
            let Some(graph) = graph else { continue };
            let boxes: HashMap<&str, [i64; 4]> = graph["objects"]
                .as_array()
                .expect("objects")
                .iter()
                .map(|o| {
                    let get = |k: &str| o[k].as_i64().expect("coord");
                    (
                        o["bbox_name"].as_str().expect("name"),
                        [
                            get("original_x1"),
                            get("original_y1"),
                            get("original_x2"),
                            get("original_y2"),
                        ],
                    )
                })
                .collect();
            let right = boxes["right lung"];
            let left = boxes["left lung"];
            assert!(
                right[2] <= left[0],
                "patient's right lung must be on the image left"
            );
            let spine = boxes["spine"];
            assert!(right[0] < spine[0] && spine[2] < left[2]);
            for (ig, cxas) in [
                ("right lung", "right lung"),
                ("left lung", "left lung"),
                ("cardiac silhouette", "heart"),
                ("trachea", "trachea"),
            ] {
                let m = &mask_boxes[cxas];
                let b = boxes[ig];
                let mask_box = [
                    m[0] as i64,
                    m[1] as i64,
                    (m[0] + m[2]) as i64,
                    (m[1] + m[3]) as i64,
                ];
                let diff = (0..4)
                    .map(|i| (mask_box[i] - b[i]).abs())
                    .max()
                    .unwrap_or(0);
                assert!(diff <= 60, "{ig}: box {b:?} vs mask {mask_box:?}");
                agreeing += usize::from(diff == 0);
            }
            for zone in [
                "right upper lung zone",
                "right lower lung zone",
                "left mid lung zone",
            ] {
                let z = boxes[zone];
                let lung = if zone.starts_with("right") {
                    right
                } else {
                    left
                };
                assert!(
                    z[0] >= lung[0] - 60
                        && z[2] <= lung[2] + 60
                        && z[1] >= lung[1]
                        && z[3] <= lung[3] + 60
                );
            }
        }
    }
    assert!(checked > 100);
    assert!(agreeing > 10);
}

#[test]
fn about_1_65_images_per_study_and_splits_by_patient() {
    let (dir, summary) = corpus();
    let (_, rows) = read_csv(&dir.join("mimic-cxr-2.0.0-split.csv.gz"));
    let studies: std::collections::HashSet<&str> = rows.iter().map(|r| r[1].as_str()).collect();
    let per_study = rows.len() as f64 / studies.len() as f64;
    assert!(
        (1.45..1.85).contains(&per_study),
        "{per_study} images per study"
    );
    assert_eq!(studies.len(), summary.studies);
    let mut split_of: HashMap<&str, &str> = HashMap::new();
    for row in &rows {
        let previous = split_of.insert(row[2].as_str(), row[3].as_str());
        assert!(
            previous.is_none_or(|p| p == row[3]),
            "patient {} in two splits",
            row[2]
        );
    }
    let train = split_of.values().filter(|s| **s == "train").count() as f64 / split_of.len() as f64;
    assert!(train > 0.9, "{train}");
}

fn expected_labels(study: &serde_json::Value) -> HashMap<String, &'static str> {
    let column =
        |finding: &str| -> Option<&'static str> { cxrlake_synth::truth::chexpert_column(finding) };
    let rank = |v: &str| match v {
        "1.0" => 3,
        "-1.0" => 2,
        _ => 1,
    };
    let mut labels: HashMap<String, &'static str> = HashMap::new();
    for f in study["findings"].as_array().expect("findings") {
        let Some(col) = column(f["finding"].as_str().expect("finding")) else {
            continue;
        };
        let value = match (f["positiveness"].as_str(), f["certainty"].as_str()) {
            (Some("neg"), _) => "0.0",
            (_, Some("uncertain")) => "-1.0",
            _ => "1.0",
        };
        let slot = labels.entry(col.to_owned()).or_insert(value);
        if rank(value) > rank(slot) {
            *slot = value;
        }
    }
    let abnormal = labels
        .iter()
        .any(|(c, v)| c != "Support Devices" && (*v == "1.0" || *v == "-1.0"));
    if !abnormal {
        labels.insert("No Finding".to_owned(), "1.0");
    }
    labels
}

#[test]
fn chexpert_labels_follow_the_ground_truth() {
    let (dir, _) = corpus();
    let (header, rows) = read_csv(&dir.join("mimic-cxr-2.0.0-chexpert.csv.gz"));
    let lines = truth(dir);
    assert_eq!(rows.len(), lines.len());
    let mut positives = 0;
    for (row, study) in rows.iter().zip(&lines) {
        assert_eq!(
            format!("p{}", row[0]),
            study["patient_id"].as_str().expect("patient")
        );
        assert_eq!(
            format!("s{}", row[1]),
            study["study_id"].as_str().expect("study")
        );
        let expected = expected_labels(study);
        for (i, column) in header.iter().enumerate().skip(2) {
            let want = expected.get(column).copied().unwrap_or("");
            assert_eq!(row[i], want, "{column} of {}", row[1]);
            positives += usize::from(want == "1.0");
        }
        let normal = study["normal"].as_bool().expect("normal");
        let abnormal_statement = study["findings"]
            .as_array()
            .expect("findings")
            .iter()
            .any(|f| {
                f["positiveness"] == "pos"
                    && cxrlake_synth::truth::chexpert_column(f["finding"].as_str().unwrap_or(""))
                        != Some("Support Devices")
            });
        assert_eq!(normal, !abnormal_statement);
    }
    assert!(positives > 100);
    let (_, negbio) = read_csv(&dir.join("mimic-cxr-2.0.0-negbio.csv.gz"));
    assert_eq!(negbio, rows);
}
