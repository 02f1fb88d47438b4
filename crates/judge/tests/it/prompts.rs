//! The judge prompts: the embedded folder, a loaded copy, edits and broken folders.

use std::path::Path;

use cxrlake_judge::{Criterion, Judge, JudgePrompts, Part, QaItem};

fn folder() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../../prompts/judge"))
}

fn item() -> QaItem<'static> {
    QaItem {
        strategy: "finding",
        question: "Is there any evidence of pleural effusion?",
        parts: vec![
            Part {
                answer_type: "main_answer",
                text: "Yes, there is evidence of pleural effusion.",
                from_report: false,
                positiveness: Some("pos"),
                grounded: true,
            },
            Part {
                answer_type: "details",
                text: "Small left pleural effusion.",
                from_report: true,
                positiveness: Some("pos"),
                grounded: true,
            },
        ],
        report: Some("FINDINGS: Small left pleural effusion. <QUEST>"),
    }
}

#[test]
fn the_folder_is_the_embedded_version() {
    let loaded = JudgePrompts::load(folder()).expect("loads");
    assert_eq!(loaded, JudgePrompts::embedded());
    assert!(loaded.version().starts_with("1+"), "{}", loaded.version());
}

#[test]
fn prompts_carry_the_inputs_of_their_criterion() {
    let prompts = JudgePrompts::embedded();
    let qa = item();
    let entailment = prompts.render(Criterion::Entailment, &qa);
    assert!(entailment.contains("--- START OF REPORT ---\nFINDINGS: Small left pleural effusion. <QUEST>\n--- END OF REPORT ---"));
    assert!(entailment.contains("Answer (2 sentences to rate):\n[01] Yes, there is evidence of pleural effusion.\n[02] Small left pleural effusion.\n"));
    assert!(
        entailment
            .trim_end()
            .ends_with("Rating (provide 2 ratings):")
    );
    let clarity = prompts.render(Criterion::QuestionClarity, &qa);
    assert!(clarity.contains("Question (to rate): Is there any evidence of pleural effusion?"));
    assert!(
        !clarity.contains("FINDINGS"),
        "question clarity reads the question only"
    );
    let answers = prompts.render(Criterion::AnswerClarity, &qa);
    assert!(
        !answers.contains("Is there any evidence"),
        "answer clarity reads the answer only"
    );
    let completeness = prompts.render(Criterion::Completeness, &qa);
    assert!(completeness.contains("Answer (to rate):\nYes, there is evidence of pleural effusion.\nSmall left pleural effusion.\n"));
}

#[test]
fn an_edited_prompt_changes_the_version_and_its_criterion_hashes_only() {
    let dir = tempfile::tempdir().expect("tempdir");
    for entry in std::fs::read_dir(folder()).expect("folder") {
        let path = entry.expect("entry").path();
        std::fs::copy(&path, dir.path().join(path.file_name().expect("name"))).expect("copy");
    }
    let relevance = dir.path().join("relevance.md");
    let text = std::fs::read_to_string(&relevance).expect("read");
    std::fs::write(&relevance, text.replace("redundant", "repetitive")).expect("write");
    let edited = JudgePrompts::load(dir.path()).expect("loads");
    let original = JudgePrompts::embedded();
    assert_ne!(edited.version(), original.version());
    let judges = [original, edited].map(|prompts| Judge::Llm {
        model: "m".into(),
        prompts: prompts.into(),
    });
    assert_ne!(
        judges[0].id(),
        judges[1].id(),
        "the judge id names the prompts"
    );
    let qa = item();
    let hashes = |criterion| -> Vec<String> {
        judges
            .iter()
            .map(|judge| {
                judge
                    .request(&judge.cache_id(), criterion, &qa)
                    .content_hash
            })
            .collect()
    };
    let relevance = hashes(Criterion::Relevance);
    assert_ne!(
        relevance[0], relevance[1],
        "the edited criterion is judged again"
    );
    let clarity = hashes(Criterion::QuestionClarity);
    assert_eq!(
        clarity[0], clarity[1],
        "the other criteria keep their verdicts"
    );
}

#[test]
fn broken_folders_name_the_file() {
    let dir = tempfile::tempdir().expect("tempdir");
    for entry in std::fs::read_dir(folder()).expect("folder") {
        let path = entry.expect("entry").path();
        std::fs::copy(&path, dir.path().join(path.file_name().expect("name"))).expect("copy");
    }
    let entailment = dir.path().join("entailment.md");
    let text = std::fs::read_to_string(&entailment).expect("read");
    std::fs::write(&entailment, text.replace("<REPORT>", "the report")).expect("write");
    let error = JudgePrompts::load(dir.path())
        .expect_err("missing placeholder")
        .to_string();
    assert!(
        error.starts_with("entailment.md:") && error.contains("<REPORT>"),
        "{error}"
    );
    std::fs::remove_file(dir.path().join("judge.toml")).expect("remove");
    let error = JudgePrompts::load(dir.path())
        .expect_err("missing file")
        .to_string();
    assert!(error.contains("judge.toml"), "{error}");
}
