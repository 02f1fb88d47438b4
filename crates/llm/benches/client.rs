//! Client overhead benchmark: a loopback server with fixed latency, many requests, bounded
//! concurrency. Reports achieved in-flight concurrency, throughput and the client's overhead per
//! call, `(wall − ideal) / N` with `ideal = ceil(N / concurrency) × latency`, and the client-side
//! latency added to each call: mean latency seen by the client − mean time the server held the
//! request (which excludes the server's timer rounding).
//!
//! Run with `cargo bench -p cxrlake-llm --bench client`.
#![allow(
    clippy::print_stdout,
    reason = "the report on stdout is the benchmark's output"
)]

#[allow(dead_code, reason = "the bench uses part of the test server's API")]
#[path = "../tests/it/server.rs"]
mod server;

use std::time::{Duration, Instant};

use cxrlake_llm::{LlmClient, LlmConfig, LlmRequest};

use server::TestServer;

const SERVER_LATENCY: Duration = Duration::from_millis(20);

/// (requests, concurrency) per scenario.
const SCENARIOS: [(usize, usize); 3] = [(2000, 64), (2000, 16), (200, 1)];

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    runtime.block_on(async {
        println!(
            "cxrlake-llm client bench: loopback server, fixed latency {} ms, {} worker threads",
            SERVER_LATENCY.as_millis(),
            std::thread::available_parallelism().map_or(0, usize::from)
        );
        for (requests, concurrency) in SCENARIOS {
            run(requests, concurrency).await;
        }
    });
}

async fn run(requests: usize, concurrency: usize) {
    let server = TestServer::start(SERVER_LATENCY).await;
    let mut config = LlmConfig::new(server.endpoint(), "bench-model");
    config.concurrency = concurrency;
    let client = LlmClient::new(config).expect("client");
    let batch = |round: &str| -> Vec<LlmRequest> {
        (0..requests)
            .map(|i| LlmRequest::completion(format!("{round} question {i}")))
            .collect()
    };

    // Cold: connections are opened during the run. Warm: the pool is already full.
    for round in ["cold", "warm"] {
        let before = client.stats();
        let held_before = server.held();
        let started = Instant::now();
        let results = client.complete_all(&batch(round)).await;
        let wall = started.elapsed();
        let after = client.stats();
        assert!(
            results.iter().all(Result::is_ok),
            "benchmark requests failed"
        );
        let waves = requests.div_ceil(concurrency);
        let ideal = SERVER_LATENCY * u32::try_from(waves).expect("small");
        let overhead = wall.saturating_sub(ideal);
        let latency_sum = after.total_latency - before.total_latency;
        let held = server.held() - held_before;
        let n = u32::try_from(requests).expect("small");
        println!(
            "N={requests:5} concurrency={concurrency:3} {round}: wall {:8.1} ms, ideal {:6.0} ms, \
             throughput {:7.0} req/s, in flight avg {:5.1} (server max {:3}), \
             overhead/call (wall−ideal)/N {:6.3} ms, mean latency {:6.2} ms \
             (server held {:6.2} ms, client adds {:5.3} ms)",
            ms(wall),
            ms(ideal),
            f64::from(n) / wall.as_secs_f64(),
            latency_sum.as_secs_f64() / wall.as_secs_f64(),
            server.max_in_flight(),
            ms(overhead) / f64::from(n),
            ms(latency_sum) / f64::from(n),
            ms(held) / f64::from(n),
            ms(latency_sum.saturating_sub(held)) / f64::from(n),
        );
    }

    let started = Instant::now();
    let replay = client.complete_all(&batch("warm")).await;
    let wall = started.elapsed();
    assert!(
        replay
            .iter()
            .all(|r| r.as_ref().is_ok_and(|r| r.from_cache))
    );
    println!(
        "N={requests:5} concurrency={concurrency:3} replay from in-memory cache: wall {:8.1} ms, \
         {:6.3} ms/request, HTTP requests {}",
        ms(wall),
        ms(wall) / f64::from(u32::try_from(requests).expect("small")),
        server.requests() - 2 * requests,
    );
}

fn ms(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}
