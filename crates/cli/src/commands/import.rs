//! `cxrlake import release`: a released MIMIC-Ext-CXR-QBA read into the lake.

use std::io::Write;
use std::path::PathBuf;

use clap::Subcommand;
use cxrlake_lake::Lake;

use crate::error::{CliError, Result};
use crate::folders::Input;
use crate::output::say;

/// What `cxrlake import` reads.
#[derive(Debug, Subcommand)]
pub enum ImportCommand {
    /// A release in the PhysioNet layout: its root folder (qa.zip, scene_data.zip,
    /// quality_mappings.csv), an exports/<subset> folder, or one of its zips; zips are read in
    /// place, quality codes decoded through the release's quality_mappings.csv. Resumable: a
    /// study already in the lake is skipped
    Release {
        /// The release folder or zip
        #[arg(value_name = "PATH")]
        path: PathBuf,
        /// Exit non-zero when a member was quarantined
        #[arg(long)]
        strict: bool,
        /// Studies per commit (bounds memory)
        #[arg(long, default_value_t = 1_000)]
        chunk_studies: usize,
    },
}

impl ImportCommand {
    /// Runs the command.
    pub async fn run(&self, lake: &Lake, out: &mut dyn Write) -> Result<()> {
        let ImportCommand::Release {
            path,
            strict,
            chunk_studies,
        } = self;
        lake.init().await?;
        let input = Input::fetch(path, lake, out).await?;
        let import = cxrlake_export::ReleaseImport::new(input.path().to_path_buf())
            .with_chunk_studies(*chunk_studies);
        let summary = cxrlake_export::import_release(lake, &import).await?;
        say(out, format_args!("{summary}"))?;
        if *strict && summary.quarantined > 0 {
            return Err(CliError::Strict(format!(
                "--strict: {} release member(s) quarantined",
                summary.quarantined
            )));
        }
        Ok(())
    }
}
