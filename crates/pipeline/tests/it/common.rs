//! What the stage tests share: SQL helpers over a lake, and a lake holding a synthetic corpus.

use std::path::Path;

use cxrlake_ingest::{IngestOptions, ingest};
use cxrlake_lake::Lake;
use cxrlake_pipeline::{Pipeline, RunMode, StageReport};
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

/// Every row `sql` returns as a JSON line, sorted (order-independent comparisons).
pub async fn json_lines(lake: &Lake, sql: &str) -> Vec<String> {
    let mut lines = Vec::new();
    for batch in query(lake, sql).await {
        let mut writer = datafusion::arrow::json::LineDelimitedWriter::new(Vec::new());
        writer.write(&batch).expect("json");
        writer.finish().expect("json");
        let text = String::from_utf8(writer.into_inner()).expect("utf8");
        lines.extend(text.lines().map(str::to_string));
    }
    lines.sort();
    lines
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

/// A pipeline over `lake` with these settings (`(key, value)`, as flags) over the defaults.
pub async fn pipeline(lake: &Lake, settings: &[(&str, &str)]) -> Pipeline {
    let mut builder = Pipeline::builder(lake.clone(), cxrlake_flavours::ALL);
    for (key, value) in settings {
        builder = builder.set(key, value).expect("setting");
    }
    builder.open().await.expect("pipeline")
}

/// Runs stage `name` over every study with these settings.
pub async fn run_stage(lake: &Lake, name: &str, settings: &[(&str, &str)]) -> StageReport {
    pipeline(lake, settings)
        .await
        .run_stage(name, RunMode::Write)
        .await
        .unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// A lake in `dir/lake` with `studies` synthetic studies (corpus with its `ground_truth.jsonl`
/// in `dir/corpus`) ingested and extracted by the rules backend.
pub async fn extracted_lake(dir: &Path, studies: usize, seed: u64) -> (Lake, RefDefs) {
    let corpus = dir.join("corpus");
    generate(&SynthOptions::new(studies, seed, &corpus)).expect("synth");
    let lake = open_lake(&dir.join("lake")).await;
    ingest(&lake, &IngestOptions::new(vec![corpus]))
        .await
        .expect("ingest");
    let defs = RefDefs::embedded().expect("refdefs");
    run_stage(&lake, "extract", &[]).await;
    (lake, defs)
}

/// A lake with the synthetic corpus extracted (rules), the reference tables loaded and
/// localized.
pub async fn localized_lake(dir: &Path, studies: usize, seed: u64) -> (Lake, RefDefs) {
    let (lake, defs) = extracted_lake(dir, studies, seed).await;
    cxrlake_pipeline::refdefs::load_reference_tables(&lake, &defs)
        .await
        .expect("ref tables");
    run_stage(&lake, "localize", &[]).await;
    (lake, defs)
}

/// A localized lake taken through map → graph with the embedded defaults (what the flavours
/// read).
pub async fn graph_lake(dir: &Path, studies: usize, seed: u64) -> (Lake, RefDefs) {
    let (lake, defs) = localized_lake(dir, studies, seed).await;
    for stage in ["map", "graph"] {
        run_stage(&lake, stage, &[]).await;
    }
    (lake, defs)
}

/// A localized lake taken through map → graph → balance → qa with the embedded defaults.
pub async fn qa_lake(dir: &Path, studies: usize, seed: u64) -> (Lake, RefDefs) {
    let (lake, defs) = graph_lake(dir, studies, seed).await;
    for stage in ["balance", "qa"] {
        run_stage(&lake, stage, &[]).await;
    }
    (lake, defs)
}

/// LLM answers the stages of `reports` could not use (sent again by the next run).
pub fn unusable_answers(reports: &[StageReport]) -> usize {
    reports
        .iter()
        .map(|report| report.metric("llm_rejected") as usize)
        .sum()
}

/// An initialised lake at `dir`.
pub async fn open_lake(dir: &Path) -> Lake {
    let lake = Lake::open_url(dir.to_str().expect("utf8"))
        .expect("open")
        .with_session_factory(cxrlake_udfs::session_context_on);
    lake.init().await.expect("init");
    lake
}

/// Runs every stage with the default settings (the reference tables are loaded by the run).
pub async fn run_pipeline(lake: &Lake) -> cxrlake_pipeline::Plan {
    Pipeline::open(lake.clone(), cxrlake_flavours::ALL)
        .await
        .expect("pipeline")
        .run(false, &mut |_| {})
        .await
        .expect("pipeline run")
}
