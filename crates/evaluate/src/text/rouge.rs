//! ROUGE-L from the longest common subsequence (LCS) of tokens (Lin 2004).
//!
//! ```text
//!  per reference r:  P_r = LCS(c, r) / |c|      R_r = LCS(c, r) / |r|
//!  item:             P = max_r P_r   R = max_r R_r   (each maximised on its own)
//!                    ROUGE-L = (1 + β²)·P·R / (R + β²·P), β = 1.2; 0 when P or R is 0
//!  corpus:           mean over items
//! ```
//!
//! This is pycocoevalcap's `Rouge` (coco-caption), including its β = 1.2 and its separate
//! maxima of precision and recall. [`rouge_l_f1`] is the β = 1 F-measure of one candidate and
//! one reference, as rouge-score's `RougeScorer(['rougeL'])` computes it. An empty candidate
//! scores 0 (coco-caption splits `""` into one empty token and so scores an empty candidate
//! against an empty reference 1).

use super::CorpusScores;
use super::tokenize::{Corpus, tokenize};
use crate::Result;

/// coco-caption's β: recall weighs 1.2² times as much as precision.
const COCO_BETA: f64 = 1.2;

/// ROUGE-L (β = 1.2, coco-caption) of each candidate against its references, and the mean.
pub fn rouge_l(candidates: &[&str], references: &[Vec<&str>]) -> Result<CorpusScores<f64>> {
    Ok(rouge_l_of(&Corpus::new(candidates, references)?))
}

/// ROUGE-L F1 (β = 1) of one candidate against one reference, as rouge-score's `rougeL`
/// fmeasure on the same tokens; 0 when either text has no tokens.
pub fn rouge_l_f1(candidate: &str, reference: &str) -> f64 {
    let candidate = tokenize(candidate);
    let reference = tokenize(reference);
    let lcs = lcs_len(&candidate, &reference);
    if lcs == 0 {
        return 0.0;
    }
    let precision = lcs as f64 / candidate.len() as f64;
    let recall = lcs as f64 / reference.len() as f64;
    f_measure(precision, recall, 1.0)
}

pub(crate) fn rouge_l_of(corpus: &Corpus) -> CorpusScores<f64> {
    let items: Vec<f64> = corpus
        .candidates
        .iter()
        .zip(&corpus.references)
        .map(|(candidate, references)| item_score(candidate, references))
        .collect();
    CorpusScores {
        corpus: super::mean(&items),
        items,
    }
}

fn item_score(candidate: &[u32], references: &[Vec<u32>]) -> f64 {
    let mut precision = 0.0_f64;
    let mut recall = 0.0_f64;
    for reference in references {
        let lcs = lcs_len(candidate, reference) as f64;
        if !candidate.is_empty() {
            precision = precision.max(lcs / candidate.len() as f64);
        }
        if !reference.is_empty() {
            recall = recall.max(lcs / reference.len() as f64);
        }
    }
    if precision == 0.0 || recall == 0.0 {
        return 0.0;
    }
    f_measure(precision, recall, COCO_BETA)
}

/// `(1 + β²)·P·R / (R + β²·P)`, in coco-caption's order of operations.
fn f_measure(precision: f64, recall: f64, beta: f64) -> f64 {
    let beta2 = beta * beta;
    ((1.0 + beta2) * precision * recall) / (recall + beta2 * precision)
}

/// Length of the longest common subsequence, in O(|a|·|b|) time and O(min) memory.
fn lcs_len<T: PartialEq>(a: &[T], b: &[T]) -> usize {
    let (long, short) = if a.len() >= b.len() { (a, b) } else { (b, a) };
    let mut row = vec![0_usize; short.len() + 1];
    for item in long {
        let mut diagonal = 0;
        for (j, other) in short.iter().enumerate() {
            let above = row[j + 1];
            row[j + 1] = if item == other {
                diagonal + 1
            } else {
                above.max(row[j])
            };
            diagonal = above;
        }
    }
    row[short.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lcs_of_small_sequences() {
        assert_eq!(lcs_len(&[1, 2, 3, 4], &[2, 4]), 2);
        assert_eq!(lcs_len(&[1, 3, 2, 4], &[1, 2, 3, 4]), 3);
        assert_eq!(lcs_len::<u32>(&[], &[1]), 0);
    }

    #[test]
    fn f1_by_hand() {
        // LCS("left effusion") = 2; P = 2/3, R = 2/4; F1 = 2PR/(P+R) = 4/7.
        let f1 = rouge_l_f1("small left effusion", "left pleural effusion present");
        assert!((f1 - 4.0 / 7.0).abs() < 1e-12, "{f1}");
        assert_eq!(rouge_l_f1("", "effusion"), 0.0);
    }
}
