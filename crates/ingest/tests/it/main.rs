//! Integration tests of cxrlake-ingest: synthetic corpora through ingest into temporary lakes.

mod bad_input;
mod common;
mod idempotency;
mod round_trip;
mod untrusted;
