//! The map stage's domain logic (paper 000, E.1.3 "Entity Mapping" and "Reference Data and
//! Standardization"): what the reference definitions say about each tag ([`Reference`]), the
//! [`ConceptIndex`] that matches an extracted tag onto them (exact name or synonym, else the
//! embedder's cosine top-1 at or above the threshold), and the standardisation of one study's
//! raw observations ([`map_study`]). The `map_observations` and `match_concept` SQL functions
//! (crate `cxrlake-udfs`) are thin wrappers around it.

mod concepts;
mod reference;
mod standardize;
mod texts;

pub use concepts::{ConceptIndex, ConceptKind, Hit};
pub use reference::{FindingInfo, Reference, RegionInfo};
pub use standardize::{
    Modifiers, ObsQuality, Observation, RawObservation, RegionRef, map_study, split_distance,
};
pub use texts::{FindingQuery, Queries, study_texts};
