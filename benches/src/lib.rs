//! Helpers shared by the benchmark binaries in this folder, and their allocator.

use std::path::PathBuf;
use std::time::Instant;

use datafusion::prelude::SessionContext;

/// The allocator of the `cxrlake` binary (jemalloc), so that bench figures are the CLI's. Every
/// bench binary uses this crate, so it links this allocator.
#[cfg(feature = "jemalloc")]
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

/// The number in the environment variable `name`, else `default`.
pub fn env_number(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Logs to stderr, filtered by `RUST_LOG` (e.g. `RUST_LOG=cxrlake_pipeline=info`).
pub fn init_logging() {
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_writer(std::io::stderr)
        .init();
}

/// The bench's folder: the environment variable `name`, else a temporary folder, removed when the
/// returned guard is dropped.
pub fn bench_dir(name: &str) -> (tempfile::TempDir, PathBuf) {
    let temp = tempfile::tempdir().expect("tempdir");
    let root = std::env::var(name)
        .map(PathBuf::from)
        .unwrap_or_else(|_| temp.path().to_path_buf());
    (temp, root)
}

/// Median wall time in seconds of running `sql` to completion `runs` times (at least once).
pub async fn median_seconds(ctx: &SessionContext, sql: &str, runs: usize) -> f64 {
    let mut times = Vec::with_capacity(runs);
    for _ in 0..runs.max(1) {
        let started = Instant::now();
        ctx.sql(sql)
            .await
            .expect("plan")
            .collect()
            .await
            .expect("run");
        times.push(started.elapsed().as_secs_f64());
    }
    times.sort_by(f64::total_cmp);
    times[times.len() / 2]
}

/// A pipeline over `lake` with these settings (`(key, value)`, as flags).
pub async fn pipeline(
    lake: &cxrlake_lake::Lake,
    settings: &[(&str, &str)],
) -> cxrlake_pipeline::Pipeline {
    let mut builder = cxrlake_pipeline::Pipeline::builder(lake.clone(), cxrlake_flavours::ALL);
    for (key, value) in settings {
        builder = builder.set(key, value).expect("setting");
    }
    builder.open().await.expect("pipeline")
}

/// Runs stage `name` over every study with the default settings.
pub async fn run_stage(lake: &cxrlake_lake::Lake, name: &str) -> cxrlake_pipeline::StageReport {
    pipeline(lake, &[])
        .await
        .run_stage(name, cxrlake_pipeline::RunMode::Write)
        .await
        .unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// A lake with `scene_graphs` for `studies` synthetic studies (seed 0): synth, ingest, every
/// stage to `graph`.
pub async fn build_graph_lake(lake: &cxrlake_lake::Lake, corpus: &std::path::Path, studies: usize) {
    cxrlake_synth::generate(&cxrlake_synth::SynthOptions::new(studies, 0, corpus)).expect("synth");
    lake.init().await.expect("init");
    cxrlake_ingest::ingest(
        lake,
        &cxrlake_ingest::IngestOptions::new(vec![corpus.to_path_buf()]),
    )
    .await
    .expect("ingest");
    let defs = cxrlake_refdefs::RefDefs::embedded().expect("refdefs");
    cxrlake_pipeline::refdefs::load_reference_tables(lake, &defs)
        .await
        .expect("ref tables");
    for stage in ["extract", "localize", "map", "graph"] {
        run_stage(lake, stage).await;
    }
}

/// A flavour bench's run: its lake of `<PREFIX>_BENCH_STUDIES` synthetic studies (default
/// 20,000) built to `graph` in `<PREFIX>_BENCH_DIR` (reused with `<PREFIX>_BENCH_REUSE=1`), then
/// `stages` of `flavour` each run over every study and printed.
#[allow(clippy::print_stdout)]
pub async fn run_flavour_bench(prefix: &str, flavour: &str, stages: &[&str]) -> FlavourBench {
    init_logging();
    let studies = env_number(&format!("{prefix}_BENCH_STUDIES"), 20_000);
    let (temp, root) = bench_dir(&format!("{prefix}_BENCH_DIR"));
    let lake_dir = root.join("lake");
    let lake = cxrlake_lake::Lake::open_url(lake_dir.to_str().expect("utf8")).expect("open");
    if std::env::var_os(format!("{prefix}_BENCH_REUSE")).is_none() || !lake_dir.exists() {
        let started = Instant::now();
        build_graph_lake(&lake, &root.join("corpus"), studies).await;
        println!("lake built in {:.1} s", started.elapsed().as_secs_f64());
    }
    let flavoured = pipeline(&lake, &[("flavours", flavour)]).await;
    let started = Instant::now();
    let mut reports = Vec::new();
    for stage in stages {
        let report = flavoured
            .run_stage(stage, cxrlake_pipeline::RunMode::Write)
            .await
            .unwrap_or_else(|e| panic!("{stage}: {e}"));
        println!("{report}");
        reports.push(report);
    }
    FlavourBench {
        seconds: started.elapsed().as_secs_f64(),
        studies,
        lake,
        reports,
        _temp: temp,
    }
}

/// What [`run_flavour_bench`] measured (the temporary lake lives as long as this).
#[derive(Debug)]
pub struct FlavourBench {
    /// Synthetic studies in the lake.
    pub studies: usize,
    /// The lake.
    pub lake: cxrlake_lake::Lake,
    /// The stages' reports, in run order.
    pub reports: Vec<cxrlake_pipeline::StageReport>,
    /// Seconds the stages took together.
    pub seconds: f64,
    _temp: tempfile::TempDir,
}

/// A lake with `qa` for `studies` synthetic studies (seed 0): [`build_graph_lake`], then
/// `balance` and `qa`.
pub async fn build_qa_lake(lake: &cxrlake_lake::Lake, corpus: &std::path::Path, studies: usize) {
    build_graph_lake(lake, corpus, studies).await;
    for stage in ["balance", "qa"] {
        run_stage(lake, stage).await;
    }
}

/// `column` with `suffix` appended to every value.
pub fn suffixed(column: &arrow::array::ArrayRef, suffix: &str) -> arrow::array::ArrayRef {
    use arrow::array::{AsArray, StringArray};
    let text = arrow::compute::cast(column, &arrow::datatypes::DataType::Utf8).expect("utf8");
    let values: StringArray = text
        .as_string::<i32>()
        .iter()
        .map(|v| v.map(|v| format!("{v}{suffix}")))
        .collect();
    std::sync::Arc::new(values)
}

/// Replaces `table` with `copies` copies of the rows `sql` reads (each batch passed through
/// `map` first), the copies' `patient_id` and `study_id` suffixed `001`, `002`, … (the first
/// copy keeps its ids), written in commits of about 400 batches.
pub async fn replicate_table(
    lake: &cxrlake_lake::Lake,
    table: &str,
    sql: &str,
    copies: usize,
    map: impl Fn(&arrow::array::RecordBatch) -> arrow::array::RecordBatch,
) {
    use arrow::array::RecordBatch;
    let ctx = lake.session().await.expect("session");
    let read = ctx
        .sql(sql)
        .await
        .expect("plan")
        .collect()
        .await
        .expect("read");
    let mut batches: Vec<RecordBatch> =
        read.iter().filter(|b| b.num_rows() > 0).map(&map).collect();
    let originals = batches.clone();
    let mut first = true;
    for copy in 1..copies.max(1) {
        let suffix = format!("{copy:03}");
        for batch in &originals {
            let schema = batch.schema();
            let columns = batch
                .columns()
                .iter()
                .zip(schema.fields())
                .map(|(column, field)| match field.name().as_str() {
                    "patient_id" | "study_id" => suffixed(column, &suffix),
                    _ => std::sync::Arc::clone(column),
                })
                .collect();
            batches.push(RecordBatch::try_new(schema, columns).expect("copy"));
        }
        if batches.len() >= 400 {
            write_batches(lake, table, std::mem::take(&mut batches), first).await;
            first = false;
        }
    }
    if !batches.is_empty() {
        write_batches(lake, table, batches, first).await;
    }
}

/// Writes `batches` to `table`, replacing it when `first`.
async fn write_batches(
    lake: &cxrlake_lake::Lake,
    table: &str,
    batches: Vec<arrow::array::RecordBatch>,
    first: bool,
) {
    let write = lake.write(table);
    let write = if first {
        write.overwrite()
    } else {
        write.append()
    };
    write.execute(batches).await.expect("write copies");
}
