//! Lenient reading of JSON fields written by an LLM: normalised keys, strings from scalars,
//! lists from single values.

use serde_json::{Map, Value};

/// The object's fields with keys in lower case, `\_` and spaces and `-` as `_`
/// (`"Summary Sentence"`, `"summary\_sentence"` → `summary_sentence`). Later duplicates win.
pub(super) fn normalized(object: &Map<String, Value>) -> Map<String, Value> {
    object
        .iter()
        .map(|(key, value)| {
            let key = key
                .trim()
                .replace('\\', "")
                .replace([' ', '-'], "_")
                .to_lowercase();
            (key, value.clone())
        })
        .collect()
}

/// A text value: strings trimmed, numbers and booleans written out, lists joined by `", "`;
/// `None` for null, empty text and the words `null`/`none`/`n/a`.
pub(super) fn text(value: Option<&Value>) -> Option<String> {
    let text = match value? {
        Value::Null | Value::Object(_) => return None,
        Value::String(text) => text.trim().to_string(),
        Value::Bool(flag) => flag.to_string(),
        Value::Number(number) => number.to_string(),
        Value::Array(items) => items
            .iter()
            .filter_map(|item| text(Some(item)))
            .collect::<Vec<_>>()
            .join(", "),
    };
    let empty = text.is_empty() || ["null", "none", "n/a"].contains(&text.to_lowercase().as_str());
    (!empty).then_some(text)
}

/// A list of texts: a single string becomes a one-element list, nested lists and object values
/// are flattened, empty and duplicate entries dropped.
pub(super) fn texts(value: Option<&Value>) -> Vec<String> {
    fn collect(value: &Value, out: &mut Vec<String>) {
        match value {
            Value::Array(items) => items.iter().for_each(|item| collect(item, out)),
            Value::Object(map) => map.values().for_each(|item| collect(item, out)),
            scalar => {
                if let Some(text) = text(Some(scalar))
                    && !out.contains(&text)
                {
                    out.push(text);
                }
            }
        }
    }
    let mut out = Vec::new();
    if let Some(value) = value {
        collect(value, &mut out);
    }
    out
}
