//! Boxes `[x1, y1, x2, y2]` in pixels (exclusive right/bottom edges) and the localisation
//! measures of paper 000, section 4.1: IoU, IoP (intersection over the predicted box) and IoT
//! (intersection over the target box).
//!
//! A box with `x2 <= x1` or `y2 <= y1` is empty (area 0). Coordinates are assumed finite; the
//! SQL functions reject NaN and infinities before calling these.

/// A box `[x1, y1, x2, y2]` in pixels; `x2`/`y2` are exclusive edges.
pub type BBox = [f32; 4];

/// Area of a box in square pixels; 0 for an empty box.
pub fn box_area(bbox: BBox) -> f64 {
    let width = (f64::from(bbox[2]) - f64::from(bbox[0])).max(0.0);
    let height = (f64::from(bbox[3]) - f64::from(bbox[1])).max(0.0);
    width * height
}

/// The smallest box containing every given box (coordinate-wise min of `x1`/`y1`, max of
/// `x2`/`y2`), or `None` when there are none.
pub fn box_union(boxes: impl IntoIterator<Item = BBox>) -> Option<BBox> {
    boxes.into_iter().reduce(|a, b| {
        [
            a[0].min(b[0]),
            a[1].min(b[1]),
            a[2].max(b[2]),
            a[3].max(b[3]),
        ]
    })
}

/// The overlap of two boxes, or `None` when it has zero area (disjoint or only touching).
pub fn box_intersection(a: BBox, b: BBox) -> Option<BBox> {
    let overlap = [
        a[0].max(b[0]),
        a[1].max(b[1]),
        a[2].min(b[2]),
        a[3].min(b[3]),
    ];
    (overlap[0] < overlap[2] && overlap[1] < overlap[3]).then_some(overlap)
}

/// Clamps a box to an image of `width` × `height` pixels (`0 <= x <= width`,
/// `0 <= y <= height`); the flag says whether any coordinate moved.
pub fn box_clamp(bbox: BBox, width: u32, height: u32) -> (BBox, bool) {
    let (w, h) = (width as f32, height as f32);
    let clamped = [
        bbox[0].clamp(0.0, w),
        bbox[1].clamp(0.0, h),
        bbox[2].clamp(0.0, w),
        bbox[3].clamp(0.0, h),
    ];
    (clamped, clamped != bbox)
}

fn overlap_area(a: BBox, b: BBox) -> f64 {
    box_intersection(a, b).map_or(0.0, box_area)
}

/// `area(a ∩ b) / area(a ∪ b)`; 0 when both boxes are empty.
pub fn box_iou(a: BBox, b: BBox) -> f64 {
    let inter = overlap_area(a, b);
    let union = box_area(a) + box_area(b) - inter;
    if union > 0.0 { inter / union } else { 0.0 }
}

/// Intersection over prediction: `area(pred ∩ target) / area(pred)`; 0 for an empty prediction.
pub fn box_iop(pred: BBox, target: BBox) -> f64 {
    let area = box_area(pred);
    if area > 0.0 {
        overlap_area(pred, target) / area
    } else {
        0.0
    }
}

/// Intersection over target: `area(pred ∩ target) / area(target)`; 0 for an empty target.
pub fn box_iot(pred: BBox, target: BBox) -> f64 {
    box_iop(target, pred)
}

#[cfg(test)]
mod tests {
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    use super::*;
    use crate::Rle;

    fn random_int_box(rng: &mut ChaCha8Rng, size: u32) -> BBox {
        let (x0, y0) = (rng.random_range(0..size), rng.random_range(0..size));
        let (x1, y1) = (rng.random_range(x0..=size), rng.random_range(y0..=size));
        [x0 as f32, y0 as f32, x1 as f32, y1 as f32]
    }

    /// Dense reference: the set of covered integer pixels of an integer box.
    fn pixels(bbox: BBox, size: u32) -> Vec<bool> {
        (0..size * size)
            .map(|i| {
                let (x, y) = ((i % size) as f32, (i / size) as f32);
                bbox[0] <= x && x < bbox[2] && bbox[1] <= y && y < bbox[3]
            })
            .collect()
    }

    #[test]
    fn measures_match_pixel_counting() -> crate::Result<()> {
        let mut rng = ChaCha8Rng::seed_from_u64(11);
        let size = 24;
        for _ in 0..300 {
            let (a, b) = (
                random_int_box(&mut rng, size),
                random_int_box(&mut rng, size),
            );
            let (pa, pb) = (pixels(a, size), pixels(b, size));
            let count = |f: &dyn Fn(bool, bool) -> bool| {
                pa.iter().zip(&pb).filter(|&(&p, &q)| f(p, q)).count() as f64
            };
            let (inter, union) = (count(&|p, q| p && q), count(&|p, q| p || q));
            let (area_a, area_b) = (count(&|p, _| p), count(&|_, q| q));
            assert_eq!(box_area(a), area_a);
            let ratio = |num: f64, den: f64| if den > 0.0 { num / den } else { 0.0 };
            assert!((box_iou(a, b) - ratio(inter, union)).abs() < 1e-12);
            assert!((box_iop(a, b) - ratio(inter, area_a)).abs() < 1e-12);
            assert!((box_iot(a, b) - ratio(inter, area_b)).abs() < 1e-12);
            assert_eq!(
                box_intersection(a, b).map_or(0.0, box_area),
                inter,
                "{a:?} ∩ {b:?}"
            );

            // The super-box is the bbox of the union mask when both boxes are non-empty.
            let (ma, mb) = (Rle::from_box(a, size, size)?, Rle::from_box(b, size, size)?);
            if box_area(a) > 0.0 && box_area(b) > 0.0 {
                assert_eq!(box_union([a, b]), ma.union(&mb)?.bbox());
            }
            assert_eq!(
                box_intersection(a, b),
                ma.intersection(&mb)?.bbox(),
                "{a:?} ∩ {b:?}"
            );
        }
        Ok(())
    }

    #[test]
    fn clamp_reports_changes() {
        assert_eq!(
            box_clamp([-3.0, 2.0, 50.0, 8.0], 40, 10),
            ([0.0, 2.0, 40.0, 8.0], true)
        );
        assert_eq!(
            box_clamp([1.0, 2.0, 3.0, 4.0], 40, 10),
            ([1.0, 2.0, 3.0, 4.0], false)
        );
    }

    #[test]
    fn edge_cases() {
        assert_eq!(box_union(std::iter::empty()), None);
        assert_eq!(
            box_intersection([0.0, 0.0, 5.0, 5.0], [5.0, 0.0, 9.0, 5.0]),
            None
        );
        assert_eq!(box_area([5.0, 5.0, 1.0, 9.0]), 0.0);
        assert_eq!(box_iou([0.0; 4], [0.0; 4]), 0.0);
        assert_eq!(box_iop([0.0, 0.0, 10.0, 10.0], [0.0, 0.0, 5.0, 10.0]), 0.5);
        assert_eq!(box_iot([0.0, 0.0, 10.0, 10.0], [0.0, 0.0, 5.0, 10.0]), 1.0);
    }
}
