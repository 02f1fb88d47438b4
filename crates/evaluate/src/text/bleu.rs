//! BLEU-1..4 exactly as pycocoevalcap's `Bleu(4)` (coco-caption's `bleu_scorer.py`).
//!
//! ```text
//!  per item:  clipped n-gram matches ("correct"), candidate n-grams ("guess"),
//!             reference length closest to the candidate's (ties → the shorter)
//!  corpus:    BLEU-n = (Π_{k≤n} (Σcorrect_k + 1e-15) / (Σguess_k + 1e-9))^(1/n)
//!             × exp(1 − Σref_len / Σcand_len) when Σcand_len < Σref_len
//!  per item:  the same formula on the item's own counts
//! ```
//!
//! The 1e-15 / 1e-9 terms are coco-caption's smoothing: a zero match count gives a tiny
//! positive value rather than a division by zero. Item scores are reported as coco-caption
//! reports them; only the corpus score is "BLEU" in the usual sense.

use super::CorpusScores;
use super::tokenize::{Corpus, FxHashMap, NGram, ngram_counts, ngram_order};
use crate::Result;

/// Largest n-gram order.
const MAX_N: usize = 4;
/// Added to the match counts (coco-caption's `tiny`).
const TINY: f64 = 1e-15;
/// Added to the n-gram counts (coco-caption's `small`).
const SMALL: f64 = 1e-9;

/// Corpus-level BLEU-1..4 of `candidates` against their `references` (one list per candidate),
/// with coco-caption's per-item scores; texts are tokenized by [`super::tokenize`].
pub fn bleu(candidates: &[&str], references: &[Vec<&str>]) -> Result<CorpusScores<[f64; 4]>> {
    Ok(bleu_of(&Corpus::new(candidates, references)?))
}

/// BLEU's sufficient statistics of one item (or of pooled items): corpus BLEU is a function of
/// their sums, so a bootstrap pools the statistics of its draws instead of re-tokenizing.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct BleuStats {
    candidate_len: usize,
    reference_len: usize,
    guess: [usize; MAX_N],
    correct: [usize; MAX_N],
}

type Counts = BleuStats;

impl BleuStats {
    /// The statistics of items drawn `weight` times each, summed.
    pub fn pooled<'a>(items: impl IntoIterator<Item = (&'a BleuStats, u32)>) -> BleuStats {
        let mut total = BleuStats::default();
        for (item, weight) in items {
            let w = weight as usize;
            total.candidate_len += w * item.candidate_len;
            total.reference_len += w * item.reference_len;
            for k in 0..MAX_N {
                total.guess[k] += w * item.guess[k];
                total.correct[k] += w * item.correct[k];
            }
        }
        total
    }

    /// BLEU-1..4 of these statistics (for pooled statistics: corpus BLEU).
    pub fn scores(&self) -> [f64; 4] {
        score(self)
    }
}

/// The BLEU statistics of every item, in input order; [`BleuStats::pooled`] over all of them
/// with weight 1 gives [`bleu`]'s corpus score.
pub fn bleu_stats(candidates: &[&str], references: &[Vec<&str>]) -> Result<Vec<BleuStats>> {
    let corpus = Corpus::new(candidates, references)?;
    Ok(corpus
        .candidates
        .iter()
        .zip(&corpus.references)
        .map(|(candidate, references)| item_counts(candidate, references))
        .collect())
}

pub(crate) fn bleu_of(corpus: &Corpus) -> CorpusScores<[f64; 4]> {
    let mut total = Counts::default();
    let mut items = Vec::with_capacity(corpus.len());
    for (candidate, references) in corpus.candidates.iter().zip(&corpus.references) {
        let counts = item_counts(candidate, references);
        total.candidate_len += counts.candidate_len;
        total.reference_len += counts.reference_len;
        for k in 0..MAX_N {
            total.guess[k] += counts.guess[k];
            total.correct[k] += counts.correct[k];
        }
        items.push(score(&counts));
    }
    CorpusScores {
        corpus: score(&total),
        items,
    }
}

fn item_counts(candidate: &[u32], references: &[Vec<u32>]) -> Counts {
    let mut max_counts: FxHashMap<NGram, u32> = FxHashMap::default();
    for reference in references {
        for (ngram, count) in ngram_counts(reference, MAX_N) {
            let max = max_counts.entry(ngram).or_insert(0);
            *max = (*max).max(count);
        }
    }
    let candidate_len = candidate.len();
    // coco-caption's "closest": the smallest |ref_len − cand_len|, ties broken by the shorter.
    let reference_len = references
        .iter()
        .map(|reference| (reference.len().abs_diff(candidate_len), reference.len()))
        .min()
        .map_or(0, |(_, len)| len);
    let mut counts = Counts {
        candidate_len,
        reference_len,
        ..Counts::default()
    };
    for (k, guess) in counts.guess.iter_mut().enumerate() {
        *guess = (candidate_len + 1).saturating_sub(k + 1);
    }
    for (ngram, count) in ngram_counts(candidate, MAX_N) {
        let clipped = count.min(max_counts.get(&ngram).copied().unwrap_or(0));
        counts.correct[ngram_order(ngram) - 1] += clipped as usize;
    }
    counts
}

fn score(counts: &Counts) -> [f64; 4] {
    let mut scores = [0.0; MAX_N];
    let mut product = 1.0_f64;
    for (k, score) in scores.iter_mut().enumerate() {
        product *= (counts.correct[k] as f64 + TINY) / (counts.guess[k] as f64 + SMALL);
        *score = product.powf(1.0 / (k + 1) as f64);
    }
    let ratio = (counts.candidate_len as f64 + TINY) / (counts.reference_len as f64 + SMALL);
    if ratio < 1.0 {
        let penalty = (1.0 - 1.0 / ratio).exp();
        scores.iter_mut().for_each(|score| *score *= penalty);
    }
    scores
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identical_texts_score_one() {
        let scores = bleu(
            &["a small left effusion"],
            &[vec!["A small left effusion."]],
        )
        .expect("valid input");
        for value in scores.corpus {
            assert!((value - 1.0).abs() < 1e-8, "{value}");
        }
    }

    #[test]
    fn pooled_statistics_give_the_corpus_score() {
        let candidates = [
            "a small left effusion",
            "no pneumothorax",
            "heart size is normal",
        ];
        let references = [
            vec!["small left pleural effusion"],
            vec!["there is no pneumothorax", "no pneumothorax is seen"],
            vec!["the heart is normal in size"],
        ];
        let corpus = bleu(&candidates, &references).expect("valid input").corpus;
        let stats = bleu_stats(&candidates, &references).expect("valid input");
        assert_eq!(
            BleuStats::pooled(stats.iter().map(|s| (s, 1))).scores(),
            corpus
        );
        // Drawing the first item twice and the last not at all pools 1 + 1 + 2.
        let drawn = BleuStats::pooled(stats.iter().zip([2, 1, 0]));
        let explicit = bleu(
            &[candidates[0], candidates[0], candidates[1]],
            &[
                references[0].clone(),
                references[0].clone(),
                references[1].clone(),
            ],
        )
        .expect("valid input")
        .corpus;
        assert_eq!(drawn.scores(), explicit);
    }

    #[test]
    fn closest_reference_length_breaks_ties_to_the_shorter() {
        let counts = item_counts(&[1, 2, 3], &[vec![1, 2, 3, 4], vec![1, 2]]);
        assert_eq!(counts.reference_len, 2);
        assert_eq!(counts.guess, [3, 2, 1, 0]);
        assert_eq!(counts.correct, [3, 2, 1, 0]);
    }
}
