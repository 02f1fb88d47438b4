//! Box masks: the area of a union of axis-aligned boxes and the overlap of two such unions
//! (paper 000 sec. C.3, tables 2b, 9 and 10, and the IoH of table 18), computed exactly.
//!
//! ```text
//!  boxes ──► mask = ∪ boxes ──► sweep over x strips ──► areas |P|, |T|, |P ∩ T|  (Overlap)
//!                                                         │
//!            IoU = |P∩T| / (|P| + |T| − |P∩T|)  IoP = |P∩T| / |P|  IoT = |P∩T| / |T|
//!            IoH (RadStrucVQA) = IoP with the hypothesis' boxes as P
//!                                                         │
//!  per (image, finding) pair ──► OverlapSummary ──► share of pairs ≥ 30 % (the paper's score),
//!                                 per class ─► ClassOverlaps ─► macro (mean of classes'
//!                                                               shares), micro (all pairs pooled)
//! ```
//!
//! Areas are those of the continuous union: a box covers `[x1, x2) × [y1, y2)`. With integer
//! corners that is exactly the number of pixels of the raster mask `mask[y1:y2, x1:x2] = 1`
//! (the pixel-level masks of C.3); fractional corners give the exact area, the limit of ever
//! finer rasters, with no rounding rule to choose. Boxes with zero area or a non-finite corner
//! cover nothing.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// An axis-aligned box in pixels, `x1 <= x2`, `y1 <= y2` (corners; the box covers
/// `[x1, x2) × [y1, y2)`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Rect {
    /// Left edge.
    pub x1: f64,
    /// Top edge.
    pub y1: f64,
    /// Right edge (exclusive).
    pub x2: f64,
    /// Bottom edge (exclusive).
    pub y2: f64,
}

impl Rect {
    /// A box from its corners, in any order.
    pub fn new(x1: f64, y1: f64, x2: f64, y2: f64) -> Self {
        Self {
            x1: x1.min(x2),
            y1: y1.min(y2),
            x2: x1.max(x2),
            y2: y1.max(y2),
        }
    }

    /// Area of this box alone.
    pub fn area(&self) -> f64 {
        (self.x2 - self.x1).max(0.0) * (self.y2 - self.y1).max(0.0)
    }

    /// Intersection-over-union of two single boxes (0 when both are empty).
    pub fn iou(&self, other: &Rect) -> f64 {
        let w = (self.x2.min(other.x2) - self.x1.max(other.x1)).max(0.0);
        let h = (self.y2.min(other.y2) - self.y1.max(other.y1)).max(0.0);
        let inter = w * h;
        let union = self.area() + other.area() - inter;
        if union > 0.0 { inter / union } else { 0.0 }
    }

    /// Whether the box covers any area (finite corners, positive width and height).
    fn covers(&self) -> bool {
        [self.x1, self.y1, self.x2, self.y2]
            .iter()
            .all(|c| c.is_finite())
            && self.x1 < self.x2
            && self.y1 < self.y2
    }
}

/// The area of the union of `boxes`, exactly.
pub fn union_area(boxes: &[Rect]) -> f64 {
    sweep(boxes, &[]).predicted
}

/// The area of (∪ `a`) ∩ (∪ `b`).
pub fn intersection_area(a: &[Rect], b: &[Rect]) -> f64 {
    sweep(a, b).intersection
}

/// The areas of the masks `predicted` and `target` and of their intersection.
pub fn overlap(predicted: &[Rect], target: &[Rect]) -> Overlap {
    sweep(predicted, target)
}

/// RadStrucVQA's IoH of one image (table 18): the area of the hypothesis' mask inside the
/// evidence's mask over the area of the hypothesis' mask (0 when the hypothesis has no area).
pub fn ioh(hypothesis: &[Rect], evidence: &[Rect]) -> f64 {
    overlap(hypothesis, evidence).iop()
}

/// One sweep over both box sets: every box edge in x cuts the plane into strips; within a strip
/// each mask is a union of y intervals (the boxes spanning the strip), merged, and the two
/// merged lists are intersected.
fn sweep(a: &[Rect], b: &[Rect]) -> Overlap {
    let a: Vec<&Rect> = a.iter().filter(|r| r.covers()).collect();
    let b: Vec<&Rect> = b.iter().filter(|r| r.covers()).collect();
    let mut xs: Vec<f64> = a.iter().chain(&b).flat_map(|r| [r.x1, r.x2]).collect();
    xs.sort_by(f64::total_cmp);
    xs.dedup();
    let mut areas = Overlap {
        intersection: 0.0,
        predicted: 0.0,
        target: 0.0,
    };
    for strip in xs.windows(2) {
        let (left, right) = (strip[0], strip[1]);
        // Every edge is a strip boundary, so a box either spans the whole strip or misses it.
        let spanning = |boxes: &[&Rect]| {
            merged(
                boxes
                    .iter()
                    .filter(|r| r.x1 <= left && r.x2 >= right)
                    .map(|r| (r.y1, r.y2))
                    .collect(),
            )
        };
        let (in_a, in_b) = (spanning(&a), spanning(&b));
        let width = right - left;
        areas.predicted += width * length(&in_a);
        areas.target += width * length(&in_b);
        areas.intersection += width * common_length(&in_a, &in_b);
    }
    areas
}

/// The intervals merged into disjoint ones, sorted.
fn merged(mut intervals: Vec<(f64, f64)>) -> Vec<(f64, f64)> {
    intervals.sort_by(|p, q| p.0.total_cmp(&q.0));
    let mut out: Vec<(f64, f64)> = Vec::with_capacity(intervals.len());
    for (start, end) in intervals {
        match out.last_mut() {
            Some(last) if start <= last.1 => last.1 = last.1.max(end),
            _ => out.push((start, end)),
        }
    }
    out
}

/// Total length of disjoint intervals.
fn length(intervals: &[(f64, f64)]) -> f64 {
    intervals.iter().map(|(s, e)| e - s).sum()
}

/// Length of the intersection of two sorted lists of disjoint intervals.
fn common_length(a: &[(f64, f64)], b: &[(f64, f64)]) -> f64 {
    let (mut i, mut j, mut total) = (0, 0, 0.0);
    while let (Some(p), Some(q)) = (a.get(i), b.get(j)) {
        total += (p.1.min(q.1) - p.0.max(q.0)).max(0.0);
        if p.1 < q.1 {
            i += 1;
        } else {
            j += 1;
        }
    }
    total
}

/// The areas behind the overlap ratios of a predicted and a target mask (each a union of boxes).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Overlap {
    /// Area of the intersection of the two masks.
    pub intersection: f64,
    /// Area of the predicted mask.
    pub predicted: f64,
    /// Area of the target mask.
    pub target: f64,
}

impl Overlap {
    /// Intersection over union (0 when both masks are empty).
    pub fn iou(&self) -> f64 {
        ratio(
            self.intersection,
            self.predicted + self.target - self.intersection,
        )
    }

    /// Intersection over the prediction's area (IoP; 0 when the prediction is empty). With the
    /// hypothesis as the prediction this is RadStrucVQA's IoH.
    pub fn iop(&self) -> f64 {
        ratio(self.intersection, self.predicted)
    }

    /// Intersection over the target's area (IoT; 0 when the target is empty).
    pub fn iot(&self) -> f64 {
        ratio(self.intersection, self.target)
    }

    /// IoU, IoP and IoT together.
    pub fn ratios(&self) -> Ratios {
        Ratios {
            iou: self.iou(),
            iop: self.iop(),
            iot: self.iot(),
        }
    }
}

/// `part / whole`, 0 when `whole` is not positive.
fn ratio(part: f64, whole: f64) -> f64 {
    if whole > 0.0 { part / whole } else { 0.0 }
}

/// One value for each of IoU, IoP and IoT (a pair's ratios, a mean, or a share of pairs).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Ratios {
    /// Intersection over union.
    pub iou: f64,
    /// Intersection over prediction.
    pub iop: f64,
    /// Intersection over target.
    pub iot: f64,
}

/// The overlaps of many (prediction, target) mask pairs, e.g. the study-level masks of one
/// finding class over a test set.
///
/// C.3 considers "only image pairs with positive predictions and targets": [`push`] keeps a
/// pair only when both masks have area and counts the others as [`skipped`]. The paper's score
/// is [`share_at`]`(0.3)`, the share of kept pairs whose ratio reaches 30 % ("IoU@30"); its
/// "micro-average" pools the pairs of all classes before taking that share (see
/// [`ClassOverlaps`]), it is not a ratio of summed areas. [`mean`] and [`pooled`] (Σ areas over
/// Σ areas) are offered alongside and named for what they are.
///
/// [`push`]: OverlapSummary::push
/// [`skipped`]: OverlapSummary::skipped
/// [`share_at`]: OverlapSummary::share_at
/// [`mean`]: OverlapSummary::mean
/// [`pooled`]: OverlapSummary::pooled
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct OverlapSummary {
    pairs: Vec<Overlap>,
    skipped: usize,
}

impl OverlapSummary {
    /// An empty summary.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds one pair; returns whether it was kept (both masks have area).
    pub fn push(&mut self, overlap: Overlap) -> bool {
        let kept = overlap.predicted > 0.0 && overlap.target > 0.0;
        if kept {
            self.pairs.push(overlap);
        } else {
            self.skipped += 1;
        }
        kept
    }

    /// Adds every pair of `other` (pooling, e.g. classes into the micro-average).
    pub fn merge(&mut self, other: &OverlapSummary) {
        self.pairs.extend_from_slice(&other.pairs);
        self.skipped += other.skipped;
    }

    /// The kept pairs, in the order pushed.
    pub fn pairs(&self) -> &[Overlap] {
        &self.pairs
    }

    /// Number of kept pairs.
    pub fn len(&self) -> usize {
        self.pairs.len()
    }

    /// Whether no pair was kept.
    pub fn is_empty(&self) -> bool {
        self.pairs.is_empty()
    }

    /// Number of pairs left out because a mask was empty.
    pub fn skipped(&self) -> usize {
        self.skipped
    }

    /// The share of kept pairs whose IoU (IoP, IoT) is at least `threshold`: the paper's
    /// IoU@30 etc. with `threshold` 0.3. None without pairs.
    pub fn share_at(&self, threshold: f64) -> Option<Ratios> {
        self.average(|o| {
            let r = o.ratios();
            [r.iou, r.iop, r.iot].map(|v| if v >= threshold { 1.0 } else { 0.0 })
        })
    }

    /// The mean of the kept pairs' IoU (IoP, IoT). None without pairs.
    pub fn mean(&self) -> Option<Ratios> {
        self.average(|o| {
            let r = o.ratios();
            [r.iou, r.iop, r.iot]
        })
    }

    /// Ratios of summed areas over the kept pairs: Σ∩ / Σ∪, Σ∩ / ΣP, Σ∩ / ΣT (large masks weigh
    /// more). None without pairs.
    pub fn pooled(&self) -> Option<Ratios> {
        if self.pairs.is_empty() {
            return None;
        }
        let sum = |f: fn(&Overlap) -> f64| self.pairs.iter().map(f).sum::<f64>();
        Some(
            Overlap {
                intersection: sum(|o| o.intersection),
                predicted: sum(|o| o.predicted),
                target: sum(|o| o.target),
            }
            .ratios(),
        )
    }

    fn average(&self, values: impl Fn(&Overlap) -> [f64; 3]) -> Option<Ratios> {
        if self.pairs.is_empty() {
            return None;
        }
        let mut sums = [0.0; 3];
        for pair in &self.pairs {
            for (sum, value) in sums.iter_mut().zip(values(pair)) {
                *sum += value;
            }
        }
        let n = self.pairs.len() as f64;
        Some(Ratios {
            iou: sums[0] / n,
            iop: sums[1] / n,
            iot: sums[2] / n,
        })
    }
}

/// Overlap summaries per class (finding), with the macro and micro averages of tables 9 and 10.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ClassOverlaps {
    classes: BTreeMap<String, OverlapSummary>,
}

impl ClassOverlaps {
    /// No classes yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds one pair of `class`; returns whether it was kept (both masks have area).
    pub fn push(&mut self, class: &str, overlap: Overlap) -> bool {
        self.classes
            .entry(class.to_string())
            .or_default()
            .push(overlap)
    }

    /// Every class seen, with its summary, by name.
    pub fn classes(&self) -> &BTreeMap<String, OverlapSummary> {
        &self.classes
    }

    /// All classes' pairs pooled: its [`OverlapSummary::share_at`] is the paper's "Micro" row.
    pub fn micro(&self) -> OverlapSummary {
        let mut all = OverlapSummary::new();
        for summary in self.classes.values() {
            all.merge(summary);
        }
        all
    }

    /// The mean over classes with kept pairs of their share at `threshold`: the paper's "Macro"
    /// row (classes without a pair are excluded, as tables 9 and 10 exclude them). None when no
    /// class has a pair.
    pub fn macro_share_at(&self, threshold: f64) -> Option<Ratios> {
        let shares: Vec<Ratios> = self
            .classes
            .values()
            .filter_map(|s| s.share_at(threshold))
            .collect();
        if shares.is_empty() {
            return None;
        }
        let n = shares.len() as f64;
        Some(Ratios {
            iou: shares.iter().map(|r| r.iou).sum::<f64>() / n,
            iop: shares.iter().map(|r| r.iop).sum::<f64>() / n,
            iot: shares.iter().map(|r| r.iot).sum::<f64>() / n,
        })
    }
}
