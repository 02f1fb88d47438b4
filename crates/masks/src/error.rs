//! The error type of cxrlake-masks: malformed RLE strings, runs that do not fit the image, and
//! operations on masks of different sizes.

/// Errors from decoding or combining masks.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum MaskError {
    /// A compressed `counts` string is not valid pycocotools RLE.
    #[error(
        "malformed RLE counts string: {reason}; expected a pycocotools compressed string (characters '0'..'o')"
    )]
    MalformedCounts {
        /// What is wrong with the string.
        reason: String,
    },
    /// The runs do not cover exactly `height * width` pixels.
    #[error(
        "RLE runs cover {covered} pixels but a {height}x{width} mask has {expected}; check that height and width belong to this mask"
    )]
    RunsDoNotCover {
        /// Pixels covered by the runs.
        covered: u64,
        /// Mask height.
        height: u32,
        /// Mask width.
        width: u32,
        /// `height * width`.
        expected: u64,
    },
    /// Two masks combined by union or intersection have different sizes.
    #[error(
        "cannot combine a {left_height}x{left_width} mask with a {right_height}x{right_width} mask; both must have the image's size"
    )]
    SizeMismatch {
        /// Height of the left mask.
        left_height: u32,
        /// Width of the left mask.
        left_width: u32,
        /// Height of the right mask.
        right_height: u32,
        /// Width of the right mask.
        right_width: u32,
    },
    /// A dense mask buffer does not have `height * width` entries.
    #[error("dense mask has {len} pixels, expected {height}x{width}")]
    DenseSize {
        /// Buffer length.
        len: usize,
        /// Mask height.
        height: u32,
        /// Mask width.
        width: u32,
    },
    /// A box has a coordinate that is NaN or infinite.
    #[error("box {bbox:?} has a non-finite coordinate")]
    NonFiniteBox {
        /// The offending box.
        bbox: [f32; 4],
    },
}

/// Result alias of cxrlake-masks.
pub type Result<T, E = MaskError> = std::result::Result<T, E>;
