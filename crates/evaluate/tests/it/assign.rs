//! Hungarian assignment against scipy's `linear_sum_assignment`, the V-score on hand-computed
//! box sets, and the answer reading of the A-score.

#![allow(clippy::print_stderr)]

use cxrlake_evaluate::assign::{
    ChoiceKind, a_score, choice_correct, hungarian, normalise_choice, v_score,
};
use cxrlake_evaluate::masks::Rect;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde_json::json;

use crate::python;

#[test]
fn assignments_cost_what_scipy_finds() {
    let mut rng = ChaCha8Rng::seed_from_u64(5);
    let mut matrices: Vec<Vec<Vec<f64>>> = Vec::new();
    let shapes = [
        (1, 1),
        (1, 7),
        (7, 1),
        (2, 2),
        (3, 3),
        (5, 8),
        (8, 5),
        (2, 9),
        (9, 2),
        (12, 12),
        (17, 23),
        (23, 17),
        (30, 30),
        (64, 64),
        (40, 100),
    ];
    for (rows, cols) in shapes {
        // Small integers (many ties), continuous values, and negative IoU-like costs.
        for kind in 0..3 {
            let m = (0..rows)
                .map(|_| {
                    (0..cols)
                        .map(|_| match kind {
                            0 => f64::from(rng.random_range(0..5u32)),
                            1 => rng.random_range(-50.0..150.0),
                            _ => -rng.random::<f64>(),
                        })
                        .collect()
                })
                .collect();
            matrices.push(m);
        }
    }
    let reference = python::run(
        "import json, sys\nimport numpy as np\nfrom scipy.optimize import linear_sum_assignment\n\
         out = []\nfor m in json.load(sys.stdin):\n    m = np.array(m, dtype=float)\n    \
         r, c = linear_sum_assignment(m)\n    out.append(float(m[r, c].sum()))\n\
         print(json.dumps(out))",
        &json!(matrices),
    );
    let mut worst = 0.0f64;
    for (m, expected) in matrices.iter().zip(reference.as_array().expect("list")) {
        let pairs = hungarian(m);
        assert_eq!(pairs.len(), m.len().min(m[0].len()));
        let rows: std::collections::BTreeSet<usize> = pairs.iter().map(|p| p.0).collect();
        let cols: std::collections::BTreeSet<usize> = pairs.iter().map(|p| p.1).collect();
        assert_eq!(
            (rows.len(), cols.len()),
            (pairs.len(), pairs.len()),
            "one to one"
        );
        assert!(pairs.windows(2).all(|w| w[0].0 < w[1].0), "sorted by row");
        let total: f64 = pairs.iter().map(|&(i, j)| m[i][j]).sum();
        worst = worst.max((total - expected.as_f64().expect("number")).abs());
    }
    eprintln!(
        "hungarian vs scipy linear_sum_assignment ({} matrices up to 100 × 100): max abs diff of \
         the optimal cost {worst:.1e}",
        matrices.len()
    );
    assert!(worst <= 1e-9, "{worst}");
}

fn square(x: f64, y: f64, side: f64) -> Rect {
    Rect::new(x, y, x + side, y + side)
}

#[test]
fn v_scores_by_hand() {
    let a = square(0.0, 0.0, 10.0);
    let b = square(20.0, 20.0, 10.0);
    let far = square(100.0, 100.0, 10.0);
    // Exact boxes in any order.
    assert_eq!(v_score(&[b, a], &[a, b]), Some(1.0));
    // One of two targets found: (1 + 0) / 2; an extra predicted box costs the same.
    assert_eq!(v_score(&[a], &[a, b]), Some(0.5));
    assert_eq!(v_score(&[a, far], &[a]), Some(0.5));
    // Half-shifted box: intersection 50, union 150.
    let shifted = Rect::new(5.0, 0.0, 15.0, 10.0);
    let third = v_score(&[shifted], &[a]).expect("defined");
    assert!((third - 1.0 / 3.0).abs() < 1e-15, "{third}");
    // Matching maximises the total, not each box in turn: p0 overlaps t0 best (6/14 against
    // 4/16 with t1), but taking t0 for p0 leaves p1 nothing; the optimum pairs p0–t1 and p1–t0.
    let t0 = Rect::new(0.0, 0.0, 10.0, 10.0);
    let t1 = Rect::new(10.0, 0.0, 20.0, 10.0);
    let p0 = Rect::new(4.0, 0.0, 14.0, 10.0);
    let p1 = Rect::new(0.0, 0.0, 8.0, 10.0);
    assert!(p0.iou(&t0) > p0.iou(&t1) && p1.iou(&t1) == 0.0);
    let v = v_score(&[p0, p1], &[t0, t1]).expect("defined");
    assert!((v - (4.0 / 16.0 + 0.8) / 2.0).abs() < 1e-15, "{v}");
    // Empty sides.
    assert_eq!(v_score(&[], &[a]), Some(0.0));
    assert_eq!(v_score(&[a], &[]), Some(0.0));
    assert_eq!(v_score(&[], &[]), None);
}

#[test]
fn closed_answers() {
    use ChoiceKind::Closed;
    for (answer, reading) in [
        ("yes", Some("yes")),
        ("Yes.", Some("yes")),
        ("YES", Some("yes")),
        ("Yes, there is a small left effusion.", Some("yes")),
        ("No, the lungs are clear.", Some("no")),
        ("no.", Some("no")),
        ("There is no pneumothorax.", Some("no")),
        (
            "<answer>no <reason>Clear lungs. <location>[[1, 2, 3, 4]]",
            Some("no"),
        ),
        ("Cannot tell.", None),
        ("", None),
    ] {
        assert_eq!(
            normalise_choice(answer, Closed).as_deref(),
            reading,
            "{answer}"
        );
    }
    assert!(choice_correct("Yes, there is an effusion.", "yes", Closed));
    assert!(!choice_correct("No.", "Yes", Closed));
    assert!(!choice_correct("Unclear", "Yes", Closed));
}

#[test]
fn single_choice_answers() {
    use ChoiceKind::Single;
    for answer in [
        "B",
        "b",
        "B.",
        "(B)",
        "[B]",
        "B)",
        "B) Pleural effusion",
        "(B) pleural effusion",
        "B. Pleural effusion",
        "B: Pleural effusion",
        "The answer is B.",
        "The answer is b",
        "Answer: (B)",
        "answer: B",
        "The correct option is B, pleural effusion.",
        "Option B is correct.",
        "<answer>B <reason>Blunted left costophrenic angle.",
    ] {
        assert_eq!(
            normalise_choice(answer, Single).as_deref(),
            Some("B"),
            "{answer}"
        );
        assert!(choice_correct(answer, "B", Single), "{answer}");
    }
    for answer in [
        "Both",
        "Pleural effusion",
        "The answer is a pleural effusion",
        "A pleural effusion is seen",
        "The answer is B and C",
        "I think it is effusion",
        "",
    ] {
        assert_eq!(normalise_choice(answer, Single), None, "{answer}");
    }
    assert!(!choice_correct("The answer is C", "B", Single));
    // An answer that cannot be read is wrong even against an unreadable target.
    assert!(!choice_correct("maybe", "maybe", Single));
}

#[test]
fn multi_choice_answers() {
    use ChoiceKind::Multi;
    for answer in [
        "A, C",
        "A,C",
        "C, A",
        "[A, C]",
        "A and C",
        "A & C",
        "A/C",
        "AC",
        "(A)(C)",
        "(A), (C).",
        "The answers are A and C.",
        "The correct options are (a) and (c)",
        "Answer: A, C",
        "<answer>[A, C] <reason>Bibasilar atelectasis and effusions.",
    ] {
        assert_eq!(
            normalise_choice(answer, Multi).as_deref(),
            Some("A,C"),
            "{answer}"
        );
        assert!(choice_correct(answer, "[A, C]", Multi), "{answer}");
    }
    assert_eq!(normalise_choice("D", Multi).as_deref(), Some("D"));
    assert_eq!(normalise_choice("ABD", Multi).as_deref(), Some("A,B,D"));
    for answer in ["Atelectasis and effusion", "a pleural effusion", "Ace", ""] {
        assert_eq!(normalise_choice(answer, Multi), None, "{answer}");
    }
    // Exact set match: a subset or a superset is wrong.
    assert!(!choice_correct("A", "A, C", Multi));
    assert!(!choice_correct("A, B, C", "A, C", Multi));
}

#[test]
fn a_scores() {
    use ChoiceKind::*;
    let answers = [
        ("Yes.", "yes", Closed),
        ("B) effusion", "B", Single),
        ("A", "B", Single),
        ("C and A", "[A, C]", Multi),
    ];
    assert_eq!(a_score(answers), Some(0.75));
    assert_eq!(a_score([]), None);
}
