//! Helpers shared by the benchmark binaries in this folder, and their allocator.

use std::path::PathBuf;
use std::time::Instant;

use datafusion::prelude::SessionContext;

/// The allocator of the `cxrlake` binary (mimalloc), so that bench figures are the CLI's. Every
/// bench binary uses this crate, so it links this allocator.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

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
    let mut builder = cxrlake_pipeline::Pipeline::builder(lake.clone());
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
