//! COCO run-length encoding of binary masks, bit-compatible with pycocotools (adapted from
//! `cxrlake-synth`'s codec).
//!
//! A mask of `h` rows and `w` columns is flattened column-major (index `x * h + y`) and
//! described by alternating run lengths, starting with a (possibly empty) run of zeros.
//! The compressed string form (`rleToString` / `rleFrString` in pycocotools' `maskApi.c`):
//!
//! ```text
//!   counts  c0 c1 c2 c3 c4 ...          (c0 = zeros, c1 = ones, ...)
//!   delta   c0 c1 c2 c3-c1 c4-c2 ...    (from run i-2, for i > 2)
//!   chunks  each value as signed 5-bit groups, low first; bit 0x20 = "more", 0x10 = sign
//!   chars   chunk + 48 ('0')
//! ```

use crate::error::{MaskError, Result};

/// An uncompressed COCO RLE: image size plus run lengths (zeros first) that always sum to
/// `height * width`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rle {
    height: u32,
    width: u32,
    counts: Vec<u32>,
}

impl Rle {
    /// Checks that `counts` covers exactly `height * width` pixels.
    pub fn new(height: u32, width: u32, counts: Vec<u32>) -> Result<Self> {
        let covered: u64 = counts.iter().map(|&c| u64::from(c)).sum();
        let expected = u64::from(height) * u64::from(width);
        if covered != expected {
            return Err(MaskError::RunsDoNotCover {
                covered,
                height,
                width,
                expected,
            });
        }
        Ok(Self {
            height,
            width,
            counts,
        })
    }

    /// An all-background mask.
    pub fn empty(height: u32, width: u32) -> Self {
        let total = u64::from(height) * u64::from(width);
        Self {
            height,
            width,
            counts: runs_of_total(total),
        }
    }

    /// Rows (image height).
    pub fn height(&self) -> u32 {
        self.height
    }

    /// Columns (image width).
    pub fn width(&self) -> u32 {
        self.width
    }

    /// Alternating run lengths, starting with zeros.
    pub fn counts(&self) -> &[u32] {
        &self.counts
    }

    /// Encodes a dense row-major mask (`mask[y * width + x] != 0` is foreground).
    pub fn from_dense(mask: &[u8], height: u32, width: u32) -> Result<Self> {
        let (h, w) = (height as usize, width as usize);
        if mask.len() != h * w {
            return Err(MaskError::DenseSize {
                len: mask.len(),
                height,
                width,
            });
        }
        let mut counts = Vec::new();
        let mut current = false;
        let mut run = 0u32;
        for x in 0..w {
            for y in 0..h {
                let on = mask[y * w + x] != 0;
                if on != current {
                    counts.push(run);
                    run = 0;
                    current = on;
                }
                run += 1;
            }
        }
        counts.push(run);
        Ok(Self {
            height,
            width,
            counts,
        })
    }

    /// Expands to a dense row-major mask of 0/1 bytes (for tests and export, not for hot paths).
    pub fn to_dense(&self) -> Vec<u8> {
        let (h, w) = (self.height as usize, self.width as usize);
        let mut mask = vec![0u8; h * w];
        for (start, end) in self.foreground_runs() {
            for idx in start as usize..end as usize {
                mask[(idx % h) * w + idx / h] = 1;
            }
        }
        mask
    }

    /// The pycocotools compressed string (`segmentation.counts`).
    pub fn to_compressed_string(&self) -> String {
        encode_counts(&self.counts)
    }

    /// Parses a pycocotools compressed string for an image of the given size.
    pub fn from_compressed_string(counts: &str, height: u32, width: u32) -> Result<Self> {
        Self::new(height, width, decode_counts(counts)?)
    }

    /// Foreground runs as half-open column-major index ranges `[start, end)`, in order, empty
    /// runs skipped.
    pub fn foreground_runs(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        let mut pos = 0u64;
        self.counts.iter().enumerate().filter_map(move |(i, &run)| {
            let start = pos;
            pos += u64::from(run);
            (i % 2 == 1 && run > 0).then_some((start, pos))
        })
    }

    /// Builds a mask from foreground ranges `[start, end)` of column-major indices, in any order;
    /// overlapping or touching ranges are merged and ranges are clipped to the image.
    pub fn from_intervals(
        height: u32,
        width: u32,
        intervals: impl IntoIterator<Item = (u64, u64)>,
    ) -> Self {
        let mut intervals: Vec<(u64, u64)> = intervals.into_iter().collect();
        intervals.sort_unstable();
        Self::from_sorted_intervals(height, width, intervals)
    }

    /// Builds a mask from ranges sorted by start; overlapping or touching ranges are merged, so
    /// the result is canonical (the same runs pycocotools would produce).
    pub(crate) fn from_sorted_intervals(
        height: u32,
        width: u32,
        intervals: impl IntoIterator<Item = (u64, u64)>,
    ) -> Self {
        let total = u64::from(height) * u64::from(width);
        let mut counts = Vec::new();
        // End of the last emitted foreground run.
        let mut pos = 0u64;
        for (start, end) in intervals {
            let (start, end) = (start.max(pos).min(total), end.min(total));
            if start >= end {
                continue;
            }
            if start == pos && !counts.is_empty() {
                let last = counts.len() - 1;
                counts[last] += (end - start) as u32;
            } else {
                counts.push((start - pos) as u32);
                counts.push((end - start) as u32);
            }
            pos = end;
        }
        if counts.is_empty() {
            return Self::empty(height, width);
        }
        if pos < total {
            counts.push((total - pos) as u32);
        }
        Self {
            height,
            width,
            counts,
        }
    }
}

/// Runs of an all-background mask of `total` pixels (one zero run, split if beyond `u32`).
fn runs_of_total(total: u64) -> Vec<u32> {
    if total <= u64::from(u32::MAX) {
        return vec![total as u32];
    }
    let mut counts = Vec::new();
    let mut left = total;
    while left > 0 {
        let run = left.min(u64::from(u32::MAX));
        counts.push(run as u32);
        left -= run;
        if left > 0 {
            counts.push(0);
        }
    }
    counts
}

/// Run lengths → compressed string (pycocotools `rleToString`).
pub fn encode_counts(counts: &[u32]) -> String {
    let mut out = String::with_capacity(counts.len() * 2);
    for (i, &run) in counts.iter().enumerate() {
        let mut value = i64::from(run);
        if i > 2 {
            value -= i64::from(counts[i - 2]);
        }
        loop {
            let mut chunk = (value & 0x1f) as u8;
            value >>= 5;
            let more = if chunk & 0x10 != 0 {
                value != -1
            } else {
                value != 0
            };
            if more {
                chunk |= 0x20;
            }
            out.push(char::from(chunk + 48));
            if !more {
                break;
            }
        }
    }
    out
}

/// Compressed string → run lengths (pycocotools `rleFrString`).
pub fn decode_counts(text: &str) -> Result<Vec<u32>> {
    let mut counts = Vec::with_capacity(text.len());
    for run in CountsDecoder::new(text) {
        counts.push(run?);
    }
    Ok(counts)
}

/// The run lengths of a compressed counts string, decoded one at a time without allocating
/// (pycocotools `rleFrString`); stops after the first error.
#[derive(Debug, Clone)]
pub struct CountsDecoder<'a> {
    bytes: &'a [u8],
    p: usize,
    index: usize,
    /// The runs two and one places back (the string stores later runs as deltas).
    older: i64,
    previous: i64,
    failed: bool,
}

impl<'a> CountsDecoder<'a> {
    /// A decoder over `text`.
    pub fn new(text: &'a str) -> Self {
        Self {
            bytes: text.as_bytes(),
            p: 0,
            index: 0,
            older: 0,
            previous: 0,
            failed: false,
        }
    }

    #[inline]
    fn value(&mut self) -> Result<u32> {
        let malformed = |reason: String| MaskError::MalformedCounts { reason };
        let mut value: i64 = 0;
        let mut shift = 0u32;
        // Fast path: a value that fits one character (no continuation bit), most runs of the
        // first and second position and most deltas.
        if let Some(chunk) = self.bytes.get(self.p).map(|b| b.wrapping_sub(48))
            && chunk < 0x20
        {
            self.p += 1;
            value = i64::from(chunk & 0x1f);
            if chunk & 0x10 != 0 {
                value |= -1i64 << 5;
            }
            return self.finish(value);
        }
        loop {
            let p = self.p;
            let byte = *self
                .bytes
                .get(p)
                .ok_or_else(|| malformed("the string ends inside a value".to_owned()))?;
            let chunk = byte
                .checked_sub(48)
                .map(i64::from)
                .filter(|&chunk| chunk <= 0x3f)
                .ok_or_else(|| {
                    malformed(format!(
                        "invalid character {:?} at byte {p}",
                        char::from(byte)
                    ))
                })?;
            if shift > 55 {
                return Err(malformed(format!("value too long at byte {p}")));
            }
            value |= (chunk & 0x1f) << shift;
            self.p += 1;
            shift += 5;
            if chunk & 0x20 == 0 {
                if chunk & 0x10 != 0 {
                    value |= -1i64 << shift;
                }
                break;
            }
        }
        self.finish(value)
    }

    /// Undoes the delta coding of runs after the second and checks the range.
    #[inline]
    fn finish(&mut self, mut value: i64) -> Result<u32> {
        let malformed = |reason: String| MaskError::MalformedCounts { reason };
        if self.index > 2 {
            value += self.older;
        }
        let run = u32::try_from(value).map_err(|_| {
            malformed(format!(
                "run {} has length {value}, outside 0..=4294967295",
                self.index
            ))
        })?;
        (self.older, self.previous) = (self.previous, i64::from(run));
        self.index += 1;
        Ok(run)
    }
}

impl Iterator for CountsDecoder<'_> {
    type Item = Result<u32>;

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        if self.failed || self.p >= self.bytes.len() {
            return None;
        }
        let run = self.value();
        self.failed = run.is_err();
        Some(run)
    }
}

#[cfg(test)]
mod tests {
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    use super::*;

    #[test]
    fn known_pycocotools_strings() -> Result<()> {
        // Vectors produced by pycocotools 2.0 `mask.encode` on Fortran-ordered arrays.
        assert_eq!(encode_counts(&[4, 1, 4]), "414");
        assert_eq!(encode_counts(&[0, 100, 95]), "0T3o2");
        let (h, w) = (50u32, 40u32);
        let mut dense = vec![0u8; (h * w) as usize];
        let mut set = |ys: std::ops::Range<u32>, xs: std::ops::Range<u32>| {
            for y in ys {
                for x in xs.clone() {
                    dense[(y * w + x) as usize] = 1;
                }
            }
        };
        set(5..30, 3..20);
        set(0..50, 25..26);
        set(10..12, 30..39);
        let rle = Rle::from_dense(&dense, h, w)?;
        assert_eq!(
            rle.to_compressed_string(),
            "k4i0i00000000000000000000000000000000e7i0TN`NnJ000000000000000X1"
        );
        assert_eq!(rle.area(), 493);
        assert_eq!(rle.bbox(), Some([3.0, 0.0, 39.0, 50.0]));
        let counts = [1000, 25, 3000, 20, 7];
        assert_eq!(decode_counts(&encode_counts(&counts))?, counts);
        Ok(())
    }

    #[test]
    fn dense_round_trip_random_masks() -> Result<()> {
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        for _ in 0..100 {
            let h = rng.random_range(1..40u32);
            let w = rng.random_range(1..40u32);
            let density: f64 = rng.random();
            let mask: Vec<u8> = (0..h * w)
                .map(|_| u8::from(rng.random::<f64>() < density))
                .collect();
            let rle = Rle::from_dense(&mask, h, w)?;
            let text = rle.to_compressed_string();
            let decoded = Rle::from_compressed_string(&text, h, w)?;
            assert_eq!(decoded, rle);
            assert_eq!(decoded.to_dense(), mask);
            let rebuilt = Rle::from_intervals(h, w, rle.foreground_runs());
            assert_eq!(rebuilt, rle, "intervals give canonical runs");
        }
        Ok(())
    }

    #[test]
    fn rejects_garbage_with_clear_errors() {
        let err = Rle::from_compressed_string("415", 2, 2).expect_err("too many pixels");
        assert_eq!(
            err,
            MaskError::RunsDoNotCover {
                covered: 10,
                height: 2,
                width: 2,
                expected: 4
            }
        );
        assert!(err.to_string().contains("cover 10 pixels"), "{err}");
        let err = decode_counts("4\u{1}").expect_err("control character");
        assert!(err.to_string().contains("invalid character"), "{err}");
        assert!(decode_counts("k").is_err(), "ends inside a value");
        assert!(decode_counts("p").is_err(), "beyond 'o'");
        assert!(decode_counts("0@").is_err(), "negative run");
    }

    #[test]
    fn empty_and_full_masks() -> Result<()> {
        assert_eq!(Rle::empty(3, 4).counts(), &[12]);
        assert_eq!(Rle::from_dense(&[1; 6], 2, 3)?.counts(), &[0, 6]);
        assert_eq!(Rle::from_intervals(2, 3, [(0, 6)]).counts(), &[0, 6]);
        assert_eq!(Rle::from_dense(&[], 0, 5)?, Rle::empty(0, 5));
        Ok(())
    }
}
