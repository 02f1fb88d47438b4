//! The prompt templates: rendering, loading from a directory, versioning, and the few-shot
//! examples parsing with our own parsers.

use std::path::{Path, PathBuf};

use cxrlake_extract::ExtractError;
use cxrlake_extract::parse::{indication, observations, sentences};
use cxrlake_extract::prompts::Prompts;

const FILES: [&str; 8] = [
    "prompts.toml",
    "sentences.md",
    "sentences.fewshot.md",
    "observations.md",
    "observations.guidelines.md",
    "observations.fewshot.md",
    "indication.md",
    "indication.fewshot.md",
];

const PLACEHOLDERS: [&str; 6] = [
    "<FEWSHOT>",
    "<GUIDE>",
    "<REPORT>",
    "<SENT>",
    "<IND>",
    "<FIND>",
];

fn repo_prompts() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../prompts")
}

fn read_repo(file: &str) -> String {
    std::fs::read_to_string(repo_prompts().join(file)).expect("repository prompt file")
}

/// A fresh copy of the repository's prompts folder in a unique temporary directory.
struct TempPrompts(PathBuf);

impl TempPrompts {
    fn new(test: &str) -> TempPrompts {
        let dir =
            std::env::temp_dir().join(format!("cxrlake-prompts-{test}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("temp dir");
        for file in FILES {
            std::fs::copy(repo_prompts().join(file), dir.join(file)).expect("copy prompt file");
        }
        TempPrompts(dir)
    }

    fn write(&self, file: &str, text: &str) {
        std::fs::write(self.0.join(file), text).expect("write prompt file");
    }
}

impl Drop for TempPrompts {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn prompt_error_file(result: Result<Prompts, ExtractError>) -> String {
    match result {
        Err(ExtractError::Prompt { file, .. }) => file,
        other => panic!("expected a prompt error, got {other:?}"),
    }
}

#[test]
fn embedded_prompts_render_with_every_placeholder_substituted() {
    let prompts = Prompts::embedded();
    let rendered = [
        prompts.sentences("FINDINGS: No pleural effusion."),
        prompts.observations(&["No pleural effusion.", "No pneumothorax."]),
        prompts.indication(
            "___F with cough // eval for pneumonia",
            &[("S03", "Lungs are clear."), ("S04", "No pneumonia.")],
        ),
    ];
    for text in &rendered {
        for placeholder in PLACEHOLDERS {
            assert!(
                !text.contains(placeholder),
                "{placeholder} left in:\n{text}"
            );
        }
    }
    assert!(rendered[0].contains(
        "--- START OF REPORT ---\nFINDINGS: No pleural effusion.\n--- END OF REPORT ---"
    ));
    assert!(rendered[0].contains("***Example 1: Output***"));
    assert!(
        rendered[1]
            .contains("Sentence(s): No pleural effusion. No pneumothorax.\nOutput JSON-List:")
    );
    assert!(
        rendered[1].contains("\"regional_distinction\""),
        "guidelines inserted"
    );
    assert!(rendered[2].contains("INDICATION: ___F with cough // eval for pneumonia\nFINDINGS:\n[S03] Lungs are clear.\n[S04] No pneumonia.\n"));
    assert!(rendered[2].ends_with("**Output JSON:**"));
}

#[test]
fn inserted_text_is_not_searched_for_placeholders() {
    let prompts = Prompts::embedded();
    let rendered = prompts.sentences("Report mentioning <FEWSHOT> and <REPORT>.");
    assert!(rendered.contains(
        "--- START OF REPORT ---\nReport mentioning <FEWSHOT> and <REPORT>.\n--- END OF REPORT ---"
    ));
    assert_eq!(rendered.matches("***Example 1: Output***").count(), 1);
}

#[test]
fn loading_the_repository_folder_equals_the_embedded_prompts() {
    let loaded = Prompts::load(&repo_prompts()).expect("loads");
    let embedded = Prompts::embedded();
    assert_eq!(loaded.version(), embedded.version());
    assert_eq!(loaded.sentences("X"), embedded.sentences("X"));
    let (declared, hash) = embedded.version().split_once('+').expect("version+hash");
    assert_eq!(declared, "1");
    assert_eq!(hash.len(), 12);
    assert!(hash.chars().all(|c| c.is_ascii_hexdigit()));
}

#[test]
fn loaded_prompts_use_the_edited_files_and_change_the_version() {
    let dir = TempPrompts::new("edit");
    let before = Prompts::load(&dir.0).expect("loads").version().to_string();
    dir.write("sentences.md", "Split: <REPORT>\nExamples: <FEWSHOT>\n");
    let edited = Prompts::load(&dir.0).expect("loads");
    assert_ne!(
        edited.version(),
        before,
        "an edited file changes the version without a bump"
    );
    assert!(edited.version().starts_with("1+"));
    assert!(
        edited
            .sentences("R")
            .starts_with("Split: R\nExamples: ***Example 1: Report***")
    );
    dir.write("prompts.toml", "version = \"2\"\n");
    assert!(
        Prompts::load(&dir.0)
            .expect("loads")
            .version()
            .starts_with("2+")
    );
}

#[test]
fn a_missing_file_or_placeholder_names_the_file() {
    let dir = TempPrompts::new("broken");
    dir.write(
        "observations.md",
        "Sentences: <SENT>\nExamples: <FEWSHOT>\n",
    );
    assert_eq!(prompt_error_file(Prompts::load(&dir.0)), "observations.md");
    dir.write("observations.md", &read_repo("observations.md"));
    dir.write("indication.md", "<FEWSHOT> <IND>");
    assert_eq!(prompt_error_file(Prompts::load(&dir.0)), "indication.md");
    dir.write("indication.md", &read_repo("indication.md"));
    dir.write("prompts.toml", "# no version\n");
    assert_eq!(prompt_error_file(Prompts::load(&dir.0)), "prompts.toml");
    dir.write("prompts.toml", &read_repo("prompts.toml"));
    std::fs::remove_file(dir.0.join("sentences.fewshot.md")).expect("remove");
    let error = Prompts::load(&dir.0).expect_err("missing file");
    assert!(
        error.to_string().contains("sentences.fewshot.md"),
        "{error}"
    );
    assert_eq!(
        prompt_error_file(Prompts::load(&dir.0)),
        "sentences.fewshot.md"
    );
}

/// The text after each `marker` line up to the next line starting with `next`.
fn example_outputs(text: &str, marker: fn(&str) -> bool, next: &str) -> Vec<String> {
    let mut outputs = Vec::new();
    let mut current: Option<Vec<&str>> = None;
    for line in text.lines() {
        if line.starts_with(next) {
            outputs.extend(current.take().map(|lines| lines.join("\n")));
        }
        if marker(line) {
            outputs.extend(current.take().map(|lines| lines.join("\n")));
            current = Some(Vec::new());
        } else if let Some(lines) = current.as_mut() {
            lines.push(line);
        }
    }
    outputs.extend(current.map(|lines| lines.join("\n")));
    outputs
}

#[test]
fn sentence_examples_parse_with_sequential_ids_and_backward_links() {
    let outputs = example_outputs(
        &read_repo("sentences.fewshot.md"),
        |l| l.ends_with(": Output***"),
        "***Example",
    );
    assert_eq!(outputs.len(), 3);
    for output in outputs {
        let parsed = sentences(&output).expect("example parses");
        assert_eq!(
            parsed.len(),
            output.lines().filter(|l| l.starts_with("[S")).count()
        );
        for (index, sentence) in parsed.iter().enumerate() {
            assert_eq!(sentence.sent_id, format!("S{:02}", index + 1));
            assert_ne!(sentence.section, "UNKNOWN", "{output}");
            assert!(sentence.merge_with.iter().all(|id| id < &sentence.sent_id));
        }
    }
}

#[test]
fn observation_examples_parse_with_the_documented_vocabulary() {
    let outputs = example_outputs(
        &read_repo("observations.fewshot.md"),
        |l| l == "Output JSON-List:",
        "Sentence(s):",
    );
    assert_eq!(outputs.len(), 4);
    let probabilities = [
        "positive",
        "negative",
        "probable",
        "possible",
        "unlikely",
        "comparison only",
        "recommendation",
    ];
    let child_types = [
        "regional_distinction",
        "related_region",
        "associated_with",
        "device_part",
        "recommendation",
        "comparison_only",
    ];
    let mut negatives = 0;
    for output in outputs {
        let parsed = observations(&output).expect("example parses");
        let value: serde_json::Value =
            serde_json::from_str(&output).expect("examples are strict JSON");
        assert_eq!(value.as_array().map(Vec::len), Some(parsed.len()));
        for observation in &parsed {
            assert!(observation.child_type.is_none());
            negatives += usize::from(observation.probability.as_deref() == Some("negative"));
            for node in std::iter::once(observation).chain(&observation.children) {
                assert!(
                    !node.name.is_empty()
                        && !node.entity.is_empty()
                        && !node.summary_sentence.is_empty()
                );
                assert!(
                    probabilities.contains(&node.probability.as_deref().unwrap_or("")),
                    "{node:?}"
                );
                assert_eq!(
                    node.change.is_some(),
                    node.change_sentence.is_some(),
                    "{node:?}"
                );
            }
            for child in &observation.children {
                assert!(
                    child_types.contains(&child.child_type.as_deref().unwrap_or("")),
                    "{child:?}"
                );
            }
        }
    }
    assert_eq!(
        negatives, 2,
        "the coordinated negative example gives two observations"
    );
}

#[test]
fn indication_examples_parse_and_point_at_listed_sentences() {
    let text = read_repo("indication.fewshot.md");
    let outputs = example_outputs(&text, |l| l == "**Output JSON:**", "**Input:**");
    assert_eq!(outputs.len(), 3);
    for output in outputs {
        let parsed = indication(&output).expect("example parses");
        serde_json::from_str::<serde_json::Value>(&output).expect("examples are strict JSON");
        assert!(parsed.indication_summary.is_some() && parsed.answer_for_indication.is_some());
        assert!(!parsed.associated_findings.is_empty());
        for id in &parsed.associated_findings {
            assert!(
                text.contains(&format!("[{id}] ")),
                "{id} is listed in the example input"
            );
        }
    }
}
