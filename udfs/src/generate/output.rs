//! The row both generation functions return, and the check that a task's records fit the
//! record type before they are encoded (a misfit would otherwise fail the whole batch).

use datafusion::arrow::datatypes::{DataType, Fields};
use serde::Serialize;
use serde_json::Value;

/// One input row's result: its records, or why none are valid with the raw answer.
#[derive(Debug, Serialize)]
pub(crate) struct Generated {
    records: Vec<Value>,
    error: Option<String>,
    raw: Option<String>,
    attempts: i32,
    generator: String,
}

impl Generated {
    /// Valid records, after `attempts` LLM calls (0 offline).
    pub(crate) fn records(records: Vec<Value>, attempts: u32, generator: &str) -> Self {
        Self {
            records,
            error: None,
            raw: None,
            attempts: attempts as i32,
            generator: generator.to_string(),
        }
    }

    /// No records: why, and the last answer where there was one.
    pub(crate) fn failed(
        reason: String,
        raw: Option<String>,
        attempts: u32,
        generator: &str,
    ) -> Self {
        Self {
            records: Vec::new(),
            error: Some(reason),
            raw,
            attempts: attempts as i32,
            generator: generator.to_string(),
        }
    }
}

/// Why `records` do not fit a struct of `fields`: the first record that is not an object, lacks
/// a non-nullable field or holds a value of the wrong kind, with the JSON pointer of the value.
pub(crate) fn misfit(records: &[Value], fields: &Fields) -> Option<String> {
    records.iter().enumerate().find_map(|(index, record)| {
        fits(record, &DataType::Struct(fields.clone()), false, "")
            .err()
            .map(|reason| format!("record {index} does not fit the record type: {reason}"))
    })
}

/// Whether `value` (at JSON pointer `path` in its record) fits `data_type`.
fn fits(value: &Value, data_type: &DataType, nullable: bool, path: &str) -> Result<(), String> {
    let at = if path.is_empty() { "(record)" } else { path };
    let wrong = |expected: &str| Err(format!("{at}: expected {expected}, found {value}"));
    match (value, data_type) {
        (Value::Null, _) if nullable => Ok(()),
        (Value::Null, _) => Err(format!("{at}: missing or null")),
        (Value::String(_), DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View) => Ok(()),
        (_, DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View) => wrong("a string"),
        (Value::Bool(_), DataType::Boolean) => Ok(()),
        (_, DataType::Boolean) => wrong("true or false"),
        (Value::Number(n), t) if t.is_integer() && (n.is_i64() || n.is_u64()) => Ok(()),
        (_, t) if t.is_integer() => wrong("an integer"),
        (Value::Number(_), t) if t.is_floating() => Ok(()),
        (_, t) if t.is_floating() => wrong("a number"),
        (Value::Array(items), DataType::List(item) | DataType::LargeList(item)) => {
            items.iter().enumerate().try_for_each(|(index, value)| {
                fits(
                    value,
                    item.data_type(),
                    item.is_nullable(),
                    &format!("{path}/{index}"),
                )
            })
        }
        (Value::Array(items), DataType::FixedSizeList(item, size)) => {
            if items.len() != *size as usize {
                return Err(format!("{at}: {} values, expected {size}", items.len()));
            }
            items.iter().enumerate().try_for_each(|(index, value)| {
                fits(
                    value,
                    item.data_type(),
                    item.is_nullable(),
                    &format!("{path}/{index}"),
                )
            })
        }
        (_, DataType::List(_) | DataType::LargeList(_) | DataType::FixedSizeList(..)) => {
            wrong("a list")
        }
        (Value::Object(object), DataType::Struct(fields)) => fields.iter().try_for_each(|field| {
            fits(
                object.get(field.name()).unwrap_or(&Value::Null),
                field.data_type(),
                field.is_nullable(),
                &format!("{path}/{}", field.name()),
            )
        }),
        (_, DataType::Struct(_)) => wrong("an object"),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cxrlake_schemas::gemex::qa_record_fields;
    use serde_json::json;

    fn record() -> Value {
        json!({
            "question_type": "single-choice", "content_type": "size", "question": "How large?",
            "choices": ["A: a", "B: b", "C: c", "D: d"], "answer": "B", "answer_letters": ["B"],
            "reason": null, "regions": ["cardiac silhouette"],
            "location": [[1, 2, 3.5, 4]], "location_224": [],
        })
    }

    #[test]
    fn records_fit_or_say_where_not() {
        let fields = Fields::from(qa_record_fields());
        assert_eq!(misfit(&[record()], &fields), None);
        let mut missing = record();
        missing["question"] = Value::Null;
        assert_eq!(
            misfit(&[record(), missing], &fields).as_deref(),
            Some("record 1 does not fit the record type: /question: missing or null")
        );
        let mut short = record();
        short["location"] = json!([[1, 2, 3]]);
        assert_eq!(
            misfit(&[short], &fields).as_deref(),
            Some("record 0 does not fit the record type: /location/0: 3 values, expected 4")
        );
        let mut text = record();
        text["choices"] = json!("A: a");
        assert!(misfit(&[text], &fields).is_some_and(|m| m.contains("expected a list")));
        assert_eq!(
            misfit(&[json!([1])], &fields).as_deref(),
            Some("record 0 does not fit the record type: (record): expected an object, found [1]")
        );
    }

    #[test]
    fn json_records_encode_into_the_record_type() {
        use crate::rows::encode_rows;
        use cxrlake_schemas::gemex::generated_type;
        use datafusion::arrow::array::{Array, AsArray};
        use datafusion::arrow::datatypes::Float32Type;

        let data_type = generated_type(qa_record_fields());
        let rows = [
            Some(Generated::records(
                vec![record(), record()],
                2,
                "llm:m@1+abc",
            )),
            None,
            Some(Generated::failed(
                "bad".into(),
                Some("{".into()),
                3,
                "llm:m@1+abc",
            )),
        ];
        let array = encode_rows(&rows, &data_type).expect("encode");
        assert_eq!(array.data_type(), &data_type);
        assert!(array.is_null(1));
        let results = array.as_struct();
        let records = results.column_by_name("records").expect("records");
        assert_eq!(records.as_list::<i32>().value_length(0), 2);
        assert_eq!(records.as_list::<i32>().value_length(2), 0);
        let location = records.as_list::<i32>().value(0);
        let location = location
            .as_struct()
            .column_by_name("location")
            .expect("location")
            .as_list::<i32>()
            .value(0);
        let corners = location.as_fixed_size_list().value(0);
        assert_eq!(
            corners.as_primitive::<Float32Type>().values().to_vec(),
            [1.0, 2.0, 3.5, 4.0]
        );
        let errors = results
            .column_by_name("error")
            .expect("error")
            .as_string::<i32>();
        assert!(errors.is_null(0));
        assert_eq!(errors.value(2), "bad");
    }
}
