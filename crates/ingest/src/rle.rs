//! One-pass check of a COCO compressed RLE string against the image size, with the mask's area
//! and box, without materialising the runs (CXAS masks have ~1,500 runs each and MIMIC has tens
//! of millions of masks). Decoding follows pycocotools' `rleFrString`; the box convention is
//! `cxrlake_masks::Rle::bbox`'s (`[x1, y1, x2, y2]`, exclusive right/bottom edges).

/// Area and box of a valid mask.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RleSummary {
    /// Foreground pixels.
    pub area: u64,
    /// Tight box, `None` for an empty mask.
    pub bbox: Option<[f32; 4]>,
}

/// Checks that `counts` is a valid compressed RLE whose runs cover exactly `height * width`
/// pixels, and returns its area and box; `Err` says what is wrong.
pub fn summarize(counts: &str, height: u32, width: u32) -> Result<RleSummary, String> {
    let h = u64::from(height);
    let total = h * u64::from(width);
    let bytes = counts.as_bytes();
    let (mut older, mut previous) = (0i64, 0i64);
    let mut index = 0usize;
    let mut position = 0u64;
    let mut area = 0u64;
    let (mut first_start, mut last_end) = (None, 0u64);
    let (mut top, mut bottom) = (h, 0u64);
    let mut p = 0usize;
    while p < bytes.len() {
        let mut value: i64 = 0;
        let mut shift = 0u32;
        loop {
            let Some(&byte) = bytes.get(p) else {
                return Err("the counts string ends inside a value".into());
            };
            let chunk = i64::from(byte.wrapping_sub(48));
            if !(0..=0x3f).contains(&chunk) || shift > 55 {
                return Err(format!(
                    "invalid character {:?} at byte {p} of the counts string",
                    char::from(byte)
                ));
            }
            value |= (chunk & 0x1f) << shift;
            p += 1;
            shift += 5;
            if chunk & 0x20 == 0 {
                if chunk & 0x10 != 0 {
                    value |= -1i64 << shift;
                }
                break;
            }
        }
        if index > 2 {
            value += older;
        }
        if !(0..=i64::from(u32::MAX)).contains(&value) {
            return Err(format!("run {index} has length {value}"));
        }
        let run = value as u64;
        let end = position + run;
        if end > total {
            return Err(format!(
                "runs cover more than the {height}x{width} = {total} pixels of the image"
            ));
        }
        if index % 2 == 1 && run > 0 {
            area += run;
            first_start.get_or_insert(position);
            last_end = end;
            if (top, bottom) != (0, h - 1) {
                let row = position % h;
                if row + run <= h {
                    top = top.min(row);
                    bottom = bottom.max(row + run - 1);
                } else {
                    (top, bottom) = (0, h - 1);
                }
            }
        }
        position = end;
        (older, previous) = (previous, value);
        index += 1;
    }
    if position != total {
        return Err(format!(
            "runs cover {position} pixels but a {height}x{width} mask has {total}"
        ));
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
    use super::*;

    /// xorshift64*, enough for test masks.
    fn next(state: &mut u64) -> u64 {
        *state ^= *state >> 12;
        *state ^= *state << 25;
        *state ^= *state >> 27;
        state.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    #[test]
    fn agrees_with_the_masks_crate_on_random_masks() {
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        for case in 0..300 {
            let height = 1 + (next(&mut state) % 40) as u32;
            let width = 1 + (next(&mut state) % 40) as u32;
            let density = next(&mut state) % 4;
            let dense: Vec<u8> = (0..height * width)
                .map(|_| u8::from(next(&mut state) % 4 < density))
                .collect();
            let rle = cxrlake_masks::Rle::from_dense(&dense, height, width).expect("rle");
            let text = rle.to_compressed_string();
            let summary = summarize(&text, height, width).expect("valid");
            assert_eq!(summary.area, rle.area(), "case {case}");
            assert_eq!(summary.bbox, rle.bbox(), "case {case}");
            assert!(summarize(&text, height + 1, width).is_err(), "case {case}");
        }
    }

    #[test]
    fn rejects_malformed_strings() {
        assert!(summarize("0a0", 2, 2).is_err());
        assert!(summarize("4", 2, 2).is_ok());
        assert!(summarize("5", 2, 2).is_err());
        assert!(summarize("4\u{7f}", 2, 2).is_err());
        assert!(summarize("l", 2, 2).is_err(), "dangling continuation");
    }
}
