//! The MIMIC-CXR-VQA flavour's functions (paper 001) over crate `cxrlake-mimic-cxr-vqa`. The
//! answer and judge functions, `mimic_cxr_vqa_answer` and `mimic_cxr_vqa_judge`, are the
//! generation operator (`crate::generate`) bound to the flavour's tasks by the pipeline.

mod mimic_cxr_vqa_heart;
mod mimic_cxr_vqa_sample;

pub use mimic_cxr_vqa_heart::MimicCxrVqaHeartFunc;
pub use mimic_cxr_vqa_sample::{MimicCxrVqaSampleFunc, sampled_type};
