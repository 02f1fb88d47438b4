//! Integration tests of cxrlake-refdefs (one binary; see STYLE.md).

mod common;
mod context;
mod diagnostics;
mod diff_and_hashes;
mod shipped;
mod tables;
