//! The JSON Schema subset that a task's answer schema may use, and the validation of an answer
//! against it, with JSON-pointer paths in the messages.
//!
//! Supported keywords: `type` (a name or a list of names), `required`, `properties`,
//! `additionalProperties` (a boolean or a schema), `items`, `enum`, `minItems`, `maxItems`,
//! `minLength` (in characters) and `minProperties`; the annotations `description`, `title`,
//! `$schema`, `$id`, `default` and `examples` are allowed and ignored. As in JSON Schema, a
//! keyword applies only to values of its kind (`minItems` to arrays, …), so `type` decides the
//! kind. [`check_schema`] refuses any other keyword, so a schema never promises a rule that
//! [`validate`] does not check.

use serde_json::{Map, Value};

/// The keywords [`validate`] checks.
const KEYWORDS: [&str; 10] = [
    "type",
    "required",
    "properties",
    "additionalProperties",
    "items",
    "enum",
    "minItems",
    "maxItems",
    "minLength",
    "minProperties",
];

/// Keywords that only document a schema.
const ANNOTATIONS: [&str; 6] = [
    "description",
    "title",
    "$schema",
    "$id",
    "default",
    "examples",
];

/// The names `type` accepts.
const TYPES: [&str; 7] = [
    "object", "array", "string", "number", "integer", "boolean", "null",
];

/// Most messages [`validate`] returns (the rest are counted in a last message).
const MAX_MESSAGES: usize = 20;

/// What is wrong with `value` under `schema` (a schema that passed [`check_schema`]), one
/// message per violation, each starting with the JSON pointer of the offending value
/// (`/questions/3/choices: …`; the whole value is `(root)`); empty when the value is valid.
pub fn validate(value: &Value, schema: &Value) -> Vec<String> {
    let mut messages = Vec::new();
    check(value, schema, &mut String::new(), &mut messages);
    if messages.len() > MAX_MESSAGES {
        let more = messages.len() - MAX_MESSAGES;
        messages.truncate(MAX_MESSAGES);
        messages.push(format!("… and {more} more"));
    }
    messages
}

/// Why `schema` is not a schema of the subset [`validate`] checks: an unknown keyword, a `type`
/// that is not a JSON type, a keyword with a value of the wrong kind; the path says where.
pub fn check_schema(schema: &Value) -> Result<(), String> {
    check_schema_at(schema, "")
}

fn check_schema_at(schema: &Value, path: &str) -> Result<(), String> {
    let at = shown(path);
    let Value::Object(keywords) = schema else {
        return Err(format!(
            "{at}: a schema is a JSON object, not {}",
            kind(schema)
        ));
    };
    for (keyword, argument) in keywords {
        let here = format!("{path}/{}", escape(keyword));
        let wrong = |expected: &str| Err(format!("{}: {keyword} must be {expected}", shown(&here)));
        match keyword.as_str() {
            "type" => {
                let names: Vec<&Value> = match argument {
                    Value::Array(names) => names.iter().collect(),
                    name => vec![name],
                };
                if names.is_empty()
                    || names
                        .iter()
                        .any(|name| !name.as_str().is_some_and(|name| TYPES.contains(&name)))
                {
                    return wrong(&format!("one of {} or a list of them", TYPES.join(", ")));
                }
            }
            "required" => {
                if !argument
                    .as_array()
                    .is_some_and(|names| names.iter().all(Value::is_string))
                {
                    return wrong("a list of property names");
                }
            }
            "properties" => {
                let Value::Object(properties) = argument else {
                    return wrong("an object of schemas");
                };
                for (name, property) in properties {
                    check_schema_at(property, &format!("{here}/{}", escape(name)))?;
                }
            }
            "additionalProperties" => {
                if !argument.is_boolean() {
                    check_schema_at(argument, &here)?;
                }
            }
            "items" => check_schema_at(argument, &here)?,
            "enum" => {
                if argument.as_array().is_none_or(|values| values.is_empty()) {
                    return wrong("a non-empty list of values");
                }
            }
            "minItems" | "maxItems" | "minLength" | "minProperties" => {
                if argument.as_u64().is_none() {
                    return wrong("a non-negative integer");
                }
            }
            other if ANNOTATIONS.contains(&other) => {}
            other => {
                return Err(format!(
                    "{}: keyword '{other}' is not supported (supported: {}; annotations: {})",
                    shown(&here),
                    KEYWORDS.join(", "),
                    ANNOTATIONS.join(", ")
                ));
            }
        }
    }
    Ok(())
}

fn check(value: &Value, schema: &Value, path: &mut String, out: &mut Vec<String>) {
    let Value::Object(schema) = schema else {
        return;
    };
    if let Some(types) = schema.get("type")
        && !has_type(value, types)
    {
        let expected = match types {
            Value::Array(names) => names
                .iter()
                .filter_map(Value::as_str)
                .collect::<Vec<_>>()
                .join(" or "),
            name => name.as_str().unwrap_or_default().to_string(),
        };
        out.push(format!(
            "{}: expected {expected}, found {}",
            shown(path),
            kind(value)
        ));
        return;
    }
    if let Some(Value::Array(allowed)) = schema.get("enum")
        && !allowed.contains(value)
    {
        let allowed: Vec<String> = allowed.iter().map(Value::to_string).collect();
        out.push(format!(
            "{}: {value} is not one of {}",
            shown(path),
            allowed.join(", ")
        ));
    }
    match value {
        Value::Object(object) => check_object(object, schema, path, out),
        Value::Array(items) => check_array(items, schema, path, out),
        Value::String(text) => {
            let length = text.chars().count() as u64;
            if let Some(least) = bound(schema, "minLength")
                && length < least
            {
                out.push(format!(
                    "{}: {length} characters, fewer than minLength {least}",
                    shown(path)
                ));
            }
        }
        _ => {}
    }
}

fn check_object(
    object: &Map<String, Value>,
    schema: &Map<String, Value>,
    path: &mut String,
    out: &mut Vec<String>,
) {
    if let Some(least) = bound(schema, "minProperties")
        && (object.len() as u64) < least
    {
        out.push(format!(
            "{}: {} properties, fewer than minProperties {least}",
            shown(path),
            object.len()
        ));
    }
    if let Some(Value::Array(required)) = schema.get("required") {
        for name in required.iter().filter_map(Value::as_str) {
            if !object.contains_key(name) {
                out.push(format!(
                    "{}: missing required property '{name}'",
                    shown(path)
                ));
            }
        }
    }
    let properties = schema.get("properties").and_then(Value::as_object);
    let additional = schema.get("additionalProperties");
    for (name, item) in object {
        let length = path.len();
        path.push('/');
        path.push_str(&escape(name));
        match (properties.and_then(|p| p.get(name)), additional) {
            (Some(property), _) => check(item, property, path, out),
            (None, Some(Value::Bool(false))) => {
                out.push(format!("{}: property '{name}' is not allowed", shown(path)));
            }
            (None, Some(additional @ Value::Object(_))) => check(item, additional, path, out),
            (None, _) => {}
        }
        path.truncate(length);
    }
}

fn check_array(
    items: &[Value],
    schema: &Map<String, Value>,
    path: &mut String,
    out: &mut Vec<String>,
) {
    let count = items.len() as u64;
    if let Some(least) = bound(schema, "minItems")
        && count < least
    {
        out.push(format!(
            "{}: {count} items, fewer than minItems {least}",
            shown(path)
        ));
    }
    if let Some(most) = bound(schema, "maxItems")
        && count > most
    {
        out.push(format!(
            "{}: {count} items, more than maxItems {most}",
            shown(path)
        ));
    }
    if let Some(item_schema) = schema.get("items") {
        for (index, item) in items.iter().enumerate() {
            let length = path.len();
            path.push_str(&format!("/{index}"));
            check(item, item_schema, path, out);
            path.truncate(length);
        }
    }
}

/// A non-negative integer keyword of `schema`.
fn bound(schema: &Map<String, Value>, keyword: &str) -> Option<u64> {
    schema.get(keyword).and_then(Value::as_u64)
}

/// Whether `value` is of one of the `type` names.
fn has_type(value: &Value, types: &Value) -> bool {
    let is = |name: &str| match name {
        "integer" => value.as_f64().is_some_and(|n| n.fract() == 0.0),
        name => kind(value) == name,
    };
    match types {
        Value::Array(names) => names.iter().filter_map(Value::as_str).any(is),
        name => name.as_str().is_some_and(is),
    }
}

/// The JSON type name of `value`.
fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// A property name as a JSON-pointer token (RFC 6901: `~` → `~0`, `/` → `~1`).
fn escape(name: &str) -> String {
    name.replace('~', "~0").replace('/', "~1")
}

/// A JSON pointer as messages show it.
fn shown(path: &str) -> &str {
    if path.is_empty() { "(root)" } else { path }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn type_names_and_lists() {
        let schema = json!({"type": "integer"});
        assert!(validate(&json!(3), &schema).is_empty());
        assert!(validate(&json!(3.0), &schema).is_empty());
        assert_eq!(
            validate(&json!(3.5), &schema),
            ["(root): expected integer, found number"]
        );
        let schema = json!({"type": ["string", "null"]});
        assert!(validate(&json!(null), &schema).is_empty());
        assert!(validate(&json!("x"), &schema).is_empty());
        assert_eq!(
            validate(&json!(true), &schema),
            ["(root): expected string or null, found boolean"]
        );
        for (value, name) in [
            (json!({}), "object"),
            (json!([]), "array"),
            (json!(1.5), "number"),
            (json!(false), "boolean"),
        ] {
            assert!(
                validate(&value, &json!({"type": name})).is_empty(),
                "{name}"
            );
        }
    }

    #[test]
    fn required_properties_and_additional_properties() {
        let schema = json!({
            "type": "object",
            "required": ["a", "b"],
            "properties": {"a": {"type": "string"}, "b": {"type": "number"}},
            "additionalProperties": false,
        });
        assert!(validate(&json!({"a": "x", "b": 1}), &schema).is_empty());
        assert_eq!(
            validate(&json!({"a": 1, "c/d": 2}), &schema),
            [
                "(root): missing required property 'b'",
                "/a: expected string, found number",
                "/c~1d: property 'c/d' is not allowed",
            ]
        );
        let map = json!({"type": "object", "additionalProperties": {"type": "string"},
                         "minProperties": 1});
        assert!(validate(&json!({"s1": "left lung"}), &map).is_empty());
        assert_eq!(
            validate(&json!({"s1": 3}), &map),
            ["/s1: expected string, found number"]
        );
        assert_eq!(
            validate(&json!({}), &map),
            ["(root): 0 properties, fewer than minProperties 1"]
        );
        // `true` (or no keyword) allows anything.
        let open = json!({"properties": {"a": {"type": "string"}}, "additionalProperties": true});
        assert!(validate(&json!({"z": [1]}), &open).is_empty());
    }

    #[test]
    fn items_counts_enum_and_length() {
        let schema = json!({
            "type": "array",
            "minItems": 1,
            "maxItems": 2,
            "items": {"type": "string", "enum": ["yes", "no"], "minLength": 2},
        });
        assert!(validate(&json!(["yes", "no"]), &schema).is_empty());
        assert_eq!(
            validate(&json!([]), &schema),
            ["(root): 0 items, fewer than minItems 1"]
        );
        assert_eq!(
            validate(&json!(["yes", "maybe", "no"]), &schema),
            [
                "(root): 3 items, more than maxItems 2",
                "/1: \"maybe\" is not one of \"yes\", \"no\"",
            ]
        );
        // minLength counts characters, not bytes.
        assert!(validate(&json!("éé"), &json!({"minLength": 2})).is_empty());
        assert_eq!(
            validate(&json!("é"), &json!({"minLength": 2})),
            ["(root): 1 characters, fewer than minLength 2"]
        );
        // A keyword applies only to values of its kind.
        assert!(validate(&json!("abc"), &json!({"minItems": 5})).is_empty());
    }

    #[test]
    fn nested_paths_are_json_pointers() {
        let schema = json!({"properties": {"questions": {"items": {
            "required": ["answer"],
            "properties": {"choices": {"maxItems": 4}}}}}});
        let answer = json!({"questions": [{"answer": "A"}, {"choices": [1, 2, 3, 4, 5]}]});
        assert_eq!(
            validate(&answer, &schema),
            [
                "/questions/1: missing required property 'answer'",
                "/questions/1/choices: 5 items, more than maxItems 4",
            ]
        );
    }

    #[test]
    fn many_violations_are_capped() {
        let schema = json!({"items": {"type": "string"}});
        let messages = validate(&json!(vec![1; 30]), &schema);
        assert_eq!(messages.len(), MAX_MESSAGES + 1);
        assert_eq!(messages[MAX_MESSAGES], "… and 10 more");
    }

    #[test]
    fn schemas_use_only_the_subset() {
        assert_eq!(
            check_schema(&json!({"type": "object", "description": "x",
                                 "properties": {"a": {"type": "string", "minLength": 1}}})),
            Ok(())
        );
        assert_eq!(
            check_schema(&json!({"properties": {"a/b": {"pattern": "^x"}}})),
            Err(
                "/properties/a~1b/pattern: keyword 'pattern' is not supported (supported: \
                 type, required, properties, additionalProperties, items, enum, minItems, \
                 maxItems, minLength, minProperties; annotations: description, title, \
                 $schema, $id, default, examples)"
                    .into()
            )
        );
        assert!(check_schema(&json!({"type": "text"})).is_err());
        assert!(check_schema(&json!({"type": []})).is_err());
        assert!(check_schema(&json!({"required": "a"})).is_err());
        assert!(check_schema(&json!({"minItems": -1})).is_err());
        assert!(check_schema(&json!({"enum": []})).is_err());
        assert!(check_schema(&json!({"items": true})).is_err());
        assert_eq!(
            check_schema(&json!({"additionalProperties": false})),
            Ok(())
        );
        assert_eq!(
            check_schema(&json!([])),
            Err("(root): a schema is a JSON object, not array".into())
        );
    }
}
