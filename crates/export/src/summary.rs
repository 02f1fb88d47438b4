//! What an export wrote, as one line for the CLI.

use std::fmt;
use std::path::PathBuf;

/// Which export a summary describes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExportKind {
    /// `*.scene_graph.json` files (D.1).
    SceneGraphs,
    /// `*.qa.json` files (D.2).
    Qa,
}

/// What an export wrote.
#[derive(Debug, Clone, PartialEq)]
pub struct ExportSummary {
    /// Which export.
    pub kind: ExportKind,
    /// Studies exported.
    pub studies: usize,
    /// Files written.
    pub files: usize,
    /// Questions written (0 for scene graphs).
    pub questions: usize,
    /// Bytes written.
    pub bytes: u64,
    /// Wall-clock seconds.
    pub seconds: f64,
    /// The output folder.
    pub out_dir: PathBuf,
}

impl fmt::Display for ExportSummary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let rate = |n: usize| {
            if self.seconds > 0.0 {
                n as f64 / self.seconds
            } else {
                0.0
            }
        };
        let size = self.bytes as f64 / 1e6;
        match self.kind {
            ExportKind::SceneGraphs => write!(
                f,
                "scene graphs: {} studies → {} ({size:.1} MB) in {:.2} s ({:.0} studies/s)",
                self.studies,
                self.out_dir.display(),
                self.seconds,
                rate(self.studies),
            ),
            ExportKind::Qa => write!(
                f,
                "qa: {} questions of {} studies → {} ({size:.1} MB) in {:.2} s \
                 ({:.0} questions/s)",
                self.questions,
                self.studies,
                self.out_dir.display(),
                self.seconds,
                rate(self.questions),
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_summary_reads_as_one_line() {
        let mut summary = ExportSummary {
            kind: ExportKind::SceneGraphs,
            studies: 3000,
            files: 3000,
            questions: 0,
            bytes: 12_500_000,
            seconds: 1.5,
            out_dir: PathBuf::from("out/scene_data"),
        };
        assert_eq!(
            summary.to_string(),
            "scene graphs: 3000 studies → out/scene_data (12.5 MB) in 1.50 s (2000 studies/s)"
        );
        summary.kind = ExportKind::Qa;
        summary.questions = 300_000;
        summary.out_dir = PathBuf::from("out/qa");
        assert_eq!(
            summary.to_string(),
            "qa: 300000 questions of 3000 studies → out/qa (12.5 MB) in 1.50 s \
             (200000 questions/s)"
        );
    }
}
