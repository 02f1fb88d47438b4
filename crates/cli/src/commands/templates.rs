//! `cxrlake templates`: checking a QA templates folder.

use std::io::Write;
use std::path::PathBuf;

use clap::Subcommand;

use crate::error::Result;
use crate::output::say;

/// `cxrlake templates` commands.
#[derive(Debug, Subcommand)]
pub enum TemplatesCommand {
    /// Check a folder (strategies, subsets, conditions, placeholders, refdefs names) and list
    /// its templates
    Check {
        /// Templates folder [default: the embedded templates/]
        #[arg(long, value_name = "DIR")]
        templates: Option<PathBuf>,
        /// Reference definitions folder [default: the embedded definitions]
        #[arg(long, value_name = "DIR")]
        refdefs: Option<PathBuf>,
    },
}

impl TemplatesCommand {
    /// Runs the command.
    pub fn run(&self, out: &mut dyn Write) -> Result<()> {
        let TemplatesCommand::Check { templates, refdefs } = self;
        let defs = crate::commands::refdefs::load_defs(refdefs.as_deref())?;
        let loaded = match templates {
            Some(dir) => cxrlake_templates::Templates::load(dir, &defs),
            None => cxrlake_templates::Templates::embedded(&defs),
        }
        .map_err(cxrlake_pipeline::PipelineError::from)?;
        for t in &loaded.templates {
            say(
                out,
                format_args!(
                    "{:<32} {:<16} {} phrasing(s), {} variable value(s), {} main case(s), {} part(s)\n",
                    t.id,
                    t.strategy.as_str(),
                    t.questions.len(),
                    t.variables.subcategory.len(),
                    t.main.len(),
                    t.parts.len()
                ),
            )?;
        }
        say(
            out,
            format_args!(
                "{} templates ok, version {}",
                loaded.templates.len(),
                loaded.version()
            ),
        )
    }
}
