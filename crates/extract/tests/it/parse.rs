//! The tolerant parsers of LLM outputs: the paper's listings verbatim, each tolerance, each
//! error, and no panic on garbage or truncated outputs.

use cxrlake_extract::parse::{indication, observations, repair_json, sentences};
use cxrlake_extract::{ExtractError, Indication, RawObservation, SectionType, Sentence};
use serde_json::json;

fn sentence(
    id: &str,
    section: &str,
    section_type: SectionType,
    text: &str,
    merge: &[&str],
) -> Sentence {
    Sentence {
        sent_id: id.to_string(),
        section: section.to_string(),
        section_type,
        sentence: text.to_string(),
        merge_with: merge.iter().map(|id| id.to_string()).collect(),
    }
}

fn ids_and_links(parsed: &[Sentence]) -> Vec<(String, Vec<String>)> {
    parsed
        .iter()
        .map(|s| (s.sent_id.clone(), s.merge_with.clone()))
        .collect()
}

fn is_parse_error(
    result: &Result<impl std::fmt::Debug, ExtractError>,
    expected_what: &str,
) -> bool {
    matches!(result, Err(ExtractError::Parse { what, .. }) if *what == expected_what)
}

/// Listing 2's output exactly as printed in the paper: `\_` escapes, trailing spaces and the
/// `↪` marks of wrapped lines.
const LISTING_2: &str = "[S01] FINAL\\_REPORT\\_NO\\_SECTION(EXAM\\_TECHNIQUE) - merge with []:  \n      \u{21aa} PORTABLE CHEST OF \\_\\_\\_\\_  \n[S02] COMPARISON(IGNORE) - merge with []: \\_\\_\\_\\_ radiograph.  \n[S03] FINDINGS(FINDINGS) - merge with []: No pleural effusion or  \n      \u{21aa} pneumothorax.";

/// Listing 4's output exactly as printed in the paper.
const LISTING_4: &str = r#"[
  {
    "name": "bibasilar atelectasis", "entity": "atelectasis",
    "probability": "positive", "change": null,
    "summary\_sentence": "Bibasilar atelectasis.",
    "change\_sentence": null,
    "regions": ["bibasilar"],
    "children": [
      {
        "child\_type": "regional\_distinction", "name": "left
          ↪ basilar atelectasis", "entity": "atelectasis",
        "probability": "positive", "change": null,
        "summary\_sentence": "Left more than right basilar
          ↪ atelectasis.",
        "change\_sentence": null,
        "regions": ["left basilar"]
      }
    ]
  }
]
"#;

/// Listing 6's output exactly as printed in the paper.
const LISTING_6: &str = r#"{
  "patient\_info": "female",
  "indication": "New onset ascites.",
  "evaluation": "Evaluate for infection.",
  "indication\_summary": "Female with new onset ascites; should be
    ↳ evaluated for infection.",
  "associated\_findings": ["S02"],
  "answer\_for\_indication": "Evaluation for infection is negative:
    ↳ There is no acute cardiopulmonary process."
}"#;

fn listing_4_expected() -> Vec<RawObservation> {
    vec![RawObservation {
        child_type: None,
        name: "bibasilar atelectasis".into(),
        entity: "atelectasis".into(),
        probability: Some("positive".into()),
        change: None,
        summary_sentence: "Bibasilar atelectasis.".into(),
        change_sentence: None,
        regions: vec!["bibasilar".into()],
        modifiers: vec![],
        children: vec![RawObservation {
            child_type: Some("regional_distinction".into()),
            name: "left basilar atelectasis".into(),
            entity: "atelectasis".into(),
            probability: Some("positive".into()),
            change: None,
            summary_sentence: "Left more than right basilar atelectasis.".into(),
            change_sentence: None,
            regions: vec!["left basilar".into()],
            modifiers: vec![],
            children: vec![],
        }],
    }]
}

// ---- sentences -------------------------------------------------------------------------------

#[test]
fn listing_2_parses_to_the_exact_sentences() {
    assert_eq!(
        sentences(LISTING_2),
        Ok(vec![
            sentence(
                "S01",
                "FINAL_REPORT_NO_SECTION",
                SectionType::ExamTechnique,
                "PORTABLE CHEST OF ____",
                &[]
            ),
            sentence(
                "S02",
                "COMPARISON",
                SectionType::Ignore,
                "____ radiograph.",
                &[]
            ),
            sentence(
                "S03",
                "FINDINGS",
                SectionType::Findings,
                "No pleural effusion or pneumothorax.",
                &[]
            ),
        ])
    );
}

#[test]
fn sentences_ignore_code_fences_and_prose_around() {
    let output = "Sure! Here are the sentences:\n\n```\n[S01] FINDINGS(FINDINGS) - merge with []: Heart size is normal.\n[S02] IMPRESSION(IMPRESSION) - merge with [S01]: Normal heart.\n```\n\nLet me know if you need anything else.";
    assert_eq!(
        sentences(output),
        Ok(vec![
            sentence(
                "S01",
                "FINDINGS",
                SectionType::Findings,
                "Heart size is normal.",
                &[]
            ),
            sentence(
                "S02",
                "IMPRESSION",
                SectionType::Impression,
                "Normal heart.",
                &["S01"]
            ),
        ])
    );
}

#[test]
fn trailing_prose_right_after_a_finished_sentence_is_not_appended() {
    let output = "[S01] FINDINGS(FINDINGS) - merge with []: Lungs are clear.\nI hope this helps.";
    let parsed = sentences(output).expect("parses");
    assert_eq!(parsed[0].sentence, "Lungs are clear.");
}

#[test]
fn continuation_lines_extend_the_previous_sentence() {
    let output = "[S01] FINDINGS(FINDINGS) - merge with []: There is a moderate\nright pleural effusion\n   with adjacent atelectasis.\n[S02] FINDINGS(FINDINGS) - merge with []: No pneumothorax.";
    let parsed = sentences(output).expect("parses");
    assert_eq!(
        parsed[0].sentence,
        "There is a moderate right pleural effusion with adjacent atelectasis."
    );
    assert_eq!(parsed[1].sentence, "No pneumothorax.");
}

#[test]
fn merge_link_variants_are_read() {
    let output = "\
[S01] FINDINGS(FINDINGS) - merge with []: A.
[S02] FINDINGS(FINDINGS) - merge with [S01]: B.
[S03] FINDINGS(FINDINGS)-merge with S01: C.
[S04] IMPRESSION(IMPRESSION) - merge with [S01, S03]: D.
[S05] IMPRESSION(IMPRESSION) - merge with none: E.
[S06] IMPRESSION (IMPRESSION) - Merge With [S2 and 5]:F.";
    let parsed = sentences(output).expect("parses");
    assert_eq!(
        ids_and_links(&parsed),
        vec![
            ("S01".into(), vec![]),
            ("S02".into(), vec!["S01".into()]),
            ("S03".into(), vec!["S01".into()]),
            ("S04".into(), vec!["S01".into(), "S03".into()]),
            ("S05".into(), vec![]),
            ("S06".into(), vec!["S02".into(), "S05".into()]),
        ]
    );
    assert_eq!(parsed[5].sentence, "F.");
    assert_eq!(parsed[5].section_type, SectionType::Impression);
}

#[test]
fn bracketed_ids_without_the_s_are_read() {
    // What Qwen2.5-Coder-0.5B answered in the llama.cpp smoke test (scripts/llm-smoke).
    let output = "\
[01] FINAL_REPORT_NO_SECTION(EXAMINATION) - merge with []: CHEST (PORTABLE AP)
[05] FINDINGS(FINDINGS) - merge with []: Large right effusion.
[06] IMPRESSION(IMPRESSION) - merge with [04, 05]: Large right pleural effusion.";
    let parsed = sentences(output).expect("parses");
    assert_eq!(
        ids_and_links(&parsed),
        vec![
            ("S01".into(), vec![]),
            ("S05".into(), vec![]),
            ("S06".into(), vec!["S05".into()]),
        ]
    );
    assert_eq!(parsed[0].section_type, SectionType::ExamTechnique);
    // Without brackets the `S` is still required, so prose with numbers is not a sentence.
    assert!(is_parse_error(&sentences("01] text"), "sentences"));
}

#[test]
fn unknown_type_falls_back_to_the_section_name_then_ignore() {
    let output = "\
[S01] REASON FOR EXAM(HISTORY) - merge with []: Cough.
[S02] IMPRESSIONS(CONCLUSION) - merge with []: No pneumonia.
[S03] WET_READ_VERSION#2(OTHER) - merge with []: Clear lungs.
[S04] ADDENDUM(OTHER) - merge with []: Called Dr. ___.
[S05] FINDINGS - merge with []: No effusion.";
    let parsed = sentences(output).expect("parses");
    let types: Vec<(String, SectionType)> = parsed
        .iter()
        .map(|s| (s.section.clone(), s.section_type))
        .collect();
    assert_eq!(
        types,
        vec![
            ("REASON_FOR_EXAM".into(), SectionType::Indication),
            ("IMPRESSIONS".into(), SectionType::Impression),
            ("WET_READ_VERSION#2".into(), SectionType::PreFinalReport),
            ("ADDENDUM".into(), SectionType::Ignore),
            ("FINDINGS".into(), SectionType::Findings),
        ]
    );
    assert_eq!(parsed[3].sentence, "Called Dr. ___.");
}

#[test]
fn a_line_without_header_is_kept_as_unknown_ignore() {
    let parsed = sentences("[S01] The lungs are clear.").expect("parses");
    assert_eq!(
        parsed,
        vec![sentence(
            "S01",
            "UNKNOWN",
            SectionType::Ignore,
            "The lungs are clear.",
            &[]
        )]
    );
}

#[test]
fn well_formed_unique_ids_are_kept_even_with_gaps() {
    let output = "[S1] FINDINGS(FINDINGS) - merge with []: A.\n[S3] FINDINGS(FINDINGS) - merge with [S1]: B.\n- [S10] IMPRESSION(IMPRESSION) - merge with [S3]: C.";
    let parsed = sentences(output).expect("parses");
    assert_eq!(
        ids_and_links(&parsed),
        vec![
            ("S01".into(), vec![]),
            ("S03".into(), vec!["S01".into()]),
            ("S10".into(), vec!["S03".into()])
        ]
    );
}

#[test]
fn duplicate_or_unordered_ids_are_renumbered_and_links_remapped() {
    let output = "\
[S01] FINDINGS(FINDINGS) - merge with []: A.
[S02] FINDINGS(FINDINGS) - merge with []: B.
[S02] FINDINGS(FINDINGS) - merge with []: C.
[S03] IMPRESSION(IMPRESSION) - merge with [S02, S09]: D.";
    let parsed = sentences(output).expect("parses");
    assert_eq!(
        ids_and_links(&parsed),
        vec![
            ("S01".into(), vec![]),
            ("S02".into(), vec![]),
            ("S03".into(), vec![]),
            ("S04".into(), vec!["S03".into()]),
        ]
    );
}

#[test]
fn forward_and_self_links_become_backward_links() {
    let output = "[S01] FINDINGS(FINDINGS) - merge with [S01, S02]: A.\n[S02] IMPRESSION(IMPRESSION) - merge with []: B.";
    let parsed = sentences(output).expect("parses");
    assert_eq!(
        ids_and_links(&parsed),
        vec![("S01".into(), vec![]), ("S02".into(), vec!["S01".into()])]
    );
}

#[test]
fn sentences_with_empty_text_are_dropped() {
    let output =
        "[S01] FINDINGS(FINDINGS) - merge with []: A.\n[S02] FINDINGS(FINDINGS) - merge wi";
    let parsed = sentences(output).expect("parses");
    assert_eq!(parsed.len(), 1);
}

#[test]
fn sentences_error_without_any_sentence_line() {
    assert!(is_parse_error(&sentences(""), "sentences"));
    assert!(is_parse_error(
        &sentences("I cannot help with that request."),
        "sentences"
    ));
    assert!(is_parse_error(
        &sentences("[S01] FINDINGS(FINDINGS) - merge with []:"),
        "sentences"
    ));
}

// ---- JSON repair -----------------------------------------------------------------------------

#[test]
fn repair_reads_fenced_json_after_prose_with_brackets() {
    let text = "Here is the output [as requested]:\n```json\n[{\"a\": 1}]\n```\nDone {really}.";
    assert_eq!(repair_json(text), Ok(json!([{"a": 1}])));
    assert_eq!(
        repair_json("The list [as requested]: [1, 2]"),
        Ok(json!([1, 2]))
    );
}

#[test]
fn repair_fixes_commas_quotes_and_literals() {
    assert_eq!(repair_json("[1, 2,, 3,]"), Ok(json!([1, 2, 3])));
    assert_eq!(
        repair_json("{\"a\": 1 \"b\": 2,}"),
        Ok(json!({"a": 1, "b": 2}))
    );
    assert_eq!(
        repair_json("{'a': 'it's fine', 'b': None, 'c': True}"),
        Ok(json!({"a": "it's fine", "b": null, "c": true}))
    );
    assert_eq!(
        repair_json(r#"{"s": "the "bat wing" pattern"}"#),
        Ok(json!({"s": "the \"bat wing\" pattern"}))
    );
}

#[test]
fn repair_closes_truncated_values() {
    assert_eq!(repair_json(r#"[{"a": "tex"#), Ok(json!([{"a": "tex"}])));
    assert_eq!(
        repair_json(r#"[{"a": 1}, {"b": [1, 2"#),
        Ok(json!([{"a": 1}, {"b": [1, 2]}]))
    );
    assert_eq!(repair_json(r#"{"a": 1, "b""#), Ok(json!({"a": 1})));
    assert_eq!(
        repair_json(r#"{"a": 1, "b": tr"#),
        Ok(json!({"a": 1, "b": null}))
    );
}

#[test]
fn repair_errors() {
    assert!(repair_json("no json here").is_err());
    assert!(repair_json("[not json]").is_err());
    assert!(
        repair_json(&"[".repeat(10_000)).is_err(),
        "deep nesting is an error, not a stack overflow"
    );
}

// ---- observations ----------------------------------------------------------------------------

#[test]
fn listing_4_parses_to_the_exact_observations() {
    assert_eq!(observations(LISTING_4), Ok(listing_4_expected()));
}

#[test]
fn observations_in_a_fence_after_prose_with_a_single_object() {
    let output = "Output JSON-List:\n```json\n{\"name\": \"small left pleural effusion\", \"entity\": \"pleural effusion\", \"probability\": \"positive\", \"summary_sentence\": \"Small left pleural effusion.\", \"regions\": \"left\", \"modifiers\": [\"small\"]}\n```";
    let parsed = observations(output).expect("parses");
    assert_eq!(parsed.len(), 1);
    assert_eq!(parsed[0].regions, vec!["left".to_string()]);
    assert_eq!(parsed[0].modifiers, vec!["small".to_string()]);
    assert_eq!(parsed[0].change, None);
    assert!(parsed[0].children.is_empty());
}

#[test]
fn observations_tolerate_python_literals_and_trailing_commas() {
    let output = "[{'name': 'no pneumothorax', 'entity': 'pneumothorax', 'probability': 'negative', 'change': None, 'summary_sentence': 'No pneumothorax.', 'change_sentence': None, 'regions': [],},]";
    let parsed = observations(output).expect("parses");
    assert_eq!(parsed[0].probability.as_deref(), Some("negative"));
    assert_eq!(parsed[0].change_sentence, None);
}

#[test]
fn truncated_observations_keep_the_complete_items() {
    let cut = &LISTING_4[..LISTING_4.find("\"regions\": [\"left").expect("in listing")];
    let parsed = observations(cut).expect("parses");
    assert_eq!(parsed[0].name, "bibasilar atelectasis");
    assert_eq!(
        parsed[0].children[0].summary_sentence,
        "Left more than right basilar atelectasis."
    );
    assert!(parsed[0].children[0].regions.is_empty());
}

#[test]
fn items_without_name_and_entity_are_dropped_and_the_other_is_copied() {
    let output =
        r#"[{"probability": "positive"}, {"entity": "cardiomegaly"}, {"name": "mild edema"}]"#;
    let parsed = observations(output).expect("parses");
    let names: Vec<(&str, &str)> = parsed
        .iter()
        .map(|o| (o.name.as_str(), o.entity.as_str()))
        .collect();
    assert_eq!(
        names,
        vec![
            ("cardiomegaly", "cardiomegaly"),
            ("mild edema", "mild edema")
        ]
    );
}

#[test]
fn wrapped_lists_and_grandchildren_are_flattened() {
    let output = r#"{"observations": [{"name": "tube", "entity": "tube", "children": {"child_type": "device part", "name": "tip", "entity": "tube", "children": [{"child_type": "recommendation", "name": "withdraw", "entity": "tube"}]}}]}"#;
    let parsed = observations(output).expect("parses");
    let children: Vec<(Option<&str>, &str)> = parsed[0]
        .children
        .iter()
        .map(|c| (c.child_type.as_deref(), c.name.as_str()))
        .collect();
    assert_eq!(
        children,
        vec![
            (Some("device_part"), "tip"),
            (Some("recommendation"), "withdraw")
        ]
    );
    assert!(parsed[0].children.iter().all(|c| c.children.is_empty()));
}

#[test]
fn an_empty_list_is_no_observation_and_junk_is_an_error() {
    assert_eq!(observations("[]"), Ok(vec![]));
    assert!(is_parse_error(
        &observations("There are no findings."),
        "observations"
    ));
    assert!(is_parse_error(
        &observations(r#"[{"probability": "positive"}, 3]"#),
        "observations"
    ));
}

// ---- indication ------------------------------------------------------------------------------

#[test]
fn listing_6_parses_to_the_exact_indication() {
    assert_eq!(
        indication(LISTING_6),
        Ok(Indication {
            patient_info: Some("female".into()),
            indication: Some("New onset ascites.".into()),
            evaluation: Some("Evaluate for infection.".into()),
            indication_summary: Some(
                "Female with new onset ascites; should be evaluated for infection.".into()
            ),
            associated_findings: vec!["S02".into()],
            answer_for_indication: Some(
                "Evaluation for infection is negative: There is no acute cardiopulmonary process."
                    .into()
            ),
        })
    );
}

#[test]
fn associated_findings_are_normalised() {
    let output = r#"Output: {"indication": "Cough.", "associated_findings": ["5", "S5", "[S07]", 12, "S03, S04", "[S08] measures 4 cm"]}"#;
    let parsed = indication(output).expect("parses");
    assert_eq!(
        parsed.associated_findings,
        vec!["S05", "S07", "S12", "S03", "S04", "S08"]
    );
    assert_eq!(parsed.patient_info, None);
    assert_eq!(parsed.associated_findings.len(), 6);
}

#[test]
fn indication_errors_without_a_known_field() {
    assert!(is_parse_error(&indication("no JSON"), "indication"));
    assert!(is_parse_error(
        &indication(r#"{"foo": "bar"}"#),
        "indication"
    ));
}

// ---- never panic -----------------------------------------------------------------------------

/// A small deterministic generator (xorshift), so the garbage is the same on every run.
struct Garbage(u64);

impl Garbage {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn string(&mut self, alphabet: &[&str]) -> String {
        let len = self.next() % 60;
        (0..len)
            .map(|_| alphabet[(self.next() % alphabet.len() as u64) as usize])
            .collect()
    }
}

fn run_all(text: &str) {
    let _ = sentences(text);
    let _ = observations(text);
    let _ = indication(text);
    let _ = repair_json(text);
}

#[test]
fn no_panic_on_any_truncation_of_valid_outputs() {
    let outputs = [
        LISTING_2,
        LISTING_4,
        LISTING_6,
        include_str!("../../../../prompts/observations.fewshot.md"),
    ];
    for output in outputs {
        let bytes = output.as_bytes();
        for at in 0..=bytes.len() {
            run_all(&String::from_utf8_lossy(&bytes[..at]));
            run_all(&String::from_utf8_lossy(&bytes[at..]));
        }
    }
}

#[test]
fn no_panic_on_generated_garbage() {
    let alphabet = [
        "[",
        "]",
        "{",
        "}",
        "\"",
        "'",
        ",",
        ":",
        "\\",
        "\\u",
        "\\ud83d",
        "\n",
        " ",
        "S",
        "S01",
        "[S01]",
        "(",
        ")",
        "-",
        "merge with",
        "null",
        "None",
        "tru",
        "1",
        "-.e",
        "é",
        "↪",
        "```",
        "name",
        "entity",
        "children",
        "FINDINGS",
        "\"name\":",
        "\"children\": [",
        "\u{0}",
        "💥",
    ];
    let mut garbage = Garbage(0x9E37_79B9_7F4A_7C15);
    for _ in 0..20_000 {
        run_all(&garbage.string(&alphabet));
    }
    for text in [
        "[",
        "{",
        "\"",
        "[S",
        "[S1",
        "[S01]",
        "{\"a\"",
        "\\",
        "[\"\\u12",
        "```",
        "```json\n",
        "[S99999999999] X(Y): z",
    ] {
        run_all(text);
    }
}
