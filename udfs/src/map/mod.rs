//! The map stage's functions over the entity mapping of crate `cxrlake-map` (paper 000, E.1.3).
//!
//! `match_concept(text, kind)` maps one tag; `map_observations(list)` maps and standardises a
//! study; `map_texts(list)` lists the texts that mapping looks up. Both hold the same [`ConceptIndex`] (embedder, threshold, reference tags), which is
//! their identity in a plan.

/// Equality and hash by the concept index's identity (embedder, refdefs, threshold).
macro_rules! concepts_identity {
    ($func:ty) => {
        impl PartialEq for $func {
            fn eq(&self, other: &Self) -> bool {
                self.concepts.identity() == other.concepts.identity()
            }
        }

        impl Eq for $func {}

        impl std::hash::Hash for $func {
            fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
                self.concepts.identity().hash(state);
            }
        }
    };
}

use concepts_identity;

mod map_observations;
mod map_texts;
mod match_concept;

pub use map_observations::{MapObservationsFunc, mapped_observations_type};
pub use map_texts::{MapTextsFunc, texts_type};
pub use match_concept::{MatchConceptFunc, match_type};
