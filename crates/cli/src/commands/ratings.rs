//! `cxrlake ratings`: other raters' ratings of a flavour's QA pairs.

use std::io::Write;
use std::path::PathBuf;

use clap::Subcommand;
use cxrlake_lake::Lake;

use crate::error::{CliError, Result};
use crate::output::say;

/// `cxrlake ratings` commands.
#[derive(Debug, Subcommand)]
pub enum RatingsCommand {
    /// Add a file of ratings: for mimic_cxr_vqa (the default) columns item = question_id of
    /// mimic_cxr_vqa_qa, rater, rubric = correctness|consistency|completeness|relevance, value =
    /// one of the rubric's levels of paper 001 table 3; for givcxr (radiologists' reviews)
    /// columns qa_id of givcxr_qa, reviewer, accepted = true|false[, comment]. .csv, .csv.gz,
    /// .jsonl or .parquet; a rating of the same item by the same rater replaces the old one
    Add {
        /// The ratings file
        file: PathBuf,
        /// The flavour rated: mimic_cxr_vqa or givcxr
        #[arg(long, value_name = "FLAVOUR", default_value = "mimic_cxr_vqa")]
        flavour: String,
    },
}

impl RatingsCommand {
    /// Runs the command.
    pub async fn run(&self, lake: &Lake, out: &mut dyn Write) -> Result<()> {
        let RatingsCommand::Add { file, flavour } = self;
        lake.require_initialized().await?;
        let added = match flavour.as_str() {
            "mimic_cxr_vqa" => {
                cxrlake_mimic_cxr_vqa::stages::ratings::add_ratings(lake, file).await?
            }
            "givcxr" => cxrlake_givcxr::stages::reviews::add_reviews(lake, file).await?,
            other => {
                return Err(CliError::Usage(format!(
                    "ratings add --flavour {other}: ratings are kept for mimic_cxr_vqa \
                     and givcxr"
                )));
            }
        };
        say(out, format_args!("{added}"))
    }
}
