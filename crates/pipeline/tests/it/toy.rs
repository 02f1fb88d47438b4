//! A toy flavour registered by a test, without touching the core: one stage, one SQL file
//! (`toy/finding_counts.sql`), one table and one definition, declared as a [`Flavour`] the test
//! passes to the pipeline (as `cxrlake-flavours` passes the real ones). Kept with `--flavour`, it
//! runs chunk by chunk through the same runner, commits typed fingerprints, is up to date on a
//! rerun, recomputes exactly the studies whose scene graphs were rewritten, and a change of its
//! setting reruns it everywhere; no longer kept, it stays in the plan, held.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use async_trait::async_trait;
use cxrlake_pipeline::flavours::Flavour;
use cxrlake_pipeline::{
    Chunking, Coverage, Fingerprint, Pipeline, Prepared, Result, RunMode, Scope, Stage, StageDef,
    Writes,
};
use cxrlake_schemas::TableDef;
use cxrlake_schemas::types::{key, text};
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::scalar::ScalarValue;

use crate::common::{number, open_lake, strings};

fn finding_counts_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        key("patient_id"),
        key("study_id"),
        Field::new("positive", DataType::Int64, false),
        Field::new("negative", DataType::Int64, false),
        text("label"),
    ]))
}

static TABLE: TableDef = TableDef {
    name: "finding_counts",
    key: &["study_id"],
    replace_by: Some("study_id"),
    deletion_vectors: false,
    doc: "positive and negative top-level observations per study",
    schema: finding_counts_schema,
};

static DEF: StageDef = StageDef {
    name: "finding_counts",
    doc: "finding_counts: positive and negative observations per study",
    sql: include_str!("toy/finding_counts.sql"),
    file: "crates/pipeline/tests/it/toy/finding_counts.sql",
    inputs: &["scene_graphs"],
    side_inputs: &[],
    outputs: &["finding_counts"],
    settings: &["seed"],
    chunking: Chunking::Patients { default: 2 },
    writes: Writes::Replace,
    coverage: Coverage::PerStudy,
    detects_changes: true,
    reads_synonyms: true,
};

/// The toy stage: its label is `seed-<cxrlake.seed>`, so that a setting changes its rows.
#[derive(Debug)]
struct FindingCounts;

#[async_trait]
impl Stage for FindingCounts {
    fn def(&self) -> &'static StageDef {
        &DEF
    }

    fn table(&self, name: &str) -> Option<TableDef> {
        (name == TABLE.name).then_some(TABLE)
    }

    async fn definitions(&self, pipeline: &Pipeline) -> Result<BTreeMap<String, String>> {
        Ok(BTreeMap::from([(
            "seed".to_string(),
            pipeline.config().seed.to_string(),
        )]))
    }

    async fn prepare(&self, pipeline: &Pipeline, _mode: RunMode) -> Result<Prepared> {
        let label = format!("seed-{}", pipeline.config().seed);
        Ok(Prepared::new(
            Vec::new(),
            vec![("label", ScalarValue::from(label))],
        ))
    }
}

/// The toy flavour: what a flavour crate declares in `src/stages/mod.rs`.
const TOY: Flavour = Flavour {
    name: "toy",
    doc: "positive and negative observations per study",
    stages: || vec![Arc::new(FindingCounts)],
    check: |pipeline| {
        if pipeline.config().seed > 1000 {
            return Err(cxrlake_pipeline::PipelineError::setting(
                "seed",
                "toy: seed ≤ 1000".into(),
            ));
        }
        Ok(())
    },
    functions: Vec::new,
};

async fn toy_pipeline(lake: &cxrlake_lake::Lake, settings: &[(&str, &str)]) -> Pipeline {
    let mut builder = Pipeline::builder(lake.clone(), &[TOY])
        .add_flavours(&["toy".to_string()])
        .progress(true);
    for (key, value) in settings {
        builder = builder.set(key, value).expect("setting");
    }
    builder.open().await.expect("pipeline")
}

fn scope_of(plan: &cxrlake_pipeline::Plan, stage: &str) -> Scope {
    plan.stage(stage).expect("stage in plan").scope.clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_toy_stage_runs_incrementally_through_the_same_runner() {
    let dir = tempfile::tempdir().expect("tempdir");
    let corpus = dir.path().join("corpus");
    cxrlake_synth::generate(&cxrlake_synth::SynthOptions::new(14, 9, &corpus)).expect("synth");
    let lake = open_lake(&dir.path().join("lake")).await;
    cxrlake_ingest::ingest(&lake, &cxrlake_ingest::IngestOptions::new(vec![corpus]))
        .await
        .expect("ingest");

    let pipeline = toy_pipeline(&lake, &[]).await;
    assert_eq!(pipeline.stage_names().last(), Some(&"finding_counts"));
    let record = pipeline.run(false, &mut |_| {}).await.expect("first run");
    let first = record
        .stage("finding_counts")
        .and_then(|s| s.report.clone())
        .expect("the toy stage ran");
    assert_eq!(first.rows("finding_counts"), 14, "{first}");
    assert!(first.chunks >= 2, "chunked by 2 patients: {first}");
    // Its rows are what the SQL says, computed straight from the scene graphs.
    let expected = "SELECT study_id || ':' || CAST(n AS VARCHAR) FROM (SELECT study_id, \
                    count(*) FILTER (WHERE o['positiveness'] = 'pos' AND o['child_level'] = 0) AS n \
                    FROM (SELECT study_id, unnest(observations) AS o FROM scene_graphs) \
                    GROUP BY study_id) ORDER BY 1";
    let computed = "SELECT study_id || ':' || CAST(positive AS VARCHAR) FROM finding_counts \
                    WHERE positive > 0 ORDER BY 1";
    let direct: Vec<String> = strings(&lake, expected)
        .await
        .into_iter()
        .filter(|row| !row.ends_with(":0"))
        .collect();
    assert_eq!(strings(&lake, computed).await, direct);
    assert_eq!(
        strings(&lake, "SELECT DISTINCT label FROM finding_counts").await,
        ["seed-0"]
    );
    // Every commit carries the typed fingerprint of this run.
    let history = lake
        .history("finding_counts", Some(100))
        .await
        .expect("history");
    let commits: Vec<Fingerprint> = history
        .iter()
        .filter_map(|c| c.stage.as_ref())
        .filter(|s| s.stage == "finding_counts")
        .map(|s| Fingerprint::from_json(&s.fingerprint).expect("typed fingerprint"))
        .collect();
    assert_eq!(commits.len(), first.chunks);
    assert!(commits.iter().all(|f| f.run == pipeline.run_id()));
    assert_eq!(commits[0].definitions["seed"], "0");
    assert!(commits[0].inputs.contains_key("scene_graphs"));

    // Nothing changed: up to date.
    let plan = toy_pipeline(&lake, &[])
        .await
        .plan(false)
        .await
        .expect("plan");
    assert!(scope_of(&plan, "finding_counts").is_empty(), "{plan}");

    // Two studies' scene graphs rewritten: the toy stage recomputes exactly those.
    let two: BTreeSet<String> = strings(
        &lake,
        "SELECT study_id FROM scene_graphs ORDER BY 1 LIMIT 2",
    )
    .await
    .into_iter()
    .collect();
    let pipeline = toy_pipeline(&lake, &[]).await;
    pipeline
        .run_stage_over("graph", &Scope::Studies(two.clone()), false)
        .await
        .expect("graph over two studies");
    let plan = pipeline.plan(false).await.expect("plan");
    assert_eq!(
        scope_of(&plan, "finding_counts"),
        Scope::Studies(two.clone()),
        "{plan}"
    );
    let record = pipeline
        .run(false, &mut |_| {})
        .await
        .expect("incremental run");
    let toy = record.stage("finding_counts").expect("toy");
    assert_eq!(toy.scope, Scope::Studies(two));
    assert_eq!(
        number(&lake, "SELECT count(*) FROM finding_counts").await,
        14
    );

    // Its setting changed: every study, with the reason.
    let plan = toy_pipeline(&lake, &[("seed", "7")])
        .await
        .plan(false)
        .await
        .expect("plan");
    let toy = plan.stage("finding_counts").expect("toy");
    assert!(toy.scope.is_all(), "{plan}");
    assert!(toy.reasons.iter().any(|r| r == "seed 0 → 7"), "{plan}");
    toy_pipeline(&lake, &[("seed", "7")])
        .await
        .run(false, &mut |_| {})
        .await
        .expect("run with seed 7");
    assert_eq!(
        strings(&lake, "SELECT DISTINCT label FROM finding_counts").await,
        ["seed-7"]
    );

    // Its check runs before a run is recorded.
    let refused = toy_pipeline(&lake, &[("seed", "5000")])
        .await
        .run(false, &mut |_| {})
        .await
        .expect_err("the flavour's check");
    assert!(refused.to_string().contains("toy: seed"), "{refused}");

    // No longer kept: planned (held), not run.
    let held = Pipeline::builder(lake.clone(), &[TOY])
        .remove_flavours(&["toy".to_string()])
        .open()
        .await
        .expect("pipeline");
    assert!(held.is_held("finding_counts"));
    assert_eq!(held.config().flavours, "");
    assert!(
        held.plan(false)
            .await
            .expect("plan")
            .stage("finding_counts")
            .is_some()
    );
}
