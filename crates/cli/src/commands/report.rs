//! `cxrlake report`: the dataset's statistics as pictures.

use std::io::Write;
use std::path::PathBuf;

use cxrlake_lake::Lake;

use crate::error::Result;
use crate::folders::Output;
use crate::output::say;

/// `cxrlake report`.
#[derive(Debug, clap::Args)]
pub struct ReportArgs {
    /// Output folder
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
}

impl ReportArgs {
    /// Runs `cxrlake report`.
    pub async fn run(&self, lake: &Lake, out: &mut dyn Write) -> Result<()> {
        let Self { out: dir } = self;
        lake.require_initialized().await?;
        let folder = Output::open(dir, lake).await?;
        let report = cxrlake_report::Report::new(folder.path());
        let summary = cxrlake_report::write_report(lake, &report).await?;
        say(out, format_args!("{summary}"))?;
        folder.finish(out).await
    }
}
