//! Percentile bootstrap over items (studies, images, questions): confidence intervals of any
//! statistic that can be computed from a weight per item, of several statistics from the same
//! resamples, and of the paired difference of two systems (paper 002: 10,000 resamples, 95 %
//! intervals by the percentile method, [2.5th, 97.5th]).
//!
//! ```text
//!  estimate = statistic([1, 1, …, 1])
//!  resample r = 0..n_boot:  ChaCha8(seed, stream r) ──draw n items with replacement──►
//!                           w_i = times item i was drawn ──► statistic(w)  (None: skipped)
//!  sorted values ──► percentiles (1 − level)/2 and 1 − (1 − level)/2  (numpy's linear rule)
//! ```
//!
//! Weights let callers compute weighted sums instead of copying items: the mean of a resample
//! is `Σ w_i x_i / Σ w_i`, a micro-averaged F1 pools `w_i ×` each item's counts.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

/// An estimate with its percentile interval; all NaN when the estimate is undefined, `low` and
/// `high` NaN when no resample gave a value.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Interval {
    /// The statistic on all items (every weight 1).
    pub estimate: f64,
    /// The `(1 − level) / 2` percentile of the resampled statistic.
    pub low: f64,
    /// The `1 − (1 − level) / 2` percentile of the resampled statistic.
    pub high: f64,
}

impl Interval {
    /// The interval of an undefined statistic.
    const UNDEFINED: Interval = Interval {
        estimate: f64::NAN,
        low: f64::NAN,
        high: f64::NAN,
    };
}

/// The percentile bootstrap interval of one statistic: [`percentile_cis`] with a single
/// statistic. `statistic` gets one weight per item, how many times the resample drew it; the
/// estimate is `statistic(&[1; n_items])`.
pub fn percentile_ci<F>(
    n_items: usize,
    n_boot: usize,
    seed: u64,
    level: f64,
    statistic: F,
) -> Interval
where
    F: Fn(&[u32]) -> Option<f64> + Sync,
{
    let intervals = percentile_cis(n_items, n_boot, seed, level, 1, |w| vec![statistic(w)]);
    intervals.first().copied().unwrap_or(Interval::UNDEFINED)
}

/// The paired bootstrap interval of `a − b`: the estimate is `a(all) − b(all)`, and every
/// resample passes the same weights to both, so what the two systems share (which items are
/// hard) cancels. A resample where either is None is skipped.
pub fn paired_difference<F, G>(
    n_items: usize,
    n_boot: usize,
    seed: u64,
    level: f64,
    a: F,
    b: G,
) -> Interval
where
    F: Fn(&[u32]) -> Option<f64> + Sync,
    G: Fn(&[u32]) -> Option<f64> + Sync,
{
    percentile_ci(n_items, n_boot, seed, level, |w| Some(a(w)? - b(w)?))
}

/// Percentile bootstrap intervals of `n_stats` statistics computed from the same resamples.
///
/// - The estimate of statistic k is `statistic(&[1; n_items])[k]`; None (or a missing entry)
///   gives an all-NaN interval.
/// - Resample r draws `n_items` item indices uniformly with replacement from
///   `ChaCha8Rng::seed_from_u64(seed)` on stream r (`set_stream(r)`), and passes `statistic`
///   the count of each item. Resamples run on the machine's cores in contiguous chunks; since
///   each has its own stream, the intervals depend on the seed only, not on the thread count.
/// - A value that is None or not finite (say nothing relevant was drawn, or 0/0) is left out of
///   that statistic's percentiles.
/// - `low` and `high` are the `(1 − level)/2` and `1 − (1 − level)/2` quantiles of the kept
///   values with linear interpolation between order statistics, numpy's default
///   (`numpy.percentile(values, [2.5, 97.5])` for `level = 0.95`); `level` is clamped to [0, 1].
/// - `n_boot == 0` (or no items) gives `low = high = estimate`.
pub fn percentile_cis<F>(
    n_items: usize,
    n_boot: usize,
    seed: u64,
    level: f64,
    n_stats: usize,
    statistic: F,
) -> Vec<Interval>
where
    F: Fn(&[u32]) -> Vec<Option<f64>> + Sync,
{
    let all = statistic(&vec![1; n_items]);
    let estimates: Vec<Option<f64>> = (0..n_stats)
        .map(|k| all.get(k).copied().flatten())
        .collect();
    if n_boot == 0 || n_items == 0 || estimates.iter().all(Option::is_none) {
        return estimates
            .iter()
            .map(|e| match *e {
                Some(e) => Interval {
                    estimate: e,
                    low: e,
                    high: e,
                },
                None => Interval::UNDEFINED,
            })
            .collect();
    }
    let draws = resample_all(n_items, n_boot, seed, &statistic);
    let alpha = (1.0 - level.clamp(0.0, 1.0)) / 2.0;
    estimates
        .iter()
        .enumerate()
        .map(|(k, estimate)| {
            let Some(estimate) = *estimate else {
                return Interval::UNDEFINED;
            };
            let mut values: Vec<f64> = draws
                .iter()
                .filter_map(|d| d.get(k).copied().flatten())
                .filter(|v| v.is_finite())
                .collect();
            values.sort_by(f64::total_cmp);
            Interval {
                estimate,
                low: quantile(&values, alpha),
                high: quantile(&values, 1.0 - alpha),
            }
        })
        .collect()
}

/// The statistic's values on resamples `0..n_boot`, in order, computed on scoped threads.
fn resample_all<F>(n_items: usize, n_boot: usize, seed: u64, statistic: &F) -> Vec<Vec<Option<f64>>>
where
    F: Fn(&[u32]) -> Vec<Option<f64>> + Sync,
{
    let resample = |r: usize, weights: &mut Vec<u32>| -> Vec<Option<f64>> {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        rng.set_stream(r as u64);
        weights.clear();
        weights.resize(n_items, 0);
        for _ in 0..n_items {
            weights[rng.random_range(0..n_items)] += 1;
        }
        statistic(weights)
    };
    let threads = std::thread::available_parallelism()
        .map_or(1, usize::from)
        .min(n_boot);
    let chunk = n_boot.div_ceil(threads);
    let mut draws: Vec<Vec<Option<f64>>> = Vec::with_capacity(n_boot);
    std::thread::scope(|scope| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let resample = &resample;
                scope.spawn(move || {
                    let mut weights = Vec::with_capacity(n_items);
                    (t * chunk..((t + 1) * chunk).min(n_boot))
                        .map(|r| resample(r, &mut weights))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        for handle in handles {
            match handle.join() {
                Ok(part) => draws.extend(part),
                Err(panic) => std::panic::resume_unwind(panic),
            }
        }
    });
    draws
}

/// The `q` quantile (`q` in [0, 1]) of ascending `values` with linear interpolation, numpy's
/// default rule: position `q (n − 1)`, between the order statistics around it. NaN when empty.
pub fn quantile(values: &[f64], q: f64) -> f64 {
    let Some(last) = values.len().checked_sub(1) else {
        return f64::NAN;
    };
    let position = q.clamp(0.0, 1.0) * last as f64;
    let below = (position.floor() as usize).min(last);
    let above = (position.ceil() as usize).min(last);
    let fraction = position - below as f64;
    values[below] + (values[above] - values[below]) * fraction
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mean(values: &[f64]) -> impl Fn(&[u32]) -> Option<f64> + Sync + '_ {
        move |w: &[u32]| {
            let total: f64 = w.iter().map(|&x| f64::from(x)).sum();
            (total > 0.0).then(|| {
                values
                    .iter()
                    .zip(w)
                    .map(|(v, &x)| v * f64::from(x))
                    .sum::<f64>()
                    / total
            })
        }
    }

    #[test]
    fn quantiles_interpolate_like_numpy() {
        let v = [1.0, 2.0, 3.0, 4.0];
        assert_eq!(quantile(&v, 0.0), 1.0);
        assert_eq!(quantile(&v, 1.0), 4.0);
        assert_eq!(quantile(&v, 0.5), 2.5);
        // numpy.percentile([1, 2, 3, 4], 2.5) = 1.075.
        assert!((quantile(&v, 0.025) - 1.075).abs() < 1e-12);
        assert_eq!(quantile(&[7.0], 0.3), 7.0);
        assert!(quantile(&[], 0.5).is_nan());
    }

    #[test]
    fn undefined_statistics() {
        let none = percentile_ci(5, 100, 1, 0.95, |_| None);
        assert!(none.estimate.is_nan() && none.low.is_nan() && none.high.is_nan());
        // Defined on all items only: no resample keeps a value.
        let only_all = percentile_ci(20, 100, 1, 0.95, |w| {
            w.iter().all(|&x| x == 1).then_some(1.0)
        });
        assert_eq!(only_all.estimate, 1.0);
        assert!(only_all.low.is_nan() && only_all.high.is_nan());
        let many = percentile_cis(3, 50, 2, 0.9, 2, |w| vec![mean(&[1.0, 2.0, 3.0])(w), None]);
        assert_eq!(many[0].estimate, 2.0);
        assert!(many[1].estimate.is_nan());
    }

    #[test]
    fn resamples_draw_n_items() {
        let sizes = percentile_ci(17, 200, 9, 1.0, |w| Some(f64::from(w.iter().sum::<u32>())));
        assert_eq!((sizes.low, sizes.high), (17.0, 17.0));
    }
}
