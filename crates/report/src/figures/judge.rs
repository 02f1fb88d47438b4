//! The judge's content dedup: per criterion, the criterion requests (one per QA pair) and the
//! distinct inputs actually judged.

use super::{Figure, Tables, distinct, rows};
use crate::chart::{Bar, BarChart};

pub(super) fn figures(tables: &Tables) -> Vec<Figure> {
    let Some(table) = rows(tables, "judge_calls") else {
        return Vec::new();
    };
    let several = distinct(table, "judge").len() > 1;
    let bars = (0..table.rows.len()).map(|row| {
        let judged = table.number(row, "judged_inputs");
        let naive = table.number(row, "naive_calls");
        let criterion = table.text(row, "criterion");
        let label = if several {
            format!("{} · {criterion}", table.text(row, "judge"))
        } else {
            criterion.to_string()
        };
        Bar::new(label, vec![judged, (naive - judged).max(0.0)])
    });
    vec![Figure {
        name: "judge_dedup",
        caption: "Criterion requests per criterion (one per QA pair): the distinct inputs the \
                  judge rated, and the requests answered by an identical input's verdict.",
        stat: "judge_calls",
        chart: BarChart::new("Judge calls with content dedup", "criterion requests")
            .with_series(&["distinct inputs judged", "served by dedup"])
            .with_bars(bars),
    }]
}
