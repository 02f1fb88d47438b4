//! Boxes and masks in SQL (issue 5, localisation): COCO RLE masks as `(counts, height, width)`
//! and boxes as `[x1, y1, x2, y2]` pixel extents with exclusive right/bottom edges.
//!
//! | function | result |
//! |---|---|
//! | `mask_area(counts, height, width)` | `int64` foreground pixels |
//! | `mask_bbox(counts, height, width)` | tight box, NULL for an empty mask |
//! | `mask_union(counts_a, counts_b, height, width)` | `utf8` counts |
//! | `mask_intersection(counts_a, counts_b, height, width)` | `utf8` counts |
//! | `mask_union_agg(counts, height, width)` (aggregate) | `utf8` counts |
//! | `box_union(list<box>)` | super-box |
//! | `box_intersection(a, b)` | overlap, NULL if disjoint |
//! | `box_area(box)` | `float64` |
//! | `box_clamp(box, width, height)` | box clipped to the image |
//! | `box_iou(a, b)`, `box_iop(pred, target)`, `box_iot(pred, target)` | `float64` (paper 000, 4.1) |
//!
//! Boxes come back as `fixed_size_list<f32, 4>` and are accepted as that or as `list<f32>` of
//! length 4. The mask work is done in the run domain by `cxrlake-masks`, never on pixels.

mod box_area;
mod box_clamp;
mod box_intersection;
mod box_iop;
mod box_iot;
mod box_iou;
mod box_union;
mod kernel;
mod mask_area;
mod mask_bbox;
mod mask_intersection;
mod mask_union;
mod mask_union_agg;

pub use box_area::BoxAreaFunc;
pub use box_clamp::BoxClampFunc;
pub use box_intersection::BoxIntersectionFunc;
pub use box_iop::BoxIopFunc;
pub use box_iot::BoxIotFunc;
pub use box_iou::BoxIouFunc;
pub use box_union::BoxUnionFunc;
pub use mask_area::MaskAreaFunc;
pub use mask_bbox::MaskBboxFunc;
pub use mask_intersection::MaskIntersectionFunc;
pub use mask_union::MaskUnionFunc;
pub use mask_union_agg::MaskUnionAggFunc;
