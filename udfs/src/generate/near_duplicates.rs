//! `near_duplicates(texts, threshold) -> list<int32>`: per text of a list (e.g. one image's
//! generated questions), the 1-based position of the earlier text it nearly repeats (embedding
//! cosine ≥ `threshold`), NULL for a text that is kept: the first of a group of near-duplicates
//! is always the one kept (`cxrlake_generate::lint::near_duplicates`). NULL items are kept and
//! compared with nothing; a NULL list or threshold gives NULL.
//!
//! The embedder is the session's (`cxrlake.embedder`, `cxrlake.onnx_model`,
//! `cxrlake.onnx_tokenizer`), loaded once per distinct setting:
//!
//! ```sql
//! SELECT near_duplicates(['Is there an effusion?', 'Any edema?', 'is there an effusion?'], 0.95);
//! -- [NULL, NULL, 1]
//! ```

use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::sync::{Arc, Mutex};

use cxrlake_embed::Embedder;
use cxrlake_generate::lint::near_duplicates;
use cxrlake_schemas::config::CxrlakeConfig;
use cxrlake_schemas::types::list_of;
use datafusion::arrow::array::{Array, AsArray, Int32Builder, ListBuilder};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Float64Type};
use datafusion::common::{Result, exec_datafusion_err, exec_err, internal_err};
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDFImpl, Signature, Volatility,
};

use crate::args::utf8_list_arg;

/// The `near_duplicates` scalar function.
#[derive(Debug)]
pub struct NearDuplicatesFunc {
    /// The embedder of each distinct `embedder` / `onnx_model` / `onnx_tokenizer` setting.
    embedders: Mutex<HashMap<String, Arc<dyn Embedder>>>,
    signature: Signature,
}

impl Default for NearDuplicatesFunc {
    fn default() -> Self {
        Self::new()
    }
}

impl NearDuplicatesFunc {
    /// Creates the function: a list of texts and a cosine threshold, embedded with each
    /// session's embedder.
    pub fn new() -> Self {
        Self {
            embedders: Mutex::default(),
            signature: Signature::any(2, Volatility::Immutable),
        }
    }

    /// The embedder a session with `config` uses.
    fn embedder(&self, config: &CxrlakeConfig) -> Result<Arc<dyn Embedder>> {
        let key = format!(
            "{}\u{1}{}\u{1}{}",
            config.embedder, config.onnx_model, config.onnx_tokenizer
        );
        let mut embedders = self
            .embedders
            .lock()
            .map_err(|_| exec_datafusion_err!("near_duplicates: a thread panicked"))?;
        if let Some(embedder) = embedders.get(&key) {
            return Ok(embedder.clone());
        }
        let embedder =
            cxrlake_embed::load(&config.embedder, &config.onnx_model, &config.onnx_tokenizer)
                .map_err(|e| exec_datafusion_err!("near_duplicates: {e}"))?;
        embedders.insert(key, embedder.clone());
        Ok(embedder)
    }
}

/// Every instance computes the same function of its session's settings.
impl PartialEq for NearDuplicatesFunc {
    fn eq(&self, _other: &Self) -> bool {
        true
    }
}

impl Eq for NearDuplicatesFunc {}

impl Hash for NearDuplicatesFunc {
    fn hash<H: Hasher>(&self, state: &mut H) {
        "near_duplicates".hash(state);
    }
}

impl ScalarUDFImpl for NearDuplicatesFunc {
    fn name(&self) -> &str {
        "near_duplicates"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _args: &[DataType]) -> Result<DataType> {
        Ok(list_of(DataType::Int32))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let embedder = self.embedder(&CxrlakeConfig::of(&args.config_options))?;
        let args = ColumnarValue::values_to_arrays(&args.args)?;
        if args.len() != 2 {
            return exec_err!("near_duplicates takes two arguments: texts, threshold");
        }
        let lists = utf8_list_arg(&args, 0, "near_duplicates")?;
        let lists = lists.as_list::<i32>();
        let thresholds = cast(&args[1], &DataType::Float64)?;
        let thresholds = thresholds.as_primitive::<Float64Type>();
        let texts = lists.values().as_string::<i32>();

        // The non-NULL items of every row that is asked, embedded in one call.
        let asked = |row: usize| lists.is_valid(row) && thresholds.is_valid(row);
        let offsets = lists.value_offsets();
        let items: Vec<usize> = (0..lists.len())
            .filter(|&row| asked(row))
            .flat_map(|row| offsets[row] as usize..offsets[row + 1] as usize)
            .filter(|&item| texts.is_valid(item))
            .collect();
        let strings: Vec<&str> = items.iter().map(|&item| texts.value(item)).collect();
        let vectors = embedder
            .embed(&strings)
            .map_err(|e| exec_datafusion_err!("near_duplicates: {e}"))?;
        if vectors.len() != strings.len() {
            return internal_err!(
                "near_duplicates: {} vectors for {} texts",
                vectors.len(),
                strings.len()
            );
        }

        // Rows take their vectors in order: the items of a row are consecutive in `items`.
        let mut next = 0;
        let mut out = ListBuilder::new(Int32Builder::new());
        for row in 0..lists.len() {
            if !asked(row) {
                out.append_null();
                continue;
            }
            let positions = offsets[row] as usize..offsets[row + 1] as usize;
            let embedded: Vec<usize> = positions
                .clone()
                .filter(|&item| texts.is_valid(item))
                .collect();
            let row_vectors = &vectors[next..next + embedded.len()];
            next += embedded.len();
            let mut duplicate_of = vec![None; positions.len()];
            for (&item, of) in embedded
                .iter()
                .zip(near_duplicates(row_vectors, thresholds.value(row) as f32))
            {
                // 1-based, as SQL arrays are.
                duplicate_of[item - positions.start] =
                    of.map(|of| (embedded[of] - positions.start + 1) as i32);
            }
            for of in duplicate_of {
                out.values().append_option(of);
            }
            out.append(true);
        }
        Ok(ColumnarValue::Array(Arc::new(out.finish())))
    }
}
