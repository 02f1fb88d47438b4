//! The pipeline crate's one error enum.

use thiserror::Error;

/// Errors of pipeline stages.
#[derive(Debug, Error)]
pub enum PipelineError {
    /// A lake operation failed.
    #[error(transparent)]
    Lake(#[from] cxrlake_lake::LakeError),
    /// A stage query failed.
    #[error("stage {stage}: {source}")]
    Query {
        /// Stage name.
        stage: &'static str,
        /// Underlying error.
        source: Box<datafusion::error::DataFusionError>,
    },
    /// A stage produced rows that do not match its table.
    #[error("stage {stage}: result does not match table {table}: {reason}")]
    Schema {
        /// Stage name.
        stage: &'static str,
        /// Target table.
        table: String,
        /// What differs.
        reason: String,
    },
    /// A stage name that the pipeline graph does not have.
    #[error("unknown stage '{name}'; the stages are: {stages}")]
    UnknownStage {
        /// The name given.
        name: String,
        /// The graph's stages, in order.
        stages: String,
    },
    /// A statement of a stage's SQL failed.
    #[error("stage {stage}, statement '{statement}': {source}")]
    Statement {
        /// Stage name.
        stage: &'static str,
        /// The `-- @step` / `-- @table` name of the statement.
        statement: String,
        /// Underlying error.
        source: Box<datafusion::error::DataFusionError>,
    },
    /// The Ballista cluster of the `engine` setting cannot run a stage's SQL.
    #[error(transparent)]
    Distributed(#[from] cxrlake_distributed::DistributedError),
    /// A `cxrlake.*` setting, or the flag that sets it, has a value that cannot be used; the
    /// message names the key and the values it takes.
    #[error("{reason}")]
    Setting {
        /// The key, without the `cxrlake.` prefix.
        key: &'static str,
        /// What is wrong and what to give instead.
        reason: String,
    },
    /// What a setting names cannot be loaded: reference definitions, templates, prompts, a
    /// flavour's vocabulary or taxonomy, or the definitions the lake stored.
    #[error("{0}")]
    Definitions(String),
    /// What a command was given (a file of labels, boxes, predictions or ratings, an option)
    /// cannot be used; the message names the file, row or option.
    #[error("{0}")]
    Input(String),
    /// The lake's state does not allow what was asked (a release imported, a flavour not kept,
    /// an input stage not run); the message says what to run instead.
    #[error("{0}")]
    Refused(String),
    /// A background task of a run stopped without finishing (cancelled or panicked).
    #[error("{0}")]
    Task(String),
    /// The embedder failed (model or tokenizer cannot be loaded, inference failed).
    #[error("embedder: {0}")]
    Embed(#[source] cxrlake_embed::EmbedError),
    /// The QA templates cannot be loaded.
    #[error("templates: {0}")]
    Templates(#[from] cxrlake_templates::Error),
    /// A stage's SQL file is malformed.
    #[error("{file}: {reason}")]
    Sql {
        /// The SQL file.
        file: String,
        /// What is wrong.
        reason: String,
    },
    /// The LLM client cannot be set up (refused endpoint, bad configuration, missing key).
    #[error(transparent)]
    Llm(#[from] cxrlake_llm::LlmError),
    /// Every LLM call of a step (extract, judge) failed; the step committed nothing.
    #[error(
        "every LLM call of step '{step}' failed ({calls} calls; first: {first}); the step \
         wrote nothing. Check that the server at --llm-endpoint is up and serves --model; answered \
         calls are cached, so a re-run resumes"
    )]
    LlmUnavailable {
        /// The `-- @step` of the stage SQL.
        step: String,
        /// Failed calls.
        calls: usize,
        /// The first error.
        first: String,
    },
    /// Every LLM answer of a step (extract, a flavour's generation) was unusable; the step
    /// committed nothing.
    #[error(
        "every LLM answer of step '{step}' was unusable ({answers} answers; first: {first}); the \
         step wrote nothing. A model that answers prose instead of the requested JSON, or does \
         not follow the prompt, does this: check --model and the prompts. The answers are in \
         llm_calls and asked again by the next run"
    )]
    LlmUnusable {
        /// The `-- @step` of the stage SQL.
        step: String,
        /// Answers.
        answers: usize,
        /// The first reason.
        first: String,
    },
    /// More than `llm_max_failure_share` of a step's LLM answers were unusable; the chunk
    /// committed nothing.
    #[error(
        "{unusable} of {answers} LLM answers of step '{step}' were unusable ({:.1} %, more than \
         llm_max_failure_share = {limit}; first: {first}); this chunk wrote nothing. Check \
         --model and the prompts, or raise llm_max_failure_share; answered calls are cached, so \
         a re-run resumes", 100.0 * *unusable as f64 / *answers as f64
    )]
    LlmFailureShare {
        /// The `-- @step` of the stage SQL.
        step: String,
        /// Unusable answers.
        unusable: usize,
        /// Answers.
        answers: usize,
        /// `llm_max_failure_share`.
        limit: f64,
        /// The first reason.
        first: String,
    },
    /// An evaluation's inputs do not fit its metric.
    #[error("evaluate: {0}")]
    Evaluate(#[from] cxrlake_evaluate::EvaluateError),
    /// The local journal of LLM answers cannot be read or written.
    #[error("LLM answer journal {path}: {reason}; check the folder's permissions and free space")]
    Journal {
        /// The journal file.
        path: String,
        /// The I/O error.
        reason: String,
    },
}

impl PipelineError {
    /// A [`PipelineError::Setting`] error of `key`.
    pub fn setting(key: &'static str, reason: String) -> Self {
        PipelineError::Setting { key, reason }
    }

    pub(crate) fn query(stage: &'static str, source: datafusion::error::DataFusionError) -> Self {
        PipelineError::Query {
            stage,
            source: Box::new(source),
        }
    }
}

/// Result alias of the pipeline crate.
pub type Result<T, E = PipelineError> = std::result::Result<T, E>;
