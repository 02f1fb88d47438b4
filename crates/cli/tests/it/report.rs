//! `cxrlake report` on a small synthetic lake (12 studies through every stage): the page refers
//! only to files inside its folder, every PNG decodes and is not blank, every number in the page
//! is the one `cxrlake stats NAME` prints (CSV) and `cxrlake sql --format json` computes, and
//! headless Chromium renders the page offline (`tests/python/report_screenshot.py`).
//! `cxrlake export release` writes the same report as the release's `stats/` and a
//! `cxrlake_info.json` in every folder.
//!
//! Needs `python3` and Chromium (`/usr/bin/chromium`; scripts/test installs it).

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::Value;

use crate::{cxrlake, ingested_lake, ok};

/// The values of every `name="…"` attribute in `html`.
fn attributes<'a>(html: &'a str, name: &str) -> Vec<&'a str> {
    let marker = format!(" {name}=\"");
    html.match_indices(&marker)
        .filter_map(|(at, _)| {
            let rest = &html[at + marker.len()..];
            rest.find('"').map(|end| &rest[..end])
        })
        .collect()
}

fn unescape(text: &str) -> String {
    text.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&amp;", "&")
}

/// The cells of each `<table data-stat="NAME">` of the page, by NAME: header row first.
fn html_tables(html: &str) -> BTreeMap<String, Vec<Vec<String>>> {
    let mut tables = BTreeMap::new();
    for (at, _) in html.match_indices("<table class=\"stat\" data-stat=\"") {
        let rest = &html[at..];
        let name = attributes(rest, "data-stat")[0].to_string();
        let body = &rest[..rest.find("</table>").expect("table ends")];
        let rows = body
            .split("<tr>")
            .skip(1)
            .map(|row| {
                row.split(['<', '>'])
                    .collect::<Vec<_>>()
                    .windows(3)
                    .filter(|w| (w[0] == "td" || w[0] == "th") && w[2].starts_with('/'))
                    .map(|w| unescape(w[1]))
                    .collect()
            })
            .collect();
        tables.insert(name, rows);
    }
    tables
}

/// The rows of CSV `text`, header first.
fn csv_rows(text: &str) -> Vec<Vec<String>> {
    csv::ReaderBuilder::new()
        .has_headers(false)
        .from_reader(text.as_bytes())
        .records()
        .map(|record| {
            record
                .expect("csv record")
                .iter()
                .map(str::to_string)
                .collect()
        })
        .collect()
}

/// Checks that `file` is a PNG that decodes, of a chart's width, and not one colour.
fn check_png(file: &Path) {
    let bytes = std::fs::read(file).expect("read png");
    let decoder = png::Decoder::new(std::io::Cursor::new(bytes));
    let mut reader = decoder.read_info().expect("png header");
    let mut pixels = vec![0; reader.output_buffer_size().expect("png size")];
    let frame = reader.next_frame(&mut pixels).expect("png pixels");
    assert_eq!(frame.width, 1000, "{}", file.display());
    assert!(frame.height > 100, "{}", file.display());
    let first = &pixels[..3];
    let other = pixels.chunks(3).filter(|p| *p != first).count();
    assert!(other > 1000, "{} is blank", file.display());
}

/// Checks that every `src` and `href` of the page is a file inside `dir` (or an anchor).
fn check_local_references(html: &str, dir: &Path) {
    let mut references = attributes(html, "src");
    references.extend(attributes(html, "href"));
    assert!(references.len() > 20, "{references:?}");
    for reference in references {
        if reference.starts_with('#') {
            continue;
        }
        assert!(
            !reference.contains(':') && !reference.starts_with('/') && !reference.contains(".."),
            "{reference} is not a file inside the report's folder"
        );
        assert!(dir.join(reference).is_file(), "{reference} is missing");
    }
    for remote in ["http://", "https://", "//fonts", "@import", "<script"] {
        assert!(!html.contains(remote), "the page refers to {remote}");
    }
}

#[test]
fn report_shows_the_lakes_statistics_as_figures_and_equal_numbers() {
    let dir = tempfile::tempdir().expect("tempdir");
    let lake = ingested_lake(dir.path(), 12, 5);
    ok(cxrlake(&lake, &["run"]));
    let out = dir.path().join("report");
    let summary = ok(cxrlake(
        &lake,
        &["report", "--out", out.to_str().expect("utf8")],
    ));
    assert!(
        summary.contains("11 figures (PNG and SVG), 13 CSV tables"),
        "{summary}"
    );

    let html = std::fs::read_to_string(out.join("index.html")).expect("index.html");
    check_local_references(&html, &out);
    let images = attributes(&html, "src");
    assert_eq!(images.len(), 11, "{images:?}");
    for image in images {
        check_png(&out.join(image));
        let svg = std::fs::read_to_string(out.join(image.replace(".png", ".svg"))).expect("svg");
        assert!(svg.starts_with("<svg") && svg.contains("<text"), "{image}");
    }

    // Every table's cells are its CSV file's and those `cxrlake stats NAME` prints.
    let tables = html_tables(&html);
    assert_eq!(tables.len(), 13, "{:?}", tables.keys());
    for (name, rows) in &tables {
        let file = std::fs::read_to_string(out.join(format!("{name}.csv"))).expect("csv");
        assert_eq!(rows, &csv_rows(&file), "{name}: page vs {name}.csv");
        if name != "provenance" {
            let printed = ok(cxrlake(&lake, &["stats", name, "--format", "csv"]));
            assert_eq!(printed, file, "{name}: cxrlake stats vs {name}.csv");
        }
    }

    // The headline numbers, by the same SQL through `cxrlake sql --format json`.
    let overview = &tables["qa_overview"];
    let json = ok(cxrlake(
        &lake,
        &[
            "sql",
            "--format",
            "json",
            "SELECT count(*) AS qa_pairs, sum(array_length(answers)) AS answer_parts FROM qa",
        ],
    ));
    let counted: Value = serde_json::from_str(&json).expect("json");
    for column in ["qa_pairs", "answer_parts"] {
        let at = overview[0].iter().position(|c| c == column).expect(column);
        assert_eq!(overview[1][at], counted[0][column].to_string(), "{column}");
        assert!(html.contains(&format!("<b>{}</b>", overview[1][at])));
    }
    assert_ne!(overview[1][3], "0", "the lake has QA pairs");
    let dedup = &tables["judge_dedup"];
    assert_eq!(dedup[0][4], "dedup_ratio");
    let ratio: f64 = dedup[1][4].parse().expect("ratio");
    assert!(ratio > 0.0 && ratio <= 1.0, "{ratio}");
    let provenance = &tables["provenance"];
    assert!(
        provenance
            .iter()
            .any(|row| row[0] == "qa" && row[1] == "grade"),
        "{provenance:?}"
    );

    let screenshot = dir.path().join("screenshot.png");
    crate::python_check(
        "report_screenshot.py",
        &[out.join("index.html").as_os_str(), screenshot.as_os_str()],
        "report screenshot ok",
    );

    // The release carries the same report in stats/ and describes each folder.
    let release = dir.path().join("release");
    ok(cxrlake(
        &lake,
        &[
            "export",
            "release",
            "--out",
            release.to_str().expect("utf8"),
            "--sample",
            "0",
        ],
    ));
    let stats = std::fs::read_to_string(release.join("stats/qa_overview.csv")).expect("stats/");
    assert_eq!(
        stats,
        std::fs::read_to_string(out.join("qa_overview.csv")).expect("csv")
    );
    assert!(release.join("stats/index.html").is_file());
    for folder in ["", "exports/A_frontal", "exports/B_frontal"] {
        let text = std::fs::read_to_string(release.join(folder).join("cxrlake_info.json"))
            .expect("cxrlake_info.json");
        let info: Value = serde_json::from_str(&text).expect("json");
        assert_eq!(info["name"], "MIMIC-Ext-CXR-QBA");
        let rated: u64 = info["ratings"]
            .as_array()
            .expect("ratings")
            .iter()
            .map(|r| r["qa_pairs"].as_u64().expect("count"))
            .sum();
        assert_eq!(Some(rated), info["counts"]["qa_pairs"].as_u64(), "{folder}");
    }
    let root: Value = serde_json::from_str(
        &std::fs::read_to_string(release.join("cxrlake_info.json")).expect("root info"),
    )
    .expect("json");
    assert_eq!(root["counts"]["qa_pairs"].to_string(), overview[1][3]);
}
