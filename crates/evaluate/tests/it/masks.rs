//! Box masks: hand-computed unions and overlaps, the C.3 summaries, and a seeded comparison with
//! numpy pixel rasters (exact on integer corners).

use cxrlake_evaluate::masks::{
    ClassOverlaps, Overlap, OverlapSummary, Rect, intersection_area, ioh, overlap, union_area,
};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde_json::json;

use crate::python;

fn r(x1: f64, y1: f64, x2: f64, y2: f64) -> Rect {
    Rect::new(x1, y1, x2, y2)
}

#[test]
fn union_areas_count_overlaps_once() {
    let a = r(0.0, 0.0, 10.0, 10.0);
    // Two 10×10 squares sharing a 5×5 corner: 100 + 100 − 25.
    assert_eq!(union_area(&[a, r(5.0, 5.0, 15.0, 15.0)]), 175.0);
    // Disjoint: the sum.
    assert_eq!(union_area(&[a, r(20.0, 0.0, 30.0, 10.0)]), 200.0);
    // Touching edges: the sum, no double count of the shared edge.
    assert_eq!(union_area(&[a, r(10.0, 0.0, 20.0, 10.0)]), 200.0);
    // Duplicates and nested boxes add nothing.
    assert_eq!(union_area(&[a, a, a]), 100.0);
    assert_eq!(union_area(&[a, r(2.0, 2.0, 3.0, 3.0)]), 100.0);
    // A cross: 30×10 + 10×30 − 10×10.
    assert_eq!(
        union_area(&[r(0.0, 10.0, 30.0, 20.0), r(10.0, 0.0, 20.0, 30.0)]),
        500.0
    );
    // Zero-area and non-finite boxes cover nothing.
    assert_eq!(union_area(&[r(1.0, 1.0, 1.0, 5.0)]), 0.0);
    assert_eq!(union_area(&[a, r(3.0, 3.0, 50.0, 3.0)]), 100.0);
    assert_eq!(union_area(&[a, r(0.0, 0.0, f64::NAN, 20.0)]), 100.0);
    assert_eq!(union_area(&[]), 0.0);
    // Corners in any order; fractional corners give the exact area.
    assert_eq!(union_area(&[r(10.0, 10.0, 0.0, 0.0)]), 100.0);
    assert_eq!(
        union_area(&[r(0.5, 0.5, 2.5, 1.5), r(1.5, 0.5, 3.0, 1.0)]),
        2.0 + 0.25
    );
}

#[test]
fn intersections_of_unions() {
    // Prediction: two disjoint 10×10 boxes; target: one box covering half of each.
    let predicted = [r(0.0, 0.0, 10.0, 10.0), r(20.0, 0.0, 30.0, 10.0)];
    let target = [r(5.0, 0.0, 25.0, 10.0)];
    assert_eq!(intersection_area(&predicted, &target), 100.0);
    let o = overlap(&predicted, &target);
    assert_eq!(
        o,
        Overlap {
            intersection: 100.0,
            predicted: 200.0,
            target: 200.0
        }
    );
    assert!((o.iou() - 100.0 / 300.0).abs() < 1e-12);
    assert_eq!((o.iop(), o.iot()), (0.5, 0.5));

    // Overlapping boxes on both sides: the intersection of the unions is not the sum of the
    // pairwise intersections. P = [0,10)² ∪ [5,15)² (175), T = [5,10)×[0,15) (75) ∪ itself.
    let predicted = [r(0.0, 0.0, 10.0, 10.0), r(5.0, 5.0, 15.0, 15.0)];
    let target = [r(5.0, 0.0, 10.0, 15.0), r(5.0, 0.0, 10.0, 15.0)];
    // P ∩ T: x in [5,10), y in [0,15) is covered by P everywhere (y<10 by the first box, y≥5
    // by the second) → 75, while the pairwise sum would be 50 + 50.
    assert_eq!(intersection_area(&predicted, &target), 75.0);
    assert_eq!(overlap(&predicted, &target).iot(), 1.0);

    // Nested: the target inside the prediction.
    let o = overlap(&[r(0.0, 0.0, 10.0, 10.0)], &[r(2.0, 2.0, 4.0, 7.0)]);
    assert_eq!((o.iou(), o.iop(), o.iot()), (0.1, 0.1, 1.0));

    // Disjoint and empty masks: every ratio 0, never NaN.
    let none = overlap(&predicted, &[r(50.0, 50.0, 60.0, 60.0)]);
    assert_eq!((none.iou(), none.iop(), none.iot()), (0.0, 0.0, 0.0));
    let empty = overlap(&[], &[]);
    assert_eq!((empty.iou(), empty.iop(), empty.iot()), (0.0, 0.0, 0.0));

    // IoH: the hypothesis' area inside the evidence, over the hypothesis' area.
    assert_eq!(
        ioh(&[r(0.0, 0.0, 10.0, 10.0)], &[r(5.0, 0.0, 50.0, 50.0)]),
        0.5
    );
    assert_eq!(ioh(&[], &[r(5.0, 0.0, 50.0, 50.0)]), 0.0);
}

fn overlap_of(intersection: f64, predicted: f64, target: f64) -> Overlap {
    Overlap {
        intersection,
        predicted,
        target,
    }
}

#[test]
fn summaries_threshold_average_and_pool() {
    let mut summary = OverlapSummary::new();
    // IoU 0.5, IoP 1, IoT 0.5.
    assert!(summary.push(overlap_of(50.0, 50.0, 100.0)));
    // IoU 0.1, IoP 0.1, IoT 1 (a large prediction around a small target).
    assert!(summary.push(overlap_of(10.0, 100.0, 10.0)));
    // IoU 0.2, IoP 0.25, IoT 0.5.
    assert!(summary.push(overlap_of(20.0, 80.0, 40.0)));
    // Pairs without a prediction or a target are left out (C.3), counted.
    assert!(!summary.push(overlap_of(0.0, 0.0, 40.0)));
    assert!(!summary.push(overlap_of(0.0, 30.0, 0.0)));
    assert_eq!((summary.len(), summary.skipped()), (3, 2));

    let share = summary.share_at(0.3).expect("pairs");
    // IoU ≥ 0.3: pair 1 only; IoP: pair 1 only; IoT: all three.
    assert_eq!(
        (share.iou, share.iop, share.iot),
        (1.0 / 3.0, 1.0 / 3.0, 1.0)
    );
    let mean = summary.mean().expect("pairs");
    assert!((mean.iou - 0.8 / 3.0).abs() < 1e-12);
    assert!((mean.iop - 1.35 / 3.0).abs() < 1e-12);
    assert!((mean.iot - 2.0 / 3.0).abs() < 1e-12);
    // Σ∩ = 80, ΣP = 230, ΣT = 150, Σ∪ = 300.
    let pooled = summary.pooled().expect("pairs");
    assert!((pooled.iou - 80.0 / 300.0).abs() < 1e-12);
    assert!((pooled.iop - 80.0 / 230.0).abs() < 1e-12);
    assert!((pooled.iot - 80.0 / 150.0).abs() < 1e-12);

    assert_eq!(OverlapSummary::new().share_at(0.3), None);
    assert_eq!(OverlapSummary::new().pooled(), None);
}

#[test]
fn macro_and_micro_over_classes() {
    // Class A: 3 pairs, 1 with IoU ≥ 0.3; class B: 1 pair, IoU 1; class C: no kept pair.
    let mut classes = ClassOverlaps::new();
    classes.push("A", overlap_of(50.0, 50.0, 100.0));
    classes.push("A", overlap_of(10.0, 100.0, 10.0));
    classes.push("A", overlap_of(20.0, 80.0, 40.0));
    classes.push("B", overlap_of(40.0, 40.0, 40.0));
    classes.push("C", overlap_of(0.0, 0.0, 40.0));
    assert_eq!(classes.classes().len(), 3);
    // Macro: mean of A's 1/3 and B's 1 (C has no pair and is excluded).
    let macro_share = classes.macro_share_at(0.3).expect("classes");
    assert!((macro_share.iou - (1.0 / 3.0 + 1.0) / 2.0).abs() < 1e-12);
    // Micro: 2 of the 4 kept pairs.
    let micro = classes.micro();
    assert_eq!((micro.len(), micro.skipped()), (4, 1));
    assert_eq!(micro.share_at(0.3).expect("pairs").iou, 0.5);
}

/// Pixel counts of the raster masks `mask[y1:y2, x1:x2] = 1` of each pair of box lists.
const NUMPY_RASTER: &str = r#"
import json, sys
import numpy as np
out = []
for p, t in json.load(sys.stdin):
    def mask(boxes):
        m = np.zeros((70, 70), dtype=bool)
        for x1, y1, x2, y2 in boxes:
            m[y1:y2, x1:x2] = True
        return m
    mp, mt = mask(p), mask(t)
    out.append([int(mp.sum()), int(mt.sum()), int((mp & mt).sum())])
print(json.dumps(out))
"#;

/// Integer boxes `[x1, y1, x2, y2]` on a 70×70 raster.
type Boxes = Vec<[i64; 4]>;

fn random_boxes(rng: &mut ChaCha8Rng) -> Boxes {
    (0..rng.random_range(0..=6))
        .map(|_| {
            let (x1, y1) = (rng.random_range(0..64), rng.random_range(0..64));
            // Zero widths and heights included.
            let (w, h) = (rng.random_range(0..=20), rng.random_range(0..=20));
            [x1, y1, (x1 + w).min(70), (y1 + h).min(70)]
        })
        .collect()
}

fn rects(boxes: &[[i64; 4]], scale: f64) -> Vec<Rect> {
    boxes
        .iter()
        .map(|b| {
            let [x1, y1, x2, y2] = b.map(|c| c as f64 * scale);
            Rect::new(x1, y1, x2, y2)
        })
        .collect()
}

#[test]
fn integer_boxes_match_numpy_rasters_exactly() {
    let mut rng = ChaCha8Rng::seed_from_u64(7);
    let cases: Vec<(Boxes, Boxes)> = (0..300)
        .map(|_| {
            let predicted = random_boxes(&mut rng);
            let mut target = random_boxes(&mut rng);
            // Some targets repeat predicted boxes, so nested and equal boxes occur.
            if rng.random_bool(0.3)
                && let Some(b) = predicted.first()
            {
                target.push(*b);
            }
            (predicted, target)
        })
        .collect();
    let expected = python::run(NUMPY_RASTER, &json!(cases));
    let expected = expected.as_array().expect("list");
    for ((predicted, target), counts) in cases.iter().zip(expected) {
        let counts: Vec<f64> = counts
            .as_array()
            .expect("triple")
            .iter()
            .map(|c| c.as_f64().expect("number"))
            .collect();
        let o = overlap(&rects(predicted, 1.0), &rects(target, 1.0));
        assert_eq!(
            [o.predicted, o.target, o.intersection],
            counts[..],
            "{predicted:?} vs {target:?}"
        );
        assert_eq!(union_area(&rects(predicted, 1.0)), counts[0]);
        assert_eq!(
            intersection_area(&rects(predicted, 1.0), &rects(target, 1.0)),
            counts[2]
        );
        // Quarter-pixel corners: the same masks scaled by 1/4 have exactly 1/16 the area.
        let scaled = overlap(&rects(predicted, 0.25), &rects(target, 0.25));
        assert_eq!(
            [scaled.predicted, scaled.target, scaled.intersection],
            counts.iter().map(|c| c / 16.0).collect::<Vec<_>>()[..]
        );
    }
}
