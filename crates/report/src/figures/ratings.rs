//! Ratings: their distribution, per question type, and the quality aspects behind them (paper
//! 000, figure 4).

use super::{Figure, Tables, distinct, in_slot, rows};
use crate::chart::{Bar, BarChart};

/// The rating columns of `qa_ratings.sql`, best first.
const RATINGS: [&str; 7] = ["A++", "A+", "A", "B", "C", "D", "not_rated"];

pub(super) fn figures(tables: &Tables) -> Vec<Figure> {
    let mut figures = Vec::new();
    if let Some(table) = rows(tables, "qa_rating_distribution") {
        let kinds = ["QA pairs".to_string(), "main answers".to_string()];
        let mut bars = Vec::new();
        for (kind, column) in kinds.iter().zip(["questions", "main_answers"]) {
            bars.extend((0..table.rows.len()).map(|row| {
                Bar::new(
                    format!("{kind}: {}", table.text(row, "rating")),
                    in_slot(&kinds, kind, table.number(row, column)),
                )
            }));
        }
        figures.push(Figure {
            name: "ratings",
            caption: "Ratings of the QA pairs and of their main answers, best first (figure 4a; \
                      A or better: fine-tuning grade, B or better: pre-training grade).",
            stat: "qa_rating_distribution",
            chart: BarChart::new("Rating distribution", "count")
                .with_series(&["QA pairs", "main answers"])
                .with_bars(bars),
        });
    }
    if let Some(table) = rows(tables, "qa_ratings") {
        let bars = (0..table.rows.len()).map(|row| {
            Bar::new(
                table.text(row, "question_type"),
                RATINGS.iter().map(|r| table.number(row, r)).collect(),
            )
        });
        figures.push(Figure {
            name: "ratings_per_type",
            caption: "Ratings per question template, stacked best to worst.",
            stat: "qa_ratings",
            chart: BarChart::new("Ratings per question type", "QA pairs")
                .with_series(&["A++", "A+", "A", "B", "C", "D", "not rated"])
                .with_bars(bars),
        });
    }
    if let Some(table) = rows(tables, "qa_rating_aspects") {
        let aspects = distinct(table, "aspect");
        let names: Vec<&str> = aspects.iter().map(String::as_str).collect();
        let bars = (0..table.rows.len()).map(|row| {
            let aspect = table.text(row, "aspect");
            let level = match table.text(row, "level") {
                "" => "(no level)",
                level => level,
            };
            Bar::new(
                format!("{aspect}: {level}"),
                in_slot(&aspects, aspect, table.number(row, "n")),
            )
        });
        figures.push(Figure {
            name: "rating_aspects",
            caption: "Levels of each quality aspect behind the ratings: answer parts for the \
                      text aspects, QA pairs for the others (figure 4b).",
            stat: "qa_rating_aspects",
            chart: BarChart::new("Quality aspects", "answer parts or QA pairs")
                .with_series(&names)
                .with_bars(bars),
        });
    }
    figures
}
