mod commands;
mod concurrency;
pub(crate) mod distributed;
mod flavours;
mod guide;
mod import;
mod interop;
mod kill_matrix;
mod release;
mod report;
mod s3;
mod snapshot;

/// The built `cxrlake` binary as a command, without the caller's choice of lake, config file
/// and engine (`CXRLAKE_LAKE`, `CXRLAKE_CONFIG`, `CXRLAKE_ENGINE`).
pub(crate) fn command() -> std::process::Command {
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_cxrlake"));
    command
        .env_remove("CXRLAKE_LAKE")
        .env_remove("CXRLAKE_CONFIG")
        .env_remove("CXRLAKE_ENGINE");
    command
}

/// Runs the built `cxrlake` binary on the lake at `lake` with `args`, as a user would.
pub(crate) fn cxrlake(lake: &std::path::Path, args: &[&str]) -> std::process::Output {
    command()
        .arg("--lake")
        .arg(lake)
        .args(args)
        .output()
        .expect("run cxrlake")
}

/// Copies the folder `from` to `to`, recursively (a lake: Delta logs, data files, `_cxrlake`).
pub(crate) fn copy_dir(from: &std::path::Path, to: &std::path::Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for entry in std::fs::read_dir(from).unwrap_or_else(|e| panic!("{}: {e}", from.display())) {
        let entry = entry.expect("dir entry");
        let target = to.join(entry.file_name());
        if entry.file_type().expect("file type").is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).expect("copy");
        }
    }
}

/// The single number `SELECT count(*) …` gives, through `run` (`cxrlake` on some lake).
pub(crate) fn count_by(run: &dyn Fn(&[&str]) -> std::process::Output, sql: &str) -> u64 {
    let out = ok(run(&["sql", sql, "--format", "csv"]));
    out.lines()
        .nth(1)
        .and_then(|line| line.trim().parse().ok())
        .unwrap_or_else(|| panic!("{sql}: {out}"))
}

/// The stdout of a `cxrlake` run that must succeed (else the test fails with both streams).
pub(crate) fn ok(output: std::process::Output) -> String {
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    stdout
}

/// A lake at `<dir>/lake` with a synthetic corpus of `studies` studies (at `<dir>/corpus`)
/// ingested: `init`, `synth`, `ingest`.
pub(crate) fn ingested_lake(dir: &std::path::Path, studies: u32, seed: u32) -> std::path::PathBuf {
    let lake = dir.join("lake");
    let corpus = dir.join("corpus");
    let corpus_arg = corpus.to_str().expect("utf8");
    let (studies, seed) = (studies.to_string(), seed.to_string());
    ok(cxrlake(&lake, &["init"]));
    ok(cxrlake(
        &lake,
        &[
            "synth",
            "--studies",
            &studies,
            "--seed",
            &seed,
            "--out",
            corpus_arg,
        ],
    ));
    ok(cxrlake(&lake, &["ingest", corpus_arg]));
    lake
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
