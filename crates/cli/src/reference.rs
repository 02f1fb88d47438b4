//! The configuration reference of the user guide (`docs/configuration.md`), generated from the
//! code: every `cxrlake.*` key with its default and description (`CxrlakeConfig`), whether the
//! lake keeps it between runs (`cxrlake_pipeline::settings::RESULT_KEYS`), its environment
//! variable and the `cxrlake run` / global flag that sets it (the `[key: …]` of the flag's help).
//! `crates/cli/tests/it/guide.rs` compares the page with [`settings_table`], so they cannot drift.

use clap::CommandFactory;
use cxrlake_lake::CxrlakeConfig;
use datafusion::config::ExtensionOptions;

use crate::cli::Cli;

/// The Markdown table of every setting, one row per key in declaration order.
pub fn settings_table() -> String {
    let flags = flags_by_key();
    let mut out = String::from(
        "| key | default | kept | flag | environment | meaning |\n|---|---|---|---|---|---|\n",
    );
    for entry in CxrlakeConfig::default().entries() {
        let key = entry.key;
        let default = match entry.value.as_deref() {
            None | Some("") => "(empty)".to_string(),
            Some(value) => format!("`{value}`"),
        };
        let kept = if cxrlake_pipeline::settings::RESULT_KEYS.contains(&key.as_str()) {
            "yes"
        } else {
            ""
        };
        let flag = flags
            .iter()
            .find(|(k, _)| *k == key)
            .map(|(_, flag)| format!("`{flag}`"))
            .unwrap_or_default();
        let env = format!("`CXRLAKE_{}`", key.to_uppercase());
        let meaning = entry
            .description
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ");
        out.push_str(&format!(
            "| `{key}` | {default} | {kept} | {flag} | {env} | {} |\n",
            meaning.replace('|', "\\|")
        ));
    }
    out
}

/// `(key, --flag)` of every flag of `cxrlake run` whose help names its key (`[key: …]`), and of
/// the global flags named after a key (`--lake`, `--engine`).
fn flags_by_key() -> Vec<(String, String)> {
    let command = Cli::command();
    let keys: Vec<String> = CxrlakeConfig::default()
        .entries()
        .into_iter()
        .map(|e| e.key)
        .collect();
    let mut out = Vec::new();
    for arg in command.get_arguments() {
        if let Some(long) = arg.get_long()
            && keys.iter().any(|key| key == long)
        {
            out.push((long.to_string(), format!("--{long}")));
        }
    }
    let run = command
        .find_subcommand("run")
        .expect("cxrlake has a run command");
    for arg in run.get_arguments() {
        let (Some(long), Some(help)) = (arg.get_long(), arg.get_help()) else {
            continue;
        };
        let help = help.to_string();
        if let Some(rest) = help.split("[key: ").nth(1) {
            let key: String = rest
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            out.push((key, format!("--{long}")));
        }
    }
    out
}
