//! The judge prompts: the embedded folder, a loaded copy, edits and broken folders.

use std::path::Path;

use cxrlake_judge::{Criterion, Judge, JudgePrompts, Part, QaItem};

fn folder() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../../prompts/judge"))
}

/// Copies the prompts folder `from` (with its `batch/` subfolder) into `to`.
fn copy_folder(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for entry in std::fs::read_dir(from).expect("folder") {
        let path = entry.expect("entry").path();
        let target = to.join(path.file_name().expect("name"));
        if path.is_dir() {
            copy_folder(&path, &target);
        } else {
            std::fs::copy(&path, target).expect("copy");
        }
    }
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
    assert!(loaded.version().starts_with("2+"), "{}", loaded.version());
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
    copy_folder(folder(), dir.path());
    let relevance = dir.path().join("relevance.md");
    let text = std::fs::read_to_string(&relevance).expect("read");
    std::fs::write(&relevance, text.replace("redundant", "repetitive")).expect("write");
    let edited = JudgePrompts::load(dir.path()).expect("loads");
    let original = JudgePrompts::embedded();
    assert_ne!(edited.version(), original.version());
    let judges = [original, edited].map(|prompts| Judge::Llm {
        model: "m".into(),
        prompts: prompts.into(),
        batch: 1,
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
    copy_folder(folder(), dir.path());
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

#[test]
fn batched_prompts_show_the_report_once_and_number_the_items() {
    let prompts = JudgePrompts::embedded();
    let qa = item();
    let mut other = item();
    other.question = "Is there a pneumothorax?";
    let blocks: Vec<String> = [&qa, &other]
        .iter()
        .map(|item| prompts.render_item(Criterion::Entailment, item))
        .collect();
    assert_eq!(
        blocks[0],
        "Question: Is there any evidence of pleural effusion?\nAnswer (2 sentences to rate):\n\
         [01] Yes, there is evidence of pleural effusion.\n[02] Small left pleural effusion."
    );
    let refs: Vec<&str> = blocks.iter().map(String::as_str).collect();
    let report = qa.report.expect("report");
    let prompt = prompts.render_batch(Criterion::Entailment, report, &refs);
    assert_eq!(
        prompt
            .matches("FINDINGS: Small left pleural effusion.")
            .count(),
        1
    );
    assert!(
        prompt.contains("Item 1:\nQuestion: Is there any evidence"),
        "{prompt}"
    );
    assert!(prompt.contains("\n\nItem 2:\nQuestion: Is there a pneumothorax?"));
    assert!(prompt.contains("Item 1 to Item 2"), "{prompt}");
    assert!(
        prompt.contains("ALIGNED_INFERABLE"),
        "the paper's criteria text is kept"
    );
    // Clarity and relevance prompts carry no report.
    let clarity = prompts.render_batch(
        Criterion::QuestionClarity,
        report,
        &[&prompts.render_item(Criterion::QuestionClarity, &qa)],
    );
    assert!(!clarity.contains("FINDINGS"), "{clarity}");
    assert!(clarity.contains("Item 1:\nQuestion (to rate): Is there any evidence"));

    // A batched judge has its own id and content hashes; the single-item judge keeps its own.
    let [single, batched] = [1, 8].map(|batch| Judge::Llm {
        model: "m".into(),
        prompts: prompts.clone().into(),
        batch,
    });
    assert!(batched.id().ends_with("/batch-8"), "{}", batched.id());
    assert!(!single.id().contains("batch"));
    let [a, b] = [&single, &batched]
        .map(|judge| judge.request(&judge.cache_id(), Criterion::Relevance, &qa));
    assert_eq!(a.input, b.input, "the same item");
    assert_ne!(a.content_hash, b.content_hash, "not the same measurement");
    assert!(a.item.is_empty());
    assert_eq!(b.item, prompts.render_item(Criterion::Relevance, &qa));
}

#[test]
fn a_content_hash_is_the_documented_digest_so_stored_verdicts_stay_valid() {
    use sha2::{Digest, Sha256};
    let judge = Judge::Heuristic;
    let request = judge.request(&judge.cache_id(), Criterion::Relevance, &item());
    let digest = Sha256::digest(
        [
            judge.cache_id().as_bytes(),
            b"\0",
            b"relevance",
            b"\0",
            request.input.as_bytes(),
        ]
        .concat(),
    );
    assert_eq!(request.content_hash, hex::encode(&digest[..16]));
}
