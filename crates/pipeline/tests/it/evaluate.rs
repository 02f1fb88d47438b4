//! `evaluate::observations_vs_truth`: the rules extractor and lexical mapper against the
//! synthetic corpus's ground truth (with floors that catch regressions), the metric itself on a
//! truth file written from the lake's own observations, and malformed truth files.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use cxrlake_lake::Lake;
use cxrlake_pipeline::evaluate::{FindingRow, NORMAL_STATEMENTS, observations_vs_truth};
use cxrlake_refdefs::RefDefs;
use datafusion::arrow::array::{ArrayRef, AsArray};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::DataType;

use crate::common::extracted_lake;

/// A lake with `studies` synthetic studies ingested, extracted and mapped; the corpus (with its
/// `ground_truth.jsonl`) is in `dir/corpus`.
async fn mapped_lake(dir: &Path, studies: usize, seed: u64) -> (Lake, RefDefs) {
    let (lake, defs) = extracted_lake(dir, studies, seed).await;
    crate::common::run_stage(&lake, "map", &[]).await;
    (lake, defs)
}

/// Every row of `sql` as strings (NULL as "").
async fn rows(lake: &Lake, sql: &str) -> Vec<Vec<String>> {
    let ctx = lake.session().await.expect("session");
    let batches = ctx
        .sql(sql)
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"))
        .collect()
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"));
    let mut out = Vec::new();
    for batch in batches {
        let columns: Vec<ArrayRef> = batch
            .columns()
            .iter()
            .map(|c| cast(c, &DataType::Utf8).expect("utf8"))
            .collect();
        for row in 0..batch.num_rows() {
            out.push(
                columns
                    .iter()
                    .map(|c| c.as_string::<i32>().value(row).to_owned())
                    .collect(),
            );
        }
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_rules_pipeline_recovers_the_synthetic_truth() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (lake, defs) = mapped_lake(dir.path(), 60, 17).await;
    let report = observations_vs_truth(&lake, &defs, &dir.path().join("corpus/ground_truth.jsonl"))
        .await
        .expect("evaluate");
    // Measured (seed 17, rules extractor, lexical embedder): pairs precision 0.985, recall
    // 0.929; names the same; polarity agreement 1.000; regions exact precision 0.423, recall
    // 0.481, lenient 0.550 / 0.606. The floors are about 10 points lower.
    assert_eq!(
        (report.studies, report.truth_studies, report.lake_studies),
        (60, 60, 60)
    );
    assert!(report.pairs.truth >= 60 * 3, "{report}");
    assert!(report.pairs.precision() >= 0.88, "{report}");
    assert!(report.pairs.recall() >= 0.83, "{report}");
    assert!(report.names.precision() >= 0.88, "{report}");
    assert!(report.names.recall() >= 0.83, "{report}");
    assert!(report.polarity_agreement() >= 0.90, "{report}");
    assert!(report.region_statements >= 60 * 2, "{report}");
    assert!(report.regions_exact.precision() >= 0.32, "{report}");
    assert!(report.regions_exact.recall() >= 0.38, "{report}");
    assert!(report.regions_lenient.precision() >= 0.45, "{report}");
    assert!(report.regions_lenient.recall() >= 0.50, "{report}");
    assert!(
        report.regions_lenient.precision() >= report.regions_exact.precision(),
        "{report}"
    );
    assert!(
        report.regions_lenient.recall() >= report.regions_exact.recall(),
        "{report}"
    );
    assert!(report.most_missed(10).len() <= 10);
    // Every truth pair and every predicted pair has its row.
    let summed = |count: fn(&FindingRow) -> usize| report.findings.iter().map(count).sum::<usize>();
    assert_eq!(summed(|r| r.counts.truth), report.pairs.truth);
    assert_eq!(summed(|r| r.counts.predicted), report.pairs.predicted);
}

/// A truth file stating exactly what the lake's observations state, with the normal table
/// applied: for each study, entity and positiveness, the union of the regions of the
/// observations carrying it (as an entity or a parent).
async fn truth_from_observations(lake: &Lake) -> String {
    let normal: Vec<String> = NORMAL_STATEMENTS
        .iter()
        .flat_map(|(entity, findings)| {
            let findings: Vec<&str> = if findings.is_empty() {
                vec![""]
            } else {
                findings.to_vec()
            };
            findings
                .into_iter()
                .map(move |f| format!("('{entity}', '{f}')"))
        })
        .collect();
    let sql = format!(
        "WITH normal(entity, finding) AS (VALUES {normal}),
         obs AS (
             SELECT study_id, obs_id, positiveness, obs_entities, obs_entities_parents, regions
             FROM observations WHERE positiveness IN ('pos', 'neg')
         ),
         entity AS (SELECT study_id, obs_id, positiveness, unnest(obs_entities) AS entity FROM obs),
         scored AS (
             SELECT e.study_id, e.obs_id,
                    CASE WHEN n.entity IS NULL THEN e.entity ELSE n.finding END AS finding,
                    CASE WHEN n.entity IS NULL THEN e.positiveness ELSE 'neg' END AS positiveness
             FROM entity e LEFT JOIN normal n ON e.entity = n.entity AND e.positiveness = 'pos'
         ),
         kept AS (SELECT * FROM scored WHERE finding <> ''),
         parent AS (
             SELECT study_id, obs_id, positiveness, unnest(obs_entities_parents) AS finding FROM obs
         ),
         carrier AS (
             SELECT study_id, obs_id, finding, positiveness FROM kept
             UNION
             SELECT p.study_id, p.obs_id, p.finding, p.positiveness
             FROM parent p JOIN (SELECT DISTINCT study_id, obs_id FROM kept) k
                 ON p.study_id = k.study_id AND p.obs_id = k.obs_id
         ),
         region AS (
             SELECT study_id, obs_id, r['region'] AS region
             FROM (SELECT study_id, obs_id, unnest(regions) AS r FROM obs)
         )
         SELECT t.study_id, t.finding, t.positiveness,
                coalesce(array_to_string(array_agg(DISTINCT region.region), '|'), '')
         FROM (SELECT DISTINCT study_id, finding, positiveness FROM kept) t
         JOIN carrier c
             ON c.study_id = t.study_id AND c.finding = t.finding AND c.positiveness = t.positiveness
         LEFT JOIN region ON region.study_id = c.study_id AND region.obs_id = c.obs_id
         GROUP BY t.study_id, t.finding, t.positiveness
         ORDER BY 1, 2, 3",
        normal = normal.join(", ")
    );
    let mut studies: BTreeMap<String, Vec<serde_json::Value>> = BTreeMap::new();
    for row in rows(lake, "SELECT DISTINCT study_id FROM sentences").await {
        studies.entry(row[0].clone()).or_default();
    }
    for row in rows(lake, &sql).await {
        let regions: Vec<&str> = row[3].split('|').filter(|r| !r.is_empty()).collect();
        studies
            .entry(row[0].clone())
            .or_default()
            .push(serde_json::json!({
                "finding": row[1],
                "positiveness": row[2],
                "certainty": "certain",
                "regions": regions,
                "laterality": null,
                "section": "FINDINGS",
                "sentence": "",
            }));
    }
    let mut text = String::new();
    for (study_id, findings) in studies {
        let line = serde_json::json!({
            "patient_id": "p0",
            "study_id": study_id,
            "findings": findings,
            "indication": null,
            "normal": false,
        });
        writeln!(text, "{line}").expect("write");
    }
    text
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_truth_file_written_from_the_observations_scores_one() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (lake, defs) = mapped_lake(dir.path(), 30, 3).await;
    let truth = dir.path().join("self_truth.jsonl");
    std::fs::write(&truth, truth_from_observations(&lake).await).expect("write truth");

    let report = observations_vs_truth(&lake, &defs, &truth)
        .await
        .expect("evaluate");
    assert_eq!(report.studies, 30, "{report}");
    assert!(report.pairs.truth > 30, "{report}");
    assert_eq!(report.pairs.truth, report.pairs.predicted, "{report}");
    assert_eq!(report.pairs.precision(), 1.0, "{report}");
    assert_eq!(report.pairs.recall(), 1.0, "{report}");
    assert_eq!(report.via_parents, 0, "{report}");
    assert_eq!(report.names.precision(), 1.0, "{report}");
    assert_eq!(report.names.recall(), 1.0, "{report}");
    assert_eq!(report.polarity_agreement(), 1.0, "{report}");
    assert!(report.region_statements > 0, "{report}");
    assert_eq!(report.regions_exact.precision(), 1.0, "{report}");
    assert_eq!(report.regions_exact.recall(), 1.0, "{report}");
    assert_eq!(report.regions_lenient, report.regions_exact, "{report}");
    assert!(report.most_missed(10).is_empty(), "{report}");
    assert!(report.most_false_positives(10).is_empty(), "{report}");

    // Studies the lake does not hold are not evaluated.
    let mut text = std::fs::read_to_string(&truth).expect("read truth");
    text.push_str(r#"{"study_id": "s99999999", "findings": [{"finding": "pneumothorax", "positiveness": "pos", "regions": []}]}"#);
    text.push('\n');
    std::fs::write(&truth, text).expect("write truth");
    let extended = observations_vs_truth(&lake, &defs, &truth)
        .await
        .expect("evaluate");
    assert_eq!((extended.truth_studies, extended.studies), (31, 30));
    assert_eq!(extended.pairs, report.pairs);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_malformed_truth_line_is_an_error_naming_file_and_line() {
    let dir = tempfile::tempdir().expect("tempdir");
    let lake = Lake::open_url(dir.path().join("lake").to_str().expect("utf8"))
        .expect("open")
        .with_session_factory(cxrlake_udfs::session_context_on);
    lake.init().await.expect("init");
    let defs = RefDefs::embedded().expect("refdefs");
    let truth = dir.path().join("ground_truth.jsonl");
    let good = r#"{"study_id": "s1", "findings": [{"finding": "pneumothorax", "positiveness": "neg", "regions": []}]}"#;

    std::fs::write(
        &truth,
        format!("{good}\n\n{{\"study_id\": \"s2\", \"findings\": [\n"),
    )
    .expect("write");
    let err = observations_vs_truth(&lake, &defs, &truth)
        .await
        .expect_err("invalid JSON");
    let message = err.to_string();
    assert!(message.contains("ground_truth.jsonl"), "{message}");
    assert!(message.contains("line 3"), "{message}");

    let bad_polarity = good.replace("\"neg\"", "\"maybe\"");
    std::fs::write(&truth, format!("{good}\n{bad_polarity}\n")).expect("write");
    let message = observations_vs_truth(&lake, &defs, &truth)
        .await
        .expect_err("unknown positiveness")
        .to_string();
    assert!(message.contains("line 2"), "{message}");

    let missing = dir.path().join("missing.jsonl");
    let message = observations_vs_truth(&lake, &defs, &missing)
        .await
        .expect_err("missing file")
        .to_string();
    assert!(message.contains("missing.jsonl"), "{message}");

    // A valid file against an empty lake evaluates nothing.
    std::fs::write(&truth, format!("{good}\n")).expect("write");
    let report = observations_vs_truth(&lake, &defs, &truth)
        .await
        .expect("evaluate");
    assert_eq!(
        (report.truth_studies, report.lake_studies, report.studies),
        (1, 0, 0)
    );
}
