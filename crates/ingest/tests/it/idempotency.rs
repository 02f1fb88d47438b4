//! Re-ingesting commits nothing; a folder with more studies appends only the new ones.

use crate::common::{SOURCE_TABLES, corpus, count, dump, lake, run, versions};

#[tokio::test]
async fn reingesting_the_same_files_commits_nothing() {
    let (_dir, synth) = corpus(80, 3, false);
    let (_lake_dir, lake) = lake().await;
    let first = run(&lake, vec![synth.out.clone()]).await;
    assert_eq!(first.quarantined(), 0, "{first}");
    assert!(
        first.table("reports").expect("reports").commits >= 2,
        "chunked commits"
    );
    let before = versions(&lake).await;

    let again = run(&lake, vec![synth.out.clone()]).await;
    assert_eq!(versions(&lake).await, before, "no table got a new version");
    assert_eq!(again.rows_new(), 0, "{again}");
    assert_eq!(again.totals().commits, 0);
    let reports = again.table("reports").expect("reports");
    assert_eq!(reports.rows_present, synth.studies as u64);
    assert_eq!(
        again.table("cxas_masks").expect("masks").rows_present,
        synth.masks as u64
    );
    assert_eq!(
        count(&lake, "SELECT count(*) FROM reports").await,
        synth.studies as i64
    );
}

#[tokio::test]
async fn a_folder_with_more_studies_appends_only_the_new_ones() {
    let (_dir, synth) = corpus(150, 5, false);
    let root = &synth.out;
    let (_lake_dir, lake) = lake().await;
    let first = run(
        &lake,
        vec![
            root.join("files/p10"),
            root.join("files/p11"),
            root.join("files/p12"),
        ],
    )
    .await;
    let first_reports = first.table("reports").expect("reports").rows_new;
    assert!(first_reports > 0 && first_reports < synth.studies as u64);

    let second = run(&lake, vec![root.clone()]).await;
    let reports = second.table("reports").expect("reports");
    assert_eq!(reports.rows_present, first_reports);
    assert_eq!(reports.rows_new, synth.studies as u64 - first_reports);
    assert_eq!(second.quarantined(), 0, "{second}");

    // The same tables as ingesting the whole folder at once.
    let (_fresh_dir, fresh) = crate::common::lake().await;
    run(&fresh, vec![root.clone()]).await;
    for table in SOURCE_TABLES {
        assert!(
            dump(&lake, table).await == dump(&fresh, table).await,
            "{table}"
        );
    }
}
