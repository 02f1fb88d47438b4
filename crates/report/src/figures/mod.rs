//! The report's figures, one module per family (paper 000's table 3 and figures 4–6), each
//! drawn from the rows of one statistic of `sql/stats/`.

mod answers;
mod judge;
mod questions;
mod ratings;
mod tags;

use std::collections::BTreeMap;

use crate::chart::BarChart;
use crate::table::Table;

/// The statistics' results, by name.
pub type Tables = BTreeMap<String, Table>;

/// One figure: `<name>.png` and `<name>.svg`, drawn from the statistic `stat` (`<stat>.csv`).
#[derive(Debug, Clone)]
pub struct Figure {
    /// File name without extension.
    pub name: &'static str,
    /// What it shows, one sentence under it.
    pub caption: &'static str,
    /// The statistic it is drawn from.
    pub stat: &'static str,
    /// The chart.
    pub chart: BarChart,
}

/// Every figure whose statistic is in `tables`, in report order.
pub fn all(tables: &Tables) -> Vec<Figure> {
    let mut figures = Vec::new();
    figures.extend(questions::figures(tables));
    figures.extend(answers::figures(tables));
    figures.extend(ratings::figures(tables));
    figures.extend(tags::figures(tables));
    figures.extend(judge::figures(tables));
    figures
}

/// The rows of `stat` in `tables` (none if it did not run).
fn rows<'a>(tables: &'a Tables, stat: &str) -> Option<&'a Table> {
    tables.get(stat)
}

/// The distinct values of `column` in row order.
fn distinct(table: &Table, column: &str) -> Vec<String> {
    let mut seen: Vec<String> = Vec::new();
    for row in 0..table.rows.len() {
        let value = table.text(row, column);
        if !seen.iter().any(|s| s == value) {
            seen.push(value.to_string());
        }
    }
    seen
}

/// Values with `value` in the slot of `series` among `all` (one colour per group in a chart).
fn in_slot(all: &[String], series: &str, value: f64) -> Vec<f64> {
    all.iter()
        .map(|s| if s == series { value } else { 0.0 })
        .collect()
}
