//! Integration tests of `cxrlake-llm` against a scripted HTTP server on loopback.

mod batches;
mod faults;
mod server;
