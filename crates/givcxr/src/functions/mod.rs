//! The GIV-CXR flavour's functions (paper 002) over crate `cxrlake-givcxr`. The question,
//! answer and judge functions, `givcxr_questions`, `givcxr_answers` and `givcxr_judge`, are the
//! generation operator (`crate::generate`) bound to the flavour's tasks by the pipeline.
//!
//! Each function here holds the vocabulary (or the region map made from it) it was created
//! with; two are equal when their vocabularies' versions are.

mod givcxr_changelog;
mod givcxr_derive;
mod givcxr_finding;
mod givcxr_region;
mod givcxr_region_map;
mod givcxr_split;
mod givcxr_texture;

pub use givcxr_changelog::{GivcxrChangelogFunc, changelog_type};
pub use givcxr_derive::{GivcxrDeriveFunc, derived_type};
pub use givcxr_finding::GivcxrFindingFunc;
pub use givcxr_region::{GivcxrRegionFunc, Lookup};
pub use givcxr_region_map::{GivcxrRegionMapFunc, region_map_type};
pub use givcxr_split::GivcxrSplitFunc;
pub use givcxr_texture::GivcxrTextureFunc;

/// `PartialEq`, `Eq` and `Hash` of a function by its `version` field.
macro_rules! by_version {
    ($func:ty) => {
        impl PartialEq for $func {
            fn eq(&self, other: &Self) -> bool {
                self.version == other.version
            }
        }

        impl Eq for $func {}

        impl std::hash::Hash for $func {
            fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
                self.version.hash(state);
            }
        }
    };
}

pub(crate) use by_version;
