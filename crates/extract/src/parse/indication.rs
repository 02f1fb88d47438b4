//! The indication-extraction output (listings 5 and 6): one JSON object.

use cxrlake_generate::repair_json;
use serde_json::Value;

use super::fields::{normalized, text, texts};
use crate::{ExtractError, Indication, Result};

/// Keys accepted for the associated sentence ids, first found wins.
const FINDINGS_KEYS: [&str; 3] = [
    "associated_findings",
    "associated_sentence_ids",
    "associated_sentences",
];

/// Parses the indication-extraction output (a list counts by its first object).
/// `associated_findings` entries are normalised to `S05` form (`"5"`, `"S5"`, `"[S05]"`, `5`).
/// Fails when no object with at least one known field is found.
pub fn indication(output: &str) -> Result<Indication> {
    let value = repair_json(output).map_err(|reason| ExtractError::parse("indication", reason))?;
    let object = match value {
        Value::Object(object) => Some(object),
        Value::Array(items) => items.into_iter().find_map(|item| match item {
            Value::Object(object) => Some(object),
            _ => None,
        }),
        _ => None,
    };
    let fields = normalized(&object.unwrap_or_default());
    let findings = FINDINGS_KEYS.iter().find_map(|key| fields.get(*key));
    let mut associated_findings = Vec::new();
    for id in texts(findings).iter().flat_map(|entry| sentence_ids(entry)) {
        if !associated_findings.contains(&id) {
            associated_findings.push(id);
        }
    }
    let parsed = Indication {
        patient_info: text(fields.get("patient_info")),
        indication: text(fields.get("indication")),
        evaluation: text(fields.get("evaluation")),
        indication_summary: text(fields.get("indication_summary")),
        associated_findings,
        answer_for_indication: text(fields.get("answer_for_indication")),
    };
    let known = [
        "patient_info",
        "indication",
        "evaluation",
        "indication_summary",
        "answer_for_indication",
    ]
    .iter()
    .chain(&FINDINGS_KEYS)
    .any(|key| fields.contains_key(*key));
    if !known {
        return Err(ExtractError::parse(
            "indication",
            "no object with any of the fields patient_info, indication, evaluation, indication_summary, associated_findings, answer_for_indication",
        ));
    }
    Ok(parsed)
}

/// The sentence ids in one entry as `S05`: the numbers written `S5`/`S05` if any, else every
/// number (`"5"`).
fn sentence_ids(entry: &str) -> Vec<String> {
    let runs: Vec<(bool, u32)> = entry
        .char_indices()
        .filter(|(at, c)| {
            c.is_ascii_digit() && !entry[..*at].ends_with(|p: char| p.is_ascii_digit())
        })
        .filter_map(|(at, _)| {
            let digits = &entry[at..];
            let len = digits
                .find(|c: char| !c.is_ascii_digit())
                .unwrap_or(digits.len());
            let prefixed = entry[..at].ends_with(['S', 's']);
            (len <= 6)
                .then(|| digits[..len].parse().ok())
                .flatten()
                .map(|number| (prefixed, number))
        })
        .collect();
    let any_prefixed = runs.iter().any(|(prefixed, _)| *prefixed);
    runs.into_iter()
        .filter(|(prefixed, _)| *prefixed || !any_prefixed)
        .map(|(_, number)| format!("S{number:02}"))
        .collect()
}
