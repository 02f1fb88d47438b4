//! Area and box of a compressed RLE straight from its counts string, in one pass without
//! materialising the runs: ingest checks tens of millions of CXAS masks this way, and
//! `mask_area`/`mask_bbox` answer from it.

use crate::boxes::BBox;
use crate::error::Result;
use crate::rle::Rle;

/// Area and box of a valid mask.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RleSummary {
    /// Foreground pixels.
    pub area: u64,
    /// Tight box (the convention of [`crate::Rle::bbox`]), `None` for an empty mask.
    pub bbox: Option<BBox>,
}

/// Checks that `counts` is a valid compressed RLE whose runs cover exactly `height * width`
/// pixels and returns its area and box; equal to decoding and asking [`crate::Rle`], faster.
///
/// One loop decodes the characters (pycocotools `rleFrString`) and follows the row of each run
/// by adding run lengths, so no division is needed per run (the runs of a chest X-ray mask are
/// mostly shorter than a column). Anything invalid falls back to decoding, which names the error.
pub fn summarize(counts: &str, height: u32, width: u32) -> Result<RleSummary> {
    summarize_valid(counts.as_bytes(), height, width).map_or_else(
        || {
            let rle = Rle::from_compressed_string(counts, height, width)?;
            Ok(RleSummary {
                area: rle.area(),
                bbox: rle.bbox(),
            })
        },
        Ok,
    )
}

/// The summary of a valid mask of a non-empty image, `None` for anything else.
#[inline]
fn summarize_valid(bytes: &[u8], height: u32, width: u32) -> Option<RleSummary> {
    let h = u64::from(height);
    let total = h * u64::from(width);
    if total == 0 {
        return None;
    }
    let full_height = (0, h - 1);
    let mut p = 0usize;
    // Runs alternate background, foreground; from the third run on, the string stores each as
    // the delta to the run of the same kind before it. A mask is all ones once the previous run
    // of its kind counts (after the first pair for foreground, the second for background).
    let (mut background, mut foreground) = (0i64, 0i64);
    let (mut background_counts, mut foreground_counts) = (0i64, 0i64);
    // Column-major pixel index where the next run starts, and its row (`position % h`).
    let (mut position, mut row) = (0u64, 0u64);
    let mut area = 0u64;
    // First foreground pixel (`u64::MAX` while there is none) and the end of the last run.
    let (mut first_start, mut last_end) = (u64::MAX, 0u64);
    let (mut top, mut bottom) = (h, 0u64);
    let advance = |row: &mut u64, run: u64| {
        *row += run;
        if *row >= h {
            *row -= h;
            if *row >= h {
                *row %= h;
            }
        }
    };
    while p < bytes.len() {
        background = value(bytes, &mut p)? + (background & background_counts);
        let run = u64::from(u32::try_from(background).ok()?);
        position += run;
        if position > total {
            return None;
        }
        advance(&mut row, run);
        if p == bytes.len() {
            break;
        }
        foreground = value(bytes, &mut p)? + (foreground & foreground_counts);
        (background_counts, foreground_counts) = (foreground_counts, -1);
        let run = u64::from(u32::try_from(foreground).ok()?);
        let end = position + run;
        if end > total {
            return None;
        }
        if run > 0 {
            area += run;
            first_start = first_start.min(position);
            last_end = end;
            if (top, bottom) != full_height {
                if row + run <= h {
                    top = top.min(row);
                    bottom = bottom.max(row + run - 1);
                } else {
                    // A run over two or more columns covers every row of the box.
                    (top, bottom) = full_height;
                }
            }
        }
        position = end;
        advance(&mut row, run);
    }
    if position != total {
        return None;
    }
    let bbox = (area > 0).then(|| {
        let (left, right) = (first_start / h, (last_end - 1) / h);
        [
            left as f32,
            top as f32,
            (right + 1) as f32,
            (bottom + 1) as f32,
        ]
    });
    Some(RleSummary { area, bbox })
}

/// The value at `bytes[*p..]` (signed 5-bit groups, low first), `None` if malformed.
#[inline(always)]
fn value(bytes: &[u8], p: &mut usize) -> Option<i64> {
    let chunk = bytes.get(*p)?.wrapping_sub(48);
    if chunk < 0x20 {
        // One character (no continuation bit): most deltas.
        *p += 1;
        let value = i64::from(chunk & 0x1f);
        return Some(if chunk & 0x10 != 0 {
            value | -1i64 << 5
        } else {
            value
        });
    }
    let (mut value, mut shift) = (0i64, 0u32);
    loop {
        let chunk = bytes.get(*p)?.wrapping_sub(48);
        if chunk > 0x3f || shift > 55 {
            return None;
        }
        value |= i64::from(chunk & 0x1f) << shift;
        *p += 1;
        shift += 5;
        if chunk & 0x20 == 0 {
            return Some(if chunk & 0x10 != 0 {
                value | -1i64 << shift
            } else {
                value
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    use super::*;
    use crate::MaskError;

    #[test]
    fn agrees_with_decoding_on_random_masks() -> Result<()> {
        let mut rng = ChaCha8Rng::seed_from_u64(21);
        for case in 0..300 {
            let height = rng.random_range(1..40u32);
            let width = rng.random_range(1..40u32);
            let density = rng.random_range(0..4u8);
            let dense: Vec<u8> = (0..height * width)
                .map(|_| u8::from(rng.random_range(0..4u8) < density))
                .collect();
            let rle = Rle::from_dense(&dense, height, width)?;
            let text = rle.to_compressed_string();
            let summary = summarize(&text, height, width)?;
            assert_eq!(summary.area, rle.area(), "case {case}");
            assert_eq!(summary.bbox, rle.bbox(), "case {case}");
            assert!(summarize(&text, height + 1, width).is_err(), "case {case}");
        }
        Ok(())
    }

    #[test]
    fn agrees_with_decoding_on_segments_and_empty_columns() -> Result<()> {
        // One vertical segment or none per column: runs shorter than a column, and background
        // runs over several empty columns (the row wraps more than once), as in CXAS masks.
        let mut rng = ChaCha8Rng::seed_from_u64(22);
        for case in 0..300 {
            let height = rng.random_range(1..60u32);
            let width = rng.random_range(1..60u32);
            let mut dense = vec![0u8; (height * width) as usize];
            for x in 0..width {
                if rng.random_range(0..3u8) == 0 {
                    continue;
                }
                let top = rng.random_range(0..height);
                let bottom = rng.random_range(top..height);
                for y in top..=bottom {
                    dense[(y * width + x) as usize] = 1;
                }
            }
            let rle = Rle::from_dense(&dense, height, width)?;
            let summary = summarize(&rle.to_compressed_string(), height, width)?;
            assert_eq!(summary.area, rle.area(), "case {case}");
            assert_eq!(summary.bbox, rle.bbox(), "case {case}");
        }
        Ok(())
    }

    #[test]
    fn rejects_malformed_strings() {
        assert!(summarize("0a0", 2, 2).is_err());
        assert!(summarize("4", 2, 2).is_ok());
        assert!(matches!(
            summarize("5", 2, 2),
            Err(MaskError::RunsDoNotCover { covered: 5, .. })
        ));
        assert!(matches!(
            summarize("415", 2, 2),
            Err(MaskError::RunsDoNotCover { covered: 10, .. })
        ));
        assert!(summarize("4\u{7f}", 2, 2).is_err());
        assert!(summarize("l", 2, 2).is_err(), "dangling continuation");
    }
}
