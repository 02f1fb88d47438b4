//! Questions per template and per strategy (paper 000, table 3).

use super::{Figure, Tables, distinct, in_slot, rows};
use crate::chart::{Bar, BarChart};

pub(super) fn figures(tables: &Tables) -> Vec<Figure> {
    let mut figures = Vec::new();
    if let Some(table) = rows(tables, "qa_templates") {
        let strategies = distinct(table, "question_strategy");
        let names: Vec<&str> = strategies.iter().map(String::as_str).collect();
        let bars = (0..table.rows.len()).map(|row| {
            let strategy = table.text(row, "question_strategy");
            Bar::new(
                table.text(row, "question_type"),
                in_slot(&strategies, strategy, table.number(row, "questions")),
            )
        });
        figures.push(Figure {
            name: "questions_per_template",
            caption: "QA pairs per question template, coloured by question strategy.",
            stat: "qa_templates",
            chart: BarChart::new("Questions per template", "QA pairs")
                .with_series(&names)
                .with_bars(bars),
        });
    }
    if let Some(table) = rows(tables, "qa_texts") {
        let bars = (0..table.rows.len()).map(|row| {
            let unique = table.number(row, "unique_questions");
            let questions = table.number(row, "questions");
            Bar::new(
                table.text(row, "question_strategy"),
                vec![unique, questions - unique],
            )
        });
        figures.push(Figure {
            name: "questions_per_strategy",
            caption: "QA pairs per question strategy: unique question texts and the repeats \
                      of a template's phrasings (table 3).",
            stat: "qa_texts",
            chart: BarChart::new("Questions per strategy", "QA pairs")
                .with_series(&["unique question texts", "repeated question texts"])
                .with_bars(bars),
        });
    }
    figures
}
