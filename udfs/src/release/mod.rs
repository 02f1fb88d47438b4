//! Functions of the release exports (`sql/release/`): `keep_images` (drop per-image entries of
//! images not in a list, e.g. non-frontal ones, at any depth of a nested value), `every_image`
//! (a per-image level list with an entry for every image of a list), `sample_hash`
//! (reproducible hash sampling), `extraction_rating` (the rating of an extraction-quality struct),
//! `quality_value` (a quality level name → the release's integer) and `list_length` (items per
//! list, from the offsets).

mod every_image;
mod extraction_rating;
mod keep_images;
mod list_length;
mod quality_value;
mod sample_hash;

pub use every_image::EveryImageFunc;
pub use extraction_rating::ExtractionRatingFunc;
pub use keep_images::KeepImagesFunc;
pub use list_length::ListLengthFunc;
pub use quality_value::QualityValueFunc;
pub use sample_hash::SampleHashFunc;
