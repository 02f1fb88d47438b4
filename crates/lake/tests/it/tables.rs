//! Table operations on real Delta tables (memory:// and a folder), and SQL over them.

use std::sync::Arc;

use cxrlake_lake::{Lake, LakeError, StageCommit};
use cxrlake_schemas::{TABLES, rating_field};
use datafusion::arrow::array::{Array, AsArray, Int64Array, RecordBatch, StringArray};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Field, Int64Type, Schema, SchemaRef};
use datafusion::arrow::util::pretty::pretty_format_batches;
use serde_json::json;

fn schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("study_id", DataType::Utf8, false),
        Field::new("n", DataType::Int64, false),
        rating_field("rating"),
    ]))
}

fn batch(rows: &[(&str, i64, &str)]) -> RecordBatch {
    RecordBatch::try_new(
        schema(),
        vec![
            Arc::new(StringArray::from(
                rows.iter().map(|r| r.0).collect::<Vec<_>>(),
            )),
            Arc::new(Int64Array::from(
                rows.iter().map(|r| r.1).collect::<Vec<_>>(),
            )),
            Arc::new(StringArray::from(
                rows.iter().map(|r| r.2).collect::<Vec<_>>(),
            )),
        ],
    )
    .expect("batch")
}

/// The batches of `sql` over the lake's tables.
async fn query(lake: &Lake, sql: &str) -> Vec<RecordBatch> {
    run(&lake.session().await.expect("session"), sql).await
}

/// The batches of `sql` in `ctx`.
async fn run(ctx: &datafusion::prelude::SessionContext, sql: &str) -> Vec<RecordBatch> {
    ctx.sql(sql)
        .await
        .expect("plan")
        .collect()
        .await
        .expect("run")
}

async fn query_i64(lake: &Lake, sql: &str) -> Vec<i64> {
    query(lake, sql)
        .await
        .iter()
        .flat_map(|b| b.column(0).as_primitive::<Int64Type>().values().to_vec())
        .collect()
}

#[tokio::test]
async fn append_overwrite_replace_and_time_travel() {
    let lake = Lake::open_url("memory:///lake").expect("open");
    let commit = StageCommit::new("test").with_fingerprint(json!({"refdefs": "abc"}));
    let v0 = lake
        .write("t")
        .commit(commit.clone())
        .execute(vec![batch(&[("s1", 1, "A"), ("s2", 2, "B")])])
        .await
        .expect("create");
    let v1 = lake
        .write("t")
        .append()
        .execute(vec![batch(&[("s3", 3, "C")])])
        .await
        .expect("append");
    assert_eq!((v0, v1), (0, 1));
    assert_eq!(query_i64(&lake, "SELECT sum(n) FROM t").await, vec![6]);

    let v2 = lake
        .write("t")
        .replace_studies(vec!["s2".into()])
        .commit(StageCommit::new("qa").with_metrics(json!({"rows": 1})))
        .execute(vec![batch(&[("s2", 20, "A+")])])
        .await
        .expect("replace");
    assert_eq!(v2, 2);
    assert_eq!(
        query_i64(&lake, "SELECT n FROM t ORDER BY study_id").await,
        vec![1, 20, 3],
        "only s2 was replaced"
    );
    let stray = lake
        .write("t")
        .replace_studies(vec!["s1".into()])
        .execute(vec![batch(&[("s1", 10, "A"), ("s3", 30, "A")])])
        .await
        .expect_err("a row of s3 cannot replace s1");
    assert!(stray.to_string().contains("s3"), "{stray}");
    assert_eq!(
        query_i64(&lake, "SELECT n FROM t ORDER BY study_id").await,
        vec![1, 20, 3],
        "a refused replace writes nothing"
    );

    lake.write("t")
        .overwrite()
        .execute(vec![batch(&[("s9", 9, "D")])])
        .await
        .expect("overwrite");
    assert_eq!(query_i64(&lake, "SELECT count(*) FROM t").await, vec![1]);

    let old = lake.table_at("t", 1).await.expect("version 1");
    assert_eq!(old.version(), Some(1));
    let ctx = lake
        .session_with(&[("t".to_string(), 1)].into())
        .await
        .expect("pinned");
    let rows = ctx
        .sql("SELECT count(*) FROM t")
        .await
        .expect("plan")
        .collect()
        .await
        .expect("run");
    assert_eq!(rows[0].column(0).as_primitive::<Int64Type>().value(0), 3);

    let history = lake.history("t", None).await.expect("history");
    assert_eq!(history.first().map(|c| c.version), Some(3));
    let qa_commit = history
        .iter()
        .find(|c| c.version == 2)
        .and_then(|c| c.stage.clone());
    assert_eq!(
        qa_commit.map(|s| (s.stage, s.metrics)),
        Some(("qa".to_string(), json!({"rows": 1})))
    );
    let first = history
        .iter()
        .find(|c| c.version == 0)
        .and_then(|c| c.stage.clone());
    assert_eq!(
        first.map(|s| s.fingerprint),
        Some(json!({"refdefs": "abc"}))
    );

    let err = lake.table_at("t", 99).await.expect_err("no such version");
    assert!(matches!(err, LakeError::NoSuchVersion { .. }), "{err}");
}

#[tokio::test]
async fn init_creates_every_table_and_sql_joins_them() {
    let dir = tempfile::tempdir().expect("tempdir");
    let lake = Lake::open_url(dir.path().to_str().expect("utf8")).expect("open");
    assert!(matches!(
        lake.require_initialized().await,
        Err(LakeError::NotInitialized(_))
    ));
    let created = lake.init().await.expect("init");
    assert_eq!(created.len(), TABLES.len());
    assert!(
        lake.init().await.expect("init again").is_empty(),
        "init is idempotent"
    );
    assert_eq!(lake.table_names().await.expect("names").len(), TABLES.len());

    let ctx = lake.session().await.expect("session");
    let rows = ctx
        .sql("SELECT count(*) FROM qa JOIN scene_graphs USING (study_id) JOIN images USING (study_id)")
        .await
        .expect("plan")
        .collect()
        .await
        .expect("run");
    assert_eq!(rows[0].column(0).as_primitive::<Int64Type>().value(0), 0);

    let reopened = Lake::open_url(&format!("file://{}", dir.path().display())).expect("reopen");
    assert!(reopened.require_initialized().await.is_ok());
    let err = reopened
        .table("nope")
        .await
        .expect_err("missing")
        .to_string();
    assert!(err.contains("table 'nope' does not exist"), "{err}");
}

#[tokio::test]
async fn nested_boxes_round_trip_through_delta() {
    let lake = Lake::open_url("memory:///lake").expect("open");
    lake.init().await.expect("init");
    let ctx = lake.session().await.expect("session");
    let schema = ctx
        .table("region_boxes")
        .await
        .expect("table")
        .schema()
        .clone();
    let bboxes = schema.field_with_name(None, "bboxes").expect("bboxes");
    let DataType::List(item) = bboxes.data_type() else {
        panic!("bboxes is a list, got {}", bboxes.data_type());
    };
    assert!(
        matches!(
            item.data_type(),
            DataType::FixedSizeList(_, 4) | DataType::List(_)
        ),
        "box type {}",
        item.data_type()
    );
    assert!(rows_len(&ctx).await == 0);
}

async fn rows_len(ctx: &datafusion::prelude::SessionContext) -> usize {
    let batches = ctx
        .sql("SELECT * FROM region_boxes")
        .await
        .expect("plan")
        .collect()
        .await
        .expect("run");
    batches.iter().map(|b| b.num_rows()).sum::<usize>()
        + batches
            .iter()
            .map(|b| b.column(0).null_count())
            .sum::<usize>()
}

/// Reports of the studies `ids` (`s000`, `s001`, …; three per patient `p000`, …), with `text`.
fn reports(ids: &[usize], text: &str) -> RecordBatch {
    let column = |f: &dyn Fn(usize) -> String| -> Arc<dyn Array> {
        Arc::new(StringArray::from(
            ids.iter().map(|&i| f(i)).collect::<Vec<_>>(),
        ))
    };
    RecordBatch::try_new(
        cxrlake_schemas::sources::reports(),
        vec![
            column(&|i| format!("p{:03}", i / 3)),
            column(&|i| format!("s{i:03}")),
            column(&|i| format!("{text} {i}")),
            column(&|i| format!("files/s{i:03}.txt")),
            column(&|i| format!("h{i}")),
        ],
    )
    .expect("batch")
}

/// The active data files of `table`.
async fn files(lake: &Lake, table: &str) -> std::collections::BTreeSet<String> {
    let delta = lake.table(table).await.expect("table");
    delta.get_file_uris().expect("uris").collect()
}

/// The active data files of `table` and how many rows their deletion vectors delete.
async fn deleted_rows(lake: &Lake, table: &str) -> std::collections::BTreeMap<String, i64> {
    let delta = lake.table(table).await.expect("table");
    let snapshot = delta.snapshot().expect("snapshot");
    snapshot
        .log_data()
        .iter()
        .map(|file| {
            let deleted = file
                .deletion_vector_descriptor()
                .map_or(0, |dv| dv.cardinality);
            (file.path().to_string(), deleted)
        })
        .collect()
}

/// The text column of `sql`'s result.
async fn texts(lake: &Lake, sql: &str) -> Vec<String> {
    query(lake, sql)
        .await
        .iter()
        .flat_map(|b| {
            let column = cast(b.column(0), &DataType::Utf8).expect("utf8");
            column
                .as_string::<i32>()
                .iter()
                .flatten()
                .map(str::to_string)
                .collect::<Vec<_>>()
        })
        .collect()
}

/// The texts of `ids` in `reports`, sorted, read by [`Lake::read_studies`].
async fn read_texts(lake: &Lake, ids: &std::collections::BTreeSet<String>) -> Vec<String> {
    let read = lake.read_studies("reports", None, ids).await.expect("read");
    let mut texts: Vec<String> = read
        .iter()
        .flat_map(|b| {
            b.column_by_name("text")
                .expect("text")
                .as_string::<i32>()
                .iter()
                .flatten()
                .map(str::to_string)
                .collect::<Vec<_>>()
        })
        .collect();
    texts.sort();
    texts
}

#[tokio::test]
async fn replacing_studies_rewrites_their_files_only_and_reads_their_rows_only() {
    let dir = tempfile::tempdir().expect("tempdir");
    let lake = Lake::open_url(dir.path().to_str().expect("utf8")).expect("open");
    lake.init().await.expect("init");
    // Two files: s000-s149 and s150-s299.
    let (first, second): (Vec<usize>, Vec<usize>) = (0..300).partition(|&i| i < 150);
    lake.write("reports")
        .overwrite()
        .execute(vec![reports(&first, "old")])
        .await
        .expect("write");
    lake.write("reports")
        .execute(vec![reports(&second, "old")])
        .await
        .expect("append");
    let before = files(&lake, "reports").await;
    assert_eq!(before.len(), 2);

    // Replacing s160 deletes its old row from the second file (a deletion vector); the first
    // file is untouched, the new row lies in a file of its own.
    lake.write("reports")
        .replace_studies(vec!["s160".into()])
        .deletion_vectors(true)
        .execute(vec![reports(&[160], "newer")])
        .await
        .expect("replace");
    let after = files(&lake, "reports").await;
    assert_eq!(after.len(), 3);
    assert!(before.is_subset(&after), "no file is rewritten");
    let deleted = deleted_rows(&lake, "reports").await;
    assert_eq!(
        deleted
            .values()
            .copied()
            .collect::<Vec<_>>()
            .iter()
            .sum::<i64>(),
        1,
        "{deleted:?}"
    );

    // s010 and s150 get new text, s290 is deleted.
    let ids = ["s010", "s150", "s290"].map(String::from);
    let read = lake
        .read_studies("reports", None, &ids.iter().cloned().collect())
        .await
        .expect("read");
    assert_eq!(read.iter().map(RecordBatch::num_rows).sum::<usize>(), 3);
    lake.write("reports")
        .replace_studies(ids.to_vec())
        .deletion_vectors(true)
        .execute(vec![reports(&[10, 150], "new")])
        .await
        .expect("replace");
    assert_eq!(
        texts(
            &lake,
            "SELECT text FROM reports WHERE study_id IN ('s009', 's010', 's150', 's160', 's290', \
             's299') ORDER BY study_id"
        )
        .await,
        ["old 9", "new 10", "new 150", "newer 160", "old 299"]
    );
    assert_eq!(
        query_i64(&lake, "SELECT count(*) FROM reports").await,
        vec![299]
    );
    // This handle keeps the rows it just wrote; another one reads them from the files.
    let fresh = Lake::open_url(dir.path().to_str().expect("utf8")).expect("open");
    for handle in [&lake, &fresh] {
        let all = ids.iter().cloned().collect();
        assert_eq!(read_texts(handle, &all).await, ["new 10", "new 150"]);
        let some = ["s150".to_string(), "s290".to_string()].into();
        assert_eq!(read_texts(handle, &some).await, ["new 150"]);
    }
    // The version before the replace still holds the old rows.
    let version = lake
        .table("reports")
        .await
        .expect("table")
        .version()
        .expect("version");
    let old = lake
        .read_studies("reports", Some(version - 1), &ids.iter().cloned().collect())
        .await
        .expect("read old");
    assert_eq!(old.iter().map(RecordBatch::num_rows).sum::<usize>(), 3);

    // The second file's vector now holds s150, s160 and s290; once more than half of its rows
    // are deleted it is rewritten with its live rows, and a file wholly replaced is removed.
    assert_eq!(
        deleted_rows(&lake, "reports").await.values().sum::<i64>(),
        4,
        "s010 from the first file, s150, s160, s290 from the second"
    );
    let most: Vec<String> = (150..230).map(|i| format!("s{i:03}")).collect();
    lake.write("reports")
        .replace_studies(most.clone())
        .deletion_vectors(true)
        .execute(vec![reports(&(150..230).collect::<Vec<_>>(), "most")])
        .await
        .expect("replace most");
    let compacted = deleted_rows(&lake, "reports").await;
    assert!(
        before
            .iter()
            .filter(|f| compacted.keys().any(|k| f.ends_with(k.as_str())))
            .count()
            == 1,
        "the second file is rewritten: {compacted:?}"
    );
    assert_eq!(
        compacted.values().sum::<i64>(),
        2,
        "s010 in the first file, s150 in the file of s010's and s150's new rows: {compacted:?}"
    );
    assert_eq!(
        query_i64(&lake, "SELECT count(*) FROM reports").await,
        vec![299]
    );
    assert_eq!(
        texts(
            &lake,
            "SELECT text FROM reports WHERE study_id IN ('s010', 's160', 's229', 's230', 's290') \
             ORDER BY study_id"
        )
        .await,
        ["new 10", "most 160", "most 229", "old 230"]
    );
    let all: std::collections::BTreeSet<String> = (0..300).map(|i| format!("s{i:03}")).collect();
    let read = lake
        .read_studies("reports", None, &all)
        .await
        .expect("read all");
    assert_eq!(read.iter().map(RecordBatch::num_rows).sum::<usize>(), 299);

    // Without deletion vectors (the definition of `reports`), a replace rewrites the files
    // holding the studies: the first file goes, with its vector.
    lake.write("reports")
        .replace_studies(vec!["s005".into()])
        .execute(vec![reports(&[5], "plain")])
        .await
        .expect("replace by rewriting");
    let rewritten = deleted_rows(&lake, "reports").await;
    assert!(
        !before
            .iter()
            .any(|f| rewritten.keys().any(|k| f.ends_with(k.as_str()))),
        "{rewritten:?}"
    );
    assert_eq!(rewritten.values().sum::<i64>(), 1, "{rewritten:?}");
    assert_eq!(
        texts(
            &lake,
            "SELECT text FROM reports WHERE study_id IN ('s004', 's005', 's010') ORDER BY study_id"
        )
        .await,
        ["old 4", "plain 5", "new 10"]
    );
    assert_eq!(
        query_i64(&lake, "SELECT count(*) FROM reports").await,
        vec![299]
    );
}

#[tokio::test]
async fn a_handle_sees_what_another_handle_commits_and_still_travels_back() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().to_str().expect("utf8");
    let (reader, writer) = (
        Lake::open_url(root).expect("open"),
        Lake::open_url(root).expect("open"),
    );
    reader.init().await.expect("init");
    let count = "SELECT count(*) FROM reports";
    assert_eq!(query_i64(&reader, count).await, vec![0]);
    let first = reader.table("reports").await.expect("table").version();
    // The reader keeps its snapshot of `reports`; the writer appends twice.
    for chunk in [0..10, 10..25] {
        writer
            .write("reports")
            .execute(vec![reports(&chunk.collect::<Vec<_>>(), "new")])
            .await
            .expect("append");
    }
    assert_eq!(query_i64(&reader, count).await, vec![25]);
    let latest = reader.table("reports").await.expect("table").version();
    assert_eq!(latest, first.map(|v| v + 2));
    // An older version after a newer one was loaded.
    let older = reader
        .table_at("reports", first.expect("version") + 1)
        .await
        .expect("table_at");
    let newest = reader.table("reports").await.expect("table");
    assert_eq!(newest.version(), latest);
    assert_eq!(
        older.get_file_uris().expect("uris").count() + 1,
        newest.get_file_uris().expect("uris").count()
    );
}

#[tokio::test]
async fn scratch_tables_shadow_their_names_until_cleared() {
    let dir = tempfile::tempdir().expect("tempdir");
    let lake = Lake::open_url(dir.path().to_str().expect("utf8")).expect("open");
    lake.init().await.expect("init");
    let ctx = lake.session().await.expect("session");
    let rows = [("s1", 1, "A+"), ("s2", 2, "B")];
    for name in ["scored", "scored"] {
        // The second write of a name is a new file: the first stays readable until cleared.
        let table = lake
            .put_scratch(
                "grade/0",
                name,
                schema(),
                &[batch(&rows)],
                &ctx.runtime_env(),
            )
            .await
            .expect("scratch");
        ctx.deregister_table(name).expect("deregister");
        ctx.register_table(name, table).expect("register");
    }
    let got = ctx
        .sql("SELECT sum(n) FROM scored WHERE rating = 'A+'")
        .await
        .expect("plan")
        .collect()
        .await
        .expect("run");
    assert_eq!(got[0].column(0).as_primitive::<Int64Type>().value(0), 1);
    let folder = dir.path().join("_cxrlake/scratch/grade/0");
    let written = std::fs::read_dir(&folder).expect("scratch folder").count();
    assert_eq!(written, 2, "one file per write");
    // Another chunk's folder is kept when one chunk's is cleared.
    lake.put_scratch("grade/1", "scored", schema(), &[], &ctx.runtime_env())
        .await
        .expect("empty scratch");
    lake.clear_scratch("grade/0").await.expect("clear chunk");
    let left = |path: &std::path::Path| {
        std::fs::read_dir(path).map_or(0, |entries| {
            entries
                .flatten()
                .filter(|e| e.path().extension().is_some_and(|x| x == "parquet"))
                .count()
        })
    };
    assert_eq!(left(&folder), 0);
    assert_eq!(left(&dir.path().join("_cxrlake/scratch/grade/1")), 1);
    lake.clear_scratch("grade").await.expect("clear stage");
    assert_eq!(left(&dir.path().join("_cxrlake/scratch/grade/1")), 0);
}

/// Writes `batch` as a cluster's executor would: `COPY … TO` the folder, from another session.
async fn write_elsewhere(folder: &cxrlake_lake::WrittenFolder, batch: RecordBatch) {
    let ctx = datafusion::prelude::SessionContext::new();
    ctx.read_batch(batch)
        .expect("frame")
        .write_parquet(
            folder.url(),
            datafusion::dataframe::DataFrameWriteOptions::new(),
            None,
        )
        .await
        .expect("copy");
}

/// `minValues` and `maxValues` of `study_id` in the add actions of `table`'s current files.
async fn study_bounds(lake: &Lake, table: &str) -> Vec<(String, String)> {
    let delta = lake.table(table).await.expect("table");
    let snapshot = delta.snapshot().expect("snapshot");
    let mut bounds: Vec<(String, String)> = snapshot
        .log_data()
        .iter()
        .map(|file| {
            let stats: serde_json::Value =
                serde_json::from_str(&file.stats().expect("stats")).expect("json");
            let bound = |side: &str| stats[side]["study_id"].as_str().expect(side).to_string();
            (bound("minValues"), bound("maxValues"))
        })
        .collect();
    bounds.sort();
    bounds
}

#[tokio::test]
async fn files_written_elsewhere_are_committed_here_with_statistics() {
    let dir = tempfile::tempdir().expect("tempdir");
    let lake = Lake::open_url(dir.path().to_str().expect("utf8")).expect("open");
    lake.init().await.expect("init");
    let count = |sql: &'static str| {
        let lake = lake.clone();
        async move { query_i64(&lake, sql).await }
    };

    // Overwrite, then append: each commit's files with statistics that prune by study.
    let folder = lake.written_folder("reports");
    write_elsewhere(&folder, reports(&[0, 1, 2], "first")).await;
    lake.write("reports")
        .overwrite()
        .commit_files(&folder, 3)
        .await
        .expect("overwrite");
    let folder = lake.written_folder("reports");
    write_elsewhere(&folder, reports(&[10, 11], "second")).await;
    lake.write("reports")
        .append()
        .commit_files(&folder, 2)
        .await
        .expect("append");
    assert_eq!(count("SELECT count(*) FROM reports").await, vec![5]);
    assert_eq!(
        study_bounds(&lake, "reports").await,
        vec![
            ("s000".to_string(), "s002".to_string()),
            ("s010".to_string(), "s011".to_string())
        ]
    );

    // A replace of studies takes the files as their new rows; a study's rows are found again.
    let folder = lake.written_folder("reports");
    write_elsewhere(&folder, reports(&[1, 10], "replaced")).await;
    lake.write("reports")
        .replace_studies(vec!["s001".into(), "s010".into()])
        .commit_files(&folder, 2)
        .await
        .expect("replace");
    assert_eq!(
        texts(
            &lake,
            "SELECT text FROM reports WHERE study_id IN ('s001', 's010') ORDER BY study_id"
        )
        .await,
        vec!["replaced 1", "replaced 10"]
    );
    let ids = ["s010".to_string()].into_iter().collect();
    assert_eq!(read_texts(&lake, &ids).await, vec!["replaced 10"]);
    assert_eq!(count("SELECT count(*) FROM reports").await, vec![5]);

    // Refused, committing nothing: a row of another study, and more rows than the statement
    // wrote (a task run twice).
    let version = lake.table("reports").await.expect("table").version();
    let folder = lake.written_folder("reports");
    write_elsewhere(&folder, reports(&[2, 11], "stray")).await;
    let stray = lake
        .write("reports")
        .replace_studies(vec!["s002".into()])
        .commit_files(&folder, 2)
        .await
        .expect_err("s011 is not replaced");
    assert!(stray.to_string().contains("s011"), "{stray}");
    let twice = lake
        .write("reports")
        .append()
        .commit_files(&folder, 1)
        .await
        .expect_err("two rows where one was written");
    assert!(
        matches!(twice, LakeError::Written { .. }) && twice.to_string().contains("2 rows"),
        "{twice}"
    );
    assert_eq!(
        lake.table("reports").await.expect("table").version(),
        version
    );
    lake.discard_written(&folder).await.expect("discard");
    assert_eq!(count("SELECT count(*) FROM reports").await, vec![5]);
}

/// The `w-*` folders of `table` in the lake at `dir` (committed or not).
fn written_folders(dir: &std::path::Path, table: &str) -> usize {
    std::fs::read_dir(dir.join(table))
        .expect("table folder")
        .filter(|entry| {
            let name = entry.as_ref().expect("entry").file_name();
            name.to_string_lossy().starts_with("w-")
        })
        .count()
}

#[tokio::test]
async fn a_write_on_several_writers_is_one_commit_of_a_file_per_writer() {
    let dir = tempfile::tempdir().expect("tempdir");
    let lake = Lake::open_url(dir.path().to_str().expect("utf8")).expect("open");
    lake.init().await.expect("init");
    lake.write("reports")
        .execute(vec![reports(&[0, 1, 2], "first")])
        .await
        .expect("append");
    let before = lake.table("reports").await.expect("table").version();

    // Seven rows in three batches on two writers: two files (3 + 4 rows, in order), one commit.
    let batches = vec![
        reports(&[10, 11, 12], "second"),
        reports(&[13, 14], "second"),
        reports(&[15, 16], "second"),
    ];
    let version = lake
        .write("reports")
        .writers(2)
        .execute(batches)
        .await
        .expect("append on two writers");
    assert_eq!(Some(version), before.map(|v| v + 1));
    assert_eq!(files(&lake, "reports").await.len(), 3);
    assert_eq!(
        study_bounds(&lake, "reports").await,
        vec![
            ("s000".to_string(), "s002".to_string()),
            ("s010".to_string(), "s012".to_string()),
            ("s013".to_string(), "s016".to_string()),
        ]
    );
    assert_eq!(
        texts(
            &lake,
            "SELECT text FROM reports WHERE study_id >= 's010' ORDER BY study_id"
        )
        .await,
        (10..17).map(|i| format!("second {i}")).collect::<Vec<_>>()
    );

    // An overwrite on two writers replaces every row.
    lake.write("reports")
        .overwrite()
        .writers(2)
        .execute(vec![reports(&[20], "third"), reports(&[21], "third")])
        .await
        .expect("overwrite on two writers");
    assert_eq!(
        texts(&lake, "SELECT text FROM reports ORDER BY study_id").await,
        vec!["third 20", "third 21"]
    );

    // Rows without the table's columns: refused, nothing committed, no files left behind.
    let version = lake.table("reports").await.expect("table").version();
    let folders = written_folders(dir.path(), "reports");
    let bad = RecordBatch::try_new(
        Arc::new(Schema::new(vec![Field::new(
            "study_id",
            DataType::Utf8,
            false,
        )])),
        vec![Arc::new(StringArray::from(vec!["s030"]))],
    )
    .expect("batch");
    let refused = lake
        .write("reports")
        .writers(2)
        .execute(vec![reports(&[31], "fourth"), bad])
        .await
        .expect_err("a batch without the table's columns");
    assert!(
        matches!(refused, LakeError::Written { .. })
            && refused
                .to_string()
                .contains("without the column patient_id"),
        "{refused}"
    );
    assert_eq!(
        lake.table("reports").await.expect("table").version(),
        version
    );
    assert_eq!(written_folders(dir.path(), "reports"), folders);
}

/// Rows `(study_id, [(answer_id, text)])` with a box per part, as the lake's nested tables hold
/// them: `answers` is a `list<struct<answer_id, text, boxes>>`.
async fn parts(rows: &str) -> RecordBatch {
    let ctx = datafusion::prelude::SessionContext::new();
    let batches = ctx
        .sql(&format!(
            "SELECT column1 AS study_id, column2 AS answers FROM (VALUES {rows})"
        ))
        .await
        .expect("plan")
        .collect()
        .await
        .expect("run");
    batches.into_iter().next().expect("one batch")
}

/// One `VALUES` row of [`parts`]: the study and its answer parts `(answer_id, text)`.
fn study(id: &str, answers: &[(i64, &str)]) -> String {
    let answers: Vec<String> = answers.iter().map(|(n, text)| part(*n, text)).collect();
    format!("('{id}', [{}])", answers.join(", "))
}

fn part(id: i64, text: &str) -> String {
    format!(
        "named_struct('answer_id', CAST({id} AS BIGINT), 'text', '{text}', \
         'boxes', [[CAST({id} AS FLOAT), 2.0, 3.0, 4.0]])"
    )
}

#[tokio::test]
async fn a_narrowed_nested_column_reads_the_same_rows_and_only_its_fields() {
    let dir = tempfile::tempdir().expect("tempdir");
    let lake = Lake::open_url(dir.path().to_str().expect("utf8")).expect("open");
    lake.init().await.expect("init");
    let first = parts(&format!(
        "{}, {}",
        study("s1", &[(1, "a"), (2, "b")]),
        study("s2", &[(3, "c")])
    ))
    .await;
    let schema = first.schema();
    lake.create_table("nested", schema.clone())
        .await
        .expect("create");
    lake.write("nested")
        .execute(vec![first])
        .await
        .expect("write");
    // A deletion vector hides s2's old row: the narrowed scan honours it too.
    let second = parts(&study("s2", &[(4, "d"), (5, "e"), (6, "f")])).await;
    let second = cxrlake_lake::cast_batch(&second, &schema).expect("cast");
    lake.write("nested")
        .replace_studies(vec!["s2".into()])
        .deletion_vectors(true)
        .execute(vec![second])
        .await
        .expect("replace");

    let sql = "SELECT study_id, CAST(array_length(answers) AS BIGINT) AS parts, \
               answers[1]['text'] AS main FROM nested ORDER BY 1";
    let full = lake.session().await.expect("session");
    let narrow = lake.session().await.expect("session");
    lake.narrow(&narrow, "nested", "answers", &["answer_id", "text"])
        .await
        .expect("narrow");
    let rows = |ctx: datafusion::prelude::SessionContext| async move {
        pretty_format_batches(&run(&ctx, sql).await)
            .expect("format")
            .to_string()
    };
    let expected = rows(full).await;
    assert!(
        expected.contains("| s2       | 3     | d    |"),
        "{expected}"
    );
    assert_eq!(rows(narrow.clone()).await, expected);
    let units = run(
        &narrow,
        "SELECT sum(u['answer_id']) FROM (SELECT unnest(answers) AS u FROM nested)",
    )
    .await;
    assert_eq!(
        units[0].column(0).as_primitive::<Int64Type>().value(0),
        1 + 2 + 4 + 5 + 6
    );

    // The field left out is gone from the column's type; asking for it fails to plan.
    let answers = narrow
        .table("nested")
        .await
        .expect("table")
        .schema()
        .field_with_name(None, "answers")
        .expect("answers")
        .data_type()
        .clone();
    assert!(!answers.to_string().contains("boxes"), "{answers}");
    assert!(
        narrow
            .sql("SELECT answers[1]['boxes'] FROM nested")
            .await
            .is_err()
    );
    // A field the column lacks and a column that is not a list of structs are refused by name.
    let err = lake
        .narrow(&narrow, "nested", "answers", &["nope"])
        .await
        .expect_err("unknown field");
    assert!(err.to_string().contains("no field 'nope'"), "{err}");
    let err = lake
        .narrow(&narrow, "nested", "study_id", &["x"])
        .await
        .expect_err("not a list");
    assert!(err.to_string().contains("not a list of structs"), "{err}");
}

#[tokio::test]
async fn a_write_on_several_writers_keeps_statistics_for_top_level_columns_only() {
    use datafusion::parquet::file::reader::{FileReader, SerializedFileReader};
    let dir = tempfile::tempdir().expect("tempdir");
    let lake = Lake::open_url(dir.path().to_str().expect("utf8")).expect("open");
    lake.init().await.expect("init");
    let first = parts(&study("s1", &[(1, "a"), (2, "b")])).await;
    let second = parts(&study("s2", &[(3, "c")])).await;
    lake.create_table("nested", first.schema())
        .await
        .expect("create");
    lake.write("nested")
        .writers(2)
        .execute(vec![first, second])
        .await
        .expect("write on two writers");

    let uris = files(&lake, "nested").await;
    assert_eq!(uris.len(), 2, "{uris:?}");
    for uri in uris {
        let path = uri.strip_prefix("file://").unwrap_or(&uri);
        let file = std::fs::File::open(path).expect("data file");
        let reader = SerializedFileReader::new(file).expect("parquet");
        let group = reader.metadata().row_group(0);
        let with: Vec<(String, bool)> = group
            .columns()
            .iter()
            .map(|c| (c.column_path().string(), c.statistics().is_some()))
            .collect();
        // study_id has its minimum and maximum; answer_id, text and the boxes' values none.
        assert_eq!(
            with,
            vec![
                ("study_id".to_string(), true),
                ("answers.list.element.answer_id".to_string(), false),
                ("answers.list.element.text".to_string(), false),
                (
                    "answers.list.element.boxes.list.element.list.element".to_string(),
                    false
                ),
            ],
            "{path}"
        );
    }
    assert_eq!(
        texts(
            &lake,
            "SELECT answers[2]['text'] AS t FROM nested WHERE study_id = 's1'"
        )
        .await,
        vec!["b"]
    );
}
