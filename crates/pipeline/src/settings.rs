//! The lake remembers how it was built: every run stores its resolved `cxrlake.*` settings, with
//! their sources, as a row of the `runs` table, and a plain `cxrlake run` reuses the stored
//! values of the settings that change results ([`RESULT_KEYS`]). A value given explicitly (config
//! file, environment, flag, `--set`) wins, and `cxrlake plan` explains what it changes.
//!
//! ```text
//! default ──► lake (runs: the newest row's RESULT_KEYS) ──► file ──► env ──► flags/--set
//! extractor, judge = "" ──► resolved once (llm when llm_endpoint is set) and then kept
//! ```

use std::path::PathBuf;
use std::sync::Arc;

use cxrlake_lake::{CxrlakeConfig, Lake, Settings, Source, StageCommit};
use cxrlake_llm::LlmConfig;
use datafusion::arrow::array::{
    Array, ArrayRef, AsArray, ListArray, RecordBatch, StringArray, StructArray,
    TimestampMicrosecondArray,
};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::DataType;

use crate::error::{PipelineError, Result};
use crate::sql::collect;

/// The settings whose values change what the stages compute: a plain run reuses the lake's
/// stored values of these. Operational settings (lake, chunk sizes, concurrency, timeouts,
/// `allow_remote_llm`, API keys) are never reused: the PHI guard in particular must be given
/// again on every run.
pub const RESULT_KEYS: &[&str] = &[
    "seed",
    "refdefs",
    "templates",
    "prompts",
    "judge_prompts",
    "judge_batch",
    "extractor",
    "judge",
    "llm_endpoint",
    "llm_model",
    "embedder",
    "onnx_model",
    "onnx_tokenizer",
    "match_threshold",
    "min_area",
    "flavours",
    "generator",
    "flavour_prompts",
    "vqa_paper_typos",
    "vqa_lint",
    "vqa_qc_reports",
    "rexvqa_min_explanation",
    "rexvqa_duplicate_threshold",
    "rexvqa_qc_per_1000",
    "givcxr_split",
    "givcxr_bbox_small",
    "givcxr_bbox_large",
];

/// Settings that say where work runs or how it is split, never what it computes: a stage
/// declares the ones it reads, and they stay out of its fingerprint (a rerun with another chunk
/// size or server equals the old rows).
pub const OPERATIONAL_KEYS: &[&str] = &[
    "lake",
    "engine",
    "batch_size",
    "chunk_patients",
    "allow_remote_llm",
    "llm_endpoint",
    "llm_concurrency",
    "llm_request_timeout",
    "llm_api_key_env",
    "llm_max_requests",
    "llm_max_retries",
    "llm_max_failure_share",
];

/// Settings a stage's fingerprint records through a backend id rather than as a value:
/// `llm_model` is part of `extractor`, `judge` and `generator` when they are `llm`
/// (`llm:<model>@<prompts version>`), and means nothing to the other backends.
pub const BACKEND_PARTS: &[(&str, &[&str])] =
    &[("llm_model", &["extractor", "judge", "generator"])];

/// Settings that name a folder or file: stored as absolute paths, checked when reused.
pub const PATH_KEYS: &[&str] = &[
    "flavour_prompts",
    "refdefs",
    "templates",
    "prompts",
    "judge_prompts",
    "onnx_model",
    "onnx_tokenizer",
];

/// The newest `runs` row: its id and its settings `(key, value, source)`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StoredRun {
    /// Run id.
    pub run_id: String,
    /// The command, e.g. `run` or `run localize`.
    pub command: String,
    /// Every setting as the run resolved it.
    pub settings: Vec<(String, String, String)>,
}

impl StoredRun {
    /// The stored value of `key`.
    pub fn value(&self, key: &str) -> Option<&str> {
        self.settings
            .iter()
            .find(|(k, _, _)| k == key)
            .map(|(_, v, _)| v.as_str())
    }
}

/// The newest row of the lake's `runs` table, if any (a lake from before it has none).
pub async fn stored_run(lake: &Lake) -> Result<Option<StoredRun>> {
    let ctx = lake.session().await?;
    if !ctx
        .table_exist("runs")
        .map_err(|e| PipelineError::query("runs", e))?
    {
        return Ok(None);
    }
    let batches = collect(
        &ctx,
        "runs",
        "SELECT run_id, command, settings FROM runs ORDER BY started_at DESC, run_id DESC LIMIT 1",
    )
    .await?;
    let Some(batch) = batches.iter().find(|b| b.num_rows() > 0) else {
        return Ok(None);
    };
    let text = |column: &ArrayRef| -> Result<String> {
        let column =
            cast(column, &DataType::Utf8).map_err(|e| PipelineError::query("runs", e.into()))?;
        let column = column.as_string::<i32>();
        Ok(if column.is_null(0) {
            String::new()
        } else {
            column.value(0).to_string()
        })
    };
    let settings = batch.column(2).as_list::<i32>().value(0);
    let settings = settings.as_struct();
    let field = |name: &str| -> Result<Vec<String>> {
        let column = settings
            .column_by_name(name)
            .ok_or_else(|| PipelineError::Refused(format!("runs.settings has no field {name}")))?;
        let column =
            cast(column, &DataType::Utf8).map_err(|e| PipelineError::query("runs", e.into()))?;
        Ok(column
            .as_string::<i32>()
            .iter()
            .map(|v| v.unwrap_or_default().to_string())
            .collect())
    };
    let (keys, values, sources) = (field("key")?, field("value")?, field("source")?);
    Ok(Some(StoredRun {
        run_id: text(batch.column(0))?,
        command: text(batch.column(1))?,
        settings: keys
            .into_iter()
            .zip(values)
            .zip(sources)
            .map(|((k, v), s)| (k, v, s))
            .collect(),
    }))
}

/// Applies the stored values of [`RESULT_KEYS`] that `settings` has at their defaults
/// (source [`Source::Lake`]); a stored path that is gone is an error that says what to do.
pub fn apply_stored(settings: &mut Settings, stored: &StoredRun) -> Result<()> {
    for key in RESULT_KEYS {
        let Some(value) = stored.value(key) else {
            continue;
        };
        if settings.source(key) != Source::Default {
            continue;
        }
        if PATH_KEYS.contains(key) && !value.is_empty() && !std::path::Path::new(value).exists() {
            return Err(PipelineError::setting(
                key,
                format!(
                    "the lake was last built with cxrlake.{key} = {value}, which does not exist any \
                 more: pass it again (e.g. --{} DIR), or `--set {key}=` for the built-in default",
                    key.replace('_', "-")
                ),
            ));
        }
        settings.set_from(key, value, Source::Lake)?;
    }
    Ok(())
}

/// Resolves `extractor`, `judge` and `generator` when empty: `llm` when `llm_endpoint` is set,
/// else the offline backend (`rules`, `heuristic`, `offline`); checks them, and that a model or
/// prompts given explicitly have an endpoint to go to.
pub fn resolve_backends(settings: &mut Settings) -> Result<()> {
    let has_llm = !settings.cxrlake.llm_endpoint.is_empty();
    let explicit = |key: &str| {
        matches!(
            settings.source(key),
            Source::File | Source::Env | Source::Flag
        )
    };
    if !has_llm && (explicit("llm_model") || explicit("prompts") || explicit("judge_prompts")) {
        return Err(PipelineError::setting(
            "llm_endpoint",
            "--model, --prompts and --judge-prompts need --llm-endpoint URL (without it the \
             offline backends run: rules for extract, heuristic for judge)"
                .into(),
        ));
    }
    for (key, offline, also) in [
        ("extractor", "rules", None),
        ("judge", "heuristic", Some("reading")),
        ("generator", "offline", None),
    ] {
        let value = settings.get(key).unwrap_or_default();
        let resolved = match value.as_str() {
            "" if has_llm => "llm",
            "" => offline,
            "llm" => "llm",
            v if v == offline => offline,
            v if Some(v) == also => v,
            other => {
                return Err(PipelineError::setting(
                    key,
                    format!(
                        "cxrlake.{key} = '{other}': use {}llm",
                        also.map_or(format!("{offline} or "), |a| format!("{offline}, {a} or "))
                    ),
                ));
            }
        };
        if value != resolved {
            let source = settings.source(key);
            settings.set_from(key, resolved, source)?;
        }
    }
    Ok(())
}

/// The settings of `settings` at [`RESULT_KEYS`] not taken from the lake (given explicitly, or
/// defaults when the stored ones are ignored) whose values differ from `stored`: `(key, stored
/// value, value, source)`.
pub fn changes(settings: &Settings, stored: &StoredRun) -> Vec<(String, String, String, Source)> {
    RESULT_KEYS
        .iter()
        .filter_map(|key| {
            let source = settings.source(key);
            let now = settings.get(key).unwrap_or_default();
            let before = stored.value(key)?.to_string();
            (source != Source::Lake && now != before)
                .then(|| (key.to_string(), before, now, source))
        })
        .collect()
}

/// Appends the run `run_id` (`command`, the stages it runs, every setting with its source) to
/// the `runs` table.
pub async fn record_run(
    lake: &Lake,
    run_id: &str,
    command: &str,
    stages: &[&str],
    settings: &Settings,
) -> Result<()> {
    let schema = cxrlake_schemas::pipeline::runs();
    let keys = settings.keys();
    let values: Vec<String> = keys
        .iter()
        .map(|k| settings.get(k).unwrap_or_default())
        .collect();
    let sources: Vec<&str> = keys.iter().map(|k| settings.source(k).as_str()).collect();
    let error = |e: datafusion::arrow::error::ArrowError| PipelineError::query("runs", e.into());
    let list_of = |field: usize| match schema.field(field).data_type() {
        DataType::List(item) => Ok(item.clone()),
        other => Err(PipelineError::Refused(format!(
            "runs: field {field} is {other}, not a list"
        ))),
    };
    let settings_item = list_of(4)?;
    let DataType::Struct(fields) = settings_item.data_type() else {
        return Err(PipelineError::Refused(
            "runs.settings is not a list of structs".into(),
        ));
    };
    let entries = StructArray::try_new(
        fields.clone(),
        vec![
            Arc::new(StringArray::from(keys.clone())),
            Arc::new(StringArray::from(values)),
            Arc::new(StringArray::from(sources)),
        ],
        None,
    )
    .map_err(error)?;
    let settings_list = ListArray::try_new(
        settings_item,
        datafusion::arrow::buffer::OffsetBuffer::from_lengths([keys.len()]),
        Arc::new(entries),
        None,
    )
    .map_err(error)?;
    let stages_list = ListArray::try_new(
        list_of(3)?,
        datafusion::arrow::buffer::OffsetBuffer::from_lengths([stages.len()]),
        Arc::new(StringArray::from(stages.to_vec())),
        None,
    )
    .map_err(error)?;
    let now = chrono::Utc::now().timestamp_micros();
    let batch = RecordBatch::try_new(
        schema.clone(),
        vec![
            Arc::new(StringArray::from(vec![run_id])),
            Arc::new(TimestampMicrosecondArray::from(vec![now]).with_timezone("UTC")),
            Arc::new(StringArray::from(vec![command])),
            Arc::new(stages_list),
            Arc::new(settings_list),
            Arc::new(StringArray::from(vec![crate::fingerprint::CODE_VERSION])),
        ],
    )
    .map_err(error)?;
    lake.write("runs")
        .append()
        .commit(StageCommit::new("run").with_metrics(serde_json::json!({ "run": run_id })))
        .execute(vec![batch])
        .await?;
    Ok(())
}

/// The LLM the settings name (`None`: no endpoint).
pub fn llm_config(config: &CxrlakeConfig) -> Result<Option<LlmConfig>> {
    let endpoint = config.llm_endpoint.as_str();
    if endpoint.is_empty() {
        return Ok(None);
    }
    let url = url::Url::parse(endpoint)
        .map_err(|e| e.to_string())
        .and_then(|url| match url.scheme() {
            "http" | "https" => Ok(url),
            scheme => Err(format!("scheme '{scheme}' is not http or https")),
        })
        .map_err(|e| {
            PipelineError::setting(
                "llm_endpoint",
                format!(
                    "cxrlake.llm_endpoint '{endpoint}': {e}; expected e.g. http://127.0.0.1:8000/v1"
                ),
            )
        })?;
    if config.llm_model.is_empty() {
        return Err(PipelineError::setting(
            "llm_model",
            "cxrlake.llm_endpoint needs --model NAME (cxrlake.llm_model): the model the server \
             serves"
                .into(),
        ));
    }
    if config.llm_request_timeout == 0 {
        return Err(PipelineError::setting(
            "llm_request_timeout",
            "cxrlake.llm_request_timeout must be at least 1 second".into(),
        ));
    }
    let mut llm = LlmConfig::new(url, config.llm_model.clone());
    llm.concurrency = config.llm_concurrency.max(1);
    llm.allow_remote = config.allow_remote_llm;
    llm.request_timeout = std::time::Duration::from_secs(config.llm_request_timeout);
    llm.max_retries = config.llm_max_retries;
    llm.api_key_env = (!config.llm_api_key_env.is_empty()).then(|| config.llm_api_key_env.clone());
    llm.total_budget.max_requests =
        (config.llm_max_requests > 0).then_some(config.llm_max_requests);
    Ok(Some(llm))
}

/// The largest `cxrlake.judge_batch`: items per LLM judge call.
pub const MAX_JUDGE_BATCH: usize = 32;

/// `cxrlake.judge_batch`, checked: 1 to [`MAX_JUDGE_BATCH`].
pub fn judge_batch(config: &CxrlakeConfig) -> Result<usize> {
    match config.judge_batch {
        n @ 1..=MAX_JUDGE_BATCH => Ok(n),
        n => Err(PipelineError::setting(
            "judge_batch",
            format!(
                "cxrlake.judge_batch = {n}: give 1 (one QA pair per LLM judge call) to \
             {MAX_JUDGE_BATCH}"
            ),
        )),
    }
}

/// The folder or file a path setting names (`None`: the built-in default).
pub fn path(value: &str) -> Option<PathBuf> {
    (!value.is_empty()).then(|| PathBuf::from(value))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stored_values_fill_defaults_only_and_explicit_ones_are_changes() -> Result<()> {
        let stored = StoredRun {
            run_id: "r".into(),
            command: "run".into(),
            settings: vec![
                ("min_area".into(), "32".into(), "flag".into()),
                ("match_threshold".into(), "0.6".into(), "flag".into()),
                ("llm_concurrency".into(), "4".into(), "flag".into()),
            ],
        };
        let mut settings = Settings::default();
        settings.set("match_threshold", "0.7")?;
        apply_stored(&mut settings, &stored)?;
        assert_eq!(settings.cxrlake.min_area, 32.0);
        assert_eq!(settings.source("min_area"), Source::Lake);
        // Explicit beats stored; operational settings are not reused.
        assert_eq!(settings.cxrlake.match_threshold, 0.7);
        assert_eq!(settings.cxrlake.llm_concurrency, 16);
        assert_eq!(
            changes(&settings, &stored),
            vec![(
                "match_threshold".to_string(),
                "0.6".to_string(),
                "0.7".to_string(),
                Source::Flag
            )]
        );
        Ok(())
    }

    #[test]
    fn a_stored_folder_that_is_gone_says_what_to_do() {
        let stored = StoredRun {
            settings: vec![("refdefs".into(), "/nonexistent/defs".into(), "flag".into())],
            ..StoredRun::default()
        };
        let err = apply_stored(&mut Settings::default(), &stored)
            .expect_err("gone")
            .to_string();
        assert!(
            err.contains("--refdefs") && err.contains("--set refdefs="),
            "{err}"
        );
    }

    #[test]
    fn backends_resolve_once() -> Result<()> {
        let mut settings = Settings::default();
        resolve_backends(&mut settings)?;
        assert_eq!(
            (
                settings.cxrlake.extractor.as_str(),
                settings.cxrlake.judge.as_str()
            ),
            ("rules", "heuristic")
        );
        let mut llm = Settings::default();
        llm.set("llm_endpoint", "http://127.0.0.1:9/v1")?;
        llm.set("extractor", "rules")?;
        resolve_backends(&mut llm)?;
        assert_eq!(
            (llm.cxrlake.extractor.as_str(), llm.cxrlake.judge.as_str()),
            ("rules", "llm")
        );
        llm.set("judge", "oracle")?;
        assert!(resolve_backends(&mut llm).is_err());
        Ok(())
    }
}
