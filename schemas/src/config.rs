//! `cxrlake.*`, cxrlake's one configuration namespace: every setting, with its default and
//! what it does, as a DataFusion config extension (so `SET cxrlake.<key> = …` works in SQL and
//! functions read the values of their session). How values are resolved from the config file,
//! the environment, flags and the lake's stored settings is `cxrlake_lake::Settings`.

use datafusion_common::config::ConfigExtension;
use datafusion_common::extensions_options;

extensions_options! {
    /// Settings that change what cxrlake does; `docs/configuration.md` lists every key, generated
    /// from these declarations.
    pub struct CxrlakeConfig {
        /// Root URL of the lake: a folder, file://, memory://, s3://, gs:// or az://.
        pub lake: String, default = "./lake".to_string()
        /// Seed of all hash-based sampling.
        pub seed: u64, default = 0
        /// Allow LLM endpoints outside loopback and private networks (MIMIC text is PHI).
        pub allow_remote_llm: bool, default = false
        /// OpenAI-compatible base URL of the LLM backend, e.g. http://127.0.0.1:8000/v1; empty
        /// means the rules backend.
        pub llm_endpoint: String, default = String::new()
        /// Model name sent to the LLM endpoint (part of every cache key).
        pub llm_model: String, default = String::new()
        /// LLM requests kept in flight at once.
        pub llm_concurrency: usize, default = 16
        /// Seconds one LLM request may take, queueing at the server included; a slow CPU server
        /// answering long prompts needs more.
        pub llm_request_timeout: u64, default = 120
        /// Environment variable holding the LLM API key, if the server needs one (never logged).
        pub llm_api_key_env: String, default = String::new()
        /// Embedder of the map stage: `lexical` (zero set-up default) or `onnx` (a
        /// sentence-transformer exported to ONNX; needs onnx_model, onnx_tokenizer and
        /// ORT_DYLIB_PATH).
        pub embedder: String, default = "lexical".to_string()
        /// Path of the ONNX model file of the onnx embedder (e.g. BioLORD-2023-C exported to ONNX).
        pub onnx_model: String, default = String::new()
        /// Path of the tokenizer.json that belongs to onnx_model.
        pub onnx_tokenizer: String, default = String::new()
        /// Cosine similarity an extracted tag needs to map onto a reference tag (paper: 0.5).
        pub match_threshold: f64, default = 0.5
        /// Rows per record batch in stage plans.
        pub batch_size: usize, default = 8192
        /// Where `cxrlake sql` and the SQL of stages without functions of their own run:
        /// `local` (in this process) or `ballista://HOST:PORT` (a cluster of `cxrlake
        /// scheduler` and `cxrlake executor`).
        pub engine: String, default = "local".to_string()
        /// Reference definitions folder (regions, findings, modifiers, changes); empty means the
        /// definitions embedded in cxrlake (`refdefs/` of its source).
        pub refdefs: String, default = String::new()
        /// QA templates folder; empty means the embedded `templates/`.
        pub templates: String, default = String::new()
        /// Extraction prompts folder of the LLM backend; empty means the embedded `prompts/`.
        pub prompts: String, default = String::new()
        /// Judge prompts folder of the LLM judge; empty means the embedded `prompts/judge/`.
        pub judge_prompts: String, default = String::new()
        /// LLM judge: pending QA pairs of one study and criterion asked in one call (the report
        /// once, one answer block per item), 1 to 32; 1 sends the single-item prompts of
        /// listings 7–11. Part of the judge id (`…/batch-<n>`) and of its content hashes.
        pub judge_batch: usize, default = 8
        /// Extraction backend: `rules`, `llm`, or empty for `llm` when llm_endpoint is set and
        /// `rules` otherwise (resolved once, then kept by the lake).
        pub extractor: String, default = String::new()
        /// Judge: `heuristic`, `reading` (the heuristic with an entailment criterion that checks
        /// each answer part against the report's findings), `llm`, or empty for `llm` when
        /// llm_endpoint is set and `heuristic` otherwise (resolved once, then kept by the lake).
        pub judge: String, default = String::new()
        /// localize: boxes smaller than this many square pixels are dropped.
        pub min_area: f64, default = 16.0
        /// Patients per chunk of the chunked stages (bounds memory; one commit per chunk); 0
        /// means each stage's own default (localize 500, map 5000, graph 2000, qa, judge and
        /// grade 100).
        pub chunk_patients: usize, default = 0
        /// extract with the LLM: a step with more than this share of unusable answers
        /// (unparseable, off the format, failed calls) fails and commits nothing of its chunk; any
        /// LLM step whose every answer is unusable fails. The studies of unusable answers stay
        /// stale and are asked again by the next run.
        pub llm_max_failure_share: f64, default = 0.25
        /// Ingest: a report file larger than this, in bytes, is quarantined with its size and not
        /// read (MIMIC-CXR's reports are under 20 kB).
        pub ingest_max_report_bytes: u64, default = 1_048_576
        /// Ingest: any other input file or zip member larger than this, in bytes (after
        /// decompression), is quarantined with its size.
        pub ingest_max_file_bytes: u64, default = 1_073_741_824
        /// Ingest: a zip member that decompresses to more than this many times its compressed
        /// size (and to more than 1 MiB) is quarantined as a zip bomb.
        pub ingest_max_zip_ratio: u64, default = 100
        /// Ingest: the most files one input (a folder or a zip archive) may hold; a larger one is
        /// quarantined whole.
        pub ingest_max_files: u64, default = 5_000_000
        /// Stop after this many LLM requests (answered ones are cached, a rerun resumes); 0 means
        /// no limit.
        pub llm_max_requests: u64, default = 0
        /// Retries of a failed LLM request (with backoff and jitter).
        pub llm_max_retries: u32, default = 3
        /// Dataset flavours built besides MIMIC-Ext-CXR-QBA, comma separated (e.g. `gemex`);
        /// each adds its stages to the pipeline graph.
        pub flavours: String, default = String::new()
        /// Generation backend of the flavours: `offline`, `llm`, or empty for `llm` when
        /// llm_endpoint is set and `offline` otherwise (resolved once, then kept by the lake).
        pub generator: String, default = String::new()
        /// A prompts folder with one subfolder per flavour (e.g. `gemex/`); empty means the
        /// embedded prompts.
        pub flavour_prompts: String, default = String::new()
        /// MIMIC-CXR-VQA: keep the paper's typos in its questions ("Cardiomedistinum"); false
        /// uses the corrected spelling.
        pub vqa_paper_typos: bool, default = true
        /// MIMIC-CXR-VQA: what an answer with a prohibited comparison term or a reference to
        /// the report gets: `flag` (kept, counted per row), `regenerate` (the LLM is asked
        /// again; still failing, it is quarantined) or `drop` (quarantined).
        pub vqa_lint: String, default = "flag".to_string()
        /// MIMIC-CXR-VQA: reports in the judge's QC sample (all their QA pairs are judged;
        /// seeded by `seed`); 0 judges every report.
        pub vqa_qc_reports: usize, default = 1000
        /// ReXVQA: characters an MCQ's explanation needs to pass validator v3 (the paper sets a
        /// minimum length without giving it).
        pub rexvqa_min_explanation: usize, default = 40
        /// ReXVQA: embedding cosine similarity at which an MCQ nearly repeats an earlier MCQ of
        /// the same study and is filtered (paper: 0.9; embedder: `embedder`).
        pub rexvqa_duplicate_threshold: f64, default = 0.9
        /// ReXVQA: MCQs per 1,000 in the stratified QC sample, even across the difficulty tiers
        /// (paper: 100).
        pub rexvqa_qc_per_1000: usize, default = 100
        /// GIV-CXR: the patient-disjoint split, `train:val:test` shares of a seeded draw per
        /// patient (paper: test 38.6 % of the pairs; train and validation not given), or
        /// `official` for MIMIC-CXR-JPG's split.
        pub givcxr_split: String, default = "0.564:0.05:0.386".to_string()
        /// GIV-CXR: a box covering less than this share of its image is `small` (the paper does
        /// not give its thresholds).
        pub givcxr_bbox_small: f64, default = 0.05
        /// GIV-CXR: a box covering at least this share of its image is `large` (between the
        /// two: `medium`).
        pub givcxr_bbox_large: f64, default = 0.2
    }
}

impl ConfigExtension for CxrlakeConfig {
    const PREFIX: &'static str = "cxrlake";
}

impl CxrlakeConfig {
    /// The settings of a session's configuration (the defaults when it has none).
    pub fn of(options: &datafusion_common::config::ConfigOptions) -> CxrlakeConfig {
        options
            .extensions
            .get::<CxrlakeConfig>()
            .cloned()
            .unwrap_or_default()
    }
}
