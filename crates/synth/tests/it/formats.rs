//! The outputs parse back in the MIMIC / ImaGenome / CXAS shapes.

use std::collections::HashSet;
use std::io::Read;

use cxrlake_synth::{imagenome, vocab};

use crate::common::{STUDIES, corpus, read_csv, truth};

#[test]
fn csv_headers_and_ids() {
    let (dir, summary) = corpus();
    let (header, rows) = read_csv(&dir.join("mimic-cxr-2.0.0-metadata.csv.gz"));
    assert_eq!(
        header.join(","),
        "dicom_id,subject_id,study_id,PerformedProcedureStepDescription,ViewPosition,Rows,Columns,StudyDate,StudyTime,ProcedureCodeSequence_CodeMeaning,ViewCodeSequence_CodeMeaning,PatientOrientationCodeSequence_CodeMeaning"
    );
    assert_eq!(rows.len(), summary.images);
    for row in &rows {
        let groups: Vec<&str> = row[0].split('-').collect();
        assert!(
            groups.len() == 5
                && groups
                    .iter()
                    .all(|g| g.len() == 8 && g.chars().all(|c| c.is_ascii_hexdigit()))
        );
        assert!(
            row[1].len() == 8 && row[1].starts_with('1'),
            "subject {}",
            row[1]
        );
        assert!(
            row[2].len() == 8 && row[2].starts_with('5'),
            "study {}",
            row[2]
        );
        assert!(["PA", "AP", "LATERAL", "LL", ""].contains(&row[4].as_str()));
        assert!(
            row[5].parse::<u32>().expect("Rows") > 1000
                && row[6].parse::<u32>().expect("Columns") > 1000
        );
        assert!(row[7].len() == 8 && row[7].starts_with("21"));
        assert!(
            row[8].contains('.') && row[8].len() == 10,
            "time {}",
            row[8]
        );
        assert!(["Erect", "Recumbent"].contains(&row[11].as_str()));
    }
    let (header, split_rows) = read_csv(&dir.join("mimic-cxr-2.0.0-split.csv.gz"));
    assert_eq!(header.join(","), "dicom_id,study_id,subject_id,split");
    assert_eq!(split_rows.len(), rows.len());
    assert!(
        split_rows
            .iter()
            .all(|r| ["train", "validate", "test"].contains(&r[3].as_str()))
    );
    for name in [
        "mimic-cxr-2.0.0-chexpert.csv.gz",
        "mimic-cxr-2.0.0-negbio.csv.gz",
    ] {
        let (header, label_rows) = read_csv(&dir.join(name));
        assert_eq!(header[..2], ["subject_id", "study_id"]);
        assert_eq!(
            header[2..],
            vocab::CHEXPERT_CSV_COLUMNS
                .iter()
                .map(|c| c.to_string())
                .collect::<Vec<_>>()
        );
        assert_eq!(label_rows.len(), STUDIES);
        for row in &label_rows {
            assert!(
                row[2..]
                    .iter()
                    .all(|v| ["", "1.0", "0.0", "-1.0"].contains(&v.as_str()))
            );
        }
    }
}

#[test]
fn reports_tree_and_zip() {
    let (dir, _) = corpus();
    let lines = truth(dir);
    let archive = std::fs::File::open(dir.join("mimic-cxr-reports.zip")).expect("zip exists");
    let mut archive = zip::ZipArchive::new(archive).expect("zip opens");
    assert_eq!(archive.len(), STUDIES);
    for line in &lines {
        let patient = line["patient_id"].as_str().expect("patient_id");
        let study = line["study_id"].as_str().expect("study_id");
        let rel = format!("files/{}/{patient}/{study}.txt", &patient[..3]);
        let text = std::fs::read_to_string(dir.join(&rel)).expect("report file");
        assert!(text.contains("FINAL REPORT"));
        let mut zipped = String::new();
        archive
            .by_name(&rel)
            .expect("in zip")
            .read_to_string(&mut zipped)
            .expect("read zip entry");
        assert_eq!(zipped, text);
    }
}

#[test]
fn scene_graphs_have_the_imagenome_shape() {
    let (dir, summary) = corpus();
    let graphs: Vec<_> = std::fs::read_dir(dir.join("imagenome/scene_graph"))
        .expect("dir")
        .collect();
    assert_eq!(graphs.len(), summary.scene_graphs);
    assert_eq!(summary.scene_graphs, summary.frontal_images);
    let names: HashSet<&str> = imagenome::BBOX_NAMES.into_iter().collect();
    for entry in graphs.iter().take(40) {
        let path = entry.as_ref().expect("entry").path();
        let graph: serde_json::Value =
            serde_json::from_slice(&std::fs::read(&path).expect("read")).expect("json");
        let image_id = graph["image_id"].as_str().expect("image_id");
        assert!(path.ends_with(format!("{image_id}_SceneGraph.json")));
        for key in [
            "patient_id",
            "study_id",
            "viewpoint",
            "objects",
            "attributes",
            "relationships",
        ] {
            assert!(graph.get(key).is_some(), "missing {key}");
        }
        let objects = graph["objects"].as_array().expect("objects");
        assert_eq!(objects.len(), 29);
        for object in objects {
            let name = object["bbox_name"].as_str().expect("bbox_name");
            assert!(names.contains(name));
            assert_eq!(object["object_id"], format!("{image_id}_{name}"));
            for key in [
                "x1",
                "y1",
                "x2",
                "y2",
                "width",
                "height",
                "original_x1",
                "original_y1",
                "original_x2",
                "original_y2",
                "original_width",
                "original_height",
            ] {
                assert!(object[key].is_i64(), "{key} not an integer");
            }
            assert!(object["x2"].as_i64() > object["x1"].as_i64());
            assert!(
                object["x1"].as_i64().expect("x1") >= -5
                    && object["x2"].as_i64().expect("x2") <= 230
            );
        }
        for attribute in graph["attributes"].as_array().expect("attributes") {
            for key in [
                "bbox_name",
                "name",
                "synsets",
                "attributes",
                "attributes_ids",
                "phrases",
                "phrase_IDs",
                "sections",
                "comparison_cues",
                "temporal_cues",
                "severity_cues",
                "texture_cues",
                "object_id",
            ] {
                assert!(attribute.get(key).is_some(), "attribute misses {key}");
            }
            let n = attribute["phrases"].as_array().expect("phrases").len();
            assert_eq!(
                attribute["attributes"]
                    .as_array()
                    .expect("attributes")
                    .len(),
                n
            );
        }
    }
}

#[test]
fn cxas_files_are_coco_with_verbatim_labels() {
    let (dir, summary) = corpus();
    let files: Vec<_> = crate::common::all_files(&dir.join("cxas"));
    assert_eq!(files.len(), summary.cxas_files);
    let mut masks = 0;
    for rel in &files {
        let coco: serde_json::Value =
            serde_json::from_slice(&std::fs::read(dir.join("cxas").join(rel)).expect("read"))
                .expect("json");
        let images = coco["images"].as_array().expect("images");
        assert!(!images.is_empty());
        for category in coco["categories"].as_array().expect("categories") {
            let id = category["id"].as_u64().expect("id");
            let name = category["name"].as_str().expect("name");
            assert_eq!(cxrlake_synth::cxas::label_id(name).map(u64::from), Some(id));
        }
        for annotation in coco["annotations"].as_array().expect("annotations") {
            assert_eq!(annotation["iscrowd"], 0);
            assert!(annotation["segmentation"]["counts"].is_string());
            assert_eq!(
                annotation["segmentation"]["size"]
                    .as_array()
                    .expect("size")
                    .len(),
                2
            );
            assert_eq!(annotation["bbox"].as_array().expect("bbox").len(), 4);
            masks += 1;
        }
    }
    assert_eq!(masks, summary.masks);
    let per_frontal = masks as f64 / summary.images as f64;
    assert!(per_frontal > 25.0, "{per_frontal} masks per image");
}

#[test]
fn manifest_matches_summary() {
    let (dir, summary) = corpus();
    let manifest: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("manifest.json")).expect("manifest"))
            .expect("json");
    assert_eq!(manifest["studies"], summary.studies);
    assert_eq!(manifest["patients"], summary.patients);
    assert_eq!(manifest["images"], summary.images);
    assert_eq!(manifest["boxes"], summary.boxes);
    assert_eq!(manifest["masks"], summary.masks);
    assert_eq!(manifest["seed"], 7);
    assert_eq!(manifest["version"], cxrlake_synth::GENERATOR_VERSION);
    assert!(summary.to_string().contains("studies"));
}
