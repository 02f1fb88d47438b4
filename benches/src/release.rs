//! Benchmark of `cxrlake export release`: the FT subset (rating >= 'A', frontal images only)
//! from a graded lake of ≥ 4 M QA pairs, as Parquet (nested qa and scene_graphs, the seven
//! metadata tables with .csv.gz, the q1M sample) and in the PhysioNet layout (zips).
//!
//! The lake: `RELEASE_BENCH_STUDIES` synthetic studies (default 200) through the whole pipeline
//! to `qa`, then `qa`, `images` and `scene_graphs` replicated `RELEASE_BENCH_COPIES` times
//! (default 91: 18,200 studies, just over 4 M QA pairs) with new patient and study ids
//! (`p…NNN`, `s…NNN`), and every QA pair given a rating by `hash(5, study, question)` (seven
//! ratings evenly, so FT ≈ 3/7). Its folder is `RELEASE_BENCH_DIR` (default: a temporary
//! folder); `RELEASE_BENCH_REUSE=1` reuses a lake built there before. `RELEASE_BENCH_FORMATS`
//! picks the formats (`parquet`, `physionet`, `both` — the export's default, one command writing
//! both layouts —, comma-separated; default `parquet,physionet`), e.g. to measure each one's peak
//! memory on its own; `RUST_LOG=cxrlake_export=info` logs when each file of the
//! release is written. `import` (a format of its own) writes the whole release (`all`, PhysioNet
//! layout) once to `<dir>/all_physionet` (kept for later runs) and times `cxrlake import release`
//! of it into a new lake: QA pairs/s (run it alone for the import's peak RSS).

use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use arrow::array::{AsArray, Int8Array, RecordBatch, StringArray};
use arrow::compute::cast;
use arrow::datatypes::{DataType, Float64Type};
use cxrlake_benches::{bench_dir, build_qa_lake, env_number, init_logging, replicate_table};
use cxrlake_export::release::{portable_batch, portable_schema};
use cxrlake_export::{
    ReleaseExport, ReleaseFormat, ReleaseImport, Subset, export_release, import_release,
};
use cxrlake_lake::Lake;
use cxrlake_schemas::Rating;

#[tokio::main]
#[allow(clippy::print_stdout)]
async fn main() {
    init_logging();
    let studies = env_number("RELEASE_BENCH_STUDIES", 200);
    let copies = env_number("RELEASE_BENCH_COPIES", 91);
    let (_temp, root) = bench_dir("RELEASE_BENCH_DIR");
    let lake_dir = root.join("lake");
    let lake = Lake::open_url(lake_dir.to_str().expect("utf8"))
        .expect("open")
        .with_session_factory(cxrlake_udfs::session_context_on);
    if std::env::var_os("RELEASE_BENCH_REUSE").is_none() || !lake_dir.exists() {
        let started = Instant::now();
        build_qa_lake(&lake, &root.join("corpus"), studies).await;
        replicate(&lake, copies).await;
        println!("lake built in {:.1} s", started.elapsed().as_secs_f64());
    }
    let ctx = lake.session().await.expect("session");
    let count = |sql: &'static str| {
        let ctx = ctx.clone();
        async move {
            let batches = ctx.sql(sql).await.expect(sql).collect().await.expect(sql);
            let column = cast(batches[0].column(0), &DataType::Int64).expect("int64");
            column
                .as_primitive::<arrow::datatypes::Int64Type>()
                .value(0)
        }
    };
    let pairs = count("SELECT count(*) FROM qa").await;
    let lake_studies = count("SELECT count(DISTINCT study_id) FROM qa").await;
    println!("lake: {pairs} QA pairs of {lake_studies} studies");

    if std::env::var("RELEASE_BENCH_FORMATS").is_ok_and(|f| f.trim() == "import") {
        import(&lake, &root).await;
        return;
    }
    for format in formats() {
        let out = root.join(format!("ft_{format:?}").to_lowercase());
        let _ = std::fs::remove_dir_all(&out);
        let export = ReleaseExport::new(&out)
            .with_subset(Subset::Ft)
            .with_format(format);
        let started = Instant::now();
        let summary = export_release(&lake, &export).await.expect("export");
        let seconds = started.elapsed().as_secs_f64();
        println!("{summary}");
        println!(
            "FT {format:?}: {} of {pairs} QA pairs in {seconds:.1} s ({:.0} lake QA pairs/s)",
            summary.parts[0].questions,
            pairs as f64 / seconds
        );
    }
}

/// Exports the whole release once, then imports it into a fresh lake, timed.
#[allow(clippy::print_stdout)]
async fn import(lake: &Lake, root: &Path) {
    let release = root.join("all_physionet");
    if !release.join("qa.zip").exists() {
        let _ = std::fs::remove_dir_all(&release);
        let export = ReleaseExport::new(&release)
            .with_subset(Subset::All)
            .with_format(ReleaseFormat::Physionet);
        let summary = export_release(lake, &export).await.expect("export");
        println!("{summary}");
    }
    let target_dir = root.join("imported");
    let _ = std::fs::remove_dir_all(&target_dir);
    let target = Lake::open_url(target_dir.to_str().expect("utf8"))
        .expect("open")
        .with_session_factory(cxrlake_udfs::session_context_on);
    target.init().await.expect("init");
    let started = Instant::now();
    let summary = import_release(&target, &ReleaseImport::new(&release))
        .await
        .expect("import");
    let seconds = started.elapsed().as_secs_f64();
    println!("{summary}");
    let pairs = summary.rows.get("qa").copied().unwrap_or(0);
    println!(
        "import: {pairs} QA pairs, {} scene graphs, {} images in {seconds:.1} s ({:.0} QA pairs/s)",
        summary.rows.get("scene_graphs").copied().unwrap_or(0),
        summary.rows.get("images").copied().unwrap_or(0),
        pairs as f64 / seconds
    );
}

/// The formats of `RELEASE_BENCH_FORMATS` (default: Parquet, then PhysioNet).
fn formats() -> Vec<ReleaseFormat> {
    let names = std::env::var("RELEASE_BENCH_FORMATS").unwrap_or_default();
    let mut formats = Vec::new();
    for name in names.split(',').map(str::trim).filter(|n| !n.is_empty()) {
        formats.push(match name {
            "parquet" => ReleaseFormat::Parquet,
            "physionet" => ReleaseFormat::Physionet,
            "both" => ReleaseFormat::Both,
            other => panic!(
                "RELEASE_BENCH_FORMATS: unknown format {other}; use parquet, physionet, both"
            ),
        });
    }
    if formats.is_empty() {
        formats = vec![ReleaseFormat::Parquet, ReleaseFormat::Physionet];
    }
    formats
}

/// Appends `copies - 1` copies of `qa`, `images` and `scene_graphs` with new patient and study
/// ids, and rates every QA pair by hash.
async fn replicate(lake: &Lake, copies: usize) {
    for table in ["images", "scene_graphs", "qa"] {
        let sql = if table == "qa" {
            "SELECT *, sample_hash(5, study_id, question_id) AS h FROM qa".to_string()
        } else {
            format!("SELECT * FROM {table}")
        };
        replicate_table(lake, table, &sql, copies, |batch| {
            rate(batch, table == "qa")
        })
        .await;
    }
}

/// `batch` with plain types; for `qa`, rated by its last column `h` (a hash in [0, 1)), which is
/// dropped.
fn rate(batch: &RecordBatch, is_qa: bool) -> RecordBatch {
    if !is_qa {
        let schema = portable_schema(&batch.schema());
        return portable_batch(batch, &schema).expect("portable");
    }
    let hashes = batch.column(batch.num_columns() - 1);
    let ratings: Vec<Rating> = hashes
        .as_primitive::<Float64Type>()
        .values()
        .iter()
        .map(|h| Rating::ALL[((h * 7.0) as usize).min(6)])
        .collect();
    let keep: Vec<usize> = (0..batch.num_columns() - 1).collect();
    let batch = batch.project(&keep).expect("project");
    let schema = portable_schema(&batch.schema());
    let mut columns = portable_batch(&batch, &schema)
        .expect("portable")
        .columns()
        .to_vec();
    let texts: StringArray = ratings.iter().map(|r| Some(r.as_str())).collect();
    let ranks: Int8Array = ratings.iter().map(|r| Some(r.rank())).collect();
    columns[schema.index_of("rating").expect("rating")] = Arc::new(texts);
    columns[schema.index_of("rating_rank").expect("rating_rank")] = Arc::new(ranks);
    RecordBatch::try_new(schema, columns).expect("rated")
}
