//! Embedding and matching throughput: the lexical embedder, the concept index (exact synonyms,
//! then cosine top-1 over every reference name and synonym) and, when `ORT_DYLIB_PATH`,
//! `ONNX_TEST_MODEL` and `ONNX_TEST_TOKENIZER` are set (`./scripts/test` shows how), the ONNX
//! embedder in batches of 64.
//!
//! Queries: the distinct entity, region, name and summary texts of `EMBED_BENCH_STUDIES`
//! synthetic reports (default 2,000) extracted by the rules backend.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Instant;

use cxrlake_embed::{Embedder, LexicalEmbedder, OnnxEmbedder};
use cxrlake_extract::rules::RulesExtractor;
use cxrlake_map::{ConceptIndex, ConceptKind};
use cxrlake_refdefs::RefDefs;
use cxrlake_synth::{SynthOptions, generate};

#[allow(clippy::print_stdout)]
fn main() {
    let studies: usize = std::env::var("EMBED_BENCH_STUDIES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2_000);
    let temp = tempfile::tempdir().expect("tempdir");
    let corpus = temp.path().join("corpus");
    generate(&SynthOptions::new(studies, 0, &corpus)).expect("synth");
    let defs = RefDefs::embedded().expect("refdefs");
    let rules = RulesExtractor::new(&defs);
    let mut texts = BTreeSet::new();
    for entry in walk(&corpus) {
        let Ok(report) = std::fs::read_to_string(&entry) else {
            continue;
        };
        let sentences = rules.sentences(&report);
        let lines: Vec<&str> = sentences.iter().map(|s| s.sentence.as_str()).collect();
        for observation in rules.observations(&lines) {
            texts.insert(observation.entity.clone());
            texts.insert(observation.name.clone());
            texts.insert(observation.summary_sentence.clone());
            texts.extend(observation.regions.iter().cloned());
        }
    }
    let texts: Vec<String> = texts.into_iter().filter(|t| !t.is_empty()).collect();
    let queries: Vec<&str> = texts.iter().map(String::as_str).collect();
    println!("{} distinct texts from {studies} reports", queries.len());

    let lexical = LexicalEmbedder::new();
    let started = Instant::now();
    let vectors = lexical.embed(&queries).expect("embed");
    let seconds = started.elapsed().as_secs_f64();
    println!(
        "lexical embedder: {} texts in {seconds:.3} s ({:.0} texts/s)",
        vectors.len(),
        vectors.len() as f64 / seconds
    );

    let started = Instant::now();
    let index =
        ConceptIndex::new(&defs, Arc::new(lexical), 0.5, Default::default()).expect("index");
    println!(
        "concept index (lexical, {} reference texts): built in {:.3} s",
        ConceptIndex::reference_texts(&defs).len(),
        started.elapsed().as_secs_f64()
    );
    let started = Instant::now();
    let mut resolved = 0;
    for query in &queries {
        resolved += usize::from(
            index
                .best(ConceptKind::Finding, query)
                .expect("match")
                .is_some(),
        );
    }
    let seconds = started.elapsed().as_secs_f64();
    println!(
        "match_concept (finding, cold memo): {} texts in {seconds:.3} s ({:.0} texts/s), {resolved} resolved",
        queries.len(),
        queries.len() as f64 / seconds
    );

    let vars = ["ORT_DYLIB_PATH", "ONNX_TEST_MODEL", "ONNX_TEST_TOKENIZER"];
    if vars
        .iter()
        .any(|v| std::env::var_os(v).is_none_or(|x| x.is_empty()))
    {
        println!("onnx embedder: skipped ({} not set)", vars.join(", "));
        return;
    }
    let model = std::env::var("ONNX_TEST_MODEL").expect("set");
    let tokenizer = std::env::var("ONNX_TEST_TOKENIZER").expect("set");
    let onnx = OnnxEmbedder::load(model.as_ref(), tokenizer.as_ref(), 128)
        .expect("onnx")
        .with_batch_size(64)
        .expect("batch size");
    let started = Instant::now();
    let vectors = onnx.embed(&queries).expect("embed");
    let seconds = started.elapsed().as_secs_f64();
    println!(
        "onnx embedder ({}): {} texts in {seconds:.2} s ({:.0} texts/s)",
        onnx.id(),
        vectors.len(),
        vectors.len() as f64 / seconds
    );
}

/// The report files under `dir`.
fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(at) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&at) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "txt")
                && path.to_string_lossy().contains("/files/")
            {
                out.push(path);
            }
        }
    }
    out.sort();
    out
}
