//! LLM answers: the tolerant JSON reader of the generation operator (`parse_json`,
//! `repair_json`) with the JSON-schema validator, and the three parsers of extraction's LLM
//! outputs (sentence lines, observations, indication).

use cxrlake_extract::parse;
use cxrlake_fuzz::{Outcome, Target, check};
use cxrlake_generate::{check_schema, parse_json, repair_json, validate};
use serde_json::Value;

/// Tokens of LLM answers.
const DICTIONARY: &[&str] = &[
    "```json\n",
    "```\n",
    "\"questions\": ",
    "\"question_type\": \"open-ended\"",
    "\"choices\": []",
    "\"regions\": [",
    "\"name\": ",
    "\"entity\": ",
    "\"probability\": \"positive\"",
    "\"children\": [",
    "\"child_type\": \"regional_distinction\"",
    "\"associated_findings\": [\"S01\"]",
    "\"answer_for_indication\": ",
    "\"summary\\_sentence\": ",
    "[S01] ",
    "[S99] FINDINGS(FINDINGS) - merge with [S01, S02]: ",
    "(IMPRESSION)",
    " - merge with []: ",
    "\\_",
    "None",
    "True",
    "undefined",
    "NaN",
    "'",
    ",,",
    "\n      \u{21aa} ",
    "\u{21b3}",
    "{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{",
    "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[",
];

/// The GEMeX question-generation schema, a real task's answer schema.
const SCHEMA: &str = include_str!("../../../../prompts/gemex/generate.schema.json");

const LISTING_2: &str = "[S01] FINAL\\_REPORT\\_NO\\_SECTION(EXAM\\_TECHNIQUE) - merge with []:  \n      \u{21aa} PORTABLE CHEST OF \\_\\_\\_\\_  \n[S02] COMPARISON(IGNORE) - merge with []: \\_\\_\\_\\_ radiograph.  \n[S03] FINDINGS(FINDINGS) - merge with []: No pleural effusion or  \n      \u{21aa} pneumothorax.";

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

fn seeds(texts: &[&str]) -> Vec<Vec<u8>> {
    texts.iter().map(|t| t.as_bytes().to_vec()).collect()
}

#[test]
fn llm_json() {
    let schema: Value = serde_json::from_str(SCHEMA).expect("the schema is JSON");
    check_schema(&schema).expect("the schema is of the subset");
    let answers = [
        r#"{"questions": [{"question_type": "open-ended", "content_type": "abnormality", "question": "What abnormality is seen in the left lower lung zone?", "choices": [], "answer": "A small pleural effusion.", "reason": "Blunting at the left base.", "regions": ["left lower lung zone"]}]}"#,
        "Here are the questions:\n```json\n{\"questions\": [{\"question_type\": \"single-choice\", \"content_type\": \"size\", \"question\": \"How large is the heart?\", \"choices\": [\"A: Normal\", \"B: Mildly enlarged\",], \"answer\": \"B\", \"reason\": \"The silhouette is mildly enlarged.\", \"regions\": ['cardiac silhouette']}]}\n```\nHope this helps.",
        "{questions: [{question_type: 'closed-ended', content_type: 'disease', question: \"Is there a \"large\" pneumothorax?\", choices: None, answer: True, reason: 'No pleural line', regions: [\"bilateral lung\"]",
        "[1, 2.5e3, -0, NaN, null, {\"a\": {\"b\": [[]]}}]",
        SCHEMA,
    ];
    check(
        &Target::new("llm_json", seeds(&answers), move |data| {
            let text = String::from_utf8_lossy(data);
            let repaired = repair_json(&text);
            let outcome = Outcome::of(&repaired);
            let parsed = parse_json(&text);
            let mut outcome = outcome.and(Outcome::of(&parsed));
            if let Ok(value) = &parsed {
                let messages = validate(value, &schema);
                if messages.iter().any(|m| m.trim().is_empty()) || messages.len() > 21 {
                    outcome =
                        outcome.and(Outcome::Broken(format!("validation messages {messages:?}")));
                }
                // The answer as a schema: refused with a reason, or usable on itself.
                match check_schema(value) {
                    Ok(()) => {
                        let _ = validate(value, value);
                    }
                    Err(why) if why.trim().is_empty() => {
                        outcome = outcome.and(Outcome::Rejected(why));
                    }
                    Err(_) => {}
                }
            }
            outcome
        })
        .with_dictionary(DICTIONARY)
        .with_max_len(32 << 10),
    );
}

#[test]
fn llm_sentences() {
    let texts = [
        LISTING_2,
        "[S01] INDICATION(INDICATION) - merge with []: Cough.\n[S02] FINDINGS(FINDINGS) - merge with []: No effusion.\n[S03] IMPRESSION(IMPRESSION) - merge with [S02]: No effusion.",
        "Sure!\n[S1] findings (findings) - merge with [S01,S2]: Heart size is normal.\n",
    ];
    check(
        &Target::new("llm_sentences", seeds(&texts), |data| {
            Outcome::of(&parse::sentences(&String::from_utf8_lossy(data)))
        })
        .with_dictionary(DICTIONARY)
        .with_max_len(32 << 10),
    );
}

#[test]
fn llm_observations() {
    let texts = [
        LISTING_4,
        r#"[{"name": "pleural effusion", "entity": "pleural effusion", "probability": "negative", "change": null, "summary_sentence": "No effusion.", "change_sentence": null, "regions": [], "children": []}]"#,
        "```json\n[{'name': 'cardiomegaly', 'entity': 'cardiomegaly', 'probability': 'positive', 'regions': ['heart'],}]\n```",
        "[]",
    ];
    check(
        &Target::new("llm_observations", seeds(&texts), |data| {
            Outcome::of(&parse::observations(&String::from_utf8_lossy(data)))
        })
        .with_dictionary(DICTIONARY)
        .with_max_len(32 << 10),
    );
}

#[test]
fn llm_indication() {
    let texts = [
        LISTING_6,
        r#"{"patient_info": "", "indication": "Fever.", "evaluation": "pneumonia", "indication_summary": "Fever, evaluate for pneumonia.", "associated_findings": [], "answer_for_indication": "No pneumonia."}"#,
    ];
    check(
        &Target::new("llm_indication", seeds(&texts), |data| {
            Outcome::of(&parse::indication(&String::from_utf8_lossy(data)))
        })
        .with_dictionary(DICTIONARY)
        .with_max_len(32 << 10),
    );
}
