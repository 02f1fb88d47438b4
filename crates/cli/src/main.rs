//! The `cxrlake` binary: parse the command line, run, report errors in one line.

fn main() -> std::process::ExitCode {
    cxrlake::cli::main()
}
