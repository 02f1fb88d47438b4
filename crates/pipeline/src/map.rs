//! The `map` stage (`sql/map.sql`): `observations` from `observations_raw`, every extracted tag
//! mapped onto the reference definitions with an embedder (paper 000, E.1.3).
//!
//! The lexical embedder (default) needs no set-up and is not cached: computing a vector takes
//! microseconds. A model embedder (`onnx`) embeds each distinct text once: vectors are read
//! from the lake's `embeddings` table (key: embedder id + sha256 of the text), the missing
//! ones are computed in batches before the SQL runs, and the new ones are appended afterwards,
//! so a rerun, or a rerun after a reference-definition edit, embeds nothing it has seen.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use cxrlake_embed::{Embedder, LexicalEmbedder, OnnxEmbedder};
use cxrlake_lake::{Lake, StageCommit};
use cxrlake_map::{ConceptIndex, Reference};
use cxrlake_refdefs::RefDefs;
use cxrlake_udfs::map::{MapObservationsFunc, MatchConceptFunc};
use datafusion::arrow::array::{AsArray, ListArray, RecordBatch, StringArray};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Float32Type};
use datafusion::logical_expr::ScalarUDF;
use datafusion::prelude::SessionContext;
use datafusion::scalar::ScalarValue;
use serde_json::json;
use sha2::Digest;

use crate::error::{PipelineError, Result};
use crate::scope::Scope;
use crate::stage::{ChunkedStage, collect, count, first_column_strings, sql_hash};

/// Stage name (= SQL file name = module name).
pub const STAGE: &str = "map";
/// The stage's SQL.
pub const SQL: &str = include_str!("../../../sql/map.sql");

/// Tables the stage reads.
const INPUTS: [&str; 1] = ["observations_raw"];
/// Texts per batch handed to a model embedder.
const EMBED_BATCH: usize = 64;

/// Which embedder maps tags.
#[derive(Debug, Clone, Default)]
pub enum EmbedderChoice {
    /// Hashed words and character trigrams (no set-up).
    #[default]
    Lexical,
    /// A sentence-transformer exported to ONNX with its tokenizer.json.
    Onnx {
        /// The model file.
        model: PathBuf,
        /// Its tokenizer.json.
        tokenizer: PathBuf,
    },
}

impl EmbedderChoice {
    /// The choice named by the configuration keys `embedder`, `onnx_model`, `onnx_tokenizer`.
    pub fn from_settings(name: &str, model: &str, tokenizer: &str) -> Result<Self> {
        match name {
            "" | "lexical" => Ok(Self::Lexical),
            "onnx" if !model.is_empty() && !tokenizer.is_empty() => Ok(Self::Onnx {
                model: model.into(),
                tokenizer: tokenizer.into(),
            }),
            "onnx" => Err(PipelineError::Config(
                "embedder onnx needs onnx_model and onnx_tokenizer (--onnx-model FILE \
                 --onnx-tokenizer FILE)"
                    .into(),
            )),
            other => Err(PipelineError::Config(format!(
                "unknown embedder '{other}': use lexical or onnx"
            ))),
        }
    }

    /// Loads the embedder.
    pub fn load(&self) -> Result<Arc<dyn Embedder>> {
        match self {
            Self::Lexical => Ok(Arc::new(LexicalEmbedder::new())),
            Self::Onnx { model, tokenizer } => Ok(Arc::new(
                OnnxEmbedder::load(model, tokenizer, 128).map_err(PipelineError::Embed)?,
            )),
        }
    }
}

/// Options of the map stage.
#[derive(Debug, Clone)]
pub struct MapOptions {
    /// The embedder.
    pub embedder: EmbedderChoice,
    /// Cosine similarity a tag needs to map onto a reference tag.
    pub threshold: f32,
    /// Patients per chunk.
    pub chunk_patients: usize,
}

impl Default for MapOptions {
    fn default() -> Self {
        Self {
            embedder: EmbedderChoice::Lexical,
            threshold: cxrlake_embed::DEFAULT_MATCH_THRESHOLD,
            chunk_patients: 5000,
        }
    }
}

/// What a map run did.
#[derive(Debug, Clone, PartialEq)]
pub struct MapSummary {
    /// The `embedder` value of every row.
    pub embedder: String,
    /// Raw observations read.
    pub raw_observations: usize,
    /// Observations written.
    pub observations: usize,
    /// Texts embedded by this run (0 for the lexical embedder, which is not cached).
    pub embedded: usize,
    /// Vectors read from the `embeddings` cache.
    pub cached: usize,
    /// Wall time in seconds.
    pub seconds: f64,
}

impl std::fmt::Display for MapSummary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "map ({}): {} raw observations → {} observations in {:.1} s ({:.0} observations/s); {} texts embedded, {} from the embeddings cache",
            self.embedder,
            self.raw_observations,
            self.observations,
            self.seconds,
            self.raw_observations as f64 / self.seconds.max(1e-9),
            self.embedded,
            self.cached,
        )
    }
}

/// Every text the mapping matches, by study: the tags of the raw observations and the
/// (region, entity part) pairs `map_observations` tries.
pub(crate) const TEXTS_BY_STUDY_SQL: &str = "
SELECT study_id, text FROM (
    SELECT study_id, entity AS text FROM observations_raw
    UNION ALL SELECT study_id, name FROM observations_raw
    UNION ALL SELECT study_id, summary_sentence FROM observations_raw
    UNION ALL SELECT study_id, probability FROM observations_raw
    UNION ALL SELECT study_id, change FROM observations_raw
    UNION ALL SELECT study_id, unnest(regions) FROM observations_raw
    UNION ALL SELECT study_id, unnest(modifiers) FROM observations_raw
    UNION ALL SELECT study_id, trim(region) || ' ' || trim(part) FROM (
        SELECT study_id, region, unnest(parts) AS part FROM (
            SELECT study_id,
                   unnest(regions) AS region,
                   string_to_array(regexp_replace(entity, ' and |;|/', ',', 'g'), ',') AS parts
            FROM observations_raw
        )
    )
) WHERE text IS NOT NULL AND text <> ''";

/// The distinct texts the mapping matches (a model embedder embeds them up front).
pub(crate) fn texts_sql() -> String {
    format!("SELECT DISTINCT text FROM ({TEXTS_BY_STUDY_SQL})")
}

/// Runs the stage over the whole lake and replaces `observations`.
pub async fn run(lake: &Lake, defs: &RefDefs, options: &MapOptions) -> Result<MapSummary> {
    Ok(run_scoped(lake, defs, options, &Scope::All, false).await?.0)
}

/// Runs the stage over `scope`'s studies and replaces their rows; returns the studies whose
/// observations changed (with `detect`, else the scope).
pub async fn run_scoped(
    lake: &Lake,
    defs: &RefDefs,
    options: &MapOptions,
    scope: &Scope,
    detect: bool,
) -> Result<(MapSummary, Scope)> {
    let started = Instant::now();
    let ctx = lake.session().await?;
    let embedder = options.embedder.load()?;
    let mut texts = Vec::new();
    let mut preloaded = HashMap::new();
    if !embedder.is_cheap() {
        texts = first_column_strings(STAGE, &collect(&ctx, STAGE, &texts_sql()).await?)?;
        texts.extend(ConceptIndex::reference_texts(defs));
        preloaded = read_cache(&ctx, embedder.id(), &texts).await?;
    }
    let cached = preloaded.len();
    let concepts = Arc::new(
        ConceptIndex::new(defs, embedder.clone(), options.threshold, preloaded)
            .map_err(PipelineError::Embed)?,
    );
    concepts
        .prefetch(&texts, EMBED_BATCH)
        .map_err(PipelineError::Embed)?;
    let reference = Arc::new(Reference::new(defs));
    let raw_observations = count(&ctx, STAGE, "SELECT count(*) FROM observations_raw").await?;
    let stage = ChunkedStage {
        stage: STAGE,
        sql: SQL,
        inputs: &INPUTS,
        functions: vec![
            ScalarUDF::from(MatchConceptFunc::new(concepts.clone())),
            ScalarUDF::from(MapObservationsFunc::new(concepts.clone(), reference)),
        ],
        params: vec![("embedder", ScalarValue::from(embedder.id()))],
        chunk_patients: options.chunk_patients,
    };
    let fingerprint = json!({
        "inputs": stage.input_versions(lake).await?,
        "refdefs": defs.fingerprint(),
        "embedder": embedder.id(),
        "threshold": options.threshold,
        "sql": sql_hash(SQL),
        "code": env!("CARGO_PKG_VERSION"),
    });
    let run = stage
        .run_scoped(lake, &HashMap::new(), &fingerprint, scope, detect)
        .await?;
    let rows = run.rows;
    let computed = concepts.computed_vectors();
    if !computed.is_empty() {
        write_cache(lake, embedder.id(), &computed).await?;
    }
    let summary = MapSummary {
        embedder: embedder.id().to_string(),
        raw_observations,
        observations: rows.iter().map(|(_, n)| n).sum(),
        embedded: computed.len(),
        cached,
        seconds: started.elapsed().as_secs_f64(),
    };
    Ok((summary, run.changed))
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
    for batch in collect(ctx, STAGE, &sql).await? {
        let hashes = cast(batch.column(0), &DataType::Utf8)
            .map_err(|e| PipelineError::query(STAGE, e.into()))?;
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
        .map_err(|e| PipelineError::query(STAGE, e.into()))?;
    let batch = RecordBatch::try_new(
        schema,
        vec![
            Arc::new(embedders),
            Arc::new(hashes),
            Arc::new(texts),
            lists,
        ],
    )
    .map_err(|e| PipelineError::query(STAGE, e.into()))?;
    let commit =
        StageCommit::new(STAGE).with_metrics(json!({ "embedded": n, "embedder": embedder }));
    lake.write("embeddings")
        .append()
        .commit(commit)
        .execute(vec![batch])
        .await?;
    Ok(())
}
