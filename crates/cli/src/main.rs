//! The `cxrlake` binary: parse the command line, run, report errors in one line.

/// jemalloc: stages build and drop millions of small nested values (QA answer parts) on many
/// threads, and its RSS stays bounded where they are freed on other threads than their own
/// (the workspace's Cargo.toml gives the measurements).
#[cfg(feature = "jemalloc")]
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

fn main() -> std::process::ExitCode {
    cxrlake::cli::main()
}
