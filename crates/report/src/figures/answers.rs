//! Answer parts per QA pair and answer-part lengths (paper 000, figure 6).

use super::{Figure, Tables, rows};
use crate::chart::{Bar, BarChart};

pub(super) fn figures(tables: &Tables) -> Vec<Figure> {
    let mut figures = Vec::new();
    if let Some(table) = rows(tables, "qa_answer_parts") {
        let bars = (0..table.rows.len()).map(|row| {
            let parts = table.text(row, "answer_parts");
            let label = if parts == "1" {
                "1 part".to_string()
            } else {
                format!("{parts} parts")
            };
            Bar::new(label, vec![table.number(row, "questions")])
        });
        figures.push(Figure {
            name: "answer_parts",
            caption: "QA pairs by their number of answer parts (main answer, details, related \
                      information).",
            stat: "qa_answer_parts",
            chart: BarChart::new("Answer parts per QA pair", "QA pairs").with_bars(bars),
        });
    }
    if let Some(table) = rows(tables, "qa_answer_lengths") {
        let bars = (0..table.rows.len()).map(|row| {
            let median = table.number(row, "median_words");
            let p90 = table.number(row, "p90_words");
            Bar::new(
                format!(
                    "{} ({})",
                    table.text(row, "answer_type"),
                    table.text(row, "positiveness")
                ),
                vec![median, (p90 - median).max(0.0)],
            )
        });
        figures.push(Figure {
            name: "answer_lengths",
            caption: "Answer-part length in words per answer type and positiveness: the median, \
                      and the bar's end at the 90th percentile (figure 6).",
            stat: "qa_answer_lengths",
            chart: BarChart::new("Answer-part lengths", "words")
                .with_series(&["median", "median to 90th percentile"])
                .with_bars(bars),
        });
    }
    figures
}
