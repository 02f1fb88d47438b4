//! Building COCO RLE masks directly from shapes, one vertical interval per column, so the
//! generator never allocates a dense image in the hot path. The codec itself (pycocotools
//! compressed strings, area, box, union, intersection) is `cxrlake-masks`, re-exported here.

pub use cxrlake_masks::{Rle, decode_counts, encode_counts};

/// Builds runs column by column from at most one foreground interval per column.
#[derive(Debug)]
pub struct RleBuilder {
    height: u32,
    width: u32,
    counts: Vec<u32>,
    /// Linear index just past the last foreground run.
    pos: u64,
    area: u64,
    bbox: Option<[u32; 4]>,
}

impl RleBuilder {
    /// Starts an empty mask of `height` x `width`.
    pub fn new(height: u32, width: u32) -> Self {
        Self {
            height,
            width,
            counts: Vec::new(),
            pos: 0,
            area: 0,
            bbox: None,
        }
    }

    /// Marks rows `y0..y1` of column `x` as foreground; columns must come in increasing order.
    pub fn push_column(&mut self, x: u32, y0: u32, y1: u32) {
        let y1 = y1.min(self.height);
        if y0 >= y1 || x >= self.width {
            return;
        }
        let h = u64::from(self.height);
        let start = u64::from(x) * h + u64::from(y0);
        let end = u64::from(x) * h + u64::from(y1);
        debug_assert!(start >= self.pos, "columns must be pushed in order");
        if start == self.pos && self.counts.len().is_multiple_of(2) && !self.counts.is_empty() {
            let last = self.counts.len() - 1;
            self.counts[last] += (end - start) as u32;
        } else {
            self.counts.push((start - self.pos) as u32);
            self.counts.push((end - start) as u32);
        }
        self.pos = end;
        self.area += end - start;
        self.bbox = Some(match self.bbox {
            None => [x, y0, x, y1 - 1],
            Some([bx0, by0, _, by1]) => [bx0, by0.min(y0), x, by1.max(y1 - 1)],
        });
    }

    /// Foreground pixels so far.
    pub fn area(&self) -> u64 {
        self.area
    }

    /// Inclusive pixel extent `[x0, y0, x1, y1]` of the foreground, if any.
    pub fn extent(&self) -> Option<[u32; 4]> {
        self.bbox
    }

    /// Closes the trailing zero run.
    pub fn finish(mut self) -> Rle {
        let total = u64::from(self.height) * u64::from(self.width);
        if self.counts.is_empty() || self.pos < total {
            self.counts.push((total - self.pos) as u32);
        }
        Rle::new(self.height, self.width, self.counts)
            .expect("the builder's runs always cover the whole image")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builder_matches_dense_encoding_and_bbox() {
        let (h, w) = (20u32, 15u32);
        let mut dense = vec![0u8; (h * w) as usize];
        let mut builder = RleBuilder::new(h, w);
        for x in 3..12u32 {
            let (y0, y1) = if x == 5 {
                (0, h)
            } else {
                (2 + x % 4, 10 + x % 7)
            };
            for y in y0..y1 {
                dense[(y * w + x) as usize] = 1;
            }
            builder.push_column(x, y0, y1);
        }
        assert_eq!(builder.extent(), Some([3, 0, 11, 19]));
        let built = builder.finish();
        assert_eq!(built, Rle::from_dense(&dense, h, w).expect("encodes"));
        assert_eq!(built.bbox(), Some([3.0, 0.0, 12.0, 20.0]));
        assert_eq!(built.to_dense(), dense);
    }
}
