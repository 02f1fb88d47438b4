//! The tables of a demo lake (synthetic corpus → ingest → reference tables → every stage) are
//! exactly the committed ones: an order-independent digest of every table's rows is compared
//! with `tests/golden/demo_tables.txt`. A change that alters any table's contents (a refactor
//! must not) fails here; a deliberate change re-blesses the file with
//! `CXRLAKE_BLESS=1 cargo test -p cxrlake-pipeline --test it demo`.

use std::fmt::Write as _;
use std::path::Path;

use cxrlake_ingest::{IngestOptions, ingest};
use cxrlake_synth::{SynthOptions, generate};
use datafusion::arrow::datatypes::DataType;
use sha2::Digest;

use crate::common::{json_lines, open_lake, run_pipeline};

const GOLDEN: &str = "tests/golden/demo_tables.txt";

/// `rows sha256` of `table`: the sha256 of its rows as sorted JSON lines; columns holding
/// wall-clock times (`recorded_at`, `created_at`) are left out.
async fn table_digest(lake: &cxrlake_lake::Lake, table: &str) -> (usize, String) {
    let ctx = lake.session().await.expect("session");
    let frame = ctx.table(table).await.expect("table");
    let columns: Vec<String> = frame
        .schema()
        .fields()
        .iter()
        .filter(|f| !matches!(f.data_type(), DataType::Timestamp(..)))
        .map(|f| format!("\"{}\"", f.name()))
        .collect();
    let lines = json_lines(
        lake,
        &format!("SELECT {} FROM \"{table}\"", columns.join(", ")),
    )
    .await;
    let mut hasher = sha2::Sha256::new();
    for line in &lines {
        hasher.update(line.as_bytes());
        hasher.update(b"\n");
    }
    (lines.len(), hex::encode(hasher.finalize()))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn demo_lake_tables_equal_the_committed_digests() {
    let dir = tempfile::tempdir().expect("tempdir");
    let corpus = dir.path().join("corpus");
    generate(&SynthOptions::new(40, 0, &corpus)).expect("synth");
    let lake = open_lake(&dir.path().join("lake")).await;
    ingest(&lake, &IngestOptions::new(vec![corpus]))
        .await
        .expect("ingest");
    run_pipeline(&lake).await;

    let mut names = lake.table_names().await.expect("tables");
    // `runs` records the run itself (its random id, the temporary lake's path), not a result.
    names.retain(|name| name != "runs");
    names.sort();
    let mut actual = String::new();
    for name in &names {
        let (rows, digest) = table_digest(&lake, name).await;
        writeln!(actual, "{name} {rows} {digest}").expect("write");
    }
    let golden = Path::new(env!("CARGO_MANIFEST_DIR")).join(GOLDEN);
    if std::env::var_os("CXRLAKE_BLESS").is_some() {
        std::fs::create_dir_all(golden.parent().expect("parent")).expect("mkdir");
        std::fs::write(&golden, &actual).expect("bless");
        return;
    }
    let expected = std::fs::read_to_string(&golden).expect("golden file");
    let expected_tables: Vec<&str> = expected.lines().collect();
    let differing: Vec<String> = expected_tables
        .iter()
        .filter(|line| {
            let name = line.split(' ').next().unwrap_or_default();
            // A table the golden file has must be there with the same rows; new tables may
            // be added (a new table is not a change of an existing one).
            !actual.lines().any(|a| a == **line) && names.iter().any(|n| n == name)
                || !names.iter().any(|n| n == name)
        })
        .map(|line| {
            let name = line.split(' ').next().unwrap_or_default();
            let now = actual
                .lines()
                .find(|a| a.split(' ').next() == Some(name))
                .unwrap_or("(missing)");
            format!("expected {line}\n     got {now}")
        })
        .collect();
    assert!(
        differing.is_empty(),
        "demo lake tables differ from {GOLDEN}:\n{}",
        differing.join("\n")
    );
}
