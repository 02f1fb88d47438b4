//! Run-domain operations on [`Rle`] masks: area, bounding box, union, intersection and box
//! rasterisation. None of them expands a mask to pixels; each is linear in the number of runs
//! (plus the number of covered columns for [`Rle::from_box`]).
//!
//! Union and intersection walk the two masks' foreground ranges like a merge join:
//!
//! ```text
//!   a:   [----)    [------------)
//!   b:      [---------)   [--)
//!   a∪b: [------------------)      (touching/overlapping ranges coalesce)
//!   a∩b:    [-)    [--)   [--)
//! ```

use crate::boxes::BBox;
use crate::error::{MaskError, Result};
use crate::rle::Rle;

impl Rle {
    /// Number of foreground pixels.
    pub fn area(&self) -> u64 {
        self.counts()
            .iter()
            .skip(1)
            .step_by(2)
            .map(|&c| u64::from(c))
            .sum()
    }

    /// Tight box `[x1, y1, x2, y2]` of the foreground, with exclusive `x2`/`y2`
    /// (`x2 = rightmost foreground column + 1`), or `None` for an empty mask.
    ///
    /// pycocotools' `toBbox` gives `[x1, y1, x2 - x1, y2 - y1]` for the same mask.
    pub fn bbox(&self) -> Option<BBox> {
        let h = u64::from(self.height());
        let mut runs = self.foreground_runs();
        let (first_start, mut last_end) = runs.next()?;
        let (mut top, mut bottom) = (h, 0u64);
        for (start, end) in std::iter::once((first_start, last_end)).chain(runs) {
            last_end = end;
            if (top, bottom) == (0, h - 1) {
                // Rows are already full; only the last run's column still matters.
                continue;
            }
            let row = start % h;
            if row + (end - start) <= h {
                top = top.min(row);
                bottom = bottom.max(row + (end - start) - 1);
            } else {
                // A run spanning two or more columns touches the bottom row of one column and
                // the top row of the next, so it covers every row of the box.
                (top, bottom) = (0, h - 1);
            }
        }
        let (left, right) = (first_start / h, (last_end - 1) / h);
        Some([
            left as f32,
            top as f32,
            (right + 1) as f32,
            (bottom + 1) as f32,
        ])
    }

    /// Pixels in either mask; both masks must have the same size.
    pub fn union(&self, other: &Rle) -> Result<Rle> {
        self.check_same_size(other)?;
        let mut left = self.foreground_runs().peekable();
        let mut right = other.foreground_runs().peekable();
        let merged = std::iter::from_fn(move || match (left.peek(), right.peek()) {
            (Some(a), Some(b)) if a.0 <= b.0 => left.next(),
            (Some(_), Some(_)) | (None, Some(_)) => right.next(),
            (Some(_), None) => left.next(),
            (None, None) => None,
        });
        Ok(Rle::from_sorted_intervals(
            self.height(),
            self.width(),
            merged,
        ))
    }

    /// Pixels in both masks; both masks must have the same size.
    pub fn intersection(&self, other: &Rle) -> Result<Rle> {
        self.check_same_size(other)?;
        let mut left = self.foreground_runs().peekable();
        let mut right = other.foreground_runs().peekable();
        let common = std::iter::from_fn(move || {
            loop {
                let (&(a_start, a_end), &(b_start, b_end)) = (left.peek()?, right.peek()?);
                let overlap = (a_start.max(b_start), a_end.min(b_end));
                if a_end <= b_end {
                    left.next();
                } else {
                    right.next();
                }
                if overlap.0 < overlap.1 {
                    return Some(overlap);
                }
            }
        });
        Ok(Rle::from_sorted_intervals(
            self.height(),
            self.width(),
            common,
        ))
    }

    /// Rasterises a box: pixel `(x, y)` is foreground when its centre `(x + 0.5, y + 0.5)` lies
    /// in `[x1, x2) × [y1, y2)`, so integer boxes map to exactly the pixels they cover and
    /// `from_box(b).bbox() == Some(b)` for a non-empty integer box inside the image. The box is
    /// clipped to the image; a non-finite coordinate is an error.
    pub fn from_box(bbox: BBox, height: u32, width: u32) -> Result<Rle> {
        if bbox.iter().any(|c| !c.is_finite()) {
            return Err(MaskError::NonFiniteBox { bbox });
        }
        let first_covered = |edge: f32, limit: u32| {
            (f64::from(edge) - 0.5).ceil().clamp(0.0, f64::from(limit)) as u64
        };
        let (x0, x1) = (first_covered(bbox[0], width), first_covered(bbox[2], width));
        let (y0, y1) = (
            first_covered(bbox[1], height),
            first_covered(bbox[3], height),
        );
        if x0 >= x1 || y0 >= y1 {
            return Ok(Rle::empty(height, width));
        }
        let h = u64::from(height);
        Ok(Rle::from_sorted_intervals(
            height,
            width,
            (x0..x1).map(|x| (x * h + y0, x * h + y1)),
        ))
    }

    fn check_same_size(&self, other: &Rle) -> Result<()> {
        if (self.height(), self.width()) == (other.height(), other.width()) {
            return Ok(());
        }
        Err(MaskError::SizeMismatch {
            left_height: self.height(),
            left_width: self.width(),
            right_height: other.height(),
            right_width: other.width(),
        })
    }
}

#[cfg(test)]
mod tests {
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    use super::*;

    /// A random mask of a random kind: noise, blobs of boxes, empty or full.
    fn random_mask(rng: &mut ChaCha8Rng, height: u32, width: u32) -> Vec<u8> {
        let pixels = (height * width) as usize;
        match rng.random_range(0..5) {
            0 => vec![0; pixels],
            1 => vec![1; pixels],
            2 => {
                let density: f64 = rng.random();
                (0..pixels)
                    .map(|_| u8::from(rng.random::<f64>() < density))
                    .collect()
            }
            _ => {
                let mut mask = vec![0u8; pixels];
                for _ in 0..rng.random_range(1..4) {
                    let (x0, y0) = (rng.random_range(0..width), rng.random_range(0..height));
                    let (x1, y1) = (rng.random_range(x0..=width), rng.random_range(y0..=height));
                    for y in y0..y1 {
                        for x in x0..x1 {
                            mask[(y * width + x) as usize] = 1;
                        }
                    }
                }
                mask
            }
        }
    }

    /// Dense reference: tight `[x1, y1, x2, y2]` with exclusive right/bottom edges.
    fn dense_bbox(mask: &[u8], height: u32, width: u32) -> Option<BBox> {
        let mut extent: Option<[u32; 4]> = None;
        for y in 0..height {
            for x in 0..width {
                if mask[(y * width + x) as usize] != 0 {
                    extent = Some(match extent {
                        None => [x, y, x, y],
                        Some([x0, y0, x1, y1]) => [x0.min(x), y0.min(y), x1.max(x), y1.max(y)],
                    });
                }
            }
        }
        extent.map(|[x0, y0, x1, y1]| [x0 as f32, y0 as f32, (x1 + 1) as f32, (y1 + 1) as f32])
    }

    /// Dense reference rasterisation: pixel centres inside the half-open box.
    fn dense_box(bbox: BBox, height: u32, width: u32) -> Vec<u8> {
        let mut mask = vec![0u8; (height * width) as usize];
        for y in 0..height {
            for x in 0..width {
                let (cx, cy) = (x as f64 + 0.5, y as f64 + 0.5);
                let inside = f64::from(bbox[0]) <= cx
                    && cx < f64::from(bbox[2])
                    && f64::from(bbox[1]) <= cy
                    && cy < f64::from(bbox[3]);
                mask[(y * width + x) as usize] = u8::from(inside);
            }
        }
        mask
    }

    #[test]
    fn run_domain_ops_match_dense_reference() -> Result<()> {
        let mut rng = ChaCha8Rng::seed_from_u64(2024);
        for _ in 0..400 {
            let height = rng.random_range(1..48u32);
            let width = rng.random_range(1..48u32);
            let a = random_mask(&mut rng, height, width);
            let b = random_mask(&mut rng, height, width);
            let (rle_a, rle_b) = (
                Rle::from_dense(&a, height, width)?,
                Rle::from_dense(&b, height, width)?,
            );
            assert_eq!(rle_a.area(), a.iter().map(|&p| u64::from(p)).sum::<u64>());
            assert_eq!(rle_a.bbox(), dense_bbox(&a, height, width));

            let union: Vec<u8> = a.iter().zip(&b).map(|(p, q)| p | q).collect();
            let both: Vec<u8> = a.iter().zip(&b).map(|(p, q)| p & q).collect();
            assert_eq!(
                rle_a.union(&rle_b)?,
                Rle::from_dense(&union, height, width)?
            );
            assert_eq!(
                rle_a.intersection(&rle_b)?,
                Rle::from_dense(&both, height, width)?
            );

            let bbox = [
                rng.random_range(-5.0..width as f32 + 5.0),
                rng.random_range(-5.0..height as f32 + 5.0),
                rng.random_range(-5.0..width as f32 + 5.0),
                rng.random_range(-5.0..height as f32 + 5.0),
            ];
            assert_eq!(
                Rle::from_box(bbox, height, width)?,
                Rle::from_dense(&dense_box(bbox, height, width), height, width)?,
                "box {bbox:?} in {height}x{width}"
            );
        }
        Ok(())
    }

    #[test]
    fn integer_boxes_round_trip_through_masks() -> Result<()> {
        let rle = Rle::from_box([3.0, 2.0, 7.0, 9.0], 10, 12)?;
        assert_eq!(rle.area(), 4 * 7);
        assert_eq!(rle.bbox(), Some([3.0, 2.0, 7.0, 9.0]));
        let full = Rle::from_box([-10.0, -10.0, 100.0, 100.0], 10, 12)?;
        assert_eq!(full.counts(), &[0, 120]);
        assert_eq!(Rle::from_box([5.0, 5.0, 5.0, 9.0], 10, 12)?.bbox(), None);
        assert!(Rle::from_box([f32::NAN, 0.0, 1.0, 1.0], 10, 12).is_err());
        Ok(())
    }

    #[test]
    fn size_mismatch_is_an_error() {
        let err = Rle::empty(4, 5)
            .union(&Rle::empty(5, 4))
            .expect_err("different sizes");
        assert!(
            err.to_string().contains("4x5 mask with a 5x4 mask"),
            "{err}"
        );
        assert!(Rle::empty(4, 5).intersection(&Rle::empty(4, 6)).is_err());
    }
}
