//! `match_concept(text, kind)`: the reference tag of `kind` (`finding`, `region`, `modifier`,
//! `change`) that `text` maps to, as `struct<tag, score>`; `tag` is NULL when no reference tag
//! reaches the threshold (the paper's non-resolved tags).
//!
//! The map stage registers it over the stage's concept index. Every other session has the one
//! that reads its session's settings (`cxrlake.refdefs`, `cxrlake.embedder`, the ONNX files,
//! `cxrlake.match_threshold`), so `SET` changes what it matches:
//!
//! ```sql
//! SELECT match_concept('fluid in the pleural space', 'finding');  -- {tag: pleural effusion, …}
//! SET cxrlake.match_threshold = 0.9;
//! SELECT match_concept('fluid in the pleural space', 'finding');  -- {tag: NULL, …}
//! ```

use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::sync::{Arc, Mutex};

use cxrlake_refdefs::RefDefs;
use cxrlake_schemas::config::CxrlakeConfig;

use datafusion::arrow::array::{Array, AsArray, Float32Builder, StringBuilder, StructArray};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Field, Fields};
use datafusion::common::{Result, exec_datafusion_err, exec_err};
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDFImpl, Signature, Volatility,
};

use cxrlake_map::{ConceptIndex, ConceptKind};

/// `struct<tag: utf8, score: float32>`.
pub fn match_type() -> DataType {
    DataType::Struct(Fields::from(vec![
        Field::new("tag", DataType::Utf8, true),
        Field::new("score", DataType::Float32, true),
    ]))
}

/// Where the function's concept index comes from.
#[derive(Debug)]
enum Concepts {
    /// A stage's index.
    Fixed(Arc<ConceptIndex>),
    /// Built from the session's `cxrlake.*` settings, one per distinct setting.
    FromSettings(Mutex<HashMap<String, Arc<ConceptIndex>>>),
}

/// The `match_concept` scalar function.
#[derive(Debug)]
pub struct MatchConceptFunc {
    concepts: Concepts,
    signature: Signature,
}

impl MatchConceptFunc {
    /// The function over these reference tags.
    pub fn new(concepts: Arc<ConceptIndex>) -> Self {
        Self {
            concepts: Concepts::Fixed(concepts),
            signature: Signature::any(2, Volatility::Immutable),
        }
    }

    /// The function over the reference tags, embedder and threshold of each session's settings.
    pub fn from_settings() -> Self {
        Self {
            concepts: Concepts::FromSettings(Mutex::default()),
            signature: Signature::any(2, Volatility::Immutable),
        }
    }

    fn identity(&self) -> &str {
        match &self.concepts {
            Concepts::Fixed(concepts) => concepts.identity(),
            Concepts::FromSettings(_) => "settings",
        }
    }

    /// The concept index for a session with `config`.
    fn index(&self, config: &CxrlakeConfig) -> Result<Arc<ConceptIndex>> {
        let cache = match &self.concepts {
            Concepts::Fixed(concepts) => return Ok(concepts.clone()),
            Concepts::FromSettings(cache) => cache,
        };
        let key = format!(
            "{}\u{1}{}\u{1}{}\u{1}{}\u{1}{}",
            config.refdefs,
            config.embedder,
            config.onnx_model,
            config.onnx_tokenizer,
            config.match_threshold
        );
        let mut cache = cache
            .lock()
            .map_err(|_| exec_datafusion_err!("match_concept: a thread panicked"))?;
        if let Some(index) = cache.get(&key) {
            return Ok(index.clone());
        }
        let defs = match config.refdefs.as_str() {
            "" => RefDefs::embedded(),
            dir => RefDefs::load(std::path::Path::new(dir)),
        }
        .map_err(|e| exec_datafusion_err!("match_concept: cxrlake.refdefs: {e}"))?;
        let embedder =
            cxrlake_embed::load(&config.embedder, &config.onnx_model, &config.onnx_tokenizer)
                .map_err(|e| exec_datafusion_err!("match_concept: {e}"))?;
        let index = Arc::new(
            ConceptIndex::new(
                &defs,
                embedder,
                config.match_threshold as f32,
                HashMap::new(),
            )
            .map_err(|e| exec_datafusion_err!("match_concept: {e}"))?,
        );
        cache.insert(key, index.clone());
        Ok(index)
    }
}

impl PartialEq for MatchConceptFunc {
    fn eq(&self, other: &Self) -> bool {
        self.identity() == other.identity()
    }
}

impl Eq for MatchConceptFunc {}

impl Hash for MatchConceptFunc {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.identity().hash(state);
    }
}

impl ScalarUDFImpl for MatchConceptFunc {
    fn name(&self) -> &str {
        "match_concept"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _args: &[DataType]) -> Result<DataType> {
        Ok(match_type())
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let rows = args.number_rows;
        let concepts = self.index(&CxrlakeConfig::of(&args.config_options))?;
        let args = ColumnarValue::values_to_arrays(&args.args)?;
        let texts = cast(&args[0], &DataType::Utf8)?;
        let kinds = cast(&args[1], &DataType::Utf8)?;
        let (texts, kinds) = (texts.as_string::<i32>(), kinds.as_string::<i32>());
        let mut tags = StringBuilder::with_capacity(rows, rows * 16);
        let mut scores = Float32Builder::with_capacity(rows);
        for row in 0..texts.len() {
            if texts.is_null(row) || kinds.is_null(row) {
                tags.append_null();
                scores.append_null();
                continue;
            }
            let Some(kind) = ConceptKind::parse(kinds.value(row)) else {
                return exec_err!(
                    "match_concept: kind '{}' is not one of finding, region, modifier, change",
                    kinds.value(row)
                );
            };
            let hit = concepts
                .best(kind, texts.value(row))
                .map_err(|e| exec_datafusion_err!("match_concept: {e}"))?;
            match hit {
                Some(hit) => {
                    tags.append_value(hit.tag);
                    scores.append_value(hit.score);
                }
                None => {
                    tags.append_null();
                    scores.append_null();
                }
            }
        }
        let DataType::Struct(fields) = match_type() else {
            unreachable!("match_type is a struct")
        };
        let array = StructArray::try_new(
            fields,
            vec![Arc::new(tags.finish()), Arc::new(scores.finish())],
            None,
        )?;
        Ok(ColumnarValue::Array(Arc::new(array)))
    }
}
