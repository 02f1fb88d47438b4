//! Percentile bootstrap intervals: reproducibility, edge cases, scipy's
//! `stats.bootstrap(method='percentile')` on the same data (another random generator, so only
//! close), and paired differences.

#![allow(clippy::print_stderr)]

use cxrlake_evaluate::bootstrap::{Interval, paired_difference, percentile_ci, percentile_cis};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde_json::json;

use crate::python;

/// The weighted mean `Σ w_i x_i / Σ w_i` (None when nothing is drawn).
fn mean(values: &[f64]) -> impl Fn(&[u32]) -> Option<f64> + Sync + '_ {
    move |w: &[u32]| {
        let total: u32 = w.iter().sum();
        (total > 0).then(|| {
            values
                .iter()
                .zip(w)
                .map(|(v, &x)| v * f64::from(x))
                .sum::<f64>()
                / f64::from(total)
        })
    }
}

/// `n` normal values with mean `mu` and standard deviation `sigma` (Box–Muller).
fn normal(seed: u64, n: usize, mu: f64, sigma: f64) -> Vec<f64> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    (0..n)
        .map(|_| {
            let u: f64 = 1.0 - rng.random::<f64>();
            let v: f64 = rng.random();
            mu + sigma * (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()
        })
        .collect()
}

#[test]
fn intervals_are_reproducible() {
    let values = normal(1, 100, 0.0, 1.0);
    let a = percentile_ci(values.len(), 1000, 7, 0.95, mean(&values));
    let b = percentile_ci(values.len(), 1000, 7, 0.95, mean(&values));
    assert_eq!(a, b);
    let other_seed = percentile_ci(values.len(), 1000, 8, 0.95, mean(&values));
    assert_ne!(a, other_seed);
    assert_eq!(a.estimate, other_seed.estimate);
    // The same resamples whatever else is computed alongside.
    let together = percentile_cis(values.len(), 1000, 7, 0.95, 2, |w| {
        vec![mean(&values)(w), Some(1.0)]
    });
    assert_eq!(together[0], a);
    assert_eq!((together[1].low, together[1].high), (1.0, 1.0));
}

#[test]
fn no_resamples_give_the_estimate() {
    let values = [1.0, 2.0, 3.0, 6.0];
    let i = percentile_ci(values.len(), 0, 0, 0.95, mean(&values));
    assert_eq!(
        i,
        Interval {
            estimate: 3.0,
            low: 3.0,
            high: 3.0
        }
    );
    let none = percentile_ci(values.len(), 0, 0, 0.95, |_| None);
    assert!(none.estimate.is_nan() && none.low.is_nan() && none.high.is_nan());
}

#[test]
fn the_interval_of_a_mean_contains_it_and_narrows_with_level() {
    let values = normal(2, 300, 5.0, 2.0);
    let wide = percentile_ci(values.len(), 2000, 1, 0.99, mean(&values));
    let narrow = percentile_ci(values.len(), 2000, 1, 0.80, mean(&values));
    assert!(
        wide.low < wide.estimate && wide.estimate < wide.high,
        "{wide:?}"
    );
    assert!(
        wide.low < narrow.low && narrow.high < wide.high,
        "{wide:?} {narrow:?}"
    );
    // Standard error 2/√300 ≈ 0.115: the 95 % interval is about ±0.23.
    let ci = percentile_ci(values.len(), 2000, 1, 0.95, mean(&values));
    let half_width = (ci.high - ci.low) / 2.0;
    assert!(
        (half_width - 1.96 * 2.0 / 300f64.sqrt()).abs() < 0.05,
        "{ci:?}"
    );
}

#[test]
fn intervals_are_close_to_scipy() {
    let values = normal(3, 200, 10.0, 2.0);
    let ours = percentile_ci(values.len(), 5000, 11, 0.95, mean(&values));
    let scipy = python::run(
        "import json, sys\nimport numpy as np\nfrom scipy import stats\n\
         x = np.array(json.load(sys.stdin))\n\
         r = stats.bootstrap((x,), np.mean, method='percentile', n_resamples=5000, \
         confidence_level=0.95, rng=np.random.default_rng(11))\n\
         print(json.dumps([float(x.mean()), r.confidence_interval.low, r.confidence_interval.high]))",
        &json!(values),
    );
    let theirs: Vec<f64> = scipy
        .as_array()
        .expect("list")
        .iter()
        .map(|x| x.as_f64().expect("number"))
        .collect();
    let width = theirs[2] - theirs[1];
    let relative = [
        ((ours.low - theirs[1]) / theirs[1]).abs(),
        ((ours.high - theirs[2]) / theirs[2]).abs(),
    ];
    let of_width = [
        (ours.low - theirs[1]).abs() / width,
        (ours.high - theirs[2]).abs() / width,
    ];
    eprintln!(
        "bootstrap vs scipy.stats.bootstrap (200 values, 5000 resamples each): ours \
         [{:.4}, {:.4}], scipy [{:.4}, {:.4}]; relative diff low {:.1e}, high {:.1e} \
         ({:.3} and {:.3} of the interval's width)",
        ours.low,
        ours.high,
        theirs[1],
        theirs[2],
        relative[0],
        relative[1],
        of_width[0],
        of_width[1]
    );
    assert!((ours.estimate - theirs[0]).abs() < 1e-12);
    assert!(relative.iter().all(|&r| r <= 0.02), "{relative:?}");
    // Monte Carlo error of a 2.5 % quantile over 5000 resamples is ~1.4 % of the width.
    assert!(of_width.iter().all(|&r| r <= 0.1), "{of_width:?}");
}

#[test]
fn paired_differences() {
    let values = normal(4, 150, 0.6, 0.3);
    let same = paired_difference(values.len(), 1000, 5, 0.95, mean(&values), mean(&values));
    assert_eq!(
        same,
        Interval {
            estimate: 0.0,
            low: 0.0,
            high: 0.0
        }
    );

    // System a: system b's scores plus 0.1 and per-item noise of mean 0.
    let noise = normal(5, values.len(), 0.0, 0.05);
    let shifted: Vec<f64> = values
        .iter()
        .zip(&noise)
        .map(|(v, e)| v + 0.1 + e)
        .collect();
    let d = paired_difference(values.len(), 2000, 5, 0.95, mean(&shifted), mean(&values));
    assert!(d.low < 0.1 && 0.1 < d.high, "{d:?}");
    assert!(d.low < d.estimate && d.estimate < d.high, "{d:?}");
    // Pairing removes the shared per-item spread (sd 0.3): the interval reflects only the noise
    // (sd 0.05), far narrower than either system's own interval.
    let own = percentile_ci(values.len(), 2000, 5, 0.95, mean(&values));
    assert!(d.high - d.low < (own.high - own.low) / 3.0, "{d:?} {own:?}");

    // A statistic undefined in a resample skips it for the difference.
    let sometimes = |w: &[u32]| (w[0] > 0).then_some(1.0);
    let d = paired_difference(values.len(), 500, 6, 0.95, sometimes, mean(&values));
    assert!(d.low.is_finite() && d.high.is_finite(), "{d:?}");
}
