//! The structural validators of paper 003 (appendix A, quality-check layer), one boolean each,
//! on an MCQ as the generator wrote it (a JSON value), with the reasons of every failure:
//!
//! | validator | passes when |
//! |---|---|
//! | v1 schema | an object with every required field ([`REQUIRED`]) |
//! | v2 types | text fields are strings, `options` an array of strings, `answer_index` an integer |
//! | v3 format | four distinct options, `answer_index` among them, an explanation of at least the minimum length, a known difficulty and task type |
//! | v4 completeness | no required field null or empty (nor an empty option) |
//!
//! Each validator judges only what is its own: a missing field fails v1 alone, a null one v4
//! alone, a field of the wrong type v2 alone (v3 skips it), so a fixture can fail exactly one.
//! V(Q), the AND with the content validators, is computed in SQL (`crates/rexvqa/sql/filter.sql`).

use serde::Serialize;
use serde_json::Value;

/// The fields every MCQ must have: q, o, a, e of the paper's Q = {q, o, a, e, m} and the
/// metadata m (difficulty, category, task type). `subcategory` is optional.
pub const REQUIRED: [&str; 7] = [
    "question",
    "options",
    "answer_index",
    "explanation",
    "difficulty",
    "category",
    "task_type",
];

/// Fields that must be strings when present.
const TEXT_FIELDS: [&str; 6] = [
    "question",
    "explanation",
    "difficulty",
    "category",
    "subcategory",
    "task_type",
];

/// The difficulty tiers, easiest first.
pub const DIFFICULTIES: [&str; 3] = ["easy", "medium", "hard"];

/// The five task types (ids).
pub const TASK_TYPES: [&str; 5] = [
    "presence",
    "location",
    "negation",
    "differential_diagnosis",
    "geometric",
];

/// The task type a generator's text names (`"Presence assessment"` → `presence`).
pub fn task_type(text: &str) -> Option<&'static str> {
    let words = crate::text::words(text).join(" ");
    Some(match words.as_str() {
        "presence" | "presence assessment" | "presence detection" => "presence",
        "location" | "location analysis" | "localization" | "spatial localization" => "location",
        "negation" | "negation detection" => "negation",
        "differential diagnosis" | "differential" | "diagnosis" => "differential_diagnosis",
        "geometric" | "geometric reasoning" | "geometry" => "geometric",
        _ => return None,
    })
}

/// The outcome of the four structural validators.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Structural {
    /// v1.
    pub v1_schema: bool,
    /// v2.
    pub v2_types: bool,
    /// v3.
    pub v3_format: bool,
    /// v4.
    pub v4_complete: bool,
    /// Why each failing validator failed (`v3: 3 options (four are needed)`).
    pub reasons: Vec<String>,
}

impl Structural {
    /// Whether all four pass.
    pub fn passed(&self) -> bool {
        self.v1_schema && self.v2_types && self.v3_format && self.v4_complete
    }
}

/// An option without a letter label a generator may have put in front (`"B. Edema"`,
/// `"(b) Edema"`, `"B) Edema"`), trimmed.
pub fn strip_label(option: &str) -> &str {
    let text = option.trim();
    let bytes = text.as_bytes();
    let label = |at: usize| bytes.get(at).is_some_and(|b| b"ABCDabcd".contains(b));
    let rest = if bytes.first() == Some(&b'(') && label(1) && bytes.get(2) == Some(&b')') {
        &text[3..]
    } else if label(0) && matches!(bytes.get(1), Some(b'.' | b')' | b':')) {
        &text[2..]
    } else {
        text
    };
    rest.trim()
}

/// The four validators on `item`; explanations need `min_explanation` characters.
pub fn structural(item: &Value, min_explanation: usize) -> Structural {
    let mut reasons = Vec::new();
    let Some(object) = item.as_object() else {
        return Structural {
            v1_schema: false,
            v2_types: false,
            v3_format: false,
            v4_complete: false,
            reasons: vec![format!("v1: the MCQ is not an object but {}", kind(item))],
        };
    };
    let field = |name: &str| object.get(name).filter(|v| !v.is_null());

    // v1: every required field present.
    let missing: Vec<&str> = REQUIRED
        .iter()
        .copied()
        .filter(|name| !object.contains_key(*name))
        .collect();
    let v1_schema = missing.is_empty();
    if !v1_schema {
        reasons.push(format!("v1: missing {}", missing.join(", ")));
    }

    // v2: the types of the present, non-null fields.
    let mut wrong = Vec::new();
    for name in TEXT_FIELDS {
        if let Some(value) = field(name).filter(|v| !v.is_string()) {
            wrong.push(format!("{name} is {} (text expected)", kind(value)));
        }
    }
    if let Some(options) = field("options") {
        match options.as_array() {
            Some(items) if items.iter().all(Value::is_string) => {}
            Some(_) => wrong.push("options has an item that is not text".into()),
            None => wrong.push(format!("options is {} (an array expected)", kind(options))),
        }
    }
    if let Some(index) = field("answer_index").filter(|v| !(v.is_i64() || v.is_u64())) {
        wrong.push(format!(
            "answer_index is {} (an integer expected)",
            kind(index)
        ));
    }
    let v2_types = wrong.is_empty();
    if !v2_types {
        reasons.push(format!("v2: {}", wrong.join("; ")));
    }

    // v3: the format of the values of the right type.
    let mut format = Vec::new();
    let options: Option<Vec<&str>> = field("options")
        .and_then(Value::as_array)
        .and_then(|items| items.iter().map(Value::as_str).collect());
    if let Some(options) = &options {
        if options.len() != 4 {
            format.push(format!("{} options (four are needed)", options.len()));
        }
        let mut seen: Vec<String> = Vec::new();
        let mut repeated: Vec<&str> = Vec::new();
        for option in options {
            let text = strip_label(option).to_lowercase();
            if !text.is_empty() && seen.contains(&text) {
                let shown = strip_label(option);
                if !repeated.iter().any(|r| r.eq_ignore_ascii_case(shown)) {
                    repeated.push(shown);
                }
            }
            seen.push(text);
        }
        // Each repeated option once, at most three named (a looping model repeats dozens).
        match repeated.as_slice() {
            [] => {}
            [one] => format.push(format!("option '{one}' is repeated")),
            many => {
                let named: Vec<String> = many.iter().take(3).map(|r| format!("'{r}'")).collect();
                let more = match many.len().saturating_sub(3) {
                    0 => String::new(),
                    n => format!(" and {n} more"),
                };
                format.push(format!("options {}{more} are repeated", named.join(", ")));
            }
        }
    }
    if let Some(index) = field("answer_index").and_then(Value::as_i64) {
        let count = options.as_ref().map_or(4, Vec::len) as i64;
        if !(0..count).contains(&index) {
            format.push(format!(
                "answer_index {index} is not an option (0 to {})",
                count - 1
            ));
        }
    }
    if let Some(explanation) = field("explanation").and_then(Value::as_str) {
        let length = explanation.trim().chars().count();
        if length > 0 && length < min_explanation {
            format.push(format!(
                "the explanation has {length} characters (at least {min_explanation})"
            ));
        }
    }
    if let Some(difficulty) = field("difficulty").and_then(Value::as_str)
        && !difficulty.trim().is_empty()
        && !DIFFICULTIES.contains(&difficulty.trim().to_lowercase().as_str())
    {
        format.push(format!(
            "difficulty '{difficulty}' is not easy, medium or hard"
        ));
    }
    if let Some(task) = field("task_type").and_then(Value::as_str)
        && !task.trim().is_empty()
        && task_type(task).is_none()
    {
        format.push(format!(
            "task_type '{task}' is not one of the five task types"
        ));
    }
    let v3_format = format.is_empty();
    if !v3_format {
        reasons.push(format!("v3: {}", format.join("; ")));
    }

    // v4: no present required field null or empty.
    let mut empty = Vec::new();
    for name in REQUIRED {
        match object.get(name) {
            Some(Value::Null) => empty.push(format!("{name} is null")),
            Some(Value::String(text)) if text.trim().is_empty() => {
                empty.push(format!("{name} is empty"));
            }
            Some(Value::Array(items)) if items.is_empty() => empty.push(format!("{name} is empty")),
            Some(Value::Array(items))
                if items
                    .iter()
                    .any(|i| i.as_str().is_some_and(|t| strip_label(t).is_empty())) =>
            {
                empty.push(format!("{name} has an empty item"));
            }
            _ => {}
        }
    }
    let v4_complete = empty.is_empty();
    if !v4_complete {
        reasons.push(format!("v4: {}", empty.join("; ")));
    }
    Structural {
        v1_schema,
        v2_types,
        v3_format,
        v4_complete,
        reasons,
    }
}

/// A JSON value's kind, for messages.
fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "text",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn valid() -> Value {
        json!({
            "question": "Which finding is seen in the left lower lung zone?",
            "options": ["Atelectasis", "Pneumothorax", "Pleural effusion", "Edema"],
            "answer_index": 2,
            "explanation": "The radiograph shows blunting of the left costophrenic angle.",
            "difficulty": "medium",
            "category": "Other Pulmonary Diagnosis",
            "subcategory": "Miscellaneous Pulmonary Disease",
            "task_type": "location"
        })
    }

    fn with(change: impl FnOnce(&mut serde_json::Map<String, Value>)) -> Structural {
        let mut item = valid();
        change(item.as_object_mut().expect("object"));
        structural(&item, 20)
    }

    fn failing(s: &Structural) -> Vec<&'static str> {
        [
            ("v1", s.v1_schema),
            ("v2", s.v2_types),
            ("v3", s.v3_format),
            ("v4", s.v4_complete),
        ]
        .into_iter()
        .filter(|(_, ok)| !ok)
        .map(|(name, _)| name)
        .collect()
    }

    #[test]
    fn a_valid_mcq_passes_all_four() {
        let s = structural(&valid(), 20);
        assert!(s.passed(), "{s:?}");
        assert!(s.reasons.is_empty());
    }

    #[test]
    fn each_fixture_fails_exactly_one_validator() {
        let cases: Vec<(&str, Structural, &str)> = vec![
            (
                "v1",
                with(|o| drop(o.remove("task_type"))),
                "v1: missing task_type",
            ),
            (
                "v2",
                with(|o| drop(o.insert("answer_index".into(), json!("C")))),
                "v2: answer_index is text (an integer expected)",
            ),
            (
                "v2",
                with(|o| drop(o.insert("options".into(), json!(["a", 2, "c", "d"])))),
                "v2: options has an item that is not text",
            ),
            (
                "v3",
                with(|o| drop(o.insert("options".into(), json!(["a", "b", "c"])))),
                "v3: 3 options (four are needed)",
            ),
            (
                "v3",
                with(|o| drop(o.insert("options".into(), json!(["A. Edema", "b", "c", "edema"])))),
                "v3: option 'edema' is repeated",
            ),
            (
                "v3",
                with(|o| drop(o.insert("explanation".into(), json!("Seen.")))),
                "v3: the explanation has 5 characters (at least 20)",
            ),
            (
                "v3",
                with(|o| drop(o.insert("answer_index".into(), json!(4)))),
                "v3: answer_index 4 is not an option (0 to 3)",
            ),
            (
                "v3",
                with(|o| drop(o.insert("difficulty".into(), json!("trivial")))),
                "v3: difficulty 'trivial' is not easy, medium or hard",
            ),
            (
                "v4",
                with(|o| drop(o.insert("category".into(), Value::Null))),
                "v4: category is null",
            ),
            (
                "v4",
                with(|o| drop(o.insert("question".into(), json!("  ")))),
                "v4: question is empty",
            ),
        ];
        for (validator, outcome, reason) in cases {
            assert_eq!(failing(&outcome), [validator], "{reason}: {outcome:?}");
            assert_eq!(outcome.reasons, [reason]);
        }
    }

    #[test]
    fn repeated_options_are_named_once_and_at_most_three() {
        let looping: Vec<String> = (0..40).map(|n| format!("Finding {}", n % 5)).collect();
        let s = with(|o| drop(o.insert("options".into(), json!(looping))));
        assert_eq!(
            s.reasons,
            [
                "v3: 40 options (four are needed); options 'Finding 0', 'Finding 1', 'Finding 2' \
              and 2 more are repeated"
            ]
        );
    }

    #[test]
    fn a_non_object_fails_all_and_labels_are_stripped() {
        let s = structural(&json!("an MCQ"), 20);
        assert_eq!(failing(&s), ["v1", "v2", "v3", "v4"]);
        assert_eq!(strip_label("B. Edema"), "Edema");
        assert_eq!(strip_label("(c) Edema "), "Edema");
        assert_eq!(strip_label("Atelectasis"), "Atelectasis");
        assert_eq!(task_type("Presence Assessment"), Some("presence"));
        assert_eq!(
            task_type("differential-diagnosis"),
            Some("differential_diagnosis")
        );
        assert_eq!(task_type("trivia"), None);
    }
}
