//! What the stage tests share: SQL helpers over a lake, and a lake holding a synthetic corpus.

use std::path::Path;

use cxrlake_ingest::{IngestOptions, ingest};
use cxrlake_lake::Lake;
use cxrlake_pipeline::extract::ExtractOptions;
use cxrlake_refdefs::RefDefs;
use cxrlake_synth::{SynthOptions, generate};
use datafusion::arrow::array::{AsArray, RecordBatch};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Int64Type};

/// The batches of `sql` over the lake (panics naming the query).
pub async fn query(lake: &Lake, sql: &str) -> Vec<RecordBatch> {
    let ctx = lake.session().await.expect("session");
    ctx.sql(sql)
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"))
        .collect()
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"))
}

/// The single integer `sql` returns.
pub async fn number(lake: &Lake, sql: &str) -> i64 {
    let batches = query(lake, sql).await;
    let column = cast(batches[0].column(0), &DataType::Int64).expect("int64");
    column.as_primitive::<Int64Type>().value(0)
}

/// The first column of `sql` as strings (NULL as "NULL").
pub async fn strings(lake: &Lake, sql: &str) -> Vec<String> {
    let mut out = Vec::new();
    for batch in query(lake, sql).await {
        let column = cast(batch.column(0), &DataType::Utf8).expect("utf8");
        out.extend(
            column
                .as_string::<i32>()
                .iter()
                .map(|v| v.unwrap_or("NULL").to_string()),
        );
    }
    out
}

/// A lake in `dir/lake` with `studies` synthetic studies (corpus with its `ground_truth.jsonl`
/// in `dir/corpus`) ingested and extracted by the rules backend.
pub async fn extracted_lake(dir: &Path, studies: usize, seed: u64) -> (Lake, RefDefs) {
    let corpus = dir.join("corpus");
    generate(&SynthOptions::new(studies, seed, &corpus)).expect("synth");
    let lake = Lake::open_url(dir.join("lake").to_str().expect("utf8"))
        .expect("open")
        .with_session_factory(cxrlake_udfs::session_context_on);
    lake.init().await.expect("init");
    ingest(&lake, &IngestOptions::new(vec![corpus]))
        .await
        .expect("ingest");
    let defs = RefDefs::embedded().expect("refdefs");
    cxrlake_pipeline::extract::run(&lake, &defs, &ExtractOptions::default())
        .await
        .expect("extract");
    (lake, defs)
}

/// A lake with the synthetic corpus extracted (rules), the reference tables loaded and
/// localized.
pub async fn localized_lake(dir: &Path, studies: usize, seed: u64) -> (Lake, RefDefs) {
    let (lake, defs) = extracted_lake(dir, studies, seed).await;
    for (table, batch) in defs.to_record_batches().expect("ref tables") {
        lake.write(table)
            .overwrite()
            .execute(vec![batch])
            .await
            .expect("write ref table");
    }
    cxrlake_pipeline::localize::run(
        &lake,
        &defs,
        &cxrlake_pipeline::localize::LocalizeOptions::default(),
    )
    .await
    .expect("localize");
    (lake, defs)
}

/// A localized lake taken through map → graph → balance → qa with the embedded defaults.
pub async fn qa_lake(dir: &Path, studies: usize, seed: u64) -> (Lake, RefDefs) {
    let (lake, defs) = localized_lake(dir, studies, seed).await;
    cxrlake_pipeline::map::run(&lake, &defs, &Default::default())
        .await
        .expect("map");
    cxrlake_pipeline::graph::run(&lake, &defs, &Default::default())
        .await
        .expect("graph");
    let templates = cxrlake_templates::Templates::embedded(&defs).expect("templates");
    cxrlake_pipeline::balance::run(&lake, &templates)
        .await
        .expect("balance");
    cxrlake_pipeline::qa::run(&lake, &defs, &Default::default())
        .await
        .expect("qa");
    (lake, defs)
}

/// An initialised lake at `dir`.
pub async fn open_lake(dir: &Path) -> Lake {
    let lake = Lake::open_url(dir.to_str().expect("utf8"))
        .expect("open")
        .with_session_factory(cxrlake_udfs::session_context_on);
    lake.init().await.expect("init");
    lake
}

/// Loads the reference tables of `defs` and runs every stage with the default options.
pub async fn run_pipeline(lake: &Lake, defs: &RefDefs) {
    for (table, batch) in defs.to_record_batches().expect("ref tables") {
        lake.write(table)
            .overwrite()
            .execute(vec![batch])
            .await
            .expect("write ref table");
    }
    cxrlake_pipeline::incremental::run(
        lake,
        defs,
        &cxrlake_pipeline::incremental::PipelineOptions::default(),
    )
    .await
    .expect("pipeline run");
}
