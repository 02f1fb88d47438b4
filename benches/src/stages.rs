//! Benchmark of the pipeline stages on the synthetic corpus: synth → ingest → localize →
//! extract (rules backend) → map (lexical embedder) → graph, each timed as a whole (wall clock,
//! one run per stage; repeat the command for medians with `farm-bench`). Map and graph run
//! twice; the second, warm run is the "map + graph" figure. Then balance → qa, timed together
//! as the "QA pairs/s" figure (the Parquet write of `qa` included), then judge → grade (heuristic
//! judge; `STAGES_BENCH_STAGES=judge` on a lake with `qa`). `gemex` (not in the default list)
//! runs the GEMeX flavour's two stages (offline generator) after map and graph: frontal images/s
//! and questions/s.
//!
//! Scale: `STAGES_BENCH_STUDIES` studies (default 2,000 ≈ 3,300 images, ~150 CXAS masks per
//! frontal image); the corpus and lake go to `STAGES_BENCH_DIR` (default: a temporary folder).
//! With `STAGES_BENCH_REUSE=1` and a lake already in `STAGES_BENCH_DIR`, synth → extract are
//! skipped. `STAGES_BENCH_STAGES` (default `map,graph,qa,judge`) picks what runs after extract;
//! `RUST_LOG=cxrlake_pipeline=info` logs every statement's time.

use std::time::Instant;

use cxrlake_benches::{bench_dir, env_number, init_logging, pipeline, run_stage};
use cxrlake_ingest::{IngestOptions, ingest};
use cxrlake_lake::Lake;
use cxrlake_synth::{SynthOptions, generate};

#[tokio::main]
#[allow(clippy::print_stdout)]
async fn main() {
    init_logging();
    let stages =
        std::env::var("STAGES_BENCH_STAGES").unwrap_or_else(|_| "map,graph,qa,judge".into());
    let runs = |stage: &str| stages.split(',').any(|s| s.trim() == stage);
    let studies = env_number("STAGES_BENCH_STUDIES", 2_000);
    let (_temp, root) = bench_dir("STAGES_BENCH_DIR");
    let corpus = root.join("corpus");
    let lake_dir = root.join("lake");
    let lake = Lake::open_url(lake_dir.to_str().expect("utf8")).expect("open");
    if std::env::var_os("STAGES_BENCH_REUSE").is_none() || !lake_dir.exists() {
        build_extracted_lake(&lake, &corpus, studies).await;
    }
    for round in ["cold", "warm"] {
        let started = Instant::now();
        if runs("map") {
            println!("{}", run_stage(&lake, "map").await);
        }
        if runs("graph") {
            println!("{}", run_stage(&lake, "graph").await);
        }
        let seconds = started.elapsed().as_secs_f64();
        if runs("map") && runs("graph") {
            println!(
                "map+graph ({round}) {studies} studies: {seconds:.2} s ({:.0} studies/s)",
                studies as f64 / seconds
            );
        }
    }
    if runs("qa") {
        let started = Instant::now();
        println!("{}", run_stage(&lake, "balance").await);
        let generated = run_stage(&lake, "qa").await;
        println!("{generated}");
        let seconds = started.elapsed().as_secs_f64();
        let questions = generated.rows("qa");
        println!(
            "balance+qa {questions} QA pairs: {seconds:.2} s ({:.0} QA pairs/s)",
            questions as f64 / seconds
        );
    }
    if runs("judge") {
        let started = Instant::now();
        println!("{}", run_stage(&lake, "judge").await);
        let judge_s = started.elapsed().as_secs_f64();
        let graded = run_stage(&lake, "grade").await;
        println!("{graded}");
        let seconds = started.elapsed().as_secs_f64();
        let questions = graded.rows("qa");
        println!(
            "judge+grade {questions} QA pairs: judge {judge_s:.2} s, grade {:.2} s ({:.0} QA pairs/s)",
            seconds - judge_s,
            questions as f64 / seconds
        );
    }
    if runs("gemex") {
        let flavour = pipeline(&lake, &[("flavours", "gemex")]).await;
        let started = Instant::now();
        let grounded = flavour
            .run_stage("gemex_reground", cxrlake_pipeline::RunMode::Write)
            .await
            .expect("gemex_reground");
        println!("{grounded}");
        let reground_s = started.elapsed().as_secs_f64();
        let generated = flavour
            .run_stage("gemex_generate", cxrlake_pipeline::RunMode::Write)
            .await
            .expect("gemex_generate");
        println!("{generated}");
        let seconds = started.elapsed().as_secs_f64();
        let images = generated.metric("inputs");
        println!(
            "gemex {images} frontal images, {} questions: reground {reground_s:.2} s, generate \
             {:.2} s ({:.0} images/s, {:.0} questions/s)",
            generated.rows("gemex_qa"),
            seconds - reground_s,
            images as f64 / seconds,
            generated.rows("gemex_qa") as f64 / seconds
        );
    }
}

/// synth → ingest → localize → extract (rules backend), each timed.
#[allow(clippy::print_stdout)]
async fn build_extracted_lake(lake: &Lake, corpus: &std::path::Path, studies: usize) {
    let started = Instant::now();
    let synth = generate(&SynthOptions::new(studies, 0, corpus)).expect("synth");
    let synth_s = started.elapsed().as_secs_f64();
    println!(
        "synth    {studies} studies, {} images, {} masks: {synth_s:.2} s ({:.0} studies/s)",
        synth.images,
        synth.masks,
        studies as f64 / synth_s
    );

    lake.init().await.expect("init");
    let started = Instant::now();
    let summary = ingest(lake, &IngestOptions::new(vec![corpus.to_path_buf()]))
        .await
        .expect("ingest");
    let ingest_s = started.elapsed().as_secs_f64();
    assert_eq!(summary.quarantined(), 0, "{summary}");
    println!(
        "ingest   {studies} studies: {ingest_s:.2} s ({:.0} studies/s)",
        studies as f64 / ingest_s
    );

    let defs = cxrlake_refdefs::RefDefs::embedded().expect("refdefs");
    cxrlake_pipeline::refdefs::load_reference_tables(lake, &defs)
        .await
        .expect("ref tables");
    println!("{}", run_stage(lake, "localize").await);
    println!("{}", run_stage(lake, "extract").await);
}
