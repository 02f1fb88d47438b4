//! `cxrlake ingest` and `cxrlake synth`: the MIMIC-CXR family (or a synthetic corpus in its format) into the lake's source tables.

use std::io::Write;
use std::path::PathBuf;

use cxrlake_lake::Lake;

use crate::error::{CliError, Result};
use crate::folders::Input;
use crate::output::say;

/// `cxrlake ingest`.
#[derive(Debug, clap::Args)]
pub struct IngestArgs {
    /// Folders, files or zip archives (walked recursively)
    #[arg(required = true, value_name = "PATH")]
    pub inputs: Vec<PathBuf>,
    /// Exit non-zero when anything was quarantined
    #[arg(long)]
    pub strict: bool,
    /// Studies per chunk (bounds memory and commit size)
    #[arg(long, default_value_t = 10_000)]
    pub chunk_studies: usize,
}

impl IngestArgs {
    /// Runs `cxrlake ingest`.
    pub async fn run(&self, lake: &Lake, quiet: bool, out: &mut dyn Write) -> Result<()> {
        let Self {
            inputs,
            strict,
            chunk_studies,
        } = self;
        let mut fetched = Vec::with_capacity(inputs.len());
        for input in inputs {
            fetched.push(Input::fetch(input, lake, out).await?);
        }
        let local = fetched.iter().map(|i| i.path().to_path_buf()).collect();
        let names = fetched
            .iter()
            .map(|i| i.url().map(str::to_string))
            .collect();
        let options = cxrlake_ingest::IngestOptions::new(local)
            .with_names(names)
            .with_strict(*strict)
            .with_progress(!quiet)
            .with_chunk_studies(*chunk_studies)
            .with_limits(cxrlake_ingest::Limits::of(&lake.settings().cxrlake));
        let summary = cxrlake_ingest::ingest(lake, &options).await?;
        say(out, format_args!("{summary}"))?;
        if summary.failed() {
            return Err(CliError::Strict(format!(
                "--strict: {} input(s) quarantined; see `cxrlake sql \"SELECT * FROM quarantine\"`",
                summary.quarantined()
            )));
        }
        Ok(())
    }
}

/// `cxrlake synth`.
#[derive(Debug, clap::Args)]
pub struct SynthArgs {
    /// Number of studies (MIMIC-CXR has 227,835)
    #[arg(long, default_value_t = 1000)]
    pub studies: usize,
    /// Seed; the same seed gives byte-identical files
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Output folder
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
    /// Also write mimic-cxr-reports.zip
    #[arg(long)]
    pub zip: bool,
    /// Fraction of images that get CXAS masks (0..=1)
    #[arg(long, value_name = "F")]
    pub cxas_fraction: Option<f64>,
    /// Only part K of N of the patients (the whole corpus's files for them), e.g. 3/10:
    /// ingest each part and delete it before the next when the whole corpus does not fit
    #[arg(long, value_name = "K/N")]
    pub shard: Option<cxrlake_synth::Shard>,
}

impl SynthArgs {
    /// Runs `cxrlake synth`.
    pub async fn run(&self, out: &mut dyn Write) -> Result<()> {
        let Self {
            studies,
            seed,
            out: dir,
            zip,
            cxas_fraction,
            shard,
        } = self;
        let mut options =
            cxrlake_synth::SynthOptions::new(*studies, *seed, dir.clone()).with_zip(*zip);
        if let Some(shard) = shard {
            options = options.with_shard(*shard);
        }
        if let Some(fraction) = cxas_fraction {
            if !(0.0..=1.0).contains(fraction) {
                return Err(CliError::Usage(format!(
                    "--cxas-fraction must be within 0..=1, got {fraction}"
                )));
            }
            options = options.with_cxas_fraction(*fraction);
        }
        let summary = synth(options).await?;
        say(out, format_args!("{summary}"))
    }
}

/// Writes a synthetic corpus on a blocking thread.
pub(crate) async fn synth(
    options: cxrlake_synth::SynthOptions,
) -> Result<cxrlake_synth::SynthSummary> {
    tokio::task::spawn_blocking(move || cxrlake_synth::generate(&options))
        .await
        .map_err(|e| CliError::Usage(format!("synthetic corpus generator stopped: {e}")))?
        .map_err(CliError::from)
}
