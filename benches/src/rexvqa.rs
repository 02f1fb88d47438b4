//! Benchmark of the ReXVQA flavour (paper 003), offline: bullets (`rexvqa_bullets`), MCQ
//! generation with the structural validators (`rexvqa_generate`), the content validators
//! (`rexvqa_judge`, offline heuristic) and the filters (`rexvqa_filter`: V(Q), PHI,
//! near-duplicates with the lexical embedder, QC sample), each stage timed as a whole with its
//! Parquet writes. The figures are MCQs/s and studies/s over the four stages, and the time that
//! rate needs for all 227,835 MIMIC-CXR studies (target: under 3 minutes on 2 cores).
//!
//! The lake: `REXVQA_BENCH_STUDIES` synthetic studies (default 20,000) through the core pipeline
//! to `graph` (the flavour reads `sentences` and `scene_graphs`). `REXVQA_BENCH_DIR` keeps the
//! lake (`REXVQA_BENCH_REUSE=1` reuses it).

use cxrlake_benches::run_flavour_bench;

/// MIMIC-CXR's studies.
const MIMIC_STUDIES: f64 = 227_835.0;

#[tokio::main]
#[allow(clippy::print_stdout)]
async fn main() {
    let bench = run_flavour_bench(
        "REXVQA",
        "rexvqa",
        &[
            "rexvqa_bullets",
            "rexvqa_generate",
            "rexvqa_judge",
            "rexvqa_filter",
        ],
    )
    .await;
    let (reports, seconds, lake) = (&bench.reports, bench.seconds, &bench.lake);
    let bulleted = reports[0].rows("rexvqa_bullets") as f64;
    let mcqs = reports[1].rows("rexvqa_mcq") as f64;
    let ctx = lake.session().await.expect("session");
    let batches = ctx
        .sql("SELECT count(*) FROM rexvqa_questions WHERE kept")
        .await
        .expect("sql")
        .collect()
        .await
        .expect("count");
    let kept =
        arrow::array::AsArray::as_primitive::<arrow::datatypes::Int64Type>(batches[0].column(0))
            .value(0);
    println!(
        "rexvqa bullets+generate+judge+filter {bulleted} studies, {mcqs} MCQs ({kept} kept): \
         {seconds:.2} s ({:.0} MCQs/s, {:.0} studies/s; all {MIMIC_STUDIES} MIMIC-CXR studies at \
         this rate: {:.0} s)",
        mcqs / seconds,
        bulleted / seconds,
        MIMIC_STUDIES * seconds / bulleted
    );
}
