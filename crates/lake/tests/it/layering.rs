//! The lake is storage only: its dependency tree (normal, build and dev edges) holds no SQL
//! function, LLM, ONNX, template or stage crate, so a domain edit (the QA engine, the mapping
//! rules) never rebuilds it, and it links none of them.

use std::process::Command;

#[test]
fn the_lake_depends_on_no_function_llm_onnx_template_or_stage_crate() {
    let workspace = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let output = Command::new(env!("CARGO"))
        .current_dir(&workspace)
        .args([
            "tree",
            "-p",
            "cxrlake-lake",
            "--edges",
            "normal,build,dev",
            "--prefix",
            "none",
            "--offline",
            "--locked",
        ])
        .output()
        .expect("cargo tree");
    assert!(
        output.status.success(),
        "cargo tree failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let tree = String::from_utf8_lossy(&output.stdout);
    let crates: Vec<&str> = tree
        .lines()
        .filter_map(|line| line.split_whitespace().next())
        .collect();
    assert!(crates.contains(&"cxrlake-lake") && crates.contains(&"deltalake"));
    for forbidden in [
        "cxrlake-udfs",
        "cxrlake-llm",
        "cxrlake-embed",
        "cxrlake-templates",
        "cxrlake-extract",
        "cxrlake-judge",
        "cxrlake-map",
        "cxrlake-graph",
        "cxrlake-localize",
        "cxrlake-qa",
        "cxrlake-grade",
        "cxrlake-pipeline",
        "ort",
        "tokenizers",
    ] {
        assert!(
            !crates.contains(&forbidden),
            "cxrlake-lake depends on {forbidden}:\n{tree}"
        );
    }
}
