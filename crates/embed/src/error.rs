//! The error type of `cxrlake-embed`.

use std::path::PathBuf;

/// Everything that can go wrong while loading an embedding model or embedding text.
#[derive(Debug, thiserror::Error)]
pub enum EmbedError {
    /// `ORT_DYLIB_PATH` is not set, so the ONNX Runtime library cannot be located.
    #[error(
        "ORT_DYLIB_PATH is not set: install ONNX Runtime with `pip install onnxruntime==1.31.1` and \
         point ORT_DYLIB_PATH at <site-packages>/onnxruntime/capi/libonnxruntime.so.1.31.1"
    )]
    OrtLibraryNotConfigured,
    /// The ONNX Runtime library could not be loaded from the given path.
    #[error(
        "cannot load the ONNX Runtime library from ORT_DYLIB_PATH={path}: {message}; \
         `pip install onnxruntime==1.31.1` provides a matching libonnxruntime.so.1.31.1"
    )]
    OrtLibrary {
        /// The value of `ORT_DYLIB_PATH`.
        path: PathBuf,
        /// Why loading failed.
        message: String,
    },
    /// An ONNX Runtime call failed (session creation or inference).
    #[error("ONNX Runtime error while {context}: {source}")]
    Ort {
        /// What was being done.
        context: &'static str,
        /// The underlying error.
        #[source]
        source: ort::Error,
    },
    /// The tokenizer file could not be loaded or configured, or encoding failed.
    #[error("tokenizer error while {context}: {message}")]
    Tokenizer {
        /// What was being done.
        context: String,
        /// The underlying error, as text (the tokenizers crate uses boxed errors).
        message: String,
    },
    /// A model or tokenizer file could not be read.
    #[error("cannot read {path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// The model's inputs or outputs are not those of a sentence-embedding encoder.
    #[error("unsupported model {path}: {message}")]
    UnsupportedModel {
        /// The model file.
        path: PathBuf,
        /// What is unsupported and what is expected instead.
        message: String,
    },
    /// A setting is out of range.
    #[error("invalid setting: {0}")]
    InvalidSetting(String),
    /// Embeddings of different dimensions were mixed.
    #[error("dimension mismatch: expected {expected}, got {actual}")]
    DimensionMismatch {
        /// The dimension the embedder declares.
        expected: usize,
        /// The dimension produced.
        actual: usize,
    },
}

/// `Result` with [`EmbedError`].
pub type Result<T, E = EmbedError> = std::result::Result<T, E>;
