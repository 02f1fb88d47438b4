//! Localization of anatomical regions: the recipe plan compiled from the reference definitions
//! and the `localize_regions` function the `localize` stage unnests.

mod localize_regions;

pub use localize_regions::LocalizeRegionsFunc;
