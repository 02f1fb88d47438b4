//! Area and box of a compressed RLE straight from its counts string, in one pass without
//! materialising the runs: ingest checks tens of millions of CXAS masks this way, and
//! `mask_area`/`mask_bbox` answer from it.

use crate::boxes::BBox;
use crate::error::{MaskError, Result};
use crate::rle::CountsDecoder;

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
pub fn summarize(counts: &str, height: u32, width: u32) -> Result<RleSummary> {
    let h = u64::from(height);
    let total = h * u64::from(width);
    // Row of a pixel: a 32-bit remainder is several times cheaper than a 64-bit one, and every
    // image fits (2544 x 3056 is 7.8M pixels).
    let small = total <= u64::from(u32::MAX);
    let row_of = |position: u64| {
        if small {
            u64::from(position as u32 % height)
        } else {
            position % h
        }
    };
    let not_covering = |covered| MaskError::RunsDoNotCover {
        covered,
        height,
        width,
        expected: total,
    };
    let mut position = 0u64;
    let mut area = 0u64;
    let (mut first_start, mut last_end) = (None, 0u64);
    let (mut top, mut bottom) = (h, 0u64);
    let full_height = (0, h.saturating_sub(1));
    for (index, run) in CountsDecoder::new(counts).enumerate() {
        let run = u64::from(run?);
        let end = position + run;
        if end > total {
            // Keep decoding: the error reports every pixel the runs cover, as decoding does.
            position = end;
            continue;
        }
        if index % 2 == 1 && run > 0 {
            area += run;
            first_start.get_or_insert(position);
            last_end = end;
            if (top, bottom) != full_height {
                let row = row_of(position);
                if row + run <= h {
                    top = top.min(row);
                    bottom = bottom.max(row + run - 1);
                } else {
                    (top, bottom) = full_height;
                }
            }
        }
        position = end;
    }
    if position != total {
        return Err(not_covering(position));
    }
    let bbox = first_start.map(|start| {
        let (left, right) = (start / h, (last_end - 1) / h);
        [
            left as f32,
            top as f32,
            (right + 1) as f32,
            (bottom + 1) as f32,
        ]
    });
    Ok(RleSummary { area, bbox })
}

#[cfg(test)]
mod tests {
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    use super::*;
    use crate::Rle;

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
