//! `cxrlake refdefs …`: check, diff, stats, dataset_info export and loading into the lake.

use std::io::Write;
use std::path::{Path, PathBuf};

use clap::Subcommand;
use cxrlake_lake::Lake;
use cxrlake_refdefs::RefDefs;

use crate::error::{CliError, Result};
use crate::output::say;

/// `cxrlake refdefs` subcommands.
#[derive(Debug, Subcommand)]
pub enum RefdefsCommand {
    /// Validate a definitions folder: unknown references, cycles, duplicate synonyms, unknown
    /// CXAS classes or ImaGenome boxes, left/right links, missing fields (file:line + hint)
    Check {
        /// Definitions folder [default: the embedded definitions]
        dir: Option<PathBuf>,
    },
    /// List entries added, removed and changed between two definition folders
    Diff {
        /// The old folder
        old: PathBuf,
        /// The new folder
        new: PathBuf,
    },
    /// Counts of regions (localized), findings, modifiers, changes, synonyms
    Stats {
        /// Definitions folder [default: the embedded definitions]
        dir: Option<PathBuf>,
    },
    /// Write the vocabularies as dataset_info.json
    Info {
        /// Definitions folder [default: the embedded definitions]
        dir: Option<PathBuf>,
        /// Output file [default: stdout]
        #[arg(long, value_name = "FILE")]
        out: Option<PathBuf>,
    },
    /// Load the definitions into the lake tables ref_regions, ref_findings, ref_modifiers,
    /// ref_changes (skipped when the lake already holds this fingerprint)
    Load {
        /// Definitions folder [default: the embedded definitions]
        dir: Option<PathBuf>,
    },
}

/// Loads definitions from a folder, or the embedded ones; invalid files list their diagnostics.
pub fn load_defs(dir: Option<&Path>) -> Result<RefDefs> {
    let result = match dir {
        Some(dir) => RefDefs::load(dir),
        None => RefDefs::embedded(),
    };
    result.map_err(|err| match err {
        cxrlake_refdefs::Error::Invalid(diagnostics) => CliError::Usage(format!(
            "{} error(s) in the reference definitions; run `cxrlake refdefs check` for all. First: {}",
            diagnostics.len(),
            diagnostics.first().map(ToString::to_string).unwrap_or_default()
        )),
        other => CliError::Refdefs(other),
    })
}

/// Writes the definitions into the `ref_*` tables unless the lake already has this fingerprint.
pub async fn load_into_lake(lake: &Lake, defs: &RefDefs) -> Result<bool> {
    Ok(cxrlake_pipeline::refdefs::load_reference_tables(lake, defs).await?)
}

impl RefdefsCommand {
    /// Runs the subcommand.
    pub async fn run(&self, lake: &Lake, out: &mut dyn Write) -> Result<()> {
        match self {
            RefdefsCommand::Check { dir } => {
                let diagnostics = match dir {
                    Some(dir) => cxrlake_refdefs::check(dir),
                    None => cxrlake_refdefs::check_sources(cxrlake_refdefs::Sources::embedded()),
                };
                for diagnostic in &diagnostics {
                    say(out, format_args!("{diagnostic}"))?;
                }
                let shown = dir
                    .as_ref()
                    .map_or("embedded definitions".to_string(), |d| {
                        d.display().to_string()
                    });
                if diagnostics.is_empty() {
                    let defs = load_defs(dir.as_deref())?;
                    let shortfalls = defs.stats().shortfalls();
                    if shortfalls.is_empty() {
                        say(
                            out,
                            format_args!("{shown}: ok (fingerprint {})", defs.fingerprint()),
                        )
                    } else {
                        Err(CliError::Usage(format!(
                            "{shown}: {}",
                            shortfalls.join("; ")
                        )))
                    }
                } else {
                    Err(CliError::Usage(format!(
                        "{}: {} error(s) (listed above)",
                        shown,
                        diagnostics.len()
                    )))
                }
            }
            RefdefsCommand::Diff { old, new } => {
                let diff = RefDefs::diff(&load_defs(Some(old))?, &load_defs(Some(new))?);
                if diff.is_empty() {
                    say(out, format_args!("no differences"))
                } else {
                    say(out, format_args!("{diff}"))
                }
            }
            RefdefsCommand::Stats { dir } => {
                say(out, format_args!("{}", load_defs(dir.as_deref())?.stats()))
            }
            RefdefsCommand::Info { dir, out: file } => {
                let info = serde_json::to_string_pretty(&load_defs(dir.as_deref())?.dataset_info())
                    .map_err(|e| CliError::Usage(e.to_string()))?;
                match file {
                    Some(path) => std::fs::write(path, info + "\n").map_err(|e| CliError::Output {
                        path: path.clone(),
                        source: Box::new(e),
                    }),
                    None => say(out, format_args!("{info}")),
                }
            }
            RefdefsCommand::Load { dir } => {
                lake.require_initialized().await?;
                let defs = load_defs(dir.as_deref())?;
                if load_into_lake(lake, &defs).await? {
                    say(
                        out,
                        format_args!("loaded reference definitions {}", defs.fingerprint()),
                    )
                } else {
                    say(
                        out,
                        format_args!(
                            "reference definitions {} already loaded",
                            defs.fingerprint()
                        ),
                    )
                }
            }
        }
    }
}
