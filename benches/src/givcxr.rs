//! Benchmark of the GIV-CXR flavour (paper 002), offline: region contexts (`givcxr_context`),
//! questions (`givcxr_questions`, P1 offline), answers with the derived fields
//! (`givcxr_answers`, P2 offline), the hallucination judge (`givcxr_judge`, offline heuristic)
//! and the filter (`givcxr_filter`), each stage timed as a whole with its Parquet writes. The
//! figures are QA pairs/s over the five stages and the time that rate needs for the paper's
//! scale of ~400,000 generated pairs (434,417; target: under 1 minute on 2 cores).
//!
//! The lake: `GIVCXR_BENCH_STUDIES` synthetic studies (default 20,000) through the core pipeline
//! to `graph` (the flavour reads `scene_graphs`, `images`, `region_boxes` and
//! `imagenome_boxes`). `GIVCXR_BENCH_DIR` keeps the lake (`GIVCXR_BENCH_REUSE=1` reuses it).

use cxrlake_benches::run_flavour_bench;

/// The paper's generated QA pairs (table 8), before the hallucination filter.
const PAPER_PAIRS: f64 = 434_417.0;

#[tokio::main]
#[allow(clippy::print_stdout)]
async fn main() {
    let bench = run_flavour_bench(
        "GIVCXR",
        "givcxr",
        &[
            "givcxr_context",
            "givcxr_questions",
            "givcxr_answers",
            "givcxr_judge",
            "givcxr_filter",
        ],
    )
    .await;
    let (reports, seconds, studies) = (&bench.reports, bench.seconds, bench.studies);
    let contexts = reports[0].rows("givcxr_regions") as f64;
    let pairs = reports[2].rows("givcxr_qa") as f64;
    let kept = reports[4].rows("givcxr_dataset");
    println!(
        "givcxr context+questions+answers+judge+filter {studies} studies, {contexts} region \
         contexts, {pairs} QA pairs ({kept} kept): {seconds:.2} s ({:.0} QA pairs/s; the \
         paper's {PAPER_PAIRS} generated pairs at this rate: {:.0} s)",
        pairs / seconds,
        PAPER_PAIRS * seconds / pairs
    );
}
