//! Benchmark of the box and mask UDFs, one SQL query each, over the `cxas_masks` and
//! `imagenome_boxes` tables of an ingested synthetic corpus, plus `localize_regions` (the whole
//! localize plan without the write).
//!
//! Scale: `UDFS_BENCH_STUDIES` studies (default 300 ≈ 500 images, ~150 CXAS masks per frontal
//! image); each query runs `UDFS_BENCH_RUNS` times (default 5) and the median is reported as
//! rows (masks, boxes or images) per second. Tables are cached in memory first, so the figures
//! are the functions' cost, not Parquet decoding.

use std::sync::Arc;

use cxrlake_benches::median_seconds;
use cxrlake_ingest::{IngestOptions, ingest};
use cxrlake_lake::Lake;
use cxrlake_refdefs::RefDefs;
use cxrlake_synth::{SynthOptions, generate};
use cxrlake_udfs::localize::LocalizeRegionsFunc;
use datafusion::arrow::array::AsArray;
use datafusion::arrow::datatypes::Int64Type;
use datafusion::logical_expr::ScalarUDF;
use datafusion::prelude::SessionContext;

/// (name, SQL, table whose rows are counted).
const QUERIES: &[(&str, &str, &str)] = &[
    (
        "mask_area",
        "SELECT sum(mask_area(rle_counts, height, width)) FROM cxas_masks",
        "cxas_masks",
    ),
    (
        "mask_bbox",
        "SELECT count(mask_bbox(rle_counts, height, width)) FROM cxas_masks",
        "cxas_masks",
    ),
    (
        "mask_union (with the next class of the image)",
        "SELECT count(mask_union(rle_counts, next, height, width)) FROM (
             SELECT rle_counts, height, width,
                    lead(rle_counts) OVER (PARTITION BY image_id ORDER BY class_id) AS next
             FROM cxas_masks)",
        "cxas_masks",
    ),
    (
        "mask_intersection (with the next class of the image)",
        "SELECT count(mask_intersection(rle_counts, next, height, width)) FROM (
             SELECT rle_counts, height, width,
                    lead(rle_counts) OVER (PARTITION BY image_id ORDER BY class_id) AS next
             FROM cxas_masks)",
        "cxas_masks",
    ),
    (
        "mask_union_agg (per image)",
        "SELECT count(u) FROM (
             SELECT mask_union_agg(rle_counts, height, width) AS u FROM cxas_masks GROUP BY image_id)",
        "cxas_masks",
    ),
    (
        "box_area",
        "SELECT sum(box_area(bbox)) FROM imagenome_boxes",
        "imagenome_boxes",
    ),
    (
        "box_iou / box_iop / box_iot (against the image's first box)",
        "SELECT sum(box_iou(bbox, first)), sum(box_iop(bbox, first)), sum(box_iot(bbox, first)) FROM (
             SELECT bbox, first_value(bbox) OVER (PARTITION BY image_id ORDER BY bbox_name) AS first
             FROM imagenome_boxes)",
        "imagenome_boxes",
    ),
    (
        "box_union (per image)",
        "SELECT count(box_union(boxes)) FROM (
             SELECT array_agg(bbox) AS boxes FROM imagenome_boxes GROUP BY image_id)",
        "imagenome_boxes",
    ),
];

#[tokio::main]
#[allow(clippy::print_stdout)]
async fn main() {
    let studies: usize = env_or("UDFS_BENCH_STUDIES", 300);
    let runs: usize = env_or("UDFS_BENCH_RUNS", 5);
    let temp = tempfile::tempdir().expect("tempdir");
    let corpus = temp.path().join("corpus");
    generate(&SynthOptions::new(studies, 0, &corpus)).expect("synth");
    let lake = Lake::open_url(temp.path().join("lake").to_str().expect("utf8"))
        .expect("open")
        .with_session_factory(cxrlake_udfs::session_context_on);
    lake.init().await.expect("init");
    let summary = ingest(&lake, &IngestOptions::new(vec![corpus]))
        .await
        .expect("ingest");
    assert_eq!(summary.quarantined(), 0, "{summary}");

    let ctx = cached_session(&lake).await;
    let defs = RefDefs::embedded().expect("refdefs");
    ctx.register_udf(ScalarUDF::from(LocalizeRegionsFunc::new(&defs, 16.0)));
    println!("{studies} studies, median of {runs} runs");
    for (name, sql, table) in QUERIES {
        let rows = count(&ctx, &format!("SELECT count(*) FROM {table}")).await;
        let seconds = median_seconds(&ctx, sql, runs).await;
        println!(
            "{name:<60} {rows:>8} rows  {:>8.1} ms  {:>10.0} rows/s",
            seconds * 1e3,
            rows as f64 / seconds
        );
    }
    let images = count(&ctx, "SELECT count(*) FROM images").await;
    let plan = format!(
        "SELECT count(*) FROM ({})",
        cxrlake_pipeline::localize::DEF
            .sql
            .trim_end()
            .trim_end_matches(';')
    );
    let seconds = median_seconds(&ctx, &plan, runs).await;
    println!(
        "{:<60} {images:>8} imgs  {:>8.1} ms  {:>10.0} images/s",
        "localize_regions (localize plan, no write)",
        seconds * 1e3,
        images as f64 / seconds
    );
}

fn env_or(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// A session over the lake's tables, each copied into memory.
async fn cached_session(lake: &Lake) -> SessionContext {
    let lake_ctx = lake.session().await.expect("session");
    let ctx = lake.session().await.expect("session");
    for table in ["images", "cxas_masks", "imagenome_boxes"] {
        let frame = lake_ctx.table(table).await.expect("table");
        let schema = Arc::new(frame.schema().as_arrow().clone());
        let batches = frame.collect().await.expect("collect");
        let mem = datafusion::datasource::MemTable::try_new(schema, vec![batches]).expect("mem");
        ctx.deregister_table(table).expect("deregister");
        ctx.register_table(table, Arc::new(mem)).expect("register");
    }
    ctx
}

async fn count(ctx: &SessionContext, sql: &str) -> usize {
    let batches = ctx
        .sql(sql)
        .await
        .expect("plan")
        .collect()
        .await
        .expect("run");
    batches[0].column(0).as_primitive::<Int64Type>().value(0) as usize
}
