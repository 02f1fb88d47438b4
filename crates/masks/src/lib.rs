//! Binary masks as COCO run-length encodings and boxes as `[x1, y1, x2, y2]` pixel extents.
//!
//! Everything here works on runs, never on dense images: a 2544×3056 lung mask is a few thousand
//! run lengths, so area, bounding box, union and intersection cost microseconds.
//!
//! ```text
//!   counts string ──decode_counts──▶ Rle { height, width, runs } ──area / bbox──▶ u64 / [f32; 4]
//!         ▲                             │  union / intersection (interval merge)
//!         └───────encode_counts─────────┘  from_box (rasterise a box)
//! ```
//!
//! Box convention (used by [`Rle::bbox`], [`Rle::from_box`] and the `box_*` helpers): pixel
//! `(x, y)` covers `[x, x+1) × [y, y+1)`; a box `[x1, y1, x2, y2]` has exclusive right/bottom
//! edges, so a mask whose foreground spans columns 3..=6 has `x1 = 3`, `x2 = 7`, and a box's
//! area is `(x2 - x1) * (y2 - y1)` pixels.

mod boxes;
mod error;
mod ops;
mod rle;
mod summary;

pub use boxes::{
    BBox, box_area, box_clamp, box_intersection, box_iop, box_iot, box_iou, box_union,
};
pub use error::{MaskError, Result};
pub use rle::{CountsDecoder, Rle, decode_counts, encode_counts};
pub use summary::{RleSummary, summarize};
