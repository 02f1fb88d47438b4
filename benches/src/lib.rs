//! Helpers shared by the benchmark binaries in this folder, and their allocator.

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
