//! Binary classification per class: confusion counts and their precision, recall, F1 and
//! Matthews correlation, macro- and micro-averaged, as scikit-learn computes them
//! (`precision_recall_fscore_support(..., zero_division=0)`, `matthews_corrcoef`).
//!
//! ```text
//!  (predicted, actual) per item and class ──► Counts {tp, fp, fn, tn} per class ──► Scores
//!                                               ├─ macro_average: mean of the per-class Scores
//!                                               └─ micro_average: Scores of the summed Counts
//! ```
//!
//! Every ratio whose denominator is 0 is 0, as scikit-learn's `zero_division=0` (precision,
//! recall, F1) and `matthews_corrcoef` (which answers 0 when a side is constant) do.

use serde::{Deserialize, Serialize};

/// Confusion counts of one class (or of several classes, summed).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Counts {
    /// Predicted and actual (true positives).
    pub tp: u64,
    /// Predicted, not actual (false positives).
    pub fp: u64,
    /// Actual, not predicted (false negatives).
    pub fn_: u64,
    /// Neither predicted nor actual (true negatives).
    pub tn: u64,
}

/// The scores of one set of counts (or their average over classes).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Scores {
    /// `tp / (tp + fp)`; 0 when nothing was predicted.
    pub precision: f64,
    /// `tp / (tp + fn)`; 0 when nothing is actual.
    pub recall: f64,
    /// `2 tp / (2 tp + fp + fn)`, the harmonic mean of precision and recall; 0 when
    /// `tp + fp + fn` is 0.
    pub f1: f64,
    /// Matthews correlation `(tp·tn − fp·fn) / √((tp+fp)(tp+fn)(tn+fp)(tn+fn))`; 0 when the
    /// denominator is 0.
    pub mcc: f64,
}

/// `part / whole`, 0 when `whole` is 0 (scikit-learn's `zero_division=0`).
fn ratio(part: f64, whole: f64) -> f64 {
    if whole > 0.0 { part / whole } else { 0.0 }
}

impl Counts {
    /// Counts one item: whether the class was predicted and whether it is actually present.
    pub fn add(&mut self, predicted: bool, actual: bool) {
        match (predicted, actual) {
            (true, true) => self.tp += 1,
            (true, false) => self.fp += 1,
            (false, true) => self.fn_ += 1,
            (false, false) => self.tn += 1,
        }
    }

    /// Adds `other`'s counts to these (pooling items or classes).
    pub fn merge(&mut self, other: &Counts) {
        self.tp += other.tp;
        self.fp += other.fp;
        self.fn_ += other.fn_;
        self.tn += other.tn;
    }

    /// Actual positives, `tp + fn` (scikit-learn's `support`).
    pub fn support(&self) -> u64 {
        self.tp + self.fn_
    }

    /// Precision `tp / (tp + fp)`, 0 when `tp + fp = 0`.
    pub fn precision(&self) -> f64 {
        ratio(self.tp as f64, self.tp as f64 + self.fp as f64)
    }

    /// Recall (sensitivity) `tp / (tp + fn)`, 0 when `tp + fn = 0`.
    pub fn recall(&self) -> f64 {
        ratio(self.tp as f64, self.tp as f64 + self.fn_ as f64)
    }

    /// F1 `2 tp / (2 tp + fp + fn)` (scikit-learn's F-beta with beta = 1, computed from the
    /// counts, not from the rounded precision and recall), 0 when `tp + fp + fn = 0`.
    pub fn f1(&self) -> f64 {
        let tp = self.tp as f64;
        ratio(2.0 * tp, 2.0 * tp + self.fp as f64 + self.fn_ as f64)
    }

    /// Matthews correlation coefficient
    /// `(tp·tn − fp·fn) / √((tp+fp)(tp+fn)(tn+fp)(tn+fn))`, 0 when a factor of the denominator
    /// is 0 (scikit-learn's `matthews_corrcoef` of the class's two-valued columns).
    pub fn mcc(&self) -> f64 {
        let (tp, fp, fn_, tn) = (
            self.tp as f64,
            self.fp as f64,
            self.fn_ as f64,
            self.tn as f64,
        );
        let denominator = ((tp + fp) * (tp + fn_) * (tn + fp) * (tn + fn_)).sqrt();
        ratio(tp * tn - fp * fn_, denominator)
    }

    /// All four scores.
    pub fn scores(&self) -> Scores {
        Scores {
            precision: self.precision(),
            recall: self.recall(),
            f1: self.f1(),
            mcc: self.mcc(),
        }
    }
}

/// The unweighted mean over classes of each per-class score (scikit-learn `average='macro'`,
/// where a class with no actual and no predicted positives counts with precision, recall and F1
/// 0; MCC: the mean of the per-class MCCs). All 0 for no classes.
pub fn macro_average(counts: &[Counts]) -> Scores {
    let per_class: Vec<Scores> = counts.iter().map(Counts::scores).collect();
    let mean = |score: fn(&Scores) -> f64| {
        ratio(
            per_class.iter().map(score).sum::<f64>(),
            per_class.len() as f64,
        )
    };
    Scores {
        precision: mean(|s| s.precision),
        recall: mean(|s| s.recall),
        f1: mean(|s| s.f1),
        mcc: mean(|s| s.mcc),
    }
}

/// The scores of the summed counts (scikit-learn `average='micro'` over a multilabel indicator
/// matrix; MCC: `matthews_corrcoef` of the flattened matrix, i.e. of the pooled confusion
/// counts). All 0 for no classes.
pub fn micro_average(counts: &[Counts]) -> Scores {
    let mut total = Counts::default();
    for class in counts {
        total.merge(class);
    }
    total.scores()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scores_by_hand() {
        let c = Counts {
            tp: 3,
            fp: 1,
            fn_: 2,
            tn: 4,
        };
        let s = c.scores();
        assert_eq!((s.precision, s.recall, c.support()), (0.75, 0.6, 5));
        assert!((s.f1 - 6.0 / 9.0).abs() < 1e-15);
        assert!((s.mcc - 10.0 / (4.0_f64 * 5.0 * 5.0 * 6.0).sqrt()).abs() < 1e-15);
    }

    #[test]
    fn zero_denominators_give_zero() {
        let nothing = Counts {
            tn: 7,
            ..Counts::default()
        };
        assert_eq!(
            nothing.scores(),
            Scores {
                precision: 0.0,
                recall: 0.0,
                f1: 0.0,
                mcc: 0.0
            }
        );
        let all = Counts {
            tp: 5,
            ..Counts::default()
        };
        assert_eq!((all.f1(), all.mcc()), (1.0, 0.0));
        assert_eq!(macro_average(&[]).f1, 0.0);
    }

    #[test]
    fn averages() {
        let mut a = Counts::default();
        a.add(true, true);
        a.add(false, true);
        let mut b = Counts::default();
        b.add(true, false);
        b.add(true, true);
        b.add(true, true);
        assert_eq!(macro_average(&[a, b]).recall, 0.75);
        assert_eq!(micro_average(&[a, b]).recall, 0.75);
        assert_eq!(micro_average(&[a, b]).precision, 0.75);
        assert_eq!(macro_average(&[a, b]).precision, (1.0 + 2.0 / 3.0) / 2.0);
    }
}
