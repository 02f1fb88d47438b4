//! Two independent samples (paper 002's bias analysis, tables 6 and 7: scores of common against
//! rare findings or locations): the difference of their means with a two-sample percentile
//! bootstrap interval, a two-sided permutation test of that difference, and Cohen's d.
//!
//! ```text
//!  a, b ──► difference = mean(a) − mean(b)
//!  permutation r = 0..n_perm:  ChaCha8(seed, stream r) ──random split of a ∪ b into |a|, |b|──►
//!                              |diff| ≥ |observed| ?      p = (1 + hits) / (n_perm + 1)
//!  resample r = 0..n_boot:     ChaCha8(seed, stream r) ──|a| draws from a, |b| from b──►
//!                              mean(a*), mean(b*), mean(a*) − mean(b*) ──► percentiles
//!  cohens_d = difference / pooled standard deviation
//! ```
//!
//! Like [`crate::bootstrap`], every permutation and resample has its own ChaCha8 stream and runs
//! on the machine's cores in contiguous chunks: the results depend on the seed only, not on the
//! thread count.

use rand::SeedableRng;
use rand::seq::SliceRandom;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use crate::bootstrap::{Interval, quantile};

/// The outcome of [`permutation_test`].
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct PermutationResult {
    /// `mean(a) − mean(b)`; NaN when a group is empty.
    pub difference: f64,
    /// Two-sided p-value `(1 + #{|permuted difference| ≥ |difference|}) / (n_perm + 1)`; NaN
    /// when a group is empty or `n_perm` is 0.
    pub p_value: f64,
}

/// The means of two independent samples and their difference, each with a percentile bootstrap
/// interval from the same resamples.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct MeanDifference {
    /// `mean(a)`.
    pub a: Interval,
    /// `mean(b)`.
    pub b: Interval,
    /// `mean(a) − mean(b)`.
    pub difference: Interval,
}

/// The mean of `values`, NaN when empty.
pub fn mean(values: &[f64]) -> f64 {
    if values.is_empty() {
        f64::NAN
    } else {
        values.iter().sum::<f64>() / values.len() as f64
    }
}

/// Two-sided permutation test of `mean(a) − mean(b)`.
///
/// - Permutation r shuffles the pooled values with `ChaCha8Rng::seed_from_u64(seed)` on stream r
///   (`set_stream(r)`, as [`crate::bootstrap`]) and splits them into groups of `a.len()` and
///   `b.len()` values (a partial Fisher–Yates shuffle choosing the smaller group).
/// - A permutation counts when `|its difference| ≥ |observed|`, up to a tolerance of 1e-9 × the
///   largest `|value|`: sums in another order round differently, and ties are common with
///   discrete scores such as G-Eval's 1–5 (scipy's `permutation_test` also compares with a
///   tolerance).
/// - `p = (1 + count) / (n_perm + 1)`: never 0, and a valid p-value for a Monte Carlo test.
pub fn permutation_test(a: &[f64], b: &[f64], n_perm: usize, seed: u64) -> PermutationResult {
    if a.is_empty() || b.is_empty() {
        return PermutationResult {
            difference: f64::NAN,
            p_value: f64::NAN,
        };
    }
    let observed = mean(a) - mean(b);
    if n_perm == 0 || !observed.is_finite() {
        return PermutationResult {
            difference: observed,
            p_value: f64::NAN,
        };
    }
    let pooled: Vec<f64> = a.iter().chain(b).copied().collect();
    let total: f64 = pooled.iter().sum();
    let scale = pooled.iter().fold(0.0_f64, |m, x| m.max(x.abs()));
    let threshold = observed.abs() - 1e-9 * scale;
    let (n_a, n_b) = (a.len() as f64, b.len() as f64);
    let chosen = a.len().min(b.len());
    let hits = in_parallel(
        n_perm,
        || pooled.clone(),
        |r, buffer: &mut Vec<f64>| {
            buffer.copy_from_slice(&pooled);
            let mut rng = ChaCha8Rng::seed_from_u64(seed);
            rng.set_stream(r as u64);
            let (picked, _) = buffer.partial_shuffle(&mut rng, chosen);
            let sum: f64 = picked.iter().sum();
            let (sum_a, sum_b) = if chosen == a.len() {
                (sum, total - sum)
            } else {
                (total - sum, sum)
            };
            (sum_a / n_a - sum_b / n_b).abs() >= threshold
        },
    )
    .into_iter()
    .filter(|&hit| hit)
    .count();
    PermutationResult {
        difference: observed,
        p_value: (1 + hits) as f64 / (n_perm + 1) as f64,
    }
}

/// Cohen's d of `a` against `b`: `(mean(a) − mean(b)) / s_pooled` with
/// `s_pooled = √(((n_a − 1) s_a² + (n_b − 1) s_b²) / (n_a + n_b − 2))` (sample variances).
/// None when a group is empty, there are fewer than 3 values, or `s_pooled` is 0.
pub fn cohens_d(a: &[f64], b: &[f64]) -> Option<f64> {
    if a.is_empty() || b.is_empty() || a.len() + b.len() < 3 {
        return None;
    }
    let squares = |values: &[f64]| {
        let m = mean(values);
        values.iter().map(|x| (x - m).powi(2)).sum::<f64>()
    };
    let pooled = ((squares(a) + squares(b)) / (a.len() + b.len() - 2) as f64).sqrt();
    let d = (mean(a) - mean(b)) / pooled;
    (pooled > 0.0 && d.is_finite()).then_some(d)
}

/// Percentile bootstrap intervals of `mean(a)`, `mean(b)` and `mean(a) − mean(b)` for two
/// independent samples: each resample draws `a.len()` values from `a` and `b.len()` from `b`
/// with replacement (each group separately, so both keep their sizes), from
/// `ChaCha8Rng::seed_from_u64(seed)` on stream r, and the percentiles are those of
/// [`crate::bootstrap::percentile_cis`] (numpy's linear rule; `level` clamped to [0, 1]).
/// An empty group gives NaN for its mean and the difference; `n_boot == 0` gives
/// `low = high = estimate`.
pub fn mean_difference(
    a: &[f64],
    b: &[f64],
    n_boot: usize,
    seed: u64,
    level: f64,
) -> MeanDifference {
    let estimates = [mean(a), mean(b), mean(a) - mean(b)];
    let draws = if n_boot == 0 || (a.is_empty() && b.is_empty()) {
        Vec::new()
    } else {
        in_parallel(
            n_boot,
            || (),
            |r, _: &mut ()| {
                let mut rng = ChaCha8Rng::seed_from_u64(seed);
                rng.set_stream(r as u64);
                let mut resampled_mean = |values: &[f64]| {
                    if values.is_empty() {
                        return f64::NAN;
                    }
                    let sum: f64 = (0..values.len())
                        .map(|_| values[rand::Rng::random_range(&mut rng, 0..values.len())])
                        .sum();
                    sum / values.len() as f64
                };
                let ma = resampled_mean(a);
                let mb = resampled_mean(b);
                [ma, mb, ma - mb]
            },
        )
    };
    let alpha = (1.0 - level.clamp(0.0, 1.0)) / 2.0;
    let interval = |k: usize| {
        let estimate = estimates[k];
        if !estimate.is_finite() {
            return Interval {
                estimate: f64::NAN,
                low: f64::NAN,
                high: f64::NAN,
            };
        }
        if n_boot == 0 {
            return Interval {
                estimate,
                low: estimate,
                high: estimate,
            };
        }
        let mut values: Vec<f64> = draws
            .iter()
            .map(|d| d[k])
            .filter(|v| v.is_finite())
            .collect();
        values.sort_by(f64::total_cmp);
        Interval {
            estimate,
            low: quantile(&values, alpha),
            high: quantile(&values, 1.0 - alpha),
        }
    };
    MeanDifference {
        a: interval(0),
        b: interval(1),
        difference: interval(2),
    }
}

/// `f(0..n)` in order, on scoped threads in contiguous chunks; each thread has a scratch state
/// from `init`.
fn in_parallel<S, T, I, F>(n: usize, init: I, f: F) -> Vec<T>
where
    I: Fn() -> S + Sync,
    F: Fn(usize, &mut S) -> T + Sync,
    T: Send,
{
    if n == 0 {
        return Vec::new();
    }
    let threads = std::thread::available_parallelism()
        .map_or(1, usize::from)
        .min(n);
    let chunk = n.div_ceil(threads);
    let mut out = Vec::with_capacity(n);
    std::thread::scope(|scope| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let (init, f) = (&init, &f);
                scope.spawn(move || {
                    let mut state = init();
                    (t * chunk..((t + 1) * chunk).min(n))
                        .map(|r| f(r, &mut state))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        for handle in handles {
            match handle.join() {
                Ok(part) => out.extend(part),
                Err(panic) => std::panic::resume_unwind(panic),
            }
        }
    });
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::Rng;

    /// `n` draws of N(mu, 1) by Box–Muller from a fixed seed.
    fn normal(n: usize, mu: f64, seed: u64) -> Vec<f64> {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        (0..n)
            .map(|_| {
                let u: f64 = 1.0 - rng.random::<f64>();
                let v: f64 = rng.random();
                mu + (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()
            })
            .collect()
    }

    #[test]
    fn permutation_is_deterministic() {
        let a = normal(50, 0.0, 1);
        let b = normal(40, 0.3, 2);
        let first = permutation_test(&a, &b, 999, 7);
        assert_eq!(first, permutation_test(&a, &b, 999, 7));
        let other = permutation_test(&a, &b, 999, 8);
        assert_eq!(first.difference, other.difference);
        assert_eq!(
            mean_difference(&a, &b, 500, 3, 0.95),
            mean_difference(&a, &b, 500, 3, 0.95)
        );
        // p is a multiple of 1 / (n_perm + 1).
        let hits = first.p_value * 1000.0;
        assert!((hits - hits.round()).abs() < 1e-9);
    }

    #[test]
    fn identical_groups() {
        let a = normal(100, 0.0, 3);
        let result = permutation_test(&a, &a, 2000, 0);
        assert_eq!(result.difference, 0.0);
        assert_eq!(result.p_value, 1.0);
        assert_eq!(cohens_d(&a, &a), Some(0.0));
        // Same distribution, different draws: no evidence of a difference.
        let b = normal(100, 0.0, 4);
        assert!(permutation_test(&a, &b, 2000, 0).p_value > 0.05);
        // Discrete scores with equal means: every permutation ties at least.
        let scores = [1.0, 2.0, 3.0, 4.0, 5.0, 3.0];
        let shuffled = [5.0, 3.0, 1.0, 4.0, 2.0, 3.0];
        assert_eq!(permutation_test(&scores, &shuffled, 500, 1).p_value, 1.0);
    }

    #[test]
    fn shifted_groups() {
        let a = normal(200, 0.0, 11);
        let b = normal(200, 1.0, 12);
        let result = permutation_test(&a, &b, 2000, 5);
        assert!(result.difference < -0.7, "{result:?}");
        assert!(result.p_value < 0.01, "{result:?}");
        assert_eq!(result.p_value, 1.0 / 2001.0);
        let d = cohens_d(&a, &b).expect("d");
        assert!((d + 1.0).abs() < 0.25, "{d}");
        assert!((cohens_d(&b, &a).expect("d") + d).abs() < 1e-12);
        // The bootstrap interval of the difference is close to the normal approximation.
        let interval = mean_difference(&a, &b, 4000, 9, 0.95).difference;
        let variance = |v: &[f64]| {
            let m = mean(v);
            v.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (v.len() - 1) as f64
        };
        let se = (variance(&a) / 200.0 + variance(&b) / 200.0).sqrt();
        assert_eq!(interval.estimate, result.difference);
        assert!((interval.low - (result.difference - 1.96 * se)).abs() < 0.2 * se);
        assert!((interval.high - (result.difference + 1.96 * se)).abs() < 0.2 * se);
    }

    #[test]
    fn small_example_by_hand() {
        // a = [3, 4, 5, 5, 6], b = [1, 2, 2, 3]: mean 4.6 − 2.0 = 2.6; s_a² = 1.3, s_b² = 2/3,
        // s_pooled = √((4 × 1.3 + 3 × 2/3) / 7) = √(7.2 / 7), d = 2.6 / 1.014185 = 2.563635.
        // Exact two-sided p over all C(9, 5) = 126 splits (python3 itertools): 3 / 126.
        let a = [3.0, 4.0, 5.0, 5.0, 6.0];
        let b = [1.0, 2.0, 2.0, 3.0];
        let d = cohens_d(&a, &b).expect("d");
        assert!((d - 2.6 / (7.2_f64 / 7.0).sqrt()).abs() < 1e-12);
        assert!((d - 2.563_634_6).abs() < 1e-6, "{d}");
        let result = permutation_test(&a, &b, 20_000, 42);
        assert!((result.difference - 2.6).abs() < 1e-12);
        assert!((result.p_value - 3.0 / 126.0).abs() < 0.006, "{result:?}");
        // The reverse comparison has the same p and the opposite difference.
        let reverse = permutation_test(&b, &a, 20_000, 42);
        assert!((reverse.difference + 2.6).abs() < 1e-12);
        assert!((reverse.p_value - 3.0 / 126.0).abs() < 0.006, "{reverse:?}");
        // Group means of the bootstrap, and intervals that hold the estimates.
        let m = mean_difference(&a, &b, 2000, 1, 0.95);
        assert!((m.a.estimate - 4.6).abs() < 1e-12 && (m.b.estimate - 2.0).abs() < 1e-12);
        assert!(m.a.low <= 4.6 && 4.6 <= m.a.high);
        assert!(m.difference.low > 0.0 && m.difference.high <= 5.0);
    }

    #[test]
    fn degenerate_inputs() {
        let empty = permutation_test(&[], &[1.0], 100, 0);
        assert!(empty.difference.is_nan() && empty.p_value.is_nan());
        let none = permutation_test(&[1.0, 2.0], &[3.0], 0, 0);
        assert_eq!(none.difference, -1.5);
        assert!(none.p_value.is_nan());
        assert_eq!(cohens_d(&[1.0], &[2.0]), None);
        assert_eq!(cohens_d(&[1.0, 1.0], &[2.0, 2.0]), None);
        assert_eq!(cohens_d(&[], &[2.0, 3.0, 4.0]), None);
        let m = mean_difference(&[2.0, 4.0], &[], 100, 0, 0.95);
        assert_eq!(m.a.estimate, 3.0);
        assert!(m.a.low >= 2.0 && m.a.high <= 4.0);
        assert!(m.b.estimate.is_nan() && m.difference.low.is_nan());
        let fixed = mean_difference(&[2.0, 4.0], &[1.0], 0, 0, 0.95);
        assert_eq!((fixed.difference.low, fixed.difference.high), (2.0, 2.0));
    }
}
