//! Release JSON → lake rows: the layout of [`crate::layout`] read backwards, so the exports, the
//! validators and the import share one description of every object. Each release object becomes
//! a JSON object with the lake's field names, which Arrow's JSON decoder turns into a batch of
//! the lake table's schema.
//!
//! ```text
//! {"O01": {…}, "O02": {…}}           ──Dict──▶  [{obs_id: "O01", …}, {obs_id: "O02", …}]
//! {image_id: 3}                      ──LevelDict▶ [{image_id, localization_quality: "NAME"}]
//! [{id 0, sub_answers: [{id 1}]}]    ──Tree──▶  [{id 0, parent ∅}, {id 1, parent 0}]
//! 3 (a quality value)                ──Level──▶ its level name (quality_mappings.csv)
//! "4_A" (a rating code)              ──Rating─▶ "A"
//! ```

use std::collections::HashMap;

use cxrlake_schemas::Rating;
use cxrlake_schemas::quality;
use serde_json::{Map, Value};

use crate::layout::{Node, Scalar, Shape};

/// The quality codes of a release: `(aspect key, integer value)` → level name, read from its
/// `quality_mappings.csv` (or cxrlake's own table, [`Codes::builtin`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Codes {
    levels: HashMap<(String, i64), String>,
}

impl Codes {
    /// The codes cxrlake writes (tables 11 and 12's values).
    pub fn builtin() -> Self {
        let levels = quality::ALL
            .iter()
            .flat_map(|aspect| {
                aspect.levels.iter().map(|level| {
                    (
                        (aspect.key.to_string(), i64::from(level.value)),
                        level.name.to_string(),
                    )
                })
            })
            .collect();
        Self { levels }
    }

    /// The codes of a `quality_mappings.csv` (`aspect,key,value,level,rating`; the rating rows
    /// are skipped); the error names the line.
    pub fn parse(csv: &str) -> Result<Self, String> {
        let mut lines = csv.lines();
        let header: Vec<&str> = lines
            .next()
            .unwrap_or_default()
            .split(',')
            .map(str::trim)
            .collect();
        let column = |name: &str| {
            header
                .iter()
                .position(|h| h.eq_ignore_ascii_case(name))
                .ok_or_else(|| format!("line 1: no `{name}` column (found {})", header.join(",")))
        };
        let (key, value, level) = (column("key")?, column("value")?, column("level")?);
        let mut levels = HashMap::new();
        for (index, line) in lines.enumerate() {
            let fields: Vec<&str> = line.split(',').map(str::trim).collect();
            let field = |i: usize| fields.get(i).copied().unwrap_or_default();
            if line.trim().is_empty() || field(key) == "rating" {
                continue;
            }
            let code: i64 = field(value).parse().map_err(|_| {
                format!(
                    "line {}: value `{}` is not an integer",
                    index + 2,
                    field(value)
                )
            })?;
            levels.insert((field(key).to_string(), code), field(level).to_string());
        }
        if levels.is_empty() {
            return Err("no quality levels".into());
        }
        Ok(Self { levels })
    }

    /// The level name of `code` for the aspect `key`.
    fn level(&self, key: &str, code: i64) -> Option<&str> {
        self.levels
            .get(&(key.to_string(), code))
            .map(String::as_str)
    }
}

/// A release object of `node` as a lake row object (see the module doc); the error says which
/// key holds what cannot be read. Values are moved, not copied.
pub fn to_lake(node: &Node, object: Value, codes: &Codes) -> Result<Map<String, Value>, String> {
    let Value::Object(mut object) = object else {
        return Err(format!("{} is not an object", node.name));
    };
    let mut out = Map::new();
    for (key, shape) in node.fields {
        if let Shape::Children(_) = shape {
            continue;
        }
        let value = object.remove(*key).unwrap_or(Value::Null);
        let lake = shape_to_lake(shape, value, codes).map_err(|e| format!("{key}: {e}"))?;
        out.insert((*key).to_string(), lake);
    }
    Ok(out)
}

fn shape_to_lake(shape: &Shape, value: Value, codes: &Codes) -> Result<Value, String> {
    if value.is_null() {
        return Ok(Value::Null);
    }
    Ok(match shape {
        Shape::Scalar(scalar) => scalar_to_lake(scalar, value, codes)?,
        Shape::List(_) | Shape::Boxes => value,
        Shape::Objects(node) => Value::Array(
            items(value)?
                .into_iter()
                .map(|item| to_lake(node, item, codes).map(Value::Object))
                .collect::<Result<_, _>>()?,
        ),
        Shape::Dict(node, key) => Value::Array(
            entries(value)?
                .into_iter()
                .map(|(name, item)| {
                    let mut row = to_lake(node, item, codes)?;
                    row.insert((*key).to_string(), Value::String(name));
                    Ok(Value::Object(row))
                })
                .collect::<Result<_, String>>()?,
        ),
        Shape::LevelDict => Value::Array(
            entries(value)?
                .into_iter()
                .map(|(image_id, level)| {
                    let level = level_to_lake(&quality::LOCALIZATION, level, codes)?;
                    Ok(serde_json::json!({"image_id": image_id, "localization_quality": level}))
                })
                .collect::<Result<_, String>>()?,
        ),
        Shape::Optional(node) | Shape::Fixed(node) => Value::Object(to_lake(node, value, codes)?),
        Shape::Variables => Value::Array(
            entries(value)?
                .into_iter()
                .map(|(name, value)| {
                    serde_json::json!({"name": name, "value_json": value.to_string()})
                })
                .collect(),
        ),
        Shape::Pairs([(first, first_scalar), (second, second_scalar)]) => Value::Array(
            items(value)?
                .into_iter()
                .map(|pair| match pair {
                    Value::Array(pair) if pair.len() == 2 => {
                        let mut pair = pair.into_iter();
                        let (a, b) = (pair.next(), pair.next());
                        let mut row = Map::new();
                        row.insert(
                            (*first).to_string(),
                            scalar_to_lake(first_scalar, a.unwrap_or_default(), codes)?,
                        );
                        row.insert(
                            (*second).to_string(),
                            scalar_to_lake(second_scalar, b.unwrap_or_default(), codes)?,
                        );
                        Ok(Value::Object(row))
                    }
                    other => Err(format!("{other} is not a [{first}, {second}] pair")),
                })
                .collect::<Result<_, String>>()?,
        ),
        Shape::QualityWithLocalization(_) => {
            Value::Object(to_lake(&crate::layout::QUALITY, value, codes)?)
        }
        Shape::Tree(node) => {
            let mut flat = Vec::new();
            flatten(node, items(value)?, None, codes, &mut flat)?;
            Value::Array(flat)
        }
        Shape::Children(_) => Value::Null,
    })
}

/// The parts of a [`Shape::Tree`] and their `sub_answers`, depth first, each with the
/// `parent_answer_id` of the part it was nested in.
fn flatten(
    node: &Node,
    parts: Vec<Value>,
    parent: Option<&Value>,
    codes: &Codes,
    out: &mut Vec<Value>,
) -> Result<(), String> {
    let children_key = node
        .fields
        .iter()
        .find(|(_, shape)| matches!(shape, Shape::Children(_)))
        .map(|(key, _)| *key);
    for mut part in parts {
        let children = match (children_key, part.as_object_mut()) {
            (Some(key), Some(object)) => object.remove(key),
            _ => None,
        };
        let mut row = to_lake(node, part, codes)?;
        let id = row.get("answer_id").cloned().unwrap_or(Value::Null);
        row.insert(
            "parent_answer_id".into(),
            parent.cloned().unwrap_or(Value::Null),
        );
        out.push(Value::Object(row));
        if let Some(children) = children.filter(|c| !c.is_null()) {
            flatten(node, items(children)?, Some(&id), codes, out)?;
        }
    }
    Ok(())
}

fn items(value: Value) -> Result<Vec<Value>, String> {
    match value {
        Value::Array(items) => Ok(items),
        other => Err(format!("{} is not a list", short(&other))),
    }
}

fn entries(value: Value) -> Result<Map<String, Value>, String> {
    match value {
        Value::Object(object) => Ok(object),
        other => Err(format!("{} is not an object", short(&other))),
    }
}

fn scalar_to_lake(scalar: &Scalar, value: Value, codes: &Codes) -> Result<Value, String> {
    Ok(match scalar {
        Scalar::Level(aspect) => level_to_lake(aspect, value, codes)?,
        Scalar::Rating => match value.as_str() {
            Some(code) => Value::String(rating(code)?.as_str().to_string()),
            None if value.is_null() => Value::Null,
            None => return Err(format!("rating {} is not a string", short(&value))),
        },
        Scalar::Respelled(respelling) => match value.as_str() {
            Some(text) => Value::String(
                respelling
                    .from_lake
                    .iter()
                    .find(|(_, json)| *json == Some(text))
                    .map_or(text, |(lake, _)| *lake)
                    .to_string(),
            ),
            None => value,
        },
        _ => value,
    })
}

/// A quality value: an integer code through the mappings (a level name is accepted as it is).
fn level_to_lake(aspect: &quality::Aspect, value: Value, codes: &Codes) -> Result<Value, String> {
    if value.is_null() {
        return Ok(Value::Null);
    }
    if let Some(code) = value.as_i64() {
        return codes
            .level(aspect.key, code)
            .map(|name| Value::String(name.to_string()))
            .ok_or_else(|| {
                format!(
                    "unknown {} code {code} (not in quality_mappings.csv)",
                    aspect.key
                )
            });
    }
    match value.as_str() {
        Some(name) if aspect.level(name).is_some() => Ok(value),
        _ => Err(format!("unknown {} value {}", aspect.key, short(&value))),
    }
}

/// A release rating code `<rank>_<grade>` (`4_A`, `0_not rated`, any text after `0_`), or a
/// plain grade.
pub fn rating(code: &str) -> Result<Rating, String> {
    let (rank, grade) = code.split_once('_').unwrap_or(("", code));
    if let Ok(rank) = rank.parse::<i64>() {
        let rating =
            Rating::from_rank(rank).ok_or_else(|| format!("rating code `{code}`: rank {rank}"))?;
        if rating != Rating::NotRated && grade != rating.as_str() {
            return Err(format!("rating code `{code}`: rank and grade disagree"));
        }
        return Ok(rating);
    }
    grade
        .parse::<Rating>()
        .map_err(|_| format!("unknown rating `{code}`"))
}

/// The start of a value, for messages.
fn short(value: &Value) -> String {
    let text = value.to_string();
    match text.char_indices().nth(60) {
        Some((end, _)) => format!("{}…", &text[..end]),
        None => text,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::layout::{ANSWER, QUESTION};

    #[test]
    fn codes_come_from_the_mappings_file() {
        let csv = crate::release::quality_mappings_csv();
        assert_eq!(Codes::parse(&csv).expect("parse"), Codes::builtin());
        let codes =
            Codes::parse("aspect,key,value,level,rating\nX,entailment,7,SEVEN,A\n").expect("parse");
        assert_eq!(codes.level("entailment", 7), Some("SEVEN"));
        let error = Codes::parse("aspect,key,value\nX,entailment,x\n").expect_err("no level");
        assert!(error.contains("no `level` column"), "{error}");
        let error = Codes::parse("key,value,level\nentailment,x,A\n").expect_err("not an integer");
        assert!(error.contains("line 2"), "{error}");
    }

    #[test]
    fn ratings_decode_from_codes_and_grades() {
        assert_eq!(rating("4_A"), Ok(Rating::A));
        assert_eq!(rating("6_A++"), Ok(Rating::APlusPlus));
        assert_eq!(rating("0_not rated"), Ok(Rating::NotRated));
        assert_eq!(rating("0_unrated"), Ok(Rating::NotRated));
        assert_eq!(rating("B"), Ok(Rating::B));
        assert!(rating("4_B").is_err());
        assert!(rating("9_A").is_err());
        assert!(rating("great").is_err());
    }

    #[test]
    fn a_question_decodes_to_lake_fields() {
        let codes = Codes::builtin();
        let question = json!({
            "question_id": "D02_finding_001", "question_type": "D02", "question_strategy": "finding",
            "variables": {"finding": "pleural effusion", "n": 2},
            "obs_ids": ["O01"], "contains_report_answers": true, "contains_template_answers": false,
            "extraction_quality": {"region_extract_quality": 4, "entity_extract_quality": 2,
                "sentence_name_quality": 2, "change_quality": 3, "general_issue_level": -1,
                "localization_quality": 2},
            "question_img_localization_quality": {"img1": 4},
            "question": "Is there a pleural effusion?",
            "answers": [{"answer_id": 0, "answer_type": "main_answer", "answer_level": 0,
                "text": "Yes.", "laterality": "likely_bilateral",
                "modifiers": [["severity", "small"]],
                "localization": {"img1": {"bboxes": [[1, 2, 3, 4]], "localization_reference_ids": [],
                    "missing_localization": [], "is_fallback": false, "localization_quality": 4}},
                "from_report": true, "answer_quality": {"entailment": 3, "rating": "5_A+"},
                "sub_answers": [{"answer_id": 1, "answer_type": "details", "answer_level": 1,
                    "text": "Small.", "from_report": true, "sub_answers": []}]}],
            "question_quality": {"question_clarity": 2, "completeness": 2, "rating": "3_B"},
        });
        let row = to_lake(&QUESTION, question.clone(), &codes).expect("decode");
        assert_eq!(
            row["variables"],
            json!([{"name": "finding", "value_json": "\"pleural effusion\""},
                   {"name": "n", "value_json": "2"}])
        );
        assert_eq!(
            row["extraction_quality"]["general_issue_level"],
            "DISCARDED"
        );
        assert!(
            row["extraction_quality"]
                .get("localization_quality")
                .is_none()
        );
        assert_eq!(
            row["question_img_localization_quality"][0]["image_id"],
            "img1"
        );
        assert_eq!(row["question_quality"]["rating"], "B");
        let answers = row["answers"].as_array().expect("answers");
        assert_eq!(answers.len(), 2);
        assert_eq!(answers[0]["parent_answer_id"], Value::Null);
        assert_eq!(answers[1]["parent_answer_id"], 0);
        assert_eq!(answers[0]["laterality"], "likely bilateral");
        assert_eq!(
            answers[0]["modifiers"],
            json!([{"modifier_type": "severity", "value": "small"}])
        );
        assert_eq!(answers[0]["localization"][0]["image_id"], "img1");
        assert_eq!(answers[0]["answer_quality"]["rating"], "A+");
        assert!(answers[0].get("sub_answers").is_none());

        let mut unknown = question.clone();
        unknown["extraction_quality"]["change_quality"] = json!(42);
        let error = to_lake(&QUESTION, unknown, &codes).expect_err("unknown code");
        assert!(
            error.contains("extraction_quality: change_quality: unknown change_quality code 42"),
            "{error}"
        );
        assert!(to_lake(&ANSWER, json!([1]), &codes).is_err());
    }
}
