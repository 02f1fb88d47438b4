//! Integration tests of the synthetic corpus generator (one binary; modules only).

mod common;
mod consistency;
mod determinism;
mod formats;
mod phenomena;
