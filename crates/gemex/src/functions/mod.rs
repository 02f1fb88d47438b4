//! The GEMeX flavour's functions (paper 004) over crate `cxrlake-gemex`. The two generation
//! functions, `gemex_reground` and `gemex_generate`, are the generation operator
//! (`crate::generate`) bound to the flavour's tasks by the pipeline.

mod gemex_region_boxes;

pub use gemex_region_boxes::{GemexRegionBoxesFunc, region_boxes_type};
