//! Benchmark of the MIMIC-CXR-VQA flavour (paper 001), offline: question sampling
//! (`mimic_cxr_vqa_questions`) + answers (`mimic_cxr_vqa_answer`, the offline answerer and the
//! linter, the Parquet write included), then the judge on its QC sample of 1,000 reports
//! (`mimic_cxr_vqa_judge`, offline heuristic), each stage timed as a whole. The figure is QA
//! pairs/s of sampling + answering and the time that rate needs for the paper's 3,247,512 pairs
//! (target: under 2 minutes on 2 cores).
//!
//! The lake: `VQA_BENCH_STUDIES` synthetic studies (default 20,000) through the core pipeline
//! (stage inputs are read at their producer's commit, so replicated copies of `sentences` or
//! `scene_graphs` would not be seen: the corpus is generated at full size). `VQA_BENCH_DIR` keeps
//! the lake (`VQA_BENCH_REUSE=1` reuses it).

use std::time::Instant;

use cxrlake_benches::{bench_dir, build_qa_lake, env_number, init_logging, pipeline};
use cxrlake_lake::Lake;

/// The paper's QA pairs (table 1).
const PAPER_PAIRS: f64 = 3_247_512.0;

#[tokio::main]
#[allow(clippy::print_stdout)]
async fn main() {
    init_logging();
    let studies = env_number("VQA_BENCH_STUDIES", 20_000);
    let (_temp, root) = bench_dir("VQA_BENCH_DIR");
    let lake_dir = root.join("lake");
    let lake = Lake::open_url(lake_dir.to_str().expect("utf8")).expect("open");
    if std::env::var_os("VQA_BENCH_REUSE").is_none() || !lake_dir.exists() {
        let started = Instant::now();
        build_qa_lake(&lake, &root.join("corpus"), studies).await;
        println!("lake built in {:.1} s", started.elapsed().as_secs_f64());
    }
    let flavour = pipeline(&lake, &[("flavours", "mimic_cxr_vqa")]).await;
    let started = Instant::now();
    let questions = flavour
        .run_stage("mimic_cxr_vqa_questions", cxrlake_pipeline::RunMode::Write)
        .await
        .expect("mimic_cxr_vqa_questions");
    println!("{questions}");
    let answers = flavour
        .run_stage("mimic_cxr_vqa_answer", cxrlake_pipeline::RunMode::Write)
        .await
        .expect("mimic_cxr_vqa_answer");
    println!("{answers}");
    let seconds = started.elapsed().as_secs_f64();
    let pairs = answers.rows("mimic_cxr_vqa_qa") as f64;
    let rate = pairs / seconds;
    println!(
        "mimic_cxr_vqa questions+answers {} studies, {pairs} QA pairs: {seconds:.2} s ({rate:.0} \
         QA pairs/s; the paper's {PAPER_PAIRS} pairs at this rate: {:.0} s)",
        questions.rows("mimic_cxr_vqa_reports"),
        PAPER_PAIRS / rate
    );
    let started = Instant::now();
    let judged = flavour
        .run_stage("mimic_cxr_vqa_judge", cxrlake_pipeline::RunMode::Write)
        .await
        .expect("mimic_cxr_vqa_judge");
    println!("{judged}");
    println!(
        "mimic_cxr_vqa judge (offline, QC sample of 1,000 reports) {} QA pairs: {:.2} s",
        judged.rows("mimic_cxr_vqa_judgements"),
        started.elapsed().as_secs_f64()
    );
}
