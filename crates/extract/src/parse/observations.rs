//! The observation-extraction output (listings 3 and 4): a JSON list of observations, each with
//! one level of children.

use cxrlake_generate::repair_json;
use serde_json::{Map, Value};

use super::fields::{normalized, text, texts};
use crate::{ExtractError, RawObservation, Result};

/// Parses the observation-extraction output.
///
/// A single object counts as a one-element list, and an object wrapping the list (e.g.
/// `{"observations": [...]}`) is unwrapped. Items without `name` and `entity` are dropped; a
/// missing one of the two is copied from the other. Grandchildren are lifted to children. An
/// explicit empty list is a valid answer (no observations); a non-empty answer of which no item
/// remains is an error.
pub fn observations(output: &str) -> Result<Vec<RawObservation>> {
    let value =
        repair_json(output).map_err(|reason| ExtractError::parse("observations", reason))?;
    let items = match value {
        Value::Array(items) => items,
        Value::Object(object) => unwrap_list(object),
        _ => Vec::new(),
    };
    if items.is_empty() {
        return Ok(Vec::new());
    }
    let observations: Vec<RawObservation> = items
        .iter()
        .filter_map(|item| observation(item, 0))
        .collect();
    if observations.is_empty() {
        return Err(ExtractError::parse(
            "observations",
            format!(
                "none of the {} items has a \"name\" or an \"entity\"",
                items.len()
            ),
        ));
    }
    Ok(observations)
}

/// The items of an object: the object itself if it is an observation, else its first list of
/// objects.
fn unwrap_list(object: Map<String, Value>) -> Vec<Value> {
    let fields = normalized(&object);
    if fields.contains_key("name") || fields.contains_key("entity") {
        return vec![Value::Object(object)];
    }
    object
        .into_iter()
        .find_map(|(_, value)| match value {
            Value::Array(items) if items.iter().any(Value::is_object) => Some(items),
            _ => None,
        })
        .unwrap_or_default()
}

/// One observation at `level` (0: top level, 1: child); `None` without name and entity.
fn observation(value: &Value, level: usize) -> Option<RawObservation> {
    let fields = normalized(value.as_object()?);
    let name = text(fields.get("name"));
    let entity = text(fields.get("entity"));
    let (name, entity) = match (name, entity) {
        (None, None) => return None,
        (name, entity) => (
            name.clone().or_else(|| entity.clone()).unwrap_or_default(),
            entity.or(name).unwrap_or_default(),
        ),
    };
    let child_values: Vec<&Value> = match fields.get("children") {
        Some(Value::Array(items)) => items.iter().collect(),
        Some(object @ Value::Object(_)) => vec![object],
        _ => Vec::new(),
    };
    let children: Vec<RawObservation> = child_values
        .into_iter()
        .filter_map(|child| observation(child, level + 1))
        .collect();
    let (child_type, children) = if level == 0 {
        (None, children.into_iter().flat_map(flatten).collect())
    } else {
        let child_type = text(fields.get("child_type")).map(|kind| {
            kind.split_whitespace()
                .collect::<Vec<_>>()
                .join("_")
                .to_lowercase()
        });
        (child_type, children)
    };
    Some(RawObservation {
        child_type,
        name,
        entity,
        probability: text(fields.get("probability")),
        change: text(fields.get("change")),
        summary_sentence: text(fields.get("summary_sentence")).unwrap_or_default(),
        change_sentence: text(fields.get("change_sentence")),
        regions: texts(fields.get("regions")),
        modifiers: texts(fields.get("modifiers")),
        children,
    })
}

/// A child followed by its descendants, all without children of their own.
fn flatten(mut child: RawObservation) -> Vec<RawObservation> {
    let descendants = std::mem::take(&mut child.children);
    std::iter::once(child)
        .chain(descendants.into_iter().flat_map(flatten))
        .collect()
}
