mod commands;
mod import;
mod interop;
mod release;

/// Runs the built `cxrlake` binary on the lake at `lake` with `args`, as a user would.
pub(crate) fn cxrlake(lake: &std::path::Path, args: &[&str]) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_cxrlake"))
        .arg("--lake")
        .arg(lake)
        .args(args)
        .env_remove("CXRLAKE_LAKE")
        .env_remove("CXRLAKE_CONFIG")
        .output()
        .expect("run cxrlake")
}

/// Runs `tests/python/<script>` with `args` and asserts that it succeeds and prints `ok`; the
/// script needs the Python packages that the README's test command installs.
pub(crate) fn python_check(script: &str, args: &[&std::ffi::OsStr], ok: &str) {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/python")
        .join(script);
    let output = std::process::Command::new("python3")
        .arg(&path)
        .args(args)
        .output()
        .expect("python3 must be installed");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{script} failed (run the README's test command to install duckdb/pyarrow/pandas/deltalake):\n{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        stdout.contains(ok),
        "{script} did not print {ok:?}:\n{stdout}"
    );
}
