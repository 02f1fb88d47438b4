//! A stage run's progress bar on stderr: patients or studies done of the total, rate and ETA.
//! Hidden when the pipeline is quiet or stderr is not a terminal (indicatif draws nothing
//! there), so logs and redirected output stay clean.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// One stage's bar.
#[derive(Debug)]
pub(crate) struct Progress {
    bar: ProgressBar,
}

impl Progress {
    /// A bar for `stage` over `total` `unit`s (shown when `visible`).
    pub(crate) fn new(stage: &str, total: u64, unit: &str, visible: bool) -> Self {
        let target = if visible {
            ProgressDrawTarget::stderr()
        } else {
            ProgressDrawTarget::hidden()
        };
        let bar = ProgressBar::with_draw_target(Some(total), target);
        let template = format!(
            "{{prefix:>9}} [{{bar:30}}] {{human_pos}}/{{human_len}} {unit} \
             ({{per_sec}}, {{elapsed}} elapsed, ETA {{eta}})"
        );
        if let Ok(style) = ProgressStyle::with_template(&template) {
            bar.set_style(style.progress_chars("=> "));
        }
        bar.set_prefix(stage.to_string());
        Self { bar }
    }

    /// `n` more done.
    pub(crate) fn advance(&self, n: u64) {
        self.bar.inc(n);
    }

    /// The stage is done: the bar goes (its summary line follows on stdout).
    pub(crate) fn finish(&self) {
        self.bar.finish_and_clear();
    }
}
