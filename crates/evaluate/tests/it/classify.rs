//! Per-class, macro and micro classification scores against scikit-learn on seeded random
//! multilabel matrices.

#![allow(clippy::print_stderr)]

use cxrlake_evaluate::classify::{Counts, Scores, macro_average, micro_average};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde_json::{Value, json};

use crate::python;

/// Per class, macro and micro: `[precision, recall, f1, mcc]` from scikit-learn.
const SKLEARN: &str = r#"
import json, sys
import numpy as np
from sklearn.metrics import precision_recall_fscore_support, matthews_corrcoef
out = []
for case in json.load(sys.stdin):
    t, p = np.array(case["true"]), np.array(case["pred"])
    mcc = [matthews_corrcoef(t[:, k], p[:, k]) for k in range(t.shape[1])]
    pr, rc, f1, _ = precision_recall_fscore_support(t, p, average=None, zero_division=0)
    result = {"classes": [[pr[k], rc[k], f1[k], mcc[k]] for k in range(t.shape[1])]}
    for avg in ["macro", "micro"]:
        a = precision_recall_fscore_support(t, p, average=avg, zero_division=0)[:3]
        result[avg] = [float(x) for x in a]
    result["macro"].append(float(np.mean(mcc)))
    result["micro"].append(matthews_corrcoef(t.ravel(), p.ravel()))
    out.append(result)
print(json.dumps(out))
"#;

/// A seeded multilabel case: `items × classes` truth and prediction indicator matrices. Class 0
/// is never actual, class 1 never predicted, class 2 neither, class 3 always both; the others
/// have class-dependent rates.
fn case(seed: u64, items: usize, classes: usize) -> (Vec<Vec<u8>>, Vec<Vec<u8>>) {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut truth = vec![vec![0u8; classes]; items];
    let mut predicted = vec![vec![0u8; classes]; items];
    for i in 0..items {
        for k in 0..classes {
            let rate = (0.05 + 0.07 * k as f64).min(0.9);
            let (t, p) = match k {
                0 => (false, rng.random_bool(rate)),
                1 => (rng.random_bool(0.3), false),
                2 => (false, false),
                3 => (true, true),
                // Predictions that follow the truth more often than chance.
                _ => {
                    let t = rng.random_bool(rate);
                    let p = if rng.random_bool(0.6) {
                        t
                    } else {
                        rng.random_bool(rate)
                    };
                    (t, p)
                }
            };
            truth[i][k] = u8::from(t);
            predicted[i][k] = u8::from(p);
        }
    }
    (truth, predicted)
}

fn as_array(scores: &Scores) -> [f64; 4] {
    [scores.precision, scores.recall, scores.f1, scores.mcc]
}

fn floats(value: &Value) -> Vec<f64> {
    value
        .as_array()
        .expect("list")
        .iter()
        .map(|x| x.as_f64().expect("number"))
        .collect()
}

#[test]
fn scores_equal_scikit_learn() {
    let shapes = [
        (1u64, 40usize, 5usize),
        (2, 200, 13),
        (3, 15, 25),
        (4, 1, 6),
        (5, 500, 8),
    ];
    let cases: Vec<_> = shapes
        .iter()
        .map(|&(seed, items, classes)| case(seed, items, classes))
        .collect();
    let reference = python::run(
        SKLEARN,
        &json!(
            cases
                .iter()
                .map(|(t, p)| json!({"true": t, "pred": p}))
                .collect::<Vec<_>>()
        ),
    );
    // Max abs difference per [per class, macro, micro] × [precision, recall, f1, mcc].
    let mut worst = [[0.0f64; 4]; 3];
    for ((truth, predicted), expected) in cases.iter().zip(reference.as_array().expect("list")) {
        let classes = truth[0].len();
        let mut counts = vec![Counts::default(); classes];
        for (t, p) in truth.iter().zip(predicted) {
            for k in 0..classes {
                counts[k].add(p[k] == 1, t[k] == 1);
            }
        }
        let mut compare = |slot: usize, ours: [f64; 4], theirs: Vec<f64>| {
            for m in 0..4 {
                worst[slot][m] = worst[slot][m].max((ours[m] - theirs[m]).abs());
            }
        };
        for (k, class) in counts.iter().enumerate() {
            compare(
                0,
                as_array(&class.scores()),
                floats(&expected["classes"][k]),
            );
        }
        compare(
            1,
            as_array(&macro_average(&counts)),
            floats(&expected["macro"]),
        );
        compare(
            2,
            as_array(&micro_average(&counts)),
            floats(&expected["micro"]),
        );
    }
    for (name, w) in ["per class", "macro", "micro"].iter().zip(&worst) {
        eprintln!(
            "classify vs scikit-learn, {name}: max abs diff precision {:.1e}, recall {:.1e}, \
             f1 {:.1e}, mcc {:.1e}",
            w[0], w[1], w[2], w[3]
        );
    }
    assert!(worst.iter().flatten().all(|&w| w <= 1e-12), "{worst:?}");
}
