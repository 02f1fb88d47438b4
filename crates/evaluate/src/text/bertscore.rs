//! BERTScore (Zhang et al. 2020) from token embeddings: greedy matching by cosine similarity.
//!
//! ```text
//!  candidate tokens x̂_1..x̂_k, reference tokens x_1..x_l (contextual embeddings, no [CLS]/[SEP])
//!  P = Σ_j w(x̂_j) · max_i cos(x_i, x̂_j) / Σ_j w(x̂_j)
//!  R = Σ_i w(x_i) · max_j cos(x_i, x̂_j) / Σ_i w(x_i)
//!  F = 2·P·R / (P + R)
//!  several references: the one with the highest F;  corpus: mean P, R and F over items
//! ```
//!
//! The weights `w` are 1 by default; [`bertscore_weighted`] takes per-token weights such as
//! [`Idf`] (ln((M + 1)/(df + 1)) over M reference texts, as bert-score's `idf=True`). There is
//! no baseline rescaling: scores are raw cosines, so they sit high (often 0.6–0.95) and are
//! comparable only between runs with the same model. A side without tokens scores 0.
//!
//! This crate does not embed text: [`bertscore_corpus`] takes a closure that returns token
//! embeddings (e.g. `cxrlake_embed::OnnxEmbedder::token_embeddings`, the last hidden state of
//! all-MiniLM-L6-v2 rather than bert-score's default model and layer).

use std::collections::HashMap;
use std::hash::Hash;

use super::CorpusScores;
use super::tokenize::validate;
use crate::{EvaluateError, Result};

/// Items embedded per call of the embedding closure in [`bertscore_corpus`].
const ITEMS_PER_CALL: usize = 64;

/// Precision, recall and F1 of one candidate (or their means over a corpus).
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct BertScore {
    /// Mean best similarity of each candidate token to the reference.
    pub precision: f64,
    /// Mean best similarity of each reference token to the candidate.
    pub recall: f64,
    /// Harmonic mean of precision and recall.
    pub f1: f64,
}

/// One text's token embeddings with optional per-token weights (1 when `None`).
#[derive(Debug, Clone, Copy)]
pub struct WeightedTokens<'a> {
    /// One embedding per token (need not be normalised).
    pub embeddings: &'a [Vec<f32>],
    /// One weight per token, e.g. from [`Idf::weight`].
    pub weights: Option<&'a [f64]>,
}

/// BERTScore of a candidate against its references (the best F1), unweighted.
pub fn bertscore(candidate: &[Vec<f32>], references: &[Vec<Vec<f32>>]) -> BertScore {
    let unweighted = |embeddings| WeightedTokens {
        embeddings,
        weights: None,
    };
    let references: Vec<WeightedTokens<'_>> = references
        .iter()
        .map(|r| unweighted(r.as_slice()))
        .collect();
    best_over_references(unweighted(candidate), &references)
}

/// BERTScore with per-token weights (precision weighted by the candidate's, recall by the
/// reference's), the best F1 over references; errors when a weight list's length differs from
/// its text's token count.
pub fn bertscore_weighted(
    candidate: WeightedTokens<'_>,
    references: &[WeightedTokens<'_>],
) -> Result<BertScore> {
    for (text, tokens) in std::iter::once(("candidate".to_owned(), &candidate)).chain(
        references
            .iter()
            .enumerate()
            .map(|(i, tokens)| (format!("reference {i}"), tokens)),
    ) {
        if let Some(weights) = tokens.weights
            && weights.len() != tokens.embeddings.len()
        {
            return Err(EvaluateError::Input(format!(
                "{text} has {} token embeddings but {} weights: pass one weight per token",
                tokens.embeddings.len(),
                weights.len()
            )));
        }
    }
    Ok(best_over_references(candidate, references))
}

/// BERTScore of every candidate against its references, embedding the texts with `embed`
/// (called with up to 64 items' texts at a time, candidate first, then its references; it
/// returns one list of token embeddings per text). Unweighted, best F1 over references;
/// the corpus score is the mean of the items' precision, recall and F1.
pub fn bertscore_corpus<E, F>(
    candidates: &[&str],
    references: &[Vec<&str>],
    mut embed: F,
) -> Result<CorpusScores<BertScore>, E>
where
    E: From<EvaluateError>,
    F: FnMut(&[&str]) -> Result<Vec<Vec<Vec<f32>>>, E>,
{
    validate(candidates.len(), references)?;
    let mut items = Vec::with_capacity(candidates.len());
    let pairs: Vec<(&str, &[&str])> = candidates
        .iter()
        .copied()
        .zip(references.iter().map(Vec::as_slice))
        .collect();
    for batch in pairs.chunks(ITEMS_PER_CALL) {
        let texts: Vec<&str> = batch
            .iter()
            .flat_map(|(candidate, references)| {
                std::iter::once(*candidate).chain(references.iter().copied())
            })
            .collect();
        let embedded = embed(&texts)?;
        if embedded.len() != texts.len() {
            return Err(EvaluateError::Input(format!(
                "the embedder returned {} token-embedding lists for {} texts: it must return \
                 one per text, in order",
                embedded.len(),
                texts.len()
            ))
            .into());
        }
        let mut rest = embedded.as_slice();
        for (_, item_references) in batch {
            let (item, tail) = rest.split_at(1 + item_references.len());
            rest = tail;
            items.push(bertscore(&item[0], &item[1..]));
        }
    }
    let mean =
        |value: fn(&BertScore) -> f64| items.iter().map(value).sum::<f64>() / items.len() as f64;
    let corpus = BertScore {
        precision: mean(|s| s.precision),
        recall: mean(|s| s.recall),
        f1: mean(|s| s.f1),
    };
    Ok(CorpusScores { corpus, items })
}

/// Inverse document frequencies of tokens over reference texts, as bert-score's `idf=True`:
/// `ln((M + 1) / (df + 1))` for a token in `df` of the `M` texts (so `ln(M + 1)` when unseen).
#[derive(Debug, Clone)]
pub struct Idf<T> {
    document_frequency: HashMap<T, usize>,
    documents: usize,
}

impl<T: Hash + Eq> Idf<T> {
    /// Counts, for each token, the reference texts (documents) it occurs in.
    pub fn from_documents<D, I>(documents: D) -> Self
    where
        D: IntoIterator<Item = I>,
        I: IntoIterator<Item = T>,
    {
        let mut document_frequency = HashMap::new();
        let mut count = 0;
        for document in documents {
            count += 1;
            let distinct: std::collections::HashSet<T> = document.into_iter().collect();
            for token in distinct {
                *document_frequency.entry(token).or_insert(0) += 1;
            }
        }
        Self {
            document_frequency,
            documents: count,
        }
    }

    /// The weight of `token`.
    pub fn weight(&self, token: &T) -> f64 {
        let df = self.document_frequency.get(token).copied().unwrap_or(0);
        ((self.documents + 1) as f64 / (df + 1) as f64).ln()
    }
}

fn best_over_references(
    candidate: WeightedTokens<'_>,
    references: &[WeightedTokens<'_>],
) -> BertScore {
    references
        .iter()
        .map(|reference| pair_score(candidate, *reference))
        .fold(None, |best: Option<BertScore>, score| match best {
            Some(best) if best.f1 >= score.f1 => Some(best),
            _ => Some(score),
        })
        .unwrap_or_default()
}

fn pair_score(candidate: WeightedTokens<'_>, reference: WeightedTokens<'_>) -> BertScore {
    if candidate.embeddings.is_empty() || reference.embeddings.is_empty() {
        return BertScore::default();
    }
    let inverse_norms = |embeddings: &[Vec<f32>]| -> Vec<f64> {
        embeddings
            .iter()
            .map(|v| {
                let norm = dot(v, v).sqrt();
                if norm > 0.0 { 1.0 / norm } else { 0.0 }
            })
            .collect()
    };
    let candidate_norms = inverse_norms(candidate.embeddings);
    let reference_norms = inverse_norms(reference.embeddings);
    let mut best_for_candidate = vec![f64::NEG_INFINITY; candidate.embeddings.len()];
    let mut best_for_reference = vec![f64::NEG_INFINITY; reference.embeddings.len()];
    for (j, c) in candidate.embeddings.iter().enumerate() {
        for (i, r) in reference.embeddings.iter().enumerate() {
            let cosine = dot(c, r) * candidate_norms[j] * reference_norms[i];
            best_for_candidate[j] = best_for_candidate[j].max(cosine);
            best_for_reference[i] = best_for_reference[i].max(cosine);
        }
    }
    let precision = weighted_mean(&best_for_candidate, candidate.weights);
    let recall = weighted_mean(&best_for_reference, reference.weights);
    let f1 = if precision + recall == 0.0 {
        0.0
    } else {
        2.0 * precision * recall / (precision + recall)
    };
    BertScore {
        precision,
        recall,
        f1,
    }
}

fn weighted_mean(values: &[f64], weights: Option<&[f64]>) -> f64 {
    match weights {
        None => values.iter().sum::<f64>() / values.len() as f64,
        Some(weights) => {
            let total: f64 = weights.iter().sum();
            if total == 0.0 {
                return 0.0;
            }
            values.iter().zip(weights).map(|(v, w)| v * w).sum::<f64>() / total
        }
    }
}

/// Dot product accumulated in f64 (8 lanes, so it vectorises).
fn dot(a: &[f32], b: &[f32]) -> f64 {
    let mut lanes = [0.0_f64; 8];
    let chunks_a = a.chunks_exact(8);
    let chunks_b = b.chunks_exact(8);
    let tail: f64 = chunks_a
        .remainder()
        .iter()
        .zip(chunks_b.remainder())
        .map(|(x, y)| f64::from(*x) * f64::from(*y))
        .sum();
    for (x, y) in chunks_a.zip(chunks_b) {
        for ((lane, x), y) in lanes.iter_mut().zip(x).zip(y) {
            *lane += f64::from(*x) * f64::from(*y);
        }
    }
    lanes.iter().sum::<f64>() + tail
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn by_hand() {
        // Candidate tokens e1, e2; reference tokens e1, (e1+e2)/√2.
        let s = std::f32::consts::FRAC_1_SQRT_2;
        let candidate = vec![vec![1.0, 0.0], vec![0.0, 2.0]];
        let reference = vec![vec![1.0, 0.0], vec![s, s]];
        let score = bertscore(&candidate, &[reference]);
        let c = f64::from(s);
        // P = (1 + c)/2; R = (1 + c)/2 (e1 ↔ e1, (e1+e2)/√2 ↔ either at c).
        assert!((score.precision - (1.0 + c) / 2.0).abs() < 1e-7);
        assert!((score.recall - (1.0 + c) / 2.0).abs() < 1e-7);
        assert!((score.f1 - (1.0 + c) / 2.0).abs() < 1e-7);
        assert_eq!(bertscore(&[], &[candidate]).f1, 0.0);
    }

    #[test]
    fn idf_weights() {
        let idf = Idf::from_documents([vec!["a", "b"], vec!["a"]]);
        assert!((idf.weight(&"a") - (3.0_f64 / 3.0).ln()).abs() < 1e-15);
        assert!((idf.weight(&"b") - (3.0_f64 / 2.0).ln()).abs() < 1e-15);
        assert!((idf.weight(&"z") - 3.0_f64.ln()).abs() < 1e-15);
    }
}
