//! Runs a Python snippet that prints JSON, for comparisons with reference implementations.

use std::io::Write;
use std::process::{Command, Stdio};

/// Runs `script` with `python3`, feeding `input` (JSON) on stdin, and parses its stdout as JSON.
/// Panics with the script's stderr when it fails: the reference packages come from
/// `tests/python/requirements.txt`, which `./scripts/test` installs.
pub fn run(script: &str, input: &serde_json::Value) -> serde_json::Value {
    let mut child = Command::new("python3")
        .arg("-c")
        .arg(script)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("python3 runs");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(input.to_string().as_bytes())
        .expect("write stdin");
    let output = child.wait_with_output().expect("python3 finishes");
    assert!(
        output.status.success(),
        "python3 failed (install tests/python/requirements.txt):\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).expect("python3 printed JSON")
}
