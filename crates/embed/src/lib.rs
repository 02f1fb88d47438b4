//! Text embeddings for the entity-mapping stage: extracted tags are mapped onto
//! reference-definition tags by cosine similarity of their embeddings (top-1, threshold 0.5).
//!
//! ```text
//!   candidates (reference tags) ──embed──► Matcher ◄── embed ── query (extracted tag)
//!                                            │
//!                                  cosine, top-1, ≥ threshold ──► Some((index, score)) | None
//! ```
//!
//! Two [`Embedder`]s: [`LexicalEmbedder`] (zero set-up, deterministic, hashed character
//! trigrams) and [`OnnxEmbedder`] (a sentence-transformer exported to ONNX, run through
//! ONNX Runtime loaded from `ORT_DYLIB_PATH`).

mod error;
mod lexical;
mod matcher;
mod onnx;
mod similarity;

pub use error::{EmbedError, Result};
pub use lexical::{LexicalEmbedder, normalize_text};
pub use matcher::{DEFAULT_MATCH_THRESHOLD, Matcher};
pub use onnx::OnnxEmbedder;
pub use similarity::{cosine, l2_normalize};

/// A text embedding model.
pub trait Embedder: Send + Sync + std::fmt::Debug {
    /// Stable id of the model and its settings, e.g. `"lexical-1-d1024"` or
    /// `"onnx:all-MiniLM-L6-v2@<model sha256 prefix>+<tokenizer sha256 prefix>/max128"`; part
    /// of caches and fingerprints, so it changes exactly when the embeddings would.
    fn id(&self) -> &str;
    /// Length of every embedding vector.
    fn dimension(&self) -> usize;
    /// L2-normalised embeddings, one per text, in order.
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>>;
    /// Whether computing an embedding is cheaper than storing and reading it back (then callers
    /// do not cache the vectors).
    fn is_cheap(&self) -> bool {
        false
    }
}

/// The embedder a setting names: `lexical` (or empty) or `onnx` with its model file and
/// `tokenizer.json` (empty paths are missing).
pub fn load(name: &str, model: &str, tokenizer: &str) -> Result<std::sync::Arc<dyn Embedder>> {
    match name {
        "" | "lexical" => Ok(std::sync::Arc::new(LexicalEmbedder::new())),
        "onnx" if !model.is_empty() && !tokenizer.is_empty() => {
            Ok(std::sync::Arc::new(OnnxEmbedder::load(
                std::path::Path::new(model),
                std::path::Path::new(tokenizer),
                128,
            )?))
        }
        "onnx" => Err(EmbedError::InvalidSetting(
            "embedder onnx needs onnx_model and onnx_tokenizer (--onnx-model FILE \
             --onnx-tokenizer FILE)"
                .into(),
        )),
        other => Err(EmbedError::InvalidSetting(format!(
            "unknown embedder '{other}': use lexical or onnx"
        ))),
    }
}
