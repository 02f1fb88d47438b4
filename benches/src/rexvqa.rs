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

use std::time::Instant;

use cxrlake_benches::{bench_dir, build_graph_lake, env_number, init_logging, pipeline};
use cxrlake_lake::Lake;

/// MIMIC-CXR's studies.
const MIMIC_STUDIES: f64 = 227_835.0;

#[tokio::main]
#[allow(clippy::print_stdout)]
async fn main() {
    init_logging();
    let studies = env_number("REXVQA_BENCH_STUDIES", 20_000);
    let (_temp, root) = bench_dir("REXVQA_BENCH_DIR");
    let lake_dir = root.join("lake");
    let lake = Lake::open_url(lake_dir.to_str().expect("utf8")).expect("open");
    if std::env::var_os("REXVQA_BENCH_REUSE").is_none() || !lake_dir.exists() {
        let started = Instant::now();
        build_graph_lake(&lake, &root.join("corpus"), studies).await;
        println!("lake built in {:.1} s", started.elapsed().as_secs_f64());
    }
    let flavour = pipeline(&lake, &[("flavours", "rexvqa")]).await;
    let started = Instant::now();
    let mut reports = Vec::new();
    for stage in [
        "rexvqa_bullets",
        "rexvqa_generate",
        "rexvqa_judge",
        "rexvqa_filter",
    ] {
        let report = flavour
            .run_stage(stage, cxrlake_pipeline::RunMode::Write)
            .await
            .unwrap_or_else(|e| panic!("{stage}: {e}"));
        println!("{report}");
        reports.push(report);
    }
    let seconds = started.elapsed().as_secs_f64();
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
