//! CIDEr-D exactly as pycocoevalcap's `Cider` (Vedantam et al. 2015, coco-caption's
//! `cider_scorer.py`, which is the "-D" variant).
//!
//! ```text
//!  document frequency df(g) = number of items whose references contain the n-gram g
//!  weight of g in a text    = count(g) · (ln N − ln max(1, df(g)))         N = items
//!  per n ∈ 1..4, per reference r:
//!     s_n(c, r) = Σ_g min(w_c(g), w_r(g)) · w_r(g) / (‖w_c‖·‖w_r‖)        (clipped cosine)
//!                 · exp(−(ℓ_c − ℓ_r)² / (2·6²))                        (length penalty)
//!  item   = 10 · mean_n( Σ_r s_n(c, r) ) / |references|
//!  corpus = mean over items
//! ```
//!
//! The document frequencies come from the references of the evaluated corpus, so an item's
//! score depends on the whole corpus. Like coco-caption, the length ℓ in the penalty counts a
//! text's bigrams (its tokens minus one), and a corpus of one item scores 0 (ln 1 = 0).

use super::CorpusScores;
use super::tokenize::{Corpus, FxHashMap, FxHashSet, NGram, ngram_order, ngrams};
use crate::Result;

/// Largest n-gram order.
const MAX_N: usize = 4;
/// Standard deviation of the Gaussian length penalty.
const SIGMA: f64 = 6.0;

/// CIDEr-D of each candidate against its references (document frequencies from all the
/// references given), and the corpus mean.
pub fn cider_d(candidates: &[&str], references: &[Vec<&str>]) -> Result<CorpusScores<f64>> {
    Ok(cider_d_of(&Corpus::new(candidates, references)?))
}

/// A text's tf-idf weights (the order n of an n-gram is its length), their norms per order
/// and the text's length.
#[derive(Debug)]
struct Vector {
    weights: FxHashMap<NGram, f64>,
    norms: [f64; MAX_N],
    length: f64,
}

pub(crate) fn cider_d_of(corpus: &Corpus) -> CorpusScores<f64> {
    let mut document_frequency: FxHashMap<NGram, u32> = FxHashMap::default();
    for references in &corpus.references {
        let mut seen: FxHashSet<NGram> = FxHashSet::default();
        for reference in references {
            for n in 1..=MAX_N {
                seen.extend(ngrams(reference, n));
            }
        }
        for ngram in seen {
            *document_frequency.entry(ngram).or_insert(0) += 1;
        }
    }
    // ln N − ln max(1, df), once per distinct n-gram; unseen n-grams get ln N.
    let log_items = (corpus.len() as f64).ln();
    let idf: FxHashMap<NGram, f64> = document_frequency
        .into_iter()
        .map(|(ngram, df)| (ngram, log_items - f64::from(df).ln()))
        .collect();
    let vector = |tokens| vector(tokens, &idf, log_items);

    let items: Vec<f64> = corpus
        .candidates
        .iter()
        .zip(&corpus.references)
        .map(|(candidate, references)| {
            let candidate = vector(candidate);
            let mut sums = [0.0; MAX_N];
            for reference in references {
                let reference = vector(reference);
                let similarity = similarity(&candidate, &reference);
                sums.iter_mut()
                    .zip(similarity)
                    .for_each(|(sum, value)| *sum += value);
            }
            let mean_over_n = sums.iter().sum::<f64>() / MAX_N as f64;
            mean_over_n / references.len() as f64 * 10.0
        })
        .collect();
    CorpusScores {
        corpus: super::mean(&items),
        items,
    }
}

/// The tf-idf vector of one text (`idf` of n-grams in no reference: `unseen_idf`).
fn vector(tokens: &[u32], idf: &FxHashMap<NGram, f64>, unseen_idf: f64) -> Vector {
    let mut weights: FxHashMap<NGram, f64> = FxHashMap::default();
    for n in 1..=MAX_N {
        for ngram in ngrams(tokens, n) {
            *weights.entry(ngram).or_insert(0.0) += 1.0;
        }
    }
    let mut norms = [0.0; MAX_N];
    for (ngram, weight) in &mut weights {
        *weight *= idf.get(ngram).copied().unwrap_or(unseen_idf);
        norms[ngram_order(*ngram) - 1] += *weight * *weight;
    }
    Vector {
        weights,
        norms: norms.map(f64::sqrt),
        length: tokens.len().saturating_sub(1) as f64,
    }
}

/// Clipped cosine per n-gram order, times the Gaussian length penalty.
fn similarity(candidate: &Vector, reference: &Vector) -> [f64; MAX_N] {
    let delta = candidate.length - reference.length;
    let penalty = (-(delta * delta) / (2.0 * SIGMA * SIGMA)).exp();
    let mut values = [0.0; MAX_N];
    for (ngram, &weight) in &candidate.weights {
        if let Some(&reference_weight) = reference.weights.get(ngram) {
            values[ngram_order(*ngram) - 1] += weight.min(reference_weight) * reference_weight;
        }
    }
    for (n, value) in values.iter_mut().enumerate() {
        if candidate.norms[n] != 0.0 && reference.norms[n] != 0.0 {
            *value /= candidate.norms[n] * reference.norms[n];
        }
        *value *= penalty;
    }
    values
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_item_scores_zero_and_matching_items_score_higher() {
        let one = cider_d(&["left effusion"], &[vec!["left effusion"]]).expect("valid");
        assert_eq!(one.corpus, 0.0);
        let two = cider_d(
            &["left pleural effusion", "no acute findings"],
            &[
                vec!["left pleural effusion"],
                vec!["cardiomegaly is present"],
            ],
        )
        .expect("valid");
        assert!(two.items[0] > 1.0, "{:?}", two.items);
        assert_eq!(two.items[1], 0.0);
    }
}
