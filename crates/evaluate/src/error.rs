//! The one error type of `cxrlake-evaluate`.

/// Why a metric could not be computed.
#[derive(Debug, thiserror::Error)]
pub enum EvaluateError {
    /// The inputs do not fit the metric (lengths differ, no items, a value outside its scale);
    /// the message names what and how to fix it.
    #[error("{0}")]
    Input(String),
}

/// Result of this crate.
pub type Result<T, E = EvaluateError> = std::result::Result<T, E>;
