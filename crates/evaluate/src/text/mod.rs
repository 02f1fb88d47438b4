//! Free-text answer metrics: BLEU-1..4, METEOR, ROUGE-L, CIDEr-D (papers 001 table 4 and
//! GEMeX 004 table 5) and BERTScore.
//!
//! ```text
//!  candidates, references ─tokenize (lowercase, punctuation split off)─► interned token ids
//!     ├─► bleu     BLEU-1..4   pycocoevalcap Bleu(4): closest ref length, coco smoothing
//!     ├─► meteor   METEOR      nltk meteor_score: exact + Porter stem stages, no synonyms
//!     ├─► rouge_l  ROUGE-L     pycocoevalcap Rouge: LCS, β = 1.2 (rouge_l_f1: rouge-score, β = 1)
//!     └─► cider_d  CIDEr-D     pycocoevalcap Cider: tf-idf over the corpus' references, σ = 6
//!  token embeddings (a closure) ──► bertscore   greedy cosine matching, no rescaling
//! ```
//!
//! Every corpus function takes one candidate per item and a non-empty list of references per
//! item, and returns the corpus score with one score per item ([`CorpusScores`]). Scores are on
//! the 0–1 scale (CIDEr-D 0–10), as the reference implementations print them; the papers' tables
//! show them ×100. All n-gram metrics see the tokens of [`tokenize`]; the tests feed the same
//! tokens, space-joined, to pycocoevalcap, rouge-score and nltk and agree within 1e-9.
//!
//! METEOR here is not METEOR 1.5 (coco-caption's Java jar): see [`meteor`] for what differs.

mod bertscore;
mod bleu;
mod cider;
mod meteor;
mod porter;
mod rouge;
mod tokenize;

pub use bertscore::{
    BertScore, Idf, WeightedTokens, bertscore, bertscore_corpus, bertscore_weighted,
};
pub use bleu::{BleuStats, bleu, bleu_stats};
pub use cider::cider_d;
pub use meteor::meteor;
pub use porter::porter_stem;
pub use rouge::{rouge_l, rouge_l_f1};
pub use tokenize::tokenize;

use crate::Result;

/// A metric over a corpus: its corpus-level value and one value per item, in input order.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct CorpusScores<T> {
    /// The corpus score (for BLEU computed from pooled counts, otherwise the mean of `items`).
    pub corpus: T,
    /// One score per item.
    pub items: Vec<T>,
}

/// The corpus scores of the free-text metrics of papers 001 and 004.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct TextScores {
    /// BLEU-1, BLEU-2, BLEU-3, BLEU-4 (pycocoevalcap).
    pub bleu: [f64; 4],
    /// METEOR, exact + stem stages (nltk's formula without synonyms).
    pub meteor: f64,
    /// ROUGE-L, β = 1.2 (pycocoevalcap).
    pub rouge_l: f64,
    /// CIDEr-D (pycocoevalcap's `Cider`), 0–10.
    pub cider_d: f64,
    /// Mean BERTScore F1 when token embeddings were available ([`bertscore_corpus`]).
    pub bertscore: Option<f64>,
}

/// BLEU-1..4, METEOR, ROUGE-L and CIDEr-D of `candidates` against `references` (one non-empty
/// list per candidate), tokenizing every text once; `bertscore` is left `None` for the caller
/// to fill from [`bertscore_corpus`]. Errors name the offending item.
pub fn score_corpus(candidates: &[&str], references: &[Vec<&str>]) -> Result<TextScores> {
    let corpus = tokenize::Corpus::new(candidates, references)?;
    Ok(TextScores {
        bleu: bleu::bleu_of(&corpus).corpus,
        meteor: meteor::meteor_of(&corpus).corpus,
        rouge_l: rouge::rouge_l_of(&corpus).corpus,
        cider_d: cider::cider_d_of(&corpus).corpus,
        bertscore: None,
    })
}

/// Arithmetic mean (0 for no values).
fn mean(values: &[f64]) -> f64 {
    if values.is_empty() {
        return 0.0;
    }
    values.iter().sum::<f64>() / values.len() as f64
}
