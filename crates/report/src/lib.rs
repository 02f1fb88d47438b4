//! `cxrlake report`: the dataset's statistics as pictures. Runs the statistics of `sql/stats/`
//! that describe the QBA dataset (paper 000's table 3 and figures 4–6) on the lake, draws each
//! figure as SVG and PNG (text in the embedded DejaVu Sans, so no system font is needed) and
//! writes one self-contained `index.html` next to them, with every number as a table whose cells
//! are those of its CSV file and of `cxrlake stats NAME`. `cxrlake export release` writes the same
//! folder as the release's `stats/`.
//!
//! ```text
//! lake ─sql/stats/<stat>.sql ×12─▶ Table ─┬─▶ <stat>.csv
//!      ─history + count(*)─▶ provenance ──┤
//!                                         ├─figures::all─▶ BarChart ─▶ <figure>.svg, <figure>.png
//!                                         └─html::page──▶ index.html (PNG ⇢ SVG links, tables)
//! ```

pub mod chart;
pub mod error;
pub mod figures;
mod font;
mod html;
mod provenance;
pub mod stats;
pub mod table;

use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Instant;

use cxrlake_lake::Lake;

pub use error::{ReportError, Result};
pub use stats::STATS;

use figures::Tables;

/// What to write and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Report {
    /// Output folder (created if missing).
    pub out_dir: PathBuf,
    /// The page's title.
    pub title: String,
}

impl Report {
    /// A report into `out_dir` titled after the dataset.
    pub fn new(out_dir: impl Into<PathBuf>) -> Self {
        Self {
            out_dir: out_dir.into(),
            title: "MIMIC-Ext-CXR-QBA: dataset statistics".into(),
        }
    }

    /// Titles the page `title`.
    pub fn with_title(mut self, title: impl Into<String>) -> Self {
        self.title = title.into();
        self
    }
}

/// What a report wrote.
#[derive(Debug, Clone, PartialEq)]
pub struct ReportSummary {
    /// The page.
    pub index: PathBuf,
    /// The figures' names (each `<name>.png` and `<name>.svg`).
    pub figures: Vec<String>,
    /// The tables' names (each `<name>.csv`).
    pub tables: Vec<String>,
    /// Wall-clock seconds.
    pub seconds: f64,
}

impl fmt::Display for ReportSummary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "report → {}: {} figures (PNG and SVG), {} CSV tables in {:.1} s",
            self.index.display(),
            self.figures.len(),
            self.tables.len(),
            self.seconds
        )
    }
}

/// Writes the report of `lake` (see the module doc).
pub async fn write_report(lake: &Lake, report: &Report) -> Result<ReportSummary> {
    let started = Instant::now();
    let dir = &report.out_dir;
    std::fs::create_dir_all(dir).map_err(ReportError::write(dir))?;
    let tables = run_tables(lake).await?;
    let figures = figures::all(&tables);
    for figure in &figures {
        write_figure(dir, figure)?;
    }
    for table in tables.values() {
        table.write_csv(&dir.join(format!("{}.csv", table.name)))?;
    }
    let index = dir.join("index.html");
    let page = html::page(&report.title, lake.root().as_str(), &figures, &tables);
    std::fs::write(&index, page).map_err(ReportError::write(&index))?;
    tracing::info!(figures = figures.len(), tables = tables.len(), dir = %dir.display(), "report written");
    Ok(ReportSummary {
        index,
        figures: figures.iter().map(|f| f.name.to_string()).collect(),
        tables: tables.keys().cloned().collect(),
        seconds: started.elapsed().as_secs_f64(),
    })
}

/// The statistics the page shows, and the provenance table.
async fn run_tables(lake: &Lake) -> Result<Tables> {
    let ctx = stats::session(lake).await?;
    let mut tables = Tables::new();
    for name in html::table_names() {
        let table = if name == "provenance" {
            provenance::provenance(lake, &ctx).await?
        } else {
            stats::run(&ctx, name).await?
        };
        tables.insert(name.to_string(), table);
    }
    Ok(tables)
}

fn write_figure(dir: &Path, figure: &figures::Figure) -> Result<()> {
    let svg = dir.join(format!("{}.svg", figure.name));
    std::fs::write(&svg, figure.chart.svg(figure.name)?).map_err(ReportError::write(&svg))?;
    let png = dir.join(format!("{}.png", figure.name));
    std::fs::write(&png, figure.chart.png(figure.name)?).map_err(ReportError::write(&png))
}
