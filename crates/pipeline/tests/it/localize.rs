//! synth → ingest → localize on a small synthetic corpus: coverage of localized regions on
//! frontal images, fallbacks on lateral images, quality levels, and the stage's commit.

use cxrlake_ingest::{IngestOptions, ingest};
use cxrlake_lake::Lake;
use cxrlake_pipeline::Fingerprint;
use cxrlake_refdefs::RefDefs;
use cxrlake_synth::{SynthOptions, generate};
use datafusion::arrow::array::{Array, AsArray};
use datafusion::arrow::datatypes::{Float64Type, Int64Type};

async fn scalar_f64(lake: &Lake, sql: &str) -> f64 {
    let ctx = lake.session().await.expect("session");
    let batches = ctx
        .sql(sql)
        .await
        .expect("plan")
        .collect()
        .await
        .expect("run");
    let column = batches[0].column(0);
    column
        .as_primitive_opt::<Float64Type>()
        .map(|a| a.value(0))
        .or_else(|| {
            column
                .as_primitive_opt::<Int64Type>()
                .map(|a| a.value(0) as f64)
        })
        .unwrap_or_else(|| panic!("not a number: {sql} -> {:?}", column.data_type()))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn synthetic_corpus_is_localized() {
    let dir = tempfile::tempdir().expect("tempdir");
    let corpus = dir.path().join("corpus");
    generate(&SynthOptions::new(40, 11, &corpus)).expect("synth");
    let lake = crate::common::open_lake(&dir.path().join("lake")).await;
    let summary = ingest(&lake, &IngestOptions::new(vec![corpus]))
        .await
        .expect("ingest");
    assert_eq!(summary.quarantined(), 0, "{summary}");

    let defs = RefDefs::embedded().expect("refdefs");
    // Small chunks, so that the run spans several commits.
    let options = [("chunk_patients", "9")];
    let localized = crate::common::run_stage(&lake, "localize", &options).await;
    let images = scalar_f64(&lake, "SELECT count(*) FROM images").await as usize;
    let patients = scalar_f64(&lake, "SELECT count(DISTINCT patient_id) FROM images").await;
    let chunks = (patients / 9.0).ceil();
    assert!(chunks >= 2.0, "{patients} patients");
    assert_eq!(localized.chunks as f64, chunks);
    assert_eq!(localized.units, (patients as usize, "patients"));
    let regions = defs.regions().filter(|r| r.is_localized()).count();
    assert_eq!(
        localized.rows("region_boxes"),
        images * regions,
        "one row per image × localized region"
    );

    // Frontal images: at least 95% of localized regions get boxes of their own recipe or a fallback.
    let frontal_coverage = scalar_f64(
        &lake,
        "SELECT avg(CASE WHEN array_length(r.bboxes) > 0 THEN 1.0 ELSE 0.0 END) \
         FROM region_boxes r JOIN images i USING (image_id) WHERE i.is_frontal",
    )
    .await;
    assert!(
        frontal_coverage >= 0.95,
        "frontal coverage {frontal_coverage:.3}"
    );

    // Lateral images have no ImaGenome boxes: what CXAS gives them, plus fallbacks.
    let lateral_fallbacks = scalar_f64(
        &lake,
        "SELECT count(*) FROM region_boxes r JOIN images i USING (image_id) \
         WHERE NOT i.is_frontal AND r.is_fallback",
    )
    .await;
    let lateral_images =
        scalar_f64(&lake, "SELECT count(*) FROM images WHERE NOT is_frontal").await;
    if lateral_images > 0.0 {
        assert!(
            lateral_fallbacks > 0.0,
            "lateral images fall back to coarser regions"
        );
    }

    // Quality levels are table 11's names, and bilateral regions keep two boxes.
    let bad_levels = scalar_f64(
        &lake,
        "SELECT count(*) FROM region_boxes WHERE localization_quality NOT IN ('NO_LOCALIZATION', \
         'FALLBACK_LOCALIZATION', 'INCOMPLETE_LOCALIZATION', 'BOX_LOCALIZATION', 'BOX_AND_MASK_LOCALIZATION')",
    )
    .await;
    assert_eq!(bad_levels, 0.0);
    let bilateral_two_boxes = scalar_f64(
        &lake,
        "SELECT avg(CASE WHEN array_length(r.bboxes) = 2 THEN 1.0 ELSE 0.0 END) FROM region_boxes r \
         JOIN images i USING (image_id) WHERE i.is_frontal AND r.region = 'lungs'",
    )
    .await;
    assert!(
        bilateral_two_boxes > 0.95,
        "lungs on frontal images: two boxes ({bilateral_two_boxes})"
    );

    // Boxes lie inside their image.
    let outside = scalar_f64(
        &lake,
        "SELECT count(*) FROM (SELECT i.columns AS w, i.rows AS h, unnest(r.bboxes) AS b \
         FROM region_boxes r JOIN images i USING (image_id)) \
         WHERE b[1] < 0 OR b[2] < 0 OR b[3] > w OR b[4] > h OR b[1] >= b[3] OR b[2] >= b[4]",
    )
    .await;
    assert_eq!(outside, 0.0);

    let commit = lake
        .history("region_boxes", Some(1))
        .await
        .expect("history")
        .remove(0);
    let stage = commit.stage.expect("stage commit");
    assert_eq!(stage.stage, "localize");
    let fingerprint = Fingerprint::from_json(&stage.fingerprint).expect("typed fingerprint");
    assert_eq!(fingerprint.definitions["refdefs"], defs.fingerprint());
    assert_eq!(fingerprint.definitions["min_area"], "16");
    assert_eq!(stage.metrics["chunk"], stage.metrics["chunks"]);
    assert_eq!(stage.metrics["chunks"].as_f64(), Some(chunks));

    // A second run replaces the table rather than adding to it.
    let again = crate::common::run_stage(&lake, "localize", &options).await;
    assert_eq!(again.rows, localized.rows);
    assert_eq!(
        scalar_f64(&lake, "SELECT count(*) FROM region_boxes").await as usize,
        localized.rows("region_boxes")
    );
}
