//! Benchmark: full rule-based report extraction (sentences, observations per FINDINGS /
//! IMPRESSION cluster, indication) over synthetic MIMIC-style reports, single-threaded.
//!
//! Scale: `EXTRACT_BENCH_REPORTS` reports (default 5,000) from `cxrlake synth` without masks;
//! median of 5 runs, reports per second.

use std::path::Path;
use std::time::Instant;

use cxrlake_extract::rules::RulesExtractor;
use cxrlake_extract::{SectionType, clusters};
use cxrlake_refdefs::RefDefs;
use cxrlake_synth::SynthOptions;

/// Every `.txt` report under `dir`.
fn read_reports(dir: &Path, out: &mut Vec<String>) {
    for entry in std::fs::read_dir(dir).expect("read dir") {
        let path = entry.expect("dir entry").path();
        if path.is_dir() {
            read_reports(&path, out);
        } else if path.extension().is_some_and(|e| e == "txt") {
            out.push(std::fs::read_to_string(&path).expect("read report"));
        }
    }
}

/// Extracts everything from one report; returns the number of observations (kept alive).
fn extract(extractor: &RulesExtractor, report: &str) -> usize {
    let sentences = extractor.sentences(report);
    let cluster_ids = clusters(&sentences);
    let reportable = |t: SectionType| matches!(t, SectionType::Findings | SectionType::Impression);
    let mut seen: Vec<&str> = Vec::new();
    let mut observations = 0;
    for (sentence, cluster) in sentences.iter().zip(&cluster_ids) {
        if !reportable(sentence.section_type) || seen.contains(&cluster.as_str()) {
            continue;
        }
        seen.push(cluster);
        let texts: Vec<&str> = sentences
            .iter()
            .zip(&cluster_ids)
            .filter(|(s, c)| *c == cluster && reportable(s.section_type))
            .map(|(s, _)| s.sentence.as_str())
            .collect();
        observations += extractor.observations(&texts).len();
    }
    let indication: Vec<&str> = sentences
        .iter()
        .filter(|s| s.section_type == SectionType::Indication)
        .map(|s| s.sentence.as_str())
        .collect();
    let findings: Vec<(&str, &str)> = sentences
        .iter()
        .filter(|s| reportable(s.section_type))
        .map(|s| (s.sent_id.as_str(), s.sentence.as_str()))
        .collect();
    observations
        + usize::from(
            extractor
                .indication(&indication.join(" "), &findings)
                .is_some(),
        )
}

#[allow(clippy::print_stdout)]
fn main() {
    let reports_wanted: usize = std::env::var("EXTRACT_BENCH_REPORTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(5_000);
    let dir = tempfile::tempdir().expect("temp dir");
    let out = dir.path().join("corpus");
    cxrlake_synth::generate(&SynthOptions::new(reports_wanted, 7, &out).with_cxas_fraction(0.0))
        .expect("synthetic corpus");
    let mut reports = Vec::new();
    read_reports(&out.join("files"), &mut reports);

    let started = Instant::now();
    let extractor = RulesExtractor::new(&RefDefs::embedded().expect("embedded refdefs"));
    println!(
        "extract rules: lexicon built in {:.1} ms",
        started.elapsed().as_secs_f64() * 1e3
    );
    let mut times = Vec::new();
    let mut observations = 0;
    for _ in 0..5 {
        let started = Instant::now();
        observations = reports
            .iter()
            .map(|r| extract(&extractor, r))
            .sum::<usize>();
        times.push(started.elapsed().as_secs_f64());
    }
    times.sort_by(f64::total_cmp);
    let median = times[times.len() / 2];
    println!(
        "extract rules: {} reports, {:.0} reports/s (median of 5, single thread, {observations} observations and indications)",
        reports.len(),
        reports.len() as f64 / median
    );
}
