//! The crate's one error enum.

use std::net::SocketAddr;
use std::path::PathBuf;

use thiserror::Error;

/// Errors of cxrlake on Ballista.
#[derive(Debug, Error)]
pub enum DistributedError {
    /// The scheduler does not answer.
    #[error(
        "cannot reach the Ballista scheduler at {addr} ({why}): start one with `cxrlake \
         scheduler --bind {addr}`, or run locally with `--engine local`"
    )]
    Unreachable {
        /// The scheduler's address as given.
        addr: String,
        /// What failed.
        why: String,
    },
    /// An `--engine` value that is neither `local` nor `ballista://HOST:PORT`.
    #[error("engine '{value}': {why}")]
    Engine {
        /// The value given.
        value: String,
        /// What is wrong with it.
        why: String,
    },
    /// A scheduler or executor cannot listen on its address.
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        /// The address.
        addr: SocketAddr,
        /// Underlying error.
        source: std::io::Error,
    },
    /// An executor's work folder cannot be created.
    #[error("cannot create the executor's work folder {path}: {source}")]
    WorkDir {
        /// The folder.
        path: PathBuf,
        /// Underlying error.
        source: std::io::Error,
    },
    /// Ballista failed.
    #[error("ballista: {0}")]
    Ballista(#[from] ballista_core::error::BallistaError),
    /// Planning or running a query failed.
    #[error("query failed: {0}")]
    Query(#[from] datafusion::error::DataFusionError),
    /// Opening the lake's tables failed.
    #[error(transparent)]
    Lake(#[from] cxrlake_lake::LakeError),
}

impl DistributedError {
    /// The scheduler at `addr` cannot be reached: `why`.
    pub fn unreachable(addr: impl ToString, why: impl ToString) -> Self {
        Self::Unreachable {
            addr: addr.to_string(),
            why: why.to_string(),
        }
    }
}

/// Result alias of the crate.
pub type Result<T, E = DistributedError> = std::result::Result<T, E>;
