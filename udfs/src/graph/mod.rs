//! The graph stage's functions over the scene-graph assembly of crate `cxrlake-graph` (paper 000,
//! E.1.3 "Graph Construction" and D.1).
//!
//! `graph_regions(observations)` lists a study's region nodes; `build_scene_graph(...)`
//! assembles the rest. Both hold the reference lookups, identified by the refdefs fingerprint.

/// Equality and hash by the reference definitions' fingerprint.
macro_rules! reference_identity {
    ($func:ty) => {
        impl PartialEq for $func {
            fn eq(&self, other: &Self) -> bool {
                self.identity == other.identity
            }
        }

        impl Eq for $func {}

        impl std::hash::Hash for $func {
            fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
                self.identity.hash(state);
            }
        }
    };
}

pub(crate) use reference_identity;

mod box_rows;
mod build_scene_graph;
mod graph_regions;

pub use build_scene_graph::{BuildSceneGraphFunc, assembled_type};
pub use graph_regions::GraphRegionsFunc;
