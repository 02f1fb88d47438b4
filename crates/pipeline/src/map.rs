//! The `map` stage (`sql/map.sql`): `observations` from `observations_raw`, every extracted tag
//! mapped onto the reference definitions with an embedder (paper 000, E.1.3), by crate
//! `cxrlake-map`.
//!
//! The lexical embedder (default) needs no set-up and is not cached: computing a vector takes
//! microseconds. A model embedder (`onnx`) embeds each distinct text once: vectors are read
//! from the lake's `embeddings` table (key: embedder id + sha256 of the text), the missing
//! ones are computed in batches before the SQL runs, and the new ones are appended afterwards,
//! so a rerun, or a rerun after a reference-definition edit, embeds nothing it has seen.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

use async_trait::async_trait;
use cxrlake_embed::Embedder;
use cxrlake_lake::{Lake, StageCommit};
use cxrlake_map::{ConceptIndex, ConceptKind, Reference};
use cxrlake_refdefs::RefDefs;
use cxrlake_udfs::map::{MapObservationsFunc, MatchConceptFunc};
use cxrlake_udfs::portable::Recipe;
use datafusion::arrow::array::{AsArray, ListArray, RecordBatch, StringArray};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Float32Type};
use datafusion::logical_expr::ScalarUDF;
use datafusion::prelude::SessionContext;
use datafusion::scalar::ScalarValue;
use serde_json::json;
use sha2::Digest;

use crate::error::{PipelineError, Result};
use crate::fingerprint::Fingerprint;
use crate::incremental::{StagePlan, number, refdefs_change, rescope_other_definitions};
use crate::pipeline::Pipeline;
use crate::refdefs::mentions;
use crate::scope::Scope;
use crate::sql::{collect, count, first_column_strings};
use crate::stage::{
    Chunking, Coverage, Metrics, Prepared, RunHooks, RunMode, Stage, StageDef, StageReport, Writes,
    recipe_functions,
};

/// The stage's declaration.
pub static DEF: StageDef = StageDef {
    name: "map",
    doc: "observations: extracted tags mapped onto the reference definitions",
    sql: include_str!("../../../sql/map.sql"),
    file: "sql/map.sql",
    inputs: &["observations_raw"],
    side_inputs: &[],
    outputs: &["observations"],
    settings: &[
        "refdefs",
        "embedder",
        "onnx_model",
        "onnx_tokenizer",
        "match_threshold",
        "chunk_patients",
    ],
    chunking: Chunking::Patients { default: 5000 },
    writes: Writes::Replace,
    coverage: Coverage::PerStudy,
    detects_changes: true,
    reads_synonyms: true,
};

/// Texts per batch handed to a model embedder.
const EMBED_BATCH: usize = 64;

/// The `map` stage.
#[derive(Debug)]
pub struct Map;

/// `(study_id, kind, text)` of every text the mapping looks up: the stage's own `studies`
/// statement (`sql/map.sql`) with `map_texts`, the one splitting rule `map_observations` uses.
fn texts_by_study_sql() -> Result<String> {
    let studies = crate::sql::statements(DEF.file, DEF.sql, &|t| DEF.outputs.contains(&t))?
        .into_iter()
        .find(|s| s.name == "studies")
        .ok_or_else(|| PipelineError::Sql {
            file: DEF.file.into(),
            reason: "no `-- @step studies` statement (the studies' raw observations)".into(),
        })?;
    Ok(format!(
        "SELECT study_id, t['kind'] AS kind, t['text'] AS text \
         FROM (SELECT study_id, unnest(map_texts(raw)) AS t FROM ({}))",
        studies.sql
    ))
}

/// The distinct texts the mapping looks up (a model embedder embeds them up front).
fn texts_sql() -> Result<String> {
    Ok(format!(
        "SELECT DISTINCT text FROM ({})",
        texts_by_study_sql()?
    ))
}

/// The match threshold as the mapping uses it.
fn threshold(pipeline: &Pipeline) -> f32 {
    pipeline.config().match_threshold as f32
}

#[async_trait]
impl Stage for Map {
    fn def(&self) -> &'static StageDef {
        &DEF
    }

    async fn definitions(&self, pipeline: &Pipeline) -> Result<BTreeMap<String, String>> {
        Ok(BTreeMap::from([
            ("refdefs".into(), pipeline.defs().fingerprint().to_string()),
            ("embedder".into(), pipeline.embedder()?.id().to_string()),
            ("match_threshold".into(), threshold(pipeline).to_string()),
        ]))
    }

    async fn prepare(&self, pipeline: &Pipeline, _mode: RunMode) -> Result<Prepared> {
        let defs = pipeline.defs();
        let threshold = threshold(pipeline);
        if !(threshold.is_finite() && threshold <= 1.0) {
            return Err(PipelineError::setting(
                "match_threshold",
                format!(
                    "cxrlake.match_threshold must be a cosine similarity of at most 1, got {threshold}"
                ),
            ));
        }
        let embedder = pipeline.embedder()?;
        let params = vec![("embedder", ScalarValue::from(embedder.id()))];
        if embedder.is_cheap() {
            // Recomputed wherever it runs, nothing cached: the functions can travel.
            let recipe = Recipe::LexicalMap { threshold };
            return Ok(
                Prepared::new(recipe_functions("map", recipe, defs)?, params).with_hooks(
                    MapHooks {
                        concepts: None,
                        embedder,
                        cached: 0,
                    },
                ),
            );
        }
        let ctx = pipeline.lake().session().await?;
        let mut texts = first_column_strings("map", &collect(&ctx, "map", &texts_sql()?).await?)?;
        texts.extend(ConceptIndex::reference_texts(defs));
        let preloaded = read_cache(&ctx, embedder.id(), &texts).await?;
        let cached = preloaded.len();
        let concepts = Arc::new(
            ConceptIndex::new(defs, embedder.clone(), threshold, preloaded)
                .map_err(PipelineError::Embed)?,
        );
        concepts
            .prefetch(&texts, EMBED_BATCH)
            .map_err(PipelineError::Embed)?;
        let reference = Arc::new(Reference::new(defs));
        Ok(Prepared::new(
            vec![
                ScalarUDF::from(MatchConceptFunc::new(concepts.clone())),
                ScalarUDF::from(MapObservationsFunc::new(concepts.clone(), reference)),
            ],
            params,
        )
        .with_hooks(MapHooks {
            concepts: Some(concepts),
            embedder,
            cached,
        }))
    }

    async fn rescope(
        &self,
        pipeline: &Pipeline,
        last: &Fingerprint,
        now: &BTreeMap<String, String>,
        plan: &mut StagePlan,
    ) -> Result<()> {
        rescope_other_definitions(last, now, plan, &["refdefs", "match_threshold"]);
        if plan.scope.is_all() {
            return Ok(());
        }
        let old_threshold = number(&last.definitions, "match_threshold").unwrap_or(f64::NAN) as f32;
        let threshold_changed = old_threshold != threshold(pipeline);
        let change = refdefs_change(pipeline, last).await?;
        let old_defs = match &change {
            Some(Ok(c)) if c.structural => {
                plan.all(c.describe());
                return Ok(());
            }
            Some(Err(reason)) => {
                plan.all(reason.clone());
                return Ok(());
            }
            Some(Ok(c)) => Some(&c.old),
            None => None,
        };
        if !threshold_changed && old_defs.is_none() {
            return Ok(());
        }
        let terms = match &change {
            Some(Ok(c)) => c.terms.clone(),
            _ => BTreeSet::new(),
        };
        let studies = remapped_studies(
            pipeline,
            old_defs.unwrap_or(pipeline.defs()),
            old_threshold,
            &terms,
        )
        .await?;
        let mut why = Vec::new();
        if threshold_changed {
            why.push(format!(
                "match threshold {old_threshold} → {}",
                threshold(pipeline)
            ));
        }
        if let Some(Ok(c)) = &change {
            why.push(c.describe());
        }
        plan.note(format!(
            "{}: {} with a tag whose match changed",
            why.join("; "),
            studies.describe()
        ));
        plan.scope.extend(&studies);
        Ok(())
    }

    fn describe(&self, report: &StageReport) -> String {
        format!(
            "map ({}): {} raw observations → {} observations in {:.1} s ({:.0} observations/s); \
             {} texts embedded, {} from the embeddings cache",
            report.metric_text("embedder"),
            report.metric("raw_observations"),
            report.rows("observations"),
            report.seconds,
            report.metric("raw_observations") as f64 / report.seconds.max(1e-9),
            report.metric("embedded"),
            report.metric("cached"),
        )
    }
}

/// The map run's state: the concept index, whose newly computed vectors go to the cache (none
/// for an embedder cheaper than its cache).
struct MapHooks {
    concepts: Option<Arc<ConceptIndex>>,
    embedder: Arc<dyn Embedder>,
    cached: usize,
}

#[async_trait]
impl RunHooks for MapHooks {
    async fn finish(&mut self, pipeline: &Pipeline, scope: &Scope) -> Result<Metrics> {
        let computed = self
            .concepts
            .as_ref()
            .map(|c| c.computed_vectors())
            .unwrap_or_default();
        if !computed.is_empty() {
            write_cache(pipeline.lake(), self.embedder.id(), &computed).await?;
        }
        let ctx = pipeline.lake().session().await?;
        let raw = match scope {
            Scope::All => count(&ctx, "map", "SELECT count(*) FROM observations_raw").await?,
            Scope::Studies(_) => 0,
        };
        Ok(Metrics::from([
            ("embedder".to_string(), self.embedder.id().into()),
            ("raw_observations".to_string(), raw.into()),
            ("embedded".to_string(), computed.len().into()),
            ("cached".to_string(), self.cached.into()),
        ]))
    }
}

/// Studies with a text whose match differs between the old definitions and threshold and the
/// current ones, or that mentions one of `terms`.
async fn remapped_studies(
    pipeline: &Pipeline,
    old_defs: &RefDefs,
    old_threshold: f32,
    terms: &BTreeSet<String>,
) -> Result<Scope> {
    let ctx = pipeline.lake().session().await?;
    let batches = collect(
        &ctx,
        "map",
        &format!(
            "SELECT DISTINCT kind, text FROM ({})",
            texts_by_study_sql()?
        ),
    )
    .await?;
    let embedder = pipeline.embedder()?;
    let index = |defs: &RefDefs, threshold: f32| {
        ConceptIndex::new(defs, embedder.clone(), threshold, HashMap::new())
            .map_err(PipelineError::Embed)
    };
    let old = index(old_defs, old_threshold)?;
    let new = index(pipeline.defs(), threshold(pipeline))?;
    // Kinds defined alike under one threshold map every text alike.
    let threshold_changed = old_threshold != threshold(pipeline);
    let mut changed: BTreeMap<&'static str, Vec<String>> = BTreeMap::new();
    for batch in &batches {
        let kinds = cast(batch.column(0), &DataType::Utf8)
            .map_err(|e| PipelineError::query("map", e.into()))?;
        let texts = cast(batch.column(1), &DataType::Utf8)
            .map_err(|e| PipelineError::query("map", e.into()))?;
        for (kind, text) in kinds
            .as_string::<i32>()
            .iter()
            .zip(texts.as_string::<i32>().iter())
        {
            let (Some(kind), Some(text)) = (kind.and_then(ConceptKind::parse), text) else {
                continue;
            };
            let lower = text.to_lowercase();
            let mut differs = terms.iter().any(|t| mentions(&lower, t));
            if !differs && (threshold_changed || !kind.defined_alike(old_defs, pipeline.defs())) {
                let key = |h: Option<cxrlake_map::Hit<'_>>| {
                    h.map(|h| (h.tag.to_string(), h.score.to_bits()))
                };
                differs = key(old.best(kind, text).map_err(PipelineError::Embed)?)
                    != key(new.best(kind, text).map_err(PipelineError::Embed)?);
            }
            if differs {
                changed
                    .entry(kind.as_str())
                    .or_default()
                    .push(text.to_string());
            }
        }
    }
    if changed.is_empty() {
        return Ok(Scope::none());
    }
    let quote = |t: &str| format!("'{}'", t.replace('\'', "''"));
    let condition = changed
        .iter()
        .map(|(kind, texts)| {
            let list = texts
                .iter()
                .map(|t| quote(t))
                .collect::<Vec<_>>()
                .join(", ");
            format!("(kind = {} AND text IN ({list}))", quote(kind))
        })
        .collect::<Vec<_>>()
        .join(" OR ");
    let sql = format!(
        "SELECT DISTINCT study_id FROM ({}) WHERE {condition}",
        texts_by_study_sql()?
    );
    let studies = first_column_strings("map", &collect(&ctx, "map", &sql).await?)?;
    Ok(Scope::Studies(studies.into_iter().collect()))
}

fn text_hash(text: &str) -> String {
    hex::encode(sha2::Sha256::digest(text.as_bytes()))
}

/// Cached vectors of `embedder` for `texts`.
async fn read_cache(
    ctx: &SessionContext,
    embedder: &str,
    texts: &[String],
) -> Result<HashMap<String, Vec<f32>>> {
    let wanted: HashMap<String, &str> = texts.iter().map(|t| (text_hash(t), t.as_str())).collect();
    let sql = format!(
        "SELECT text_hash, vector FROM embeddings WHERE embedder = '{}'",
        embedder.replace('\'', "''")
    );
    let mut out = HashMap::new();
    for batch in collect(ctx, "map", &sql).await? {
        let hashes = cast(batch.column(0), &DataType::Utf8)
            .map_err(|e| PipelineError::query("map", e.into()))?;
        let hashes = hashes.as_string::<i32>();
        let vectors = batch.column(1).as_list::<i32>();
        for row in 0..batch.num_rows() {
            if let Some(text) = wanted.get(hashes.value(row)) {
                let vector = vectors.value(row);
                let values = vector.as_primitive::<Float32Type>();
                out.insert(text.to_string(), values.values().to_vec());
            }
        }
    }
    Ok(out)
}

/// Appends `vectors` to the `embeddings` cache.
async fn write_cache(lake: &Lake, embedder: &str, vectors: &[(String, Vec<f32>)]) -> Result<()> {
    let schema = cxrlake_schemas::pipeline::embeddings();
    let n = vectors.len();
    let embedders = StringArray::from(vec![embedder; n]);
    let hashes = StringArray::from_iter_values(vectors.iter().map(|(t, _)| text_hash(t)));
    let texts = StringArray::from_iter_values(vectors.iter().map(|(t, _)| t.as_str()));
    let lists = ListArray::from_iter_primitive::<Float32Type, _, _>(
        vectors
            .iter()
            .map(|(_, v)| Some(v.iter().copied().map(Some).collect::<Vec<_>>())),
    );
    let lists = cast(&lists, schema.field(3).data_type())
        .map_err(|e| PipelineError::query("map", e.into()))?;
    let batch = RecordBatch::try_new(
        schema,
        vec![
            Arc::new(embedders),
            Arc::new(hashes),
            Arc::new(texts),
            lists,
        ],
    )
    .map_err(|e| PipelineError::query("map", e.into()))?;
    let commit =
        StageCommit::new("map").with_metrics(json!({ "embedded": n, "embedder": embedder }));
    lake.write("embeddings")
        .append()
        .commit(commit)
        .execute(vec![batch])
        .await?;
    Ok(())
}
