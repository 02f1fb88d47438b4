//! cxrlake's one configuration namespace, `cxrlake.*`.
//!
//! Values are resolved in this order, later winning: built-in defaults → the settings the lake
//! stored for its last run (keys that change results only; `cxrlake-pipeline` applies them) →
//! the config file (`cxrlake.toml`, table `[cxrlake]`) → `CXRLAKE_*` environment variables →
//! command-line flags and `--set` → SQL `SET cxrlake.<key> = ...` inside a session. Every value
//! remembers where it came from ([`Source`]). Object-store credentials live in the file's
//! `[storage]` table or in the usual `AWS_*`, `GOOGLE_*`, `AZURE_*` variables.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

pub use cxrlake_schemas::config::CxrlakeConfig;

use crate::error::{LakeError, Result};

/// Where a setting's value came from, in resolution order (a later source wins).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub enum Source {
    /// The built-in default.
    #[default]
    Default,
    /// The lake's stored settings of its last run.
    Lake,
    /// The config file.
    File,
    /// A `CXRLAKE_*` environment variable.
    Env,
    /// A command-line flag or `--set`.
    Flag,
    /// SQL `SET` in a session.
    Sql,
}

impl Source {
    /// The source's name as `cxrlake status` and the `runs` table write it.
    pub fn as_str(self) -> &'static str {
        match self {
            Source::Default => "default",
            Source::Lake => "lake",
            Source::File => "file",
            Source::Env => "env",
            Source::Flag => "flag",
            Source::Sql => "sql",
        }
    }
}

impl std::fmt::Display for Source {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
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
    /// Where each `cxrlake.*` key that is not at its default came from.
    sources: BTreeMap<String, Source>,
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

    /// Sets one `cxrlake.*` key (the prefix is optional) from a command-line flag.
    pub fn set(&mut self, key: &str, value: &str) -> Result<()> {
        self.set_from(key, value, Source::Flag)
    }

    /// Sets one `cxrlake.*` key (the prefix is optional), remembering where it came from.
    pub fn set_from(&mut self, key: &str, value: &str, source: Source) -> Result<()> {
        let key = key.strip_prefix("cxrlake.").unwrap_or(key);
        datafusion::config::ExtensionOptions::set(&mut self.cxrlake, key, value).map_err(|e| {
            LakeError::Config(format!(
                "cannot set cxrlake.{key} = '{value}': {e} (valid keys: {})",
                self.keys().join(", ")
            ))
        })?;
        self.sources.insert(key.to_string(), source);
        Ok(())
    }

    /// Where `key`'s value came from.
    pub fn source(&self, key: &str) -> Source {
        let key = key.strip_prefix("cxrlake.").unwrap_or(key);
        self.sources.get(key).copied().unwrap_or_default()
    }

    /// The value of `key` as text (`None` for an unknown key).
    pub fn get(&self, key: &str) -> Option<String> {
        let key = key.strip_prefix("cxrlake.").unwrap_or(key);
        datafusion::config::ExtensionOptions::entries(&self.cxrlake)
            .into_iter()
            .find(|e| e.key == key)
            .map(|e| e.value.unwrap_or_default())
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
                    "cxrlake" => self
                        .set_from(key, &value, Source::File)
                        .map_err(|e| e.to_string())?,
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
                // CXRLAKE_FAULT_*: fault injection for tests (`commit.rs`), not a setting.
                if key == "config" || key.starts_with("fault_") {
                    continue;
                }
                self.set_from(&key, &value, Source::Env)?;
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
        assert_eq!(s.source("seed"), Source::File);
        s.apply_env([("CXRLAKE_SEED".to_string(), "9".to_string())].into_iter())?;
        assert_eq!(s.cxrlake.seed, 9);
        assert_eq!(s.source("cxrlake.seed"), Source::Env);
        // The fault-injection knob is no setting.
        s.apply_env(
            [(
                "CXRLAKE_FAULT_KILL_AFTER_COMMITS".to_string(),
                "3".to_string(),
            )]
            .into_iter(),
        )?;
        assert_eq!(s.source("min_area"), Source::Default);
        assert_eq!(s.get("min_area").as_deref(), Some("16"));
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
