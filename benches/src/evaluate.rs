//! Benchmark of `cxrlake evaluate`: `labels` (scene-graph finding tags against CheXpert labels)
//! over the full MIMIC-CXR study count and `radstruct` (RadStrucVQA, offline entailment) over
//! ≥ 1 M QA pairs, each with 1,000 bootstrap resamples (the papers' n), whole calls (reading the
//! lake and the predictions file, scoring, bootstrapping; not the commit).
//!
//! The lake: `EVAL_BENCH_STUDIES` synthetic studies (default 500) through the pipeline to `qa`,
//! then `scene_graphs` and `chexpert_labels` replicated to `EVAL_BENCH_SG_STUDIES` studies
//! (default 227,835) and `qa` to at least `EVAL_BENCH_QA` pairs (default 1,000,000), with new
//! patient and study ids. The predictions are the lake's own `qa` answers as Parquet (every
//! sub-metric 1.0). `EVAL_BENCH_DIR` keeps the lake (`EVAL_BENCH_REUSE=1` reuses it);
//! `EVAL_BENCH_BOOT` sets the resamples.

use std::time::Instant;

use cxrlake_benches::{bench_dir, build_qa_lake, env_number, init_logging, replicate_table};
use cxrlake_lake::Lake;
use cxrlake_pipeline::evaluate::{
    self as eval, EvalOptions, LabelOptions, LabelSource, RadStructOptions, Uncertain,
};
use cxrlake_refdefs::RefDefs;

#[tokio::main]
#[allow(clippy::print_stdout)]
async fn main() {
    init_logging();
    let studies = env_number("EVAL_BENCH_STUDIES", 500);
    let sg_studies = env_number("EVAL_BENCH_SG_STUDIES", 227_835);
    let qa_pairs = env_number("EVAL_BENCH_QA", 1_000_000);
    let n_boot = env_number("EVAL_BENCH_BOOT", 1000);
    let (_temp, root) = bench_dir("EVAL_BENCH_DIR");
    let lake_dir = root.join("lake");
    let lake = Lake::open_url(lake_dir.to_str().expect("utf8"))
        .expect("open")
        .with_session_factory(cxrlake_udfs::session_context_on);
    let predictions = root.join("predictions.parquet");
    if std::env::var_os("EVAL_BENCH_REUSE").is_none() || !lake_dir.exists() {
        let started = Instant::now();
        build_qa_lake(&lake, &root.join("corpus"), studies).await;
        let base_pairs = count(&lake, "SELECT count(*) FROM qa").await;
        let copies = qa_pairs.div_ceil(base_pairs.max(1));
        replicate_table(&lake, "qa", "SELECT * FROM qa", copies, Clone::clone).await;
        let copies = sg_studies.div_ceil(studies);
        for table in ["scene_graphs", "chexpert_labels"] {
            let sql = format!("SELECT * FROM {table}");
            replicate_table(&lake, table, &sql, copies, Clone::clone).await;
        }
        let ctx = lake.session().await.expect("session");
        let _ = std::fs::remove_file(&predictions);
        ctx.sql("SELECT study_id, question_id, answers FROM qa")
            .await
            .expect("plan")
            .write_parquet(
                predictions.to_str().expect("utf8"),
                datafusion::dataframe::DataFrameWriteOptions::new().with_single_file_output(true),
                None,
            )
            .await
            .expect("predictions");
        println!("lake built in {:.1} s", started.elapsed().as_secs_f64());
    }
    let options = EvalOptions {
        n_boot,
        seed: 0,
        level: 0.95,
    };
    let sg = count(&lake, "SELECT count(*) FROM scene_graphs").await;
    let labelled = count(
        &lake,
        "SELECT count(DISTINCT study_id) FROM chexpert_labels",
    )
    .await;
    let pairs = count(&lake, "SELECT count(*) FROM qa").await;
    println!("lake: {sg} scene graphs, {labelled} labelled studies, {pairs} QA pairs");

    let defs = RefDefs::embedded().expect("refdefs");
    let started = Instant::now();
    let labels = eval::labels_vs_scene_graphs(
        &lake,
        &defs,
        &LabelOptions {
            source: LabelSource::Lake {
                labeler: "chexpert".into(),
            },
            mapping: None,
            subsets: Vec::new(),
            uncertain: Uncertain::Ignore,
            missing_negative: true,
            eval: options,
        },
        None,
    )
    .await
    .expect("labels");
    let seconds = started.elapsed().as_secs_f64();
    println!("{}", labels.notes.join("\n"));
    println!(
        "evaluate labels: {sg} studies, {} scores, {n_boot} resamples in {seconds:.1} s",
        labels.scores.len()
    );

    let started = Instant::now();
    let radstruct = eval::radstruct_scores(
        &lake,
        &RadStructOptions {
            predictions,
            baseline: None,
            entailer: eval::Entailer::Offline,
            eval: options,
        },
    )
    .await
    .expect("radstruct");
    let seconds = started.elapsed().as_secs_f64();
    println!("{}", radstruct.notes.join("\n"));
    println!(
        "evaluate radstruct: {pairs} QA pairs, {n_boot} resamples in {seconds:.1} s ({:.0} QA pairs/s)",
        pairs as f64 / seconds
    );
}

async fn count(lake: &Lake, sql: &str) -> usize {
    use arrow::array::AsArray;
    let ctx = lake.session().await.expect("session");
    let batches = ctx.sql(sql).await.expect(sql).collect().await.expect(sql);
    let column = arrow::compute::cast(batches[0].column(0), &arrow::datatypes::DataType::Int64)
        .expect("int64");
    column
        .as_primitive::<arrow::datatypes::Int64Type>()
        .value(0) as usize
}
