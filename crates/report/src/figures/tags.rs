//! Finding and region tags of the answers and the positive/negative balance of the region and
//! finding questions (paper 000, figure 5).

use super::{Figure, Tables, rows};
use crate::chart::{Bar, BarChart};
use crate::table::Table;

/// Tags shown per chart (the CSV table has all).
const TOP_TAGS: usize = 25;
/// Items of each kind in the balance chart.
const TOP_BALANCE: usize = 15;

pub(super) fn figures(tables: &Tables) -> Vec<Figure> {
    let mut figures = Vec::new();
    if let Some(table) = rows(tables, "qa_tags") {
        figures.push(Figure {
            name: "findings",
            caption: "The most frequent finding tags of the answer parts, mentioned positively \
                      and negatively (figure 5).",
            stat: "qa_tags",
            chart: tag_chart(table, "finding", "Findings in answers (top 25)"),
        });
        figures.push(Figure {
            name: "regions",
            caption: "The most frequent region tags of the answer parts, mentioned positively \
                      and negatively (figure 5).",
            stat: "qa_tags",
            chart: tag_chart(table, "region", "Regions in answers (top 25)"),
        });
    }
    if let Some(table) = rows(tables, "qa_balance") {
        let bars = ["finding", "region"].into_iter().flat_map(|kind| {
            (0..table.rows.len())
                .filter(move |row| table.text(*row, "kind") == kind)
                .take(TOP_BALANCE)
                .map(move |row| {
                    Bar::new(
                        format!("{kind}: {}", table.text(row, "item")),
                        vec![
                            table.number(row, "pos_questions"),
                            table.number(row, "neg_questions"),
                        ],
                    )
                })
        });
        figures.push(Figure {
            name: "balance",
            caption: "Positive and negative main answers of the finding and region-abnormality \
                      questions, per asked item (the balanced sampling of section 3.2).",
            stat: "qa_balance",
            chart: BarChart::new("Positive/negative balance", "QA pairs")
                .with_series(&["positive", "negative"])
                .with_bars(bars),
        });
    }
    figures
}

fn tag_chart(table: &Table, kind: &str, title: &str) -> BarChart {
    let bars = (0..table.rows.len())
        .filter(|row| table.text(*row, "kind") == kind)
        .take(TOP_TAGS)
        .map(|row| {
            Bar::new(
                table.text(row, "tag"),
                vec![
                    table.number(row, "pos_mentions"),
                    table.number(row, "neg_mentions"),
                ],
            )
        });
    BarChart::new(title, "answer parts")
        .with_series(&["positive", "negative"])
        .with_bars(bars)
}
