//! A synthetic corpus round-trips through ingest; the zip and tree layouts give identical tables.

use crate::common::{SOURCE_TABLES, corpus, count, csvs, dump, lake, quarantine, run, zip_folders};

#[tokio::test]
async fn synthetic_corpus_round_trips_with_nothing_quarantined() {
    let (_dir, synth) = corpus(300, 7, true);
    let (_lake_dir, lake) = lake().await;
    // The corpus root holds the report tree *and* mimic-cxr-reports.zip: identical copies of a
    // report are one row, not a duplicate.
    let summary = run(&lake, vec![synth.out.clone()]).await;
    #[allow(clippy::print_stdout)]
    {
        println!("{summary}");
    }
    assert_eq!(summary.quarantined(), 0, "{summary}");
    assert!(quarantine(&lake).await.is_empty());
    assert_eq!(summary.studies, synth.studies as u64);
    let reports = summary.table("reports").expect("reports");
    assert_eq!(reports.files, 2 * synth.studies as u64, "tree + zip");

    let n = |v: usize| v as i64;
    assert_eq!(
        count(&lake, "SELECT count(*) FROM reports").await,
        n(synth.studies)
    );
    assert_eq!(
        count(&lake, "SELECT count(*) FROM images").await,
        n(synth.images)
    );
    assert_eq!(
        count(&lake, "SELECT count(*) FROM splits").await,
        n(synth.images)
    );
    assert_eq!(
        count(&lake, "SELECT count(*) FROM chexpert_labels").await,
        n(2 * synth.studies)
    );
    assert_eq!(
        count(&lake, "SELECT count(*) FROM imagenome_boxes").await,
        n(synth.boxes)
    );
    assert_eq!(
        count(&lake, "SELECT count(*) FROM cxas_masks").await,
        n(synth.masks)
    );
    assert_eq!(
        count(&lake, "SELECT count(*) FROM images WHERE is_frontal").await,
        n(synth.frontal_images)
    );
    assert_eq!(
        count(
            &lake,
            "SELECT count(*) FROM images WHERE view = 'frontal' AND view_position IN ('PA', 'AP')"
        )
        .await,
        n(synth.frontal_images)
    );
    assert_eq!(
        count(&lake, "SELECT count(*) FROM images WHERE view = 'lateral' AND view_position NOT IN ('LATERAL', 'LL')").await,
        0
    );
    assert_eq!(
        count(
            &lake,
            "SELECT count(*) FROM images i JOIN splits s USING (image_id) WHERE i.split = s.split"
        )
        .await,
        n(synth.images)
    );
    assert_eq!(
        count(
            &lake,
            "SELECT count(*) FROM reports WHERE patient_id LIKE 'p________' AND study_id LIKE 's________' \
             AND source_path = concat('files/', substr(patient_id, 1, 3), '/', patient_id, '/', study_id, '.txt') \
             AND length(content_hash) = 64"
        )
        .await,
        n(synth.studies)
    );
    // Every box lies inside its image; the generator pushes ~1% of images' boxes past the border.
    assert_eq!(
        count(
            &lake,
            "SELECT count(*) FROM imagenome_boxes b JOIN images i USING (image_id) \
             WHERE b.bbox[1] < 0 OR b.bbox[2] < 0 OR b.bbox[3] > i.\"columns\" OR b.bbox[4] > i.\"rows\""
        )
        .await,
        0
    );
    assert_eq!(
        count(
            &lake,
            "SELECT count(*) FROM cxas_masks m JOIN images i USING (image_id) \
             WHERE m.height = i.\"rows\" AND m.width = i.\"columns\" AND m.study_id = i.study_id \
             AND m.patient_id = i.patient_id AND m.area > 0"
        )
        .await,
        n(synth.masks)
    );
    // Scene-graph attributes reach their boxes: abnormal studies have labelled boxes with the
    // report phrases they come from, every label is `category|polarity|name`.
    assert!(
        count(
            &lake,
            "SELECT count(*) FROM imagenome_boxes WHERE cardinality(attributes) > 0 \
             AND cardinality(phrases) > 0"
        )
        .await
            > 0
    );
    assert_eq!(
        count(
            &lake,
            "SELECT count(*) FROM (SELECT unnest(attributes) AS a FROM imagenome_boxes) \
             WHERE a NOT LIKE '%|%|%'"
        )
        .await,
        0
    );
}

#[tokio::test]
async fn zip_and_tree_layouts_give_identical_tables() {
    let (dir, synth) = corpus(120, 11, true);
    let root = &synth.out;
    let imagenome_zip = dir.path().join("imagenome.zip");
    let cxas_zip = dir.path().join("cxas.zip");
    zip_folders(&root.join("imagenome"), &["scene_graph"], &imagenome_zip);
    let cxas_folders: Vec<String> = std::fs::read_dir(root.join("cxas"))
        .expect("cxas")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    let cxas_folders: Vec<&str> = cxas_folders.iter().map(String::as_str).collect();
    zip_folders(&root.join("cxas"), &cxas_folders, &cxas_zip);

    let (_tree_dir, tree) = lake().await;
    let mut inputs = vec![
        root.join("files"),
        root.join("imagenome"),
        root.join("cxas"),
    ];
    inputs.extend(csvs(root));
    let tree_summary = run(&tree, inputs).await;

    let (_zip_dir, zipped) = lake().await;
    let mut inputs = vec![root.join("mimic-cxr-reports.zip"), imagenome_zip, cxas_zip];
    inputs.extend(csvs(root));
    let zip_summary = run(&zipped, inputs).await;

    assert_eq!(tree_summary.quarantined(), 0, "{tree_summary}");
    assert_eq!(zip_summary.quarantined(), 0, "{zip_summary}");
    for table in SOURCE_TABLES {
        let (a, b) = (dump(&tree, table).await, dump(&zipped, table).await);
        assert!(!a.is_empty(), "{table} is empty");
        assert_eq!(a.len(), b.len(), "{table} row counts");
        assert!(
            a == b,
            "{table} differs between the tree and the zip layouts"
        );
    }
}

#[tokio::test]
async fn boxes_past_the_border_are_clamped_and_flagged() {
    let (_dir, synth) = corpus(10, 2, false);
    let path = std::fs::read_dir(synth.out.join("imagenome/scene_graph"))
        .expect("scene graphs")
        .map(|e| e.expect("entry").path())
        .min()
        .expect("a scene graph");
    let mut graph: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&path).expect("read")).expect("json");
    let image_id = graph["image_id"].as_str().expect("image_id").to_string();
    let object = &mut graph["objects"][0];
    let name = object["bbox_name"].as_str().expect("bbox_name").to_string();
    let (y1, y2) = (object["original_y1"].clone(), object["original_y2"].clone());
    object["original_x1"] = serde_json::Value::from(-25);
    object["original_x2"] = serde_json::Value::from(1_000_000);
    std::fs::write(&path, serde_json::to_vec(&graph).expect("json")).expect("write");

    let (_lake_dir, lake) = lake().await;
    let summary = run(&lake, vec![synth.out.clone()]).await;
    assert_eq!(summary.quarantined(), 0, "{summary}");
    let sql = format!(
        "SELECT count(*) FROM imagenome_boxes b JOIN images i USING (image_id) \
         WHERE b.image_id = '{image_id}' AND b.bbox_name = '{name}' AND b.clamped \
         AND b.bbox[1] = 0 AND b.bbox[3] = i.\"columns\" AND b.bbox[2] = {y1} AND b.bbox[4] = {y2}"
    );
    assert_eq!(count(&lake, &sql).await, 1);
    assert_eq!(
        count(
            &lake,
            &format!(
                "SELECT count(*) FROM imagenome_boxes WHERE image_id = '{image_id}' AND NOT clamped"
            )
        )
        .await,
        graph["objects"].as_array().expect("objects").len() as i64 - 1
    );
}
