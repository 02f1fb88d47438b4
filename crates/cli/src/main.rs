//! The `cxrlake` binary: parse the command line, run, report errors in one line.

/// mimalloc: stages build and drop millions of small nested values (QA answer parts).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    cxrlake::cli::main()
}
