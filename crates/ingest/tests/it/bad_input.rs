//! Each class of bad input lands in `quarantine` with its source, location, reason and raw
//! bytes; the rest of the corpus is ingested, and the run does not fail unless strict.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use cxrlake_ingest::{IngestOptions, ingest};
use serde_json::Value;

use crate::common::{QuarantineRow, corpus, count, files_under, lake, quarantine, run, versions};

/// A small corpus; returns its temp dir, root and summary.
fn tiny() -> (tempfile::TempDir, PathBuf, cxrlake_synth::SynthSummary) {
    let (dir, synth) = corpus(12, 1, false);
    let root = synth.out.clone();
    (dir, root, synth)
}

/// Ingests `root`, expects exactly `expected` quarantined inputs, returns the quarantine rows.
async fn ingest_expecting(
    root: &Path,
    expected: u64,
) -> (tempfile::TempDir, cxrlake_lake::Lake, Vec<QuarantineRow>) {
    let (dir, lake) = lake().await;
    let summary = run(&lake, vec![root.to_path_buf()]).await;
    assert_eq!(summary.quarantined(), expected, "{summary}");
    assert!(!summary.failed(), "not strict: the run succeeds");
    let rows = quarantine(&lake).await;
    assert_eq!(rows.len() as u64, expected, "{rows:?}");
    (dir, lake, rows)
}

/// Replaces the gzipped metadata CSV with a plain one edited by `edit` (lines without `\n`).
fn edit_metadata(root: &Path, edit: impl FnOnce(&mut Vec<String>)) -> PathBuf {
    let gz = root.join("mimic-cxr-2.0.0-metadata.csv.gz");
    let mut text = String::new();
    flate2::read::GzDecoder::new(std::fs::File::open(&gz).expect("open"))
        .read_to_string(&mut text)
        .expect("gunzip");
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    edit(&mut lines);
    std::fs::remove_file(&gz).expect("rm");
    let plain = root.join("mimic-cxr-2.0.0-metadata.csv");
    std::fs::write(&plain, lines.join("\n") + "\n").expect("write");
    plain
}

fn first_file(root: &Path, folder: &str, suffix: &str) -> PathBuf {
    let rel = files_under(&root.join(folder))
        .into_iter()
        .find(|f| f.ends_with(suffix))
        .expect("a file");
    root.join(folder).join(rel)
}

fn edit_json(path: &Path, edit: impl FnOnce(&mut Value)) {
    let mut value: Value =
        serde_json::from_slice(&std::fs::read(path).expect("read")).expect("json");
    edit(&mut value);
    std::fs::write(path, serde_json::to_vec(&value).expect("json")).expect("write");
}

#[tokio::test]
async fn malformed_csv_row_is_quarantined_once_and_strict_fails() {
    let (_dir, root, synth) = tiny();
    let mut bad_line = 0;
    let plain = edit_metadata(&root, |lines| {
        lines.insert(3, "abc,def".to_string());
        bad_line = 4;
    });
    let (_lake_dir, lake, rows) = ingest_expecting(&root, 1).await;
    let row = &rows[0];
    assert_eq!(row.source, plain.display().to_string());
    assert_eq!(row.location, format!("line {bad_line}"));
    assert!(
        row.reason
            .contains("malformed CSV row: 2 fields, the header has 12"),
        "{}",
        row.reason
    );
    assert_eq!(row.raw, b"abc,def");
    assert_eq!(
        count(&lake, "SELECT count(*) FROM images").await,
        synth.images as i64
    );

    // Re-ingesting records the bad row once; a strict run reports failure.
    let before = versions(&lake).await;
    let options = IngestOptions::new(vec![root.clone()]).with_strict(true);
    let again = ingest(&lake, &options).await.expect("ingest");
    assert_eq!(again.quarantined(), 1);
    assert_eq!(again.quarantine_rows_new, 0);
    assert!(again.failed());
    assert_eq!(versions(&lake).await, before);
}

#[tokio::test]
async fn an_unclosed_quote_is_named_in_the_reason() {
    let (_dir, root, _synth) = tiny();
    edit_metadata(&root, |lines| {
        // The quote opened in the first field never closes: the next rows join this one.
        lines[2] = format!("\"{}", lines[2]);
    });
    let (_lake_dir, _lake, rows) = ingest_expecting(&root, 1).await;
    assert!(
        rows[0]
            .reason
            .contains("an unclosed quote (\") probably joined the following rows"),
        "{}",
        rows[0].reason
    );
}

#[tokio::test]
async fn duplicate_id_with_different_values_is_quarantined() {
    let (_dir, root, synth) = tiny();
    let mut duplicate = String::new();
    edit_metadata(&root, |lines| {
        let mut fields: Vec<String> = lines[1].split(',').map(str::to_string).collect();
        fields[5] = "1234".to_string();
        duplicate = fields.join(",");
        lines.push(duplicate.clone());
    });
    let lines = synth.images + 2;
    let (_lake_dir, lake, rows) = ingest_expecting(&root, 1).await;
    let row = &rows[0];
    assert!(
        row.source.ends_with("mimic-cxr-2.0.0-metadata.csv"),
        "{}",
        row.source
    );
    assert_eq!(row.location, format!("line {lines}"));
    assert!(
        row.reason.starts_with("duplicate dicom_id "),
        "{}",
        row.reason
    );
    assert_eq!(row.raw, duplicate.as_bytes());
    assert_eq!(
        count(&lake, "SELECT count(*) FROM images WHERE \"rows\" = 1234").await,
        0
    );
}

#[tokio::test]
async fn invalid_json_is_quarantined() {
    let (_dir, root, synth) = tiny();
    let path = first_file(&root, "imagenome", "_SceneGraph.json");
    let boxes_in_file = {
        let value: Value =
            serde_json::from_slice(&std::fs::read(&path).expect("read")).expect("json");
        value["objects"].as_array().expect("objects").len()
    };
    std::fs::write(&path, b"{\"objects\": [").expect("write");
    let (_lake_dir, lake, rows) = ingest_expecting(&root, 1).await;
    let row = &rows[0];
    assert_eq!(row.source, path.display().to_string());
    assert_eq!(row.location, "line 1, column 13");
    assert!(row.reason.starts_with("invalid JSON"), "{}", row.reason);
    assert_eq!(row.raw, b"{\"objects\": [");
    assert_eq!(
        count(&lake, "SELECT count(*) FROM imagenome_boxes").await,
        (synth.boxes - boxes_in_file) as i64
    );
}

#[tokio::test]
async fn valid_json_of_another_shape_says_so() {
    let (_dir, root, _synth) = tiny();
    let path = first_file(&root, "imagenome", "_SceneGraph.json");
    std::fs::write(&path, b"{\"objects\": \"none\"}").expect("write");
    let (_lake_dir, _lake, rows) = ingest_expecting(&root, 1).await;
    assert!(
        rows[0]
            .reason
            .starts_with("valid JSON, but not a Chest ImaGenome scene graph: invalid type"),
        "{}",
        rows[0].reason
    );
}

#[tokio::test]
async fn json_under_a_cxas_folder_is_read_as_cxas_only_when_shaped_like_it() {
    let (_dir, root, _synth) = tiny();
    let path = first_file(&root, "cxas", ".json");
    // A JSON of another shape where CXAS output is expected: quarantined, saying what it is not.
    std::fs::write(&path, b"{\"objects\": []}").expect("write");
    // A JSON under a folder that merely contains the letters is not CXAS output: skipped.
    let notes = root.join("notcxas");
    std::fs::create_dir_all(&notes).expect("mkdir");
    std::fs::write(notes.join("s50000001.json"), b"{\"images\": 1}").expect("write");
    let (_lake_dir, _lake, rows) = ingest_expecting(&root, 1).await;
    assert_eq!(rows[0].source, path.display().to_string());
    assert!(
        rows[0]
            .reason
            .starts_with("valid JSON, but not a CXAS COCO file: missing field `images`"),
        "{}",
        rows[0].reason
    );
}

#[tokio::test]
async fn rle_that_disagrees_with_the_image_is_quarantined() {
    let (_dir, root, synth) = tiny();
    let path = first_file(&root, "cxas", ".json");
    edit_json(&path, |coco| {
        let size = &mut coco["annotations"][0]["segmentation"]["size"];
        size[0] = Value::from(size[0].as_u64().expect("h") + 1);
        coco["annotations"][1]["segmentation"]["counts"] = Value::from("0a0");
    });
    let (_lake_dir, lake, mut rows) = ingest_expecting(&root, 2).await;
    rows.sort_by(|a, b| a.location.cmp(&b.location));
    assert_eq!(rows[0].source, path.display().to_string());
    assert_eq!(rows[0].location, "annotations[0]");
    assert!(
        rows[0].reason.starts_with("RLE size "),
        "{}",
        rows[0].reason
    );
    assert!(
        rows[0].reason.contains("disagrees with image"),
        "{}",
        rows[0].reason
    );
    let raw: Value = serde_json::from_slice(&rows[0].raw).expect("raw annotation JSON");
    assert!(raw["segmentation"]["counts"].is_string());
    assert_eq!(rows[1].location, "annotations[1]");
    assert!(
        rows[1].reason.starts_with("invalid RLE"),
        "{}",
        rows[1].reason
    );
    assert_eq!(
        count(&lake, "SELECT count(*) FROM cxas_masks").await,
        synth.masks as i64 - 2
    );
}

#[tokio::test]
async fn unknown_class_id_is_quarantined() {
    let (_dir, root, synth) = tiny();
    let path = first_file(&root, "cxas", ".json");
    edit_json(&path, |coco| {
        coco["annotations"][2]["category_id"] = Value::from(999);
    });
    let (_lake_dir, lake, rows) = ingest_expecting(&root, 1).await;
    assert_eq!(rows[0].source, path.display().to_string());
    assert_eq!(rows[0].location, "annotations[2]");
    assert!(
        rows[0]
            .reason
            .starts_with("unknown class id 999: expected an id listed in the file's categories"),
        "{}",
        rows[0].reason
    );
    assert_eq!(
        count(&lake, "SELECT count(*) FROM cxas_masks").await,
        synth.masks as i64 - 1
    );
}

#[tokio::test]
async fn ids_that_do_not_match_the_mimic_patterns_are_quarantined() {
    let (_dir, root, synth) = tiny();
    let report = root.join("files/p10/p10000001/s123.txt");
    std::fs::create_dir_all(report.parent().expect("parent")).expect("mkdir");
    std::fs::write(&report, "FINAL REPORT\n").expect("write");
    let graph = first_file(&root, "imagenome", "_SceneGraph.json");
    let bad_graph = graph.with_file_name("not-a-dicom_SceneGraph.json");
    std::fs::rename(&graph, &bad_graph).expect("rename");
    let (_lake_dir, lake, mut rows) = ingest_expecting(&root, 2).await;
    rows.sort_by(|a, b| a.source.cmp(&b.source));
    assert_eq!(rows[0].source, report.display().to_string());
    assert_eq!(rows[0].location, "file");
    assert!(
        rows[0].reason.starts_with("invalid study id 's123'"),
        "{}",
        rows[0].reason
    );
    assert_eq!(rows[0].raw, b"FINAL REPORT\n");
    assert_eq!(rows[1].source, bad_graph.display().to_string());
    assert!(
        rows[1].reason.starts_with("invalid dicom id 'not-a-dicom'"),
        "{}",
        rows[1].reason
    );
    assert_eq!(
        count(&lake, "SELECT count(*) FROM reports").await,
        synth.studies as i64
    );
}

#[tokio::test]
async fn unreadable_zip_member_is_quarantined() {
    let (_dir, root, synth) = tiny();
    let zip_path = root.join("more-reports.zip");
    let member = "files/p10/p10000001/s50000001.txt";
    {
        let mut zip = zip::ZipWriter::new(std::fs::File::create(&zip_path).expect("create"));
        let stored = zip::write::SimpleFileOptions::default()
            .compression_method(zip::CompressionMethod::Stored);
        zip.start_file(member, stored).expect("start");
        zip.write_all(b"FINAL REPORT: corrupted below")
            .expect("write");
        zip.finish().expect("finish");
    }
    let mut bytes = std::fs::read(&zip_path).expect("read");
    let at = bytes
        .windows(9)
        .position(|w| w == b"corrupted")
        .expect("member data");
    bytes[at] = b'X';
    std::fs::write(&zip_path, bytes).expect("write");

    let (_lake_dir, lake, rows) = ingest_expecting(&root, 1).await;
    assert_eq!(rows[0].source, format!("{}!{member}", zip_path.display()));
    assert_eq!(rows[0].location, "file");
    assert!(
        rows[0].reason.starts_with("unreadable zip member"),
        "{}",
        rows[0].reason
    );
    assert_eq!(
        count(&lake, "SELECT count(*) FROM reports").await,
        synth.studies as i64
    );
}

#[tokio::test]
async fn a_class_id_past_32_bits_is_quarantined_not_wrapped() {
    let (_dir, root, synth) = tiny();
    let path = first_file(&root, "cxas", ".json");
    let huge = 1_i64 << 40;
    edit_json(&path, |coco| {
        let mut category = coco["categories"][0].clone();
        category["id"] = Value::from(huge);
        coco["categories"]
            .as_array_mut()
            .expect("categories")
            .push(category);
        coco["annotations"][2]["category_id"] = Value::from(huge);
    });
    let (_lake_dir, lake, rows) = ingest_expecting(&root, 1).await;
    assert_eq!(rows[0].location, "annotations[2]");
    assert!(
        rows[0]
            .reason
            .starts_with("class id 1099511627776 is out of range"),
        "{}",
        rows[0].reason
    );
    assert_eq!(
        count(&lake, "SELECT count(*) FROM cxas_masks WHERE class_id < 0").await,
        0
    );
    assert_eq!(
        count(&lake, "SELECT count(*) FROM cxas_masks").await,
        synth.masks as i64 - 1
    );
}

#[tokio::test]
async fn without_categories_class_ids_are_cxas_label_ids() {
    let (_dir, root, synth) = tiny();
    let path = first_file(&root, "cxas", ".json");
    edit_json(&path, |coco| {
        coco.as_object_mut().expect("object").remove("categories");
        coco["annotations"][0]["category_id"] = Value::from(159);
    });
    let (_lake_dir, lake, rows) = ingest_expecting(&root, 1).await;
    assert_eq!(rows[0].location, "annotations[0]");
    assert!(
        rows[0]
            .reason
            .starts_with("unknown class id 159: expected a CXAS label id 0..158"),
        "{}",
        rows[0].reason
    );
    assert_eq!(
        count(&lake, "SELECT count(*) FROM cxas_masks").await,
        synth.masks as i64 - 1
    );
    assert_eq!(
        count(
            &lake,
            "SELECT count(*) FROM cxas_masks WHERE class_id = 135 AND class_name <> 'right lung'"
        )
        .await,
        0
    );
}

#[tokio::test]
async fn inverted_boxes_are_quarantined() {
    let (_dir, root, synth) = tiny();
    let path = first_file(&root, "imagenome", "_SceneGraph.json");
    edit_json(&path, |graph| {
        let object = &mut graph["objects"][0];
        let (x1, x2) = (object["original_x1"].clone(), object["original_x2"].clone());
        object["original_x1"] = x2;
        object["original_x2"] = x1;
    });
    let (_lake_dir, lake, rows) = ingest_expecting(&root, 1).await;
    assert!(
        rows[0].reason.contains("has an inverted box") && rows[0].reason.contains("x2 < x1"),
        "{rows:?}"
    );
    assert_eq!(
        count(&lake, "SELECT count(*) FROM imagenome_boxes").await,
        (synth.boxes - 1) as i64
    );
}
