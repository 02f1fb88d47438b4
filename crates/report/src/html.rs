//! `index.html`: one self-contained page (inline CSS, no script, no remote font) that shows each
//! figure's PNG linked to its SVG, and every statistic as a table with the cells of its CSV.

use std::fmt::Write;

use crate::figures::{Figure, Tables};
use crate::stats;
use crate::table::Table;

/// Tables longer than this are folded (`<details>`).
const FOLD_ROWS: usize = 30;

/// A section of the page: its figures, then its tables.
#[derive(Debug)]
struct Section {
    id: &'static str,
    title: &'static str,
    text: &'static str,
    figures: &'static [&'static str],
    tables: &'static [&'static str],
}

const SECTIONS: [Section; 7] = [
    Section {
        id: "overview",
        title: "Overview",
        text: "Patients and studies with a scene graph, images, QA pairs and their answer parts.",
        figures: &[],
        tables: &["qa_overview"],
    },
    Section {
        id: "questions",
        title: "Questions (table 3)",
        text: "QA pairs per question template and strategy, and how often question and answer \
               texts repeat.",
        figures: &["questions_per_template", "questions_per_strategy"],
        tables: &["qa_templates", "qa_texts"],
    },
    Section {
        id: "answers",
        title: "Answers (figure 6)",
        text: "How many answer parts a QA pair has, and how long they are.",
        figures: &["answer_parts", "answer_lengths"],
        tables: &["qa_answer_parts", "qa_answer_lengths"],
    },
    Section {
        id: "ratings",
        title: "Ratings (figure 4)",
        text: "The judged quality: ratings overall and per template, and the levels of each \
               quality aspect.",
        figures: &["ratings", "ratings_per_type", "rating_aspects"],
        tables: &["qa_rating_distribution", "qa_ratings", "qa_rating_aspects"],
    },
    Section {
        id: "tags",
        title: "Findings, regions and balance (figure 5)",
        text: "Finding and region tags of the answers, positive and negative, and the balance of \
               the region and finding questions.",
        figures: &["findings", "regions", "balance"],
        tables: &["qa_tags", "qa_balance"],
    },
    Section {
        id: "judge",
        title: "Judge dedup",
        text: "Identical judge inputs share one verdict: distinct inputs judged per criterion \
               request.",
        figures: &["judge_dedup"],
        tables: &["judge_dedup", "judge_calls"],
    },
    Section {
        id: "provenance",
        title: "Provenance",
        text: "Each written table's last commit: the stage, table version, time, code version, \
               run and rows.",
        figures: &[],
        tables: &["provenance"],
    },
];

/// The statistics and tables the page shows, in page order.
pub fn table_names() -> impl Iterator<Item = &'static str> {
    SECTIONS.iter().flat_map(|s| s.tables.iter().copied())
}

/// The `-- ` comment lines a statistic's SQL starts with, as one paragraph.
fn leading_comment(sql: &str) -> String {
    sql.lines()
        .map_while(|line| line.strip_prefix("--"))
        .map(str::trim)
        .collect::<Vec<_>>()
        .join(" ")
}

/// Escapes text for HTML.
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

const STYLE: &str = "body{font-family:'DejaVu Sans',Verdana,sans-serif;margin:2em auto;\
max-width:1060px;color:#222;padding:0 1em}h1{margin-bottom:.2em}nav a{margin-right:1em}\
.cards{display:flex;flex-wrap:wrap;gap:1em;margin:1em 0}.card{border:1px solid #ccc;\
border-radius:6px;padding:.6em 1em;min-width:8em}.card b{display:block;font-size:1.5em}\
figure{margin:1.5em 0}figure img{max-width:100%;height:auto;border:1px solid #eee}\
table{border-collapse:collapse;margin:1em 0;font-size:.85em}th,td{border:1px solid #ccc;\
padding:.2em .5em}td{text-align:right}td:first-child{text-align:left}th{background:#f4f4f4}\
caption{text-align:left;font-weight:bold;padding:.3em 0}.note{color:#555}";

/// The page.
pub fn page(title: &str, lake: &str, figures: &[Figure], tables: &Tables) -> String {
    let mut out = String::new();
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <title>{title}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n<h1>{title}</h1>\n\
         <p class=\"note\">Lake <code>{lake}</code>, cxrlake {version}. Every number is a \
         statistic of <code>sql/stats/</code> (<code>cxrlake stats NAME</code> prints it); \
         each table is also a CSV file next to this page.</p>\n",
        title = escape(title),
        lake = escape(lake),
        version = env!("CARGO_PKG_VERSION"),
    );
    out.push_str(&cards(tables));
    out.push_str("<nav>");
    for section in &SECTIONS {
        let _ = write!(
            out,
            "<a href=\"#{}\">{}</a>",
            section.id,
            escape(section.title)
        );
    }
    out.push_str("</nav>\n");
    for section in &SECTIONS {
        out.push_str(&section_html(section, figures, tables));
    }
    out.push_str("</body>\n</html>\n");
    out
}

/// The headline numbers: the overview's columns and the judge's dedup ratio.
fn cards(tables: &Tables) -> String {
    let mut out = String::from("<div class=\"cards\">");
    if let Some(overview) = tables.get("qa_overview") {
        for (column, value) in overview
            .columns
            .iter()
            .zip(overview.rows.first().into_iter().flatten())
        {
            let _ = write!(
                out,
                "<div class=\"card\"><b>{}</b>{}</div>",
                escape(value),
                escape(&column.replace('_', " "))
            );
        }
    }
    if let Some(dedup) = tables.get("judge_dedup") {
        for row in 0..dedup.rows.len() {
            let _ = write!(
                out,
                "<div class=\"card\"><b>{}</b>judge dedup ratio ({})</div>",
                escape(dedup.text(row, "dedup_ratio")),
                escape(dedup.text(row, "judge"))
            );
        }
    }
    out.push_str("</div>\n");
    out
}

fn section_html(section: &Section, figures: &[Figure], tables: &Tables) -> String {
    let mut out = format!(
        "<section id=\"{}\">\n<h2>{}</h2>\n<p>{}</p>\n",
        section.id,
        escape(section.title),
        escape(section.text)
    );
    for figure in figures.iter().filter(|f| section.figures.contains(&f.name)) {
        out.push_str(&figure_html(figure));
    }
    for table in section.tables.iter().filter_map(|name| tables.get(*name)) {
        out.push_str(&table_html(table));
    }
    out.push_str("</section>\n");
    out
}

fn figure_html(figure: &Figure) -> String {
    let name = figure.name;
    format!(
        "<figure id=\"fig-{name}\">\n<a href=\"{name}.svg\"><img src=\"{name}.png\" alt=\"{alt}\" \
         width=\"1000\"></a>\n<figcaption>{caption} <a href=\"{name}.svg\">SVG</a> · \
         <a href=\"{stat}.csv\">{stat}.csv</a></figcaption>\n</figure>\n",
        alt = escape(&figure.chart.title),
        caption = escape(figure.caption),
        stat = figure.stat,
    )
}

fn table_html(table: &Table) -> String {
    let what = stats::query(&table.name).map_or_else(
        || "Each written table's last commit.".to_string(),
        leading_comment,
    );
    let mut out = format!(
        "<table class=\"stat\" data-stat=\"{name}\">\n<caption>{name} — {what} \
         (<a href=\"{name}.csv\">{name}.csv</a>)</caption>\n<thead><tr>",
        name = escape(&table.name),
        what = escape(&what),
    );
    for column in &table.columns {
        let _ = write!(out, "<th>{}</th>", escape(column));
    }
    out.push_str("</tr></thead>\n<tbody>\n");
    for row in &table.rows {
        out.push_str("<tr>");
        for cell in row {
            let _ = write!(out, "<td>{}</td>", escape(cell));
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</tbody>\n</table>\n");
    if table.rows.len() > FOLD_ROWS {
        format!(
            "<details>\n<summary>{} ({} rows)</summary>\n{out}</details>\n",
            escape(&table.name),
            table.rows.len()
        )
    } else {
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_is_escaped_and_every_section_table_is_known() {
        assert_eq!(escape("a<b & \"c\""), "a&lt;b &amp; &quot;c&quot;");
        assert_eq!(
            leading_comment("-- one\n-- two\nSELECT 1\n-- no"),
            "one two"
        );
        for name in table_names() {
            assert!(
                name == "provenance" || stats::query(name).is_some(),
                "{name} is a statistic"
            );
        }
        let page = page("t", "file:///lake/", &[], &Tables::new());
        assert!(page.contains("<h2>Provenance</h2>"));
        assert!(!page.contains("http"), "no remote reference");
    }
}
