//! The settings flags of `run`, `plan` and `status`: each a `cxrlake.*` key.

use std::io::Write;
use std::path::PathBuf;

use cxrlake_lake::Lake;

use crate::error::{CliError, Result};
use crate::output::say;

/// The settings of the stages, each a `cxrlake.*` key (`[key]`): a flag overrides the config
/// file, the environment and the lake's stored settings; settings not given are the lake's
/// (those of its last run), so a plain `cxrlake run` rebuilds nothing.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct SettingsArgs {
    /// Reference definitions folder [key: refdefs; built-in: the embedded definitions]
    #[arg(long, value_name = "DIR")]
    pub refdefs: Option<PathBuf>,
    /// QA templates folder (balance, qa) [key: templates; built-in: templates/]
    #[arg(long, value_name = "DIR")]
    pub templates: Option<PathBuf>,
    /// Extraction prompts folder of the LLM backend [key: prompts; built-in: prompts/]
    #[arg(long, value_name = "DIR")]
    pub prompts: Option<PathBuf>,
    /// Judge prompts folder of the LLM judge [key: judge_prompts; built-in: prompts/judge/]
    #[arg(long, value_name = "DIR")]
    pub judge_prompts: Option<PathBuf>,
    /// LLM judge: QA pairs of one study and criterion per call, 1 to 32 [key: judge_batch; default: 8]
    #[arg(long, value_name = "N")]
    pub judge_batch: Option<u64>,
    /// Extraction backend: rules or llm [key: extractor; default on a lake's first run: llm
    /// with --llm-endpoint, else rules; later runs keep the lake's]
    #[arg(long, value_name = "NAME", value_parser = ["rules", "llm"])]
    pub extractor: Option<String>,
    /// Judge: heuristic, reading (the heuristic with an entailment check against the report) or
    /// llm [key: judge; default on a lake's first run: llm with --llm-endpoint, else
    /// heuristic; later runs keep the lake's]
    #[arg(long, value_name = "NAME", value_parser = ["heuristic", "reading", "llm"])]
    pub judge: Option<String>,
    /// OpenAI-compatible base URL, e.g. http://127.0.0.1:8000/v1 (vLLM, llama.cpp server,
    /// Ollama) [key: llm_endpoint]
    #[arg(long, value_name = "URL")]
    pub llm_endpoint: Option<String>,
    /// Model name sent to the endpoint [key: llm_model]
    #[arg(long, value_name = "NAME")]
    pub model: Option<String>,
    /// LLM requests in flight at once [key: llm_concurrency]
    #[arg(long, value_name = "N")]
    pub llm_concurrency: Option<usize>,
    /// Seconds one LLM request may take, queueing at the server included [key:
    /// llm_request_timeout]
    #[arg(long, value_name = "SECONDS")]
    pub llm_timeout: Option<u64>,
    /// Environment variable holding the LLM API key [key: llm_api_key_env]
    #[arg(long, value_name = "VAR")]
    pub llm_api_key_env: Option<String>,
    /// Stop after this many LLM requests; answered ones are cached, a re-run resumes [key:
    /// llm_max_requests]
    #[arg(long, value_name = "N")]
    pub llm_max_requests: Option<u64>,
    /// Allow an LLM endpoint outside loopback/private networks: only for endpoints approved for
    /// PHI; never reused from the lake [key: allow_remote_llm]
    #[arg(long)]
    pub allow_remote_llm: bool,
    /// Embedder of the map stage: lexical or onnx [key: embedder]
    #[arg(long, value_name = "NAME")]
    pub embedder: Option<String>,
    /// ONNX model file of the onnx embedder [key: onnx_model]
    #[arg(long, value_name = "FILE")]
    pub onnx_model: Option<PathBuf>,
    /// tokenizer.json of the onnx embedder [key: onnx_tokenizer]
    #[arg(long, value_name = "FILE")]
    pub onnx_tokenizer: Option<PathBuf>,
    /// Cosine similarity a tag needs to map onto a reference tag [key: match_threshold]
    #[arg(long, value_name = "COSINE")]
    pub match_threshold: Option<f64>,
    /// localize: boxes smaller than this many square pixels are dropped [key: min_area]
    #[arg(long, value_name = "PIXELS")]
    pub min_area: Option<f64>,
    /// Add a dataset flavour to build besides MIMIC-Ext-CXR-QBA, e.g. gemex (repeatable or comma
    /// separated); the lake keeps the flavours it was given before [key: flavours]
    #[arg(long = "flavour", value_name = "NAME")]
    pub flavours: Vec<String>,
    /// Stop building a flavour (repeatable or comma separated; `all` for every one); its tables
    /// stay, and `plan` and `status` still say whether they are up to date
    #[arg(long = "no-flavour", value_name = "NAME")]
    pub no_flavours: Vec<String>,
    /// Generation backend of the flavours: offline or llm [key: generator; default on a lake's
    /// first run: llm with --llm-endpoint, else offline; later runs keep the lake's]
    #[arg(long, value_name = "NAME", value_parser = ["offline", "llm"])]
    pub generator: Option<String>,
    /// Prompts folder of the flavours, one subfolder each (e.g. gemex/) [key: flavour_prompts;
    /// built-in: prompts/]
    #[arg(long, value_name = "DIR")]
    pub flavour_prompts: Option<PathBuf>,
    /// MIMIC-CXR-VQA: keep the paper's spelling of its questions (true) or correct it (false)
    /// [key: vqa_paper_typos]
    #[arg(long, value_name = "BOOL")]
    pub vqa_paper_typos: Option<bool>,
    /// MIMIC-CXR-VQA: answers with a prohibited term or a report reference are flagged,
    /// regenerated (asked again) or dropped (quarantined) [key: vqa_lint]
    #[arg(long, value_name = "POLICY", value_parser = ["flag", "regenerate", "drop"])]
    pub vqa_lint: Option<String>,
    /// MIMIC-CXR-VQA: reports in the judge's QC sample; 0 for all [key: vqa_qc_reports]
    #[arg(long, value_name = "N")]
    pub vqa_qc_reports: Option<usize>,
    /// ReXVQA: characters an explanation needs (validator v3) [key: rexvqa_min_explanation]
    #[arg(long, value_name = "N")]
    pub rexvqa_min_explanation: Option<usize>,
    /// ReXVQA: cosine similarity at which an MCQ nearly repeats an earlier one of its study
    /// [key: rexvqa_duplicate_threshold]
    #[arg(long, value_name = "COSINE")]
    pub rexvqa_duplicate_threshold: Option<f64>,
    /// ReXVQA: MCQs per 1,000 in the stratified QC sample [key: rexvqa_qc_per_1000]
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(0..=1000))]
    pub rexvqa_qc_per_1000: Option<u64>,
    /// GIV-CXR: the patient-disjoint split, train:val:test shares (e.g. 0.564:0.05:0.386) or
    /// `official` [key: givcxr_split]
    #[arg(long, value_name = "SHARES")]
    pub givcxr_split: Option<String>,
    /// GIV-CXR: share of the image under which a box is `small` [key: givcxr_bbox_small]
    #[arg(long, value_name = "SHARE")]
    pub givcxr_bbox_small: Option<f64>,
    /// GIV-CXR: share of the image from which a box is `large` [key: givcxr_bbox_large]
    #[arg(long, value_name = "SHARE")]
    pub givcxr_bbox_large: Option<f64>,
    /// Patients per chunk (bounds memory; one commit per chunk) [key: chunk_patients; default:
    /// localize 500, map 5000, graph 2000, qa/judge/grade 100]
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub chunk_patients: Option<u64>,
    /// Ignore the settings the lake stored for its last run (built-in defaults, then the config
    /// file, environment and flags)
    #[arg(long)]
    pub reset: bool,
}

impl SettingsArgs {
    /// The `(key, value)` of every flag given; folders and files become absolute paths.
    fn assignments(&self) -> Result<Vec<(&'static str, String)>> {
        let path = |flag: &str, path: &PathBuf| -> Result<String> {
            std::fs::canonicalize(path)
                .map(|p| p.display().to_string())
                .map_err(|e| CliError::Usage(format!("--{flag} {}: {e}", path.display())))
        };
        let mut out = Vec::new();
        for (key, flag, value) in [
            ("refdefs", "refdefs", &self.refdefs),
            ("templates", "templates", &self.templates),
            ("prompts", "prompts", &self.prompts),
            ("judge_prompts", "judge-prompts", &self.judge_prompts),
            ("flavour_prompts", "flavour-prompts", &self.flavour_prompts),
            ("onnx_model", "onnx-model", &self.onnx_model),
            ("onnx_tokenizer", "onnx-tokenizer", &self.onnx_tokenizer),
        ] {
            if let Some(value) = value {
                out.push((key, path(flag, value)?));
            }
        }
        let texts = [
            ("extractor", self.extractor.clone()),
            ("judge", self.judge.clone()),
            ("generator", self.generator.clone()),
            ("llm_endpoint", self.llm_endpoint.clone()),
            ("llm_model", self.model.clone()),
            (
                "llm_concurrency",
                self.llm_concurrency.map(|n| n.to_string()),
            ),
            (
                "llm_request_timeout",
                self.llm_timeout.map(|n| n.to_string()),
            ),
            ("llm_api_key_env", self.llm_api_key_env.clone()),
            (
                "llm_max_requests",
                self.llm_max_requests.map(|n| n.to_string()),
            ),
            ("embedder", self.embedder.clone()),
            (
                "match_threshold",
                self.match_threshold.map(|v| v.to_string()),
            ),
            ("min_area", self.min_area.map(|v| v.to_string())),
            ("judge_batch", self.judge_batch.map(|n| n.to_string())),
            (
                "vqa_paper_typos",
                self.vqa_paper_typos.map(|v| v.to_string()),
            ),
            ("vqa_lint", self.vqa_lint.clone()),
            ("vqa_qc_reports", self.vqa_qc_reports.map(|n| n.to_string())),
            (
                "rexvqa_min_explanation",
                self.rexvqa_min_explanation.map(|n| n.to_string()),
            ),
            (
                "rexvqa_duplicate_threshold",
                self.rexvqa_duplicate_threshold.map(|v| v.to_string()),
            ),
            (
                "rexvqa_qc_per_1000",
                self.rexvqa_qc_per_1000.map(|n| n.to_string()),
            ),
            ("givcxr_split", self.givcxr_split.clone()),
            (
                "givcxr_bbox_small",
                self.givcxr_bbox_small.map(|v| v.to_string()),
            ),
            (
                "givcxr_bbox_large",
                self.givcxr_bbox_large.map(|v| v.to_string()),
            ),
            ("chunk_patients", self.chunk_patients.map(|n| n.to_string())),
            (
                "allow_remote_llm",
                self.allow_remote_llm.then(|| "true".to_string()),
            ),
        ];
        out.extend(
            texts
                .into_iter()
                .filter_map(|(key, value)| value.map(|v| (key, v))),
        );
        if let Some(threshold) = self.match_threshold
            && !(threshold.is_finite() && threshold <= 1.0)
        {
            return Err(CliError::Usage(format!(
                "--match-threshold must be a cosine similarity of at most 1, got {threshold}"
            )));
        }
        if self.llm_timeout == Some(0) {
            return Err(CliError::Usage(
                "--llm-timeout must be at least 1 second".into(),
            ));
        }
        Ok(out)
    }

    /// The pipeline over `lake` with these flags over the lake's settings.
    pub(crate) async fn pipeline(
        &self,
        lake: &Lake,
        quiet: bool,
    ) -> Result<cxrlake_pipeline::Pipeline> {
        let mut builder = cxrlake_pipeline::Pipeline::builder(lake.clone(), cxrlake_flavours::ALL)
            .reuse_stored_settings(!self.reset)
            .progress(!quiet);
        for (key, value) in self.assignments()? {
            builder = builder.set(key, &value)?;
        }
        builder = builder
            .add_flavours(&self.flavours)
            .remove_flavours(&self.no_flavours);
        let pipeline = builder.open().await?;
        if self.llm_endpoint.is_some() {
            // The backends were resolved on the lake's first run and are kept: an endpoint
            // alone does not switch a lake built offline to the LLM.
            let config = pipeline.config();
            for (key, flag, value, given) in [
                (
                    "extractor",
                    "--extractor",
                    &config.extractor,
                    &self.extractor,
                ),
                ("judge", "--judge", &config.judge, &self.judge),
                (
                    "generator",
                    "--generator",
                    &config.generator,
                    &self.generator,
                ),
            ] {
                let used = key != "generator" || !config.flavours.is_empty();
                if used && given.is_none() && value != "llm" && !value.is_empty() {
                    tracing::warn!(
                        "--llm-endpoint is set, but the lake keeps {key} = {value} from its \
                         earlier runs: `{flag} llm` switches it to the LLM"
                    );
                }
            }
        }
        Ok(pipeline)
    }
}

/// Prints the lake's stored settings and, where they differ, the ones in effect.
pub(crate) fn say_settings(
    pipeline: &cxrlake_pipeline::Pipeline,
    out: &mut dyn Write,
) -> Result<()> {
    let Some(stored) = pipeline.stored() else {
        return say(out, format_args!("settings:        (no run recorded yet)"));
    };
    say(
        out,
        format_args!(
            "settings:        of the last run ({}, `cxrlake {}`)",
            stored.run_id, stored.command
        ),
    )?;
    let settings = pipeline.settings();
    for key in cxrlake_pipeline::settings::RESULT_KEYS {
        let value = stored.value(key).unwrap_or_default();
        let source = stored
            .settings
            .iter()
            .find(|(k, _, _)| k == key)
            .map_or("", |(_, _, s)| s.as_str());
        let shown = if value.is_empty() {
            "(built-in)"
        } else {
            value
        };
        let mut line = format!("  cxrlake.{key:<16} {shown} ({source})");
        let now = settings.get(key).unwrap_or_default();
        if now != value {
            line.push_str(&format!(" → now {now} ({})", settings.source(key)));
        }
        say(out, format_args!("{line}"))?;
    }
    Ok(())
}
