//! cxrlake's one configuration namespace, `cxrlake.*`.
//!
//! Values are resolved in this order, later winning: built-in defaults → the config file
//! (`cxrlake.toml`, table `[cxrlake]`) → `CXRLAKE_*` environment variables → command-line flags →
//! SQL `SET cxrlake.<key> = ...` inside a session. Object-store credentials live in the file's
//! `[storage]` table or in the usual `AWS_*`, `GOOGLE_*`, `AZURE_*` variables.

use std::collections::HashMap;
use std::path::Path;

use datafusion::common::extensions_options;
use datafusion::config::ConfigExtension;

use crate::error::{LakeError, Result};

extensions_options! {
    /// Settings that change what cxrlake does; the README's Configuration table lists every key.
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
    }
}

impl ConfigExtension for CxrlakeConfig {
    const PREFIX: &'static str = "cxrlake";
}

/// Environment variables read for object-store options (lower-cased as object_store keys).
const STORAGE_ENV_PREFIXES: [&str; 3] = ["AWS_", "GOOGLE_", "AZURE_"];

/// Everything loaded from the configuration sources.
#[derive(Debug, Clone, Default)]
pub struct Settings {
    /// The `cxrlake.*` namespace.
    pub cxrlake: CxrlakeConfig,
    /// Object-store options (`aws_endpoint`, `aws_access_key_id`, …).
    pub storage: HashMap<String, String>,
}

impl Settings {
    /// Loads defaults, then the config file (when given or when `./cxrlake.toml` exists), then
    /// `CXRLAKE_*` and object-store environment variables.
    pub fn load(config_file: Option<&Path>) -> Result<Self> {
        let mut settings = Settings::default();
        let default_file = Path::new("cxrlake.toml");
        match config_file {
            Some(path) => settings.apply_file(path)?,
            None if default_file.exists() => settings.apply_file(default_file)?,
            None => {}
        }
        settings.apply_env(std::env::vars())?;
        Ok(settings)
    }

    /// Sets one `cxrlake.*` key (the prefix is optional).
    pub fn set(&mut self, key: &str, value: &str) -> Result<()> {
        let key = key.strip_prefix("cxrlake.").unwrap_or(key);
        datafusion::config::ExtensionOptions::set(&mut self.cxrlake, key, value).map_err(|e| {
            LakeError::Config(format!(
                "cannot set cxrlake.{key} = '{value}': {e} (valid keys: {})",
                self.keys().join(", ")
            ))
        })
    }

    /// The valid `cxrlake.*` keys.
    pub fn keys(&self) -> Vec<String> {
        datafusion::config::ExtensionOptions::entries(&self.cxrlake)
            .into_iter()
            .map(|e| e.key)
            .collect()
    }

    fn apply_file(&mut self, path: &Path) -> Result<()> {
        let text = std::fs::read_to_string(path).map_err(|e| {
            LakeError::Config(format!("cannot read config file {}: {e}", path.display()))
        })?;
        self.apply_toml(&text)
            .map_err(|e| LakeError::Config(format!("{}: {e}", path.display())))
    }

    fn apply_toml(&mut self, text: &str) -> std::result::Result<(), String> {
        let doc: toml::Table = text.parse().map_err(|e: toml::de::Error| e.to_string())?;
        for (section, value) in doc {
            let table = value.as_table().ok_or_else(|| {
                format!("top-level key '{section}' must be a table ([cxrlake] or [storage])")
            })?;
            for (key, value) in table {
                let value = match value {
                    toml::Value::String(s) => s.clone(),
                    other => other.to_string(),
                };
                match section.as_str() {
                    "cxrlake" => self.set(key, &value).map_err(|e| e.to_string())?,
                    "storage" => {
                        self.storage.insert(key.to_lowercase(), value);
                    }
                    other => {
                        return Err(format!(
                            "unknown table [{other}]; cxrlake.toml has [cxrlake] and [storage]"
                        ));
                    }
                }
            }
        }
        Ok(())
    }

    fn apply_env(&mut self, vars: impl Iterator<Item = (String, String)>) -> Result<()> {
        for (name, value) in vars {
            if let Some(key) = name.strip_prefix("CXRLAKE_") {
                let key = key.to_lowercase();
                if key == "config" {
                    continue;
                }
                self.set(&key, &value)?;
            } else if STORAGE_ENV_PREFIXES.iter().any(|p| name.starts_with(p)) {
                self.storage.entry(name.to_lowercase()).or_insert(value);
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_then_env_override_defaults() -> Result<()> {
        let mut s = Settings::default();
        assert_eq!(s.cxrlake.lake, "./lake");
        s.apply_toml(
            "[cxrlake]\nlake = \"memory:///x\"\nseed = 7\n[storage]\nAWS_REGION = \"eu\"\n",
        )
        .map_err(LakeError::Config)?;
        assert_eq!(
            (s.cxrlake.lake.as_str(), s.cxrlake.seed),
            ("memory:///x", 7)
        );
        assert_eq!(s.storage.get("aws_region").map(String::as_str), Some("eu"));
        s.apply_env([("CXRLAKE_SEED".to_string(), "9".to_string())].into_iter())?;
        assert_eq!(s.cxrlake.seed, 9);
        Ok(())
    }

    #[test]
    fn unknown_key_names_the_valid_ones() {
        let mut s = Settings::default();
        let err = s.set("colour", "red").expect_err("unknown key").to_string();
        assert!(
            err.contains("cxrlake.colour") && err.contains("seed"),
            "{err}"
        );
        let err = s.apply_toml("[oops]\na = 1\n").expect_err("unknown table");
        assert!(err.contains("[oops]"), "{err}");
    }
}
