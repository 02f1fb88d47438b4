//! Sentence embeddings from a transformer encoder exported to ONNX (e.g. all-MiniLM-L6-v2).
//!
//! ```text
//!  texts ─tokenizer.json─► ids, attention mask (padded to the batch's longest, ≤ max_length)
//!        ─ONNX Runtime───► token states [batch, seq, dim]
//!        ─mean over tokens where mask = 1─► L2 normalise ─► [batch][dim]
//!                               (token_embeddings: every non-special token ─► L2 normalise
//!                                ─► [batch][token][dim], for BERTScore)
//! ```
//!
//! ONNX Runtime is loaded at run time from the library named by `ORT_DYLIB_PATH`
//! (`pip install onnxruntime==1.31.1` ships `onnxruntime/capi/libonnxruntime.so.1.31.1`).

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use ndarray::{Array2, ArrayViewD, Axis, Ix2, Ix3};
use ort::environment::Environment;
use ort::session::Session;
use ort::value::Tensor;
use sha2::{Digest, Sha256};
use tokenizers::{Encoding, Tokenizer, TruncationParams};

use crate::{EmbedError, Embedder, Result, l2_normalize};

/// Environment variable naming the ONNX Runtime shared library.
pub const ORT_DYLIB_PATH_VAR: &str = "ORT_DYLIB_PATH";
/// Texts per inference call unless set with [`OnnxEmbedder::with_batch_size`].
const DEFAULT_BATCH_SIZE: usize = 32;
/// Hex digits of the model file's sha256 that go into the id.
const SHA_PREFIX_LEN: usize = 16;

/// Which tensor a model input takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum InputKind {
    TokenIds,
    AttentionMask,
    TokenTypeIds,
}

/// An ONNX sentence-embedding model with its tokenizer: attention-mask mean pooling, then
/// L2 normalisation. A model whose output is already pooled (`[batch, dim]`) is only normalised.
pub struct OnnxEmbedder {
    session: Mutex<Session>,
    tokenizer: Tokenizer,
    inputs: Vec<(String, InputKind)>,
    output: String,
    dimension: usize,
    batch_size: usize,
    model_sha256: String,
    /// sha256 of tokenizer.json (hex): another tokenizer gives other vectors.
    tokenizer_sha256: String,
    max_length: usize,
    id: String,
}

impl std::fmt::Debug for OnnxEmbedder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OnnxEmbedder")
            .field("id", &self.id)
            .field("dimension", &self.dimension)
            .field("max_length", &self.max_length)
            .field("batch_size", &self.batch_size)
            .field("inputs", &self.inputs)
            .field("output", &self.output)
            .finish_non_exhaustive()
    }
}

impl OnnxEmbedder {
    /// Loads `model_onnx` and `tokenizer_json`; texts are truncated to `max_length` tokens.
    ///
    /// The id is `onnx:<model file stem>@<model sha256 prefix>+<tokenizer sha256
    /// prefix>/max<max_length>`; name the model with
    /// [`OnnxEmbedder::with_model_name`] when its file is just `model.onnx`.
    pub fn load(model_onnx: &Path, tokenizer_json: &Path, max_length: usize) -> Result<Self> {
        if max_length == 0 {
            return Err(EmbedError::InvalidSetting(
                "max_length must be at least 1 token".into(),
            ));
        }
        let model_bytes = std::fs::read(model_onnx).map_err(|source| EmbedError::Io {
            path: model_onnx.to_path_buf(),
            source,
        })?;
        let model_sha256 = hex::encode(Sha256::digest(&model_bytes));
        let tokenizer_sha256 = std::fs::read(tokenizer_json)
            .map(|bytes| hex::encode(Sha256::digest(&bytes)))
            .map_err(|source| EmbedError::Io {
                path: tokenizer_json.to_path_buf(),
                source,
            })?;

        let mut tokenizer =
            Tokenizer::from_file(tokenizer_json).map_err(|e| EmbedError::Tokenizer {
                context: format!("loading {}", tokenizer_json.display()),
                message: e.to_string(),
            })?;
        // tokenizer.json may pad every text to a fixed length; pad per batch instead.
        tokenizer.with_padding(None);
        tokenizer
            .with_truncation(Some(TruncationParams {
                max_length,
                ..TruncationParams::default()
            }))
            .map_err(|e| EmbedError::Tokenizer {
                context: "setting truncation".into(),
                message: e.to_string(),
            })?;

        let environment = shared_environment()?;
        let session = Session::builder(&environment)
            .and_then(|mut builder| builder.commit_from_memory(&model_bytes))
            .map_err(|source| EmbedError::Ort {
                context: "loading the model",
                source,
            })?;

        let unsupported = |message: String| EmbedError::UnsupportedModel {
            path: model_onnx.to_path_buf(),
            message,
        };
        let inputs = session
            .inputs()
            .iter()
            .map(|input| {
                let kind = match input.name() {
                    "input_ids" => InputKind::TokenIds,
                    "attention_mask" => InputKind::AttentionMask,
                    "token_type_ids" => InputKind::TokenTypeIds,
                    other => {
                        return Err(unsupported(format!(
                            "unknown input `{other}`; expected input_ids, attention_mask, token_type_ids"
                        )));
                    }
                };
                Ok((input.name().to_owned(), kind))
            })
            .collect::<Result<Vec<_>>>()?;
        if !inputs.iter().any(|(_, kind)| *kind == InputKind::TokenIds) {
            return Err(unsupported("no `input_ids` input".into()));
        }
        let output = session
            .outputs()
            .first()
            .ok_or_else(|| unsupported("the model has no outputs".into()))?;
        let dimension = output
            .dtype()
            .tensor_shape()
            .and_then(|shape| shape.last().copied())
            .and_then(|last| usize::try_from(last).ok())
            .filter(|&d| d > 0)
            .ok_or_else(|| {
                unsupported(format!(
                    "output `{}` is not a tensor with a fixed last dimension",
                    output.name()
                ))
            })?;
        let output = output.name().to_owned();

        let name = model_onnx
            .file_stem()
            .map_or_else(|| "model".into(), |s| s.to_string_lossy().into_owned());
        let mut embedder = Self {
            session: Mutex::new(session),
            tokenizer,
            inputs,
            output,
            dimension,
            batch_size: DEFAULT_BATCH_SIZE,
            model_sha256,
            tokenizer_sha256,
            max_length,
            id: String::new(),
        };
        embedder.set_id(&name);
        Ok(embedder)
    }

    /// Names the model in the id (e.g. `all-MiniLM-L6-v2`); the sha256 prefix stays.
    pub fn with_model_name(mut self, name: &str) -> Self {
        self.set_id(name);
        self
    }

    /// Texts per inference call (at least 1). Does not change the embeddings beyond float noise.
    pub fn with_batch_size(mut self, batch_size: usize) -> Result<Self> {
        if batch_size == 0 {
            return Err(EmbedError::InvalidSetting(
                "batch size must be at least 1".into(),
            ));
        }
        self.batch_size = batch_size;
        Ok(self)
    }

    /// Full sha256 (hex) of the model file.
    pub fn model_sha256(&self) -> &str {
        &self.model_sha256
    }

    fn set_id(&mut self, name: &str) {
        let prefix = |sha: &str| sha[..SHA_PREFIX_LEN.min(sha.len())].to_string();
        self.id = format!(
            "onnx:{name}@{}+{}/max{}",
            prefix(&self.model_sha256),
            prefix(&self.tokenizer_sha256),
            self.max_length
        );
    }

    /// Token embeddings for BERTScore-style metrics: the model's last hidden state at every
    /// token of each text (truncated to `max_length`), special tokens such as `[CLS]` and
    /// `[SEP]` excluded, each vector L2-normalised; `[text][token][dim]`. Errors for a model
    /// whose output is already pooled.
    pub fn token_embeddings(&self, texts: &[&str]) -> Result<Vec<Vec<Vec<f32>>>> {
        let mut embeddings = Vec::with_capacity(texts.len());
        for batch in texts.chunks(self.batch_size) {
            embeddings.extend(self.run_batch(batch, |states, encodings, mask| {
                self.token_states(states, encodings, mask)
            })?);
        }
        Ok(embeddings)
    }

    /// The tokens that [`OnnxEmbedder::token_embeddings`] embeds, as the tokenizer spells them
    /// (e.g. word pieces `["pl", "##eur", "##al"]`), for per-token weights such as idf.
    pub fn tokens(&self, texts: &[&str]) -> Result<Vec<Vec<String>>> {
        Ok(self
            .encode(texts)?
            .iter()
            .map(|encoding| {
                encoding
                    .get_tokens()
                    .iter()
                    .zip(encoding.get_special_tokens_mask())
                    .filter(|&(_, &special)| special == 0)
                    .map(|(token, _)| token.clone())
                    .collect()
            })
            .collect())
    }

    fn encode(&self, texts: &[&str]) -> Result<Vec<Encoding>> {
        self.tokenizer
            .encode_batch(texts.to_vec(), true)
            .map_err(|e| EmbedError::Tokenizer {
                context: "encoding texts".into(),
                message: e.to_string(),
            })
    }

    fn embed_batch(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
        self.run_batch(texts, |states, _, mask| self.pool(states, mask))
    }

    /// Tokenizes `texts`, pads them to the longest, runs the model and hands its output states
    /// with the encodings and the attention mask to `consume`.
    fn run_batch<T>(
        &self,
        texts: &[&str],
        consume: impl FnOnce(ArrayViewD<'_, f32>, &[Encoding], &Array2<i64>) -> Result<T>,
    ) -> Result<T> {
        let encodings = self.encode(texts)?;
        let seq_len = encodings
            .iter()
            .map(|e| e.get_ids().len())
            .max()
            .unwrap_or(0)
            .max(1);
        let shape = (texts.len(), seq_len);
        let mut ids = Array2::<i64>::zeros(shape);
        let mut mask = Array2::<i64>::zeros(shape);
        let mut type_ids = Array2::<i64>::zeros(shape);
        for (row, encoding) in encodings.iter().enumerate() {
            let tokens = encoding
                .get_ids()
                .iter()
                .zip(encoding.get_attention_mask())
                .zip(encoding.get_type_ids());
            for (col, ((&id, &m), &t)) in tokens.enumerate() {
                ids[[row, col]] = i64::from(id);
                mask[[row, col]] = i64::from(m);
                type_ids[[row, col]] = i64::from(t);
            }
        }

        let ort_err = |source| EmbedError::Ort {
            context: "running the model",
            source,
        };
        let mut feeds = Vec::with_capacity(self.inputs.len());
        for (name, kind) in &self.inputs {
            let array = match kind {
                InputKind::TokenIds => &ids,
                InputKind::AttentionMask => &mask,
                InputKind::TokenTypeIds => &type_ids,
            };
            feeds.push((
                name.as_str(),
                Tensor::from_array(array.clone()).map_err(ort_err)?,
            ));
        }
        let mut session = self
            .session
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let outputs = session.run(feeds).map_err(ort_err)?;
        let states = outputs
            .get(&self.output)
            .ok_or_else(|| EmbedError::UnsupportedModel {
                path: PathBuf::from(&self.id),
                message: format!("output `{}` missing from the run's results", self.output),
            })?
            .try_extract_array::<f32>()
            .map_err(ort_err)?;
        consume(states, &encodings, &mask)
    }

    fn token_states(
        &self,
        states: ArrayViewD<'_, f32>,
        encodings: &[Encoding],
        mask: &Array2<i64>,
    ) -> Result<Vec<Vec<Vec<f32>>>> {
        let states = states.into_dimensionality::<Ix3>().map_err(|_| {
            EmbedError::UnsupportedModel {
                path: PathBuf::from(&self.id),
                message: format!(
                    "output `{}` is not [batch, sequence, dimension]: token embeddings need the \
                     model's per-token states, not a pooled output",
                    self.output
                ),
            }
        })?;
        let mut texts = Vec::with_capacity(encodings.len());
        for ((tokens, row_mask), encoding) in
            states.outer_iter().zip(mask.outer_iter()).zip(encodings)
        {
            let special = encoding.get_special_tokens_mask();
            let mut vectors = Vec::with_capacity(special.len());
            for ((token, &m), &is_special) in tokens.outer_iter().zip(row_mask).zip(special) {
                if m == 0 || is_special != 0 {
                    continue;
                }
                let mut vector = token.to_vec();
                if vector.len() != self.dimension {
                    return Err(EmbedError::DimensionMismatch {
                        expected: self.dimension,
                        actual: vector.len(),
                    });
                }
                l2_normalize(&mut vector);
                vectors.push(vector);
            }
            texts.push(vectors);
        }
        Ok(texts)
    }

    fn pool(&self, states: ArrayViewD<'_, f32>, mask: &Array2<i64>) -> Result<Vec<Vec<f32>>> {
        let mismatch = |actual: usize| EmbedError::DimensionMismatch {
            expected: self.dimension,
            actual,
        };
        let mut pooled = match states.ndim() {
            2 => {
                let states = states
                    .into_dimensionality::<Ix2>()
                    .map_err(|_| mismatch(0))?;
                states
                    .outer_iter()
                    .map(|row| row.to_vec())
                    .collect::<Vec<_>>()
            }
            _ => {
                let states = states
                    .into_dimensionality::<Ix3>()
                    .map_err(|_| mismatch(0))?;
                states
                    .outer_iter()
                    .zip(mask.outer_iter())
                    .map(|(tokens, row_mask)| {
                        let mut sum = vec![0.0_f32; tokens.len_of(Axis(1))];
                        let mut count = 0.0_f32;
                        for (token, &m) in tokens.outer_iter().zip(row_mask) {
                            if m != 0 {
                                count += 1.0;
                                sum.iter_mut().zip(token).for_each(|(s, &x)| *s += x);
                            }
                        }
                        sum.iter_mut().for_each(|s| *s /= count.max(1.0));
                        sum
                    })
                    .collect()
            }
        };
        for vector in &mut pooled {
            if vector.len() != self.dimension {
                return Err(mismatch(vector.len()));
            }
            l2_normalize(vector);
        }
        Ok(pooled)
    }
}

impl Embedder for OnnxEmbedder {
    fn id(&self) -> &str {
        &self.id
    }

    fn dimension(&self) -> usize {
        self.dimension
    }

    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
        let mut embeddings = Vec::with_capacity(texts.len());
        for batch in texts.chunks(self.batch_size) {
            embeddings.extend(self.embed_batch(batch)?);
        }
        Ok(embeddings)
    }
}

/// The process's ONNX Runtime environment, created on first use. ONNX Runtime allows one
/// environment per process, so every [`OnnxEmbedder`] shares it.
fn shared_environment() -> Result<Environment> {
    static ENVIRONMENT: Mutex<Option<Environment>> = Mutex::new(None);
    let mut shared = ENVIRONMENT
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some(environment) = shared.as_ref() {
        return Ok(environment.clone());
    }
    let environment = init_runtime()?
        .with_name("cxrlake-embed")
        .build()
        .map_err(|source| EmbedError::Ort {
            context: "creating the ONNX Runtime environment",
            source,
        })?;
    *shared = Some(environment.clone());
    Ok(environment)
}

/// Loads ONNX Runtime from `ORT_DYLIB_PATH` (once per process; later calls reuse it).
fn init_runtime() -> Result<ort::environment::EnvironmentBuilder> {
    let path = std::env::var_os(ORT_DYLIB_PATH_VAR)
        .filter(|p| !p.is_empty())
        .map(PathBuf::from)
        .ok_or(EmbedError::OrtLibraryNotConfigured)?;
    if !path.is_file() {
        return Err(EmbedError::OrtLibrary {
            path,
            message: "no such file".into(),
        });
    }
    ort::init_from(&path).map_err(|e| EmbedError::OrtLibrary {
        path,
        message: e.to_string(),
    })
}
