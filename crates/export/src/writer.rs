//! Lake rows → release JSON bytes. A layout node ([`crate::layout`]) is bound to one batch's
//! columns once — every field resolved to its column, every type checked — and then applied to
//! each row straight into a byte buffer, with no intermediate `serde_json::Value`.
//!
//! ```text
//! layout::ROOT ─┐                       row ──▶ {"patient_id":…,"observations":{"O01":{…}},…}
//!               ├─ ObjectPlan (per batch) ─┘
//! root Column ──┘
//! ```
//!
//! Keys come out in layout order; dict entries in the order of the lake's lists. A `qa` row's
//! flat answer parts are nested on the way out:
//!
//! ```text
//! answers: [{id 0, parent ∅}, {id 1, parent 0}, {id 2, parent ∅}]
//!   sort by (parent, id) ─▶ ∅:[0, 2]  0:[1]
//!   write ∅'s parts, each with sub_answers = its own parts ─▶ [{0, sub_answers:[{1,…}]}, {2,…}]
//! ```

use std::sync::Arc;

use arrow::array::{ArrayRef, RecordBatch, StructArray};
use cxrlake_schemas::Rating;
use cxrlake_schemas::quality::{self, Aspect, Level};
use serde_json::Value;

use crate::columns::{Column, put};
use crate::error::{ExportError, Result};
use crate::layout::{self, Node, Scalar, Shape};

/// The name of the scene-graph root column in messages.
const ROOT_NAME: &str = "scene_graphs";

/// The name of a question's root column in messages.
const QUESTION_NAME: &str = "qa";

/// A batch's columns named by `node`'s keys as one struct column, in the order of the keys;
/// `table` names the batch in errors.
pub(crate) fn root_column(batch: &RecordBatch, node: &Node, table: &'static str) -> Result<Column> {
    let schema = batch.schema();
    let mut indices = Vec::new();
    let mut missing = Vec::new();
    for key in node.keys() {
        match schema.index_of(key) {
            Ok(index) => indices.push(index),
            Err(_) => missing.push(key),
        }
    }
    if !missing.is_empty() {
        return Err(ExportError::MissingColumns {
            table,
            missing: missing.join(", "),
        });
    }
    let root: ArrayRef = Arc::new(StructArray::from(batch.project(&indices)?));
    Column::new(table, &root)
}

/// The scene-graph root column of a `scene_graphs` batch.
pub(crate) fn scene_graph_column(batch: &RecordBatch) -> Result<Column> {
    root_column(batch, &layout::ROOT, ROOT_NAME)
}

/// The question root column of a `qa` batch (as projected by the QA export).
pub(crate) fn question_column(batch: &RecordBatch) -> Result<Column> {
    root_column(batch, &layout::QUESTION, QUESTION_NAME)
}

/// Writes the rows of one `scene_graphs` batch (see the module doc).
#[derive(Debug)]
pub(crate) struct SceneGraphWriter<'c> {
    root: ObjectPlan<'c>,
    patient_id: Option<&'c Column>,
    study_id: Option<&'c Column>,
}

impl<'c> SceneGraphWriter<'c> {
    /// Binds the layout to `root` (from [`scene_graph_column`]).
    pub fn new(root: &'c Column) -> Result<Self> {
        Ok(Self {
            root: ObjectPlan::new(&layout::ROOT, Some(root), ROOT_NAME)?,
            patient_id: root.child("patient_id"),
            study_id: root.child("study_id"),
        })
    }

    /// The row's patient and study ids.
    pub fn ids(&self, row: usize) -> (Option<&'c str>, Option<&'c str>) {
        let id = |column: Option<&'c Column>| column.and_then(|c| c.str(row));
        (id(self.patient_id), id(self.study_id))
    }

    /// Appends row `row` as one JSON object; the error says what does not fit D.1.
    pub fn write(&self, row: usize, out: &mut Vec<u8>) -> Result<(), String> {
        self.root.write(row, true, out, None)
    }
}

/// Writes the questions of one `qa` batch (see the module doc).
#[derive(Debug)]
pub(crate) struct QuestionWriter<'c> {
    question: ObjectPlan<'c>,
    question_id: Option<&'c Column>,
}

impl<'c> QuestionWriter<'c> {
    /// Binds the layout to `root` (from [`question_column`]).
    pub fn new(root: &'c Column) -> Result<Self> {
        Ok(Self {
            question: ObjectPlan::new(&layout::QUESTION, Some(root), QUESTION_NAME)?,
            question_id: root.child("question_id"),
        })
    }

    /// The row's question id.
    pub fn question_id(&self, row: usize) -> Option<&'c str> {
        self.question_id.and_then(|c| c.str(row))
    }

    /// Appends row `row` as one question object; the error says what does not fit D.2.
    pub fn write(&self, row: usize, out: &mut Vec<u8>) -> Result<(), String> {
        self.question.write(row, true, out, None)
    }
}

/// Writes the children of a tree part (the `sub_answers` of an answer part).
type ChildWriter<'w> = &'w mut dyn FnMut(&mut Vec<u8>) -> Result<(), String>;

/// One object bound to a struct column (absent: every field is null).
#[derive(Debug)]
struct ObjectPlan<'c> {
    node: &'static Node,
    column: Option<&'c Column>,
    fields: Vec<FieldPlan<'c>>,
}

/// One key of an object bound to its column.
#[derive(Debug)]
struct FieldPlan<'c> {
    key: &'static str,
    /// `"key":`, written before the value.
    prefix: String,
    shape: Shape,
    column: Option<&'c Column>,
    /// The object of `Objects`, `Dict`, `Optional`, `Fixed`, `Tree` and
    /// `QualityWithLocalization` shapes.
    object: Option<ObjectPlan<'c>>,
    /// The key column of a `Dict`'s items; `image_id` of a `LevelDict`; `name` of `Variables`;
    /// the first field of `Pairs`; `answer_id` of a `Tree`.
    id: Option<&'c Column>,
    /// `localization_quality` of a `LevelDict`; `value_json` of `Variables`; the second field
    /// of `Pairs`; `parent_answer_id` of a `Tree`.
    value: Option<&'c Column>,
    /// `QualityWithLocalization`: the sibling list and its items' `localization_quality`.
    levels: Option<(&'c Column, Option<&'c Column>)>,
}

fn mismatch(path: &str, column: &Column, expected: &'static str) -> ExportError {
    ExportError::UnsupportedType {
        column: path.to_string(),
        data_type: column.data_type().to_string(),
        expected,
    }
}

/// The item column of a list column.
fn list_items<'c>(column: Option<&'c Column>, path: &str) -> Result<Option<&'c Column>> {
    column
        .map(|c| c.items().ok_or_else(|| mismatch(path, c, "a list")))
        .transpose()
}

/// The item column of a list of structs.
fn struct_items<'c>(column: Option<&'c Column>, path: &str) -> Result<Option<&'c Column>> {
    let items = list_items(column, path)?;
    if let Some(items) = items.filter(|c| !c.is_struct()) {
        return Err(mismatch(path, items, "a list of structs"));
    }
    Ok(items)
}

impl<'c> ObjectPlan<'c> {
    fn new(node: &'static Node, column: Option<&'c Column>, path: &str) -> Result<Self> {
        if let Some(column) = column.filter(|c| !c.is_struct()) {
            return Err(mismatch(path, column, "a struct"));
        }
        let fields = node
            .fields
            .iter()
            .map(|(key, shape)| {
                let child = column.and_then(|c| c.child(key));
                FieldPlan::new(key, *shape, child, column, &format!("{path}.{key}"))
            })
            .collect::<Result<_>>()?;
        Ok(Self {
            node,
            column,
            fields,
        })
    }

    /// Writes the object at `row`; when `present` is false (a null parent) every field is null.
    /// `children` writes a `Children` field (`[]` without it).
    fn write(
        &self,
        row: usize,
        present: bool,
        out: &mut Vec<u8>,
        mut children: Option<ChildWriter<'_>>,
    ) -> Result<(), String> {
        let present = present && self.column.is_some_and(|c| !c.is_null(row));
        out.push(b'{');
        for (n, field) in self.fields.iter().enumerate() {
            if n > 0 {
                out.push(b',');
            }
            out.extend_from_slice(field.prefix.as_bytes());
            match (field.shape, children.as_mut()) {
                (Shape::Children(_), Some(write_children)) if present => write_children(out)?,
                (Shape::Children(_), _) => out.extend_from_slice(b"[]"),
                _ => field.write(row, present, out)?,
            }
        }
        out.push(b'}');
        Ok(())
    }
}

impl<'c> FieldPlan<'c> {
    fn new(
        key: &'static str,
        shape: Shape,
        column: Option<&'c Column>,
        parent: Option<&'c Column>,
        path: &str,
    ) -> Result<Self> {
        let mut plan = Self {
            key,
            prefix: format!("{}:", Value::from(key)),
            shape,
            column,
            object: None,
            id: None,
            value: None,
            levels: None,
        };
        match shape {
            Shape::Scalar(_) | Shape::Children(_) => {}
            Shape::List(_) | Shape::Boxes => {
                list_items(column, path)?;
            }
            Shape::Objects(node) => {
                let items = list_items(column, path)?;
                plan.object = Some(ObjectPlan::new(node, items, path)?);
            }
            Shape::Dict(node, id_key) => {
                let items = list_items(column, path)?;
                plan.object = Some(ObjectPlan::new(node, items, path)?);
                plan.id = items.and_then(|c| c.child(id_key));
            }
            Shape::Optional(node) | Shape::Fixed(node) => {
                plan.object = Some(ObjectPlan::new(node, column, path)?);
            }
            Shape::LevelDict => {
                let items = struct_items(column, path)?;
                plan.id = items.and_then(|c| c.child("image_id"));
                plan.value = items.and_then(|c| c.child("localization_quality"));
            }
            Shape::Variables => {
                let items = struct_items(column, path)?;
                plan.id = items.and_then(|c| c.child("name"));
                plan.value = items.and_then(|c| c.child("value_json"));
            }
            Shape::Pairs([(first, _), (second, _)]) => {
                let items = struct_items(column, path)?;
                plan.id = items.and_then(|c| c.child(first));
                plan.value = items.and_then(|c| c.child(second));
            }
            Shape::QualityWithLocalization(sibling) => {
                plan.object = Some(ObjectPlan::new(&layout::QUALITY, column, path)?);
                let list = parent.and_then(|c| c.child(sibling));
                let items = struct_items(list, path)?;
                plan.levels =
                    list.map(|list| (list, items.and_then(|c| c.child("localization_quality"))));
            }
            Shape::Tree(node) => {
                let items = struct_items(column, path)?;
                plan.object = Some(ObjectPlan::new(node, items, path)?);
                plan.id = items.and_then(|c| c.child("answer_id"));
                plan.value = items.and_then(|c| c.child("parent_answer_id"));
                for (name, id) in [("answer_id", plan.id), ("parent_answer_id", plan.value)] {
                    if let Some(id) = id.filter(|c| !matches!(c, Column::Int(_))) {
                        return Err(mismatch(&format!("{path}.{name}"), id, "an integer"));
                    }
                }
            }
        }
        Ok(plan)
    }

    /// Writes the value at `row` (null when `present` is false), nulls as the layout wants them.
    fn write(&self, row: usize, present: bool, out: &mut Vec<u8>) -> Result<(), String> {
        let column = self.column.filter(|c| present && !c.is_null(row));
        match (self.shape, column, &self.object) {
            (Shape::Scalar(Scalar::Level(aspect)), Some(column), _) => {
                write_level(aspect, column, row, out)?;
            }
            (Shape::Scalar(Scalar::Rating), Some(column), _) => match column.str(row) {
                Some(text) => {
                    let rating: Rating = text.parse().map_err(|e| format!("{e}"))?;
                    put(out, &rating.release_code())?;
                }
                None => column.write_json(row, out)?,
            },
            (Shape::Scalar(Scalar::AnswerId), Some(column), _) => match column.int(row) {
                Some(id) => put(out, &(id + 1))?,
                None => column.write_json(row, out)?,
            },
            (Shape::Scalar(Scalar::Respelled(respelling)), Some(column), _) => {
                match column.str(row).and_then(|value| respelling.respell(value)) {
                    Some(Some(value)) => put(out, value)?,
                    Some(None) => out.extend_from_slice(b"null"),
                    None => column.write_json(row, out)?,
                }
            }
            (Shape::Scalar(_) | Shape::List(_) | Shape::Boxes, Some(column), _) => {
                column.write_json(row, out)?;
            }
            (Shape::Scalar(_) | Shape::Optional(_), None, _) => out.extend_from_slice(b"null"),
            (
                Shape::List(_)
                | Shape::Boxes
                | Shape::Objects(_)
                | Shape::Pairs(_)
                | Shape::Tree(_),
                None,
                _,
            ) => {
                out.extend_from_slice(b"[]");
            }
            (Shape::Dict(..) | Shape::LevelDict | Shape::Variables, None, _) => {
                out.extend_from_slice(b"{}");
            }
            (Shape::Children(_), _, _) => out.extend_from_slice(b"[]"),
            (Shape::Fixed(_), _, Some(object)) => {
                object.write(row, column.is_some(), out, None)?;
            }
            (Shape::Optional(_), Some(_), Some(object)) => object.write(row, true, out, None)?,
            (Shape::Objects(_), Some(column), Some(object)) => {
                out.push(b'[');
                for (n, item) in column.item_range(row).enumerate() {
                    if n > 0 {
                        out.push(b',');
                    }
                    object.write(item, true, out, None)?;
                }
                out.push(b']');
            }
            (Shape::Dict(_, id_key), Some(column), Some(object)) => {
                let mut seen: Vec<&str> = Vec::new();
                out.push(b'{');
                for (n, item) in column.item_range(row).enumerate() {
                    let Some(id) = self.id.and_then(|c| c.str(item)) else {
                        return Err(format!("a {} has no {id_key}", object.node.name));
                    };
                    if seen.contains(&id) {
                        let name = object.node.name;
                        return Err(format!("two {name} entries have {id_key} {id}"));
                    }
                    seen.push(id);
                    if n > 0 {
                        out.push(b',');
                    }
                    put(out, id)?;
                    out.push(b':');
                    object.write(item, true, out, None)?;
                }
                out.push(b'}');
            }
            (Shape::LevelDict, Some(column), _) => {
                let mut seen: Vec<&str> = Vec::new();
                out.push(b'{');
                for (n, item) in column.item_range(row).enumerate() {
                    let Some(image_id) = self.id.and_then(|c| c.str(item)) else {
                        return Err("a per-image localization quality has no image_id".into());
                    };
                    if seen.contains(&image_id) {
                        return Err(format!("image {image_id} has two localization qualities"));
                    }
                    seen.push(image_id);
                    if n > 0 {
                        out.push(b',');
                    }
                    put(out, image_id)?;
                    out.push(b':');
                    match self.value {
                        Some(level) => write_level(&quality::LOCALIZATION, level, item, out)?,
                        None => out.extend_from_slice(b"null"),
                    }
                }
                out.push(b'}');
            }
            (Shape::Variables, Some(column), _) => {
                let mut seen: Vec<&str> = Vec::new();
                out.push(b'{');
                for (n, item) in column.item_range(row).enumerate() {
                    let Some(name) = self.id.and_then(|c| c.str(item)) else {
                        return Err("a variable has no name".into());
                    };
                    if seen.contains(&name) {
                        return Err(format!("variable {name} is bound twice"));
                    }
                    seen.push(name);
                    if n > 0 {
                        out.push(b',');
                    }
                    put(out, name)?;
                    out.push(b':');
                    match self.value.and_then(|c| c.str(item)) {
                        Some(json) => write_json_text(json, out)
                            .map_err(|e| format!("variable {name}: value_json is not JSON: {e}"))?,
                        None => out.extend_from_slice(b"null"),
                    }
                }
                out.push(b'}');
            }
            (Shape::Pairs(_), Some(column), _) => {
                out.push(b'[');
                for (n, item) in column.item_range(row).enumerate() {
                    if n > 0 {
                        out.push(b',');
                    }
                    out.push(b'[');
                    for (m, part) in [self.id, self.value].into_iter().enumerate() {
                        if m > 0 {
                            out.push(b',');
                        }
                        match part {
                            Some(part) => part.write_json(item, out)?,
                            None => out.extend_from_slice(b"null"),
                        }
                    }
                    out.push(b']');
                }
                out.push(b']');
            }
            (Shape::QualityWithLocalization(_), _, Some(object)) => {
                object.write(row, column.is_some(), out, None)?;
                // Reopen the object for the sixth key.
                out.pop();
                out.extend_from_slice(b",\"localization_quality\":");
                match self.worst_level(row, present)? {
                    Some(level) => put(out, &level.value)?,
                    None => out.extend_from_slice(b"null"),
                }
                out.push(b'}');
            }
            (Shape::Tree(_), Some(column), Some(object)) => {
                let parts = TreeParts::new(column, row, self.id, self.value)?;
                let mut written = 0;
                parts.write(None, object, out, &mut written)?;
                if written != parts.len() {
                    return Err(parts.unreachable());
                }
            }
            (
                Shape::Objects(_)
                | Shape::Dict(..)
                | Shape::Optional(_)
                | Shape::Fixed(_)
                | Shape::QualityWithLocalization(_)
                | Shape::Tree(_),
                _,
                None,
            ) => {
                return Err(format!("{} has no object plan", self.key));
            }
        }
        Ok(())
    }

    /// The worst `localization_quality` of the sibling list's items at `row` (table 11 order).
    fn worst_level(&self, row: usize, present: bool) -> Result<Option<&'static Level>, String> {
        let Some((list, levels)) = self
            .levels
            .filter(|(list, _)| present && !list.is_null(row))
        else {
            return Ok(None);
        };
        let mut worst: Option<&'static Level> = None;
        for item in list.item_range(row) {
            let Some(name) = levels.and_then(|c| c.str(item)) else {
                continue;
            };
            let level = level_named(&quality::LOCALIZATION, name)?;
            worst = Some(worst.map_or(level, |w| if level.value < w.value { level } else { w }));
        }
        Ok(worst)
    }
}

/// `aspect`'s level called `name`; the error lists the valid names.
fn level_named(aspect: &'static Aspect, name: &str) -> Result<&'static Level, String> {
    aspect.level(name).ok_or_else(|| {
        let names: Vec<_> = aspect.names().collect();
        format!(
            "{name} is not a {} level; valid levels are {}",
            aspect.key,
            names.join(", ")
        )
    })
}

/// Appends the release value (an integer) of the `aspect` level named at `row` of `column`;
/// null stays null.
fn write_level(
    aspect: &'static Aspect,
    column: &Column,
    row: usize,
    out: &mut Vec<u8>,
) -> Result<(), String> {
    match column.str(row) {
        Some(name) => put(out, &level_named(aspect, name)?.value),
        None => column.write_json(row, out),
    }
}

/// Appends `text`, a JSON value stored as text, compactly (checked; reserialised only if it
/// spans lines).
fn write_json_text(text: &str, out: &mut Vec<u8>) -> Result<(), String> {
    let text = text.trim();
    serde_json::from_str::<serde::de::IgnoredAny>(text).map_err(|e| e.to_string())?;
    if text.bytes().any(|b| b == b'\n' || b == b'\r') {
        let value: Value = serde_json::from_str(text).map_err(|e| e.to_string())?;
        put(out, &value)
    } else {
        out.extend_from_slice(text.as_bytes());
        Ok(())
    }
}

/// One part of a [`TreeParts`].
#[derive(Debug, Clone, Copy)]
struct TreePart {
    parent: Option<i64>,
    id: i64,
    item: usize,
}

/// A row's flat answer parts sorted by `(parent_answer_id, answer_id)`, so each part's children
/// are one run (top-level parts, with no parent, first).
#[derive(Debug)]
struct TreeParts {
    parts: Vec<TreePart>,
}

impl TreeParts {
    fn new(
        column: &Column,
        row: usize,
        ids: Option<&Column>,
        parents: Option<&Column>,
    ) -> Result<Self, String> {
        let range = column.item_range(row);
        let mut parts = Vec::with_capacity(range.len());
        for item in range {
            let Some(id) = ids.and_then(|c| c.int(item)) else {
                return Err("an answer part has no answer_id".into());
            };
            let parent = parents.and_then(|c| c.int(item));
            parts.push(TreePart { parent, id, item });
        }
        let mut ids: Vec<i64> = parts.iter().map(|p| p.id).collect();
        ids.sort_unstable();
        if let Some(pair) = ids.windows(2).find(|pair| pair[0] == pair[1]) {
            return Err(format!("two answer parts have answer_id {}", pair[0]));
        }
        parts.sort_unstable_by_key(|p| (p.parent, p.id));
        Ok(Self { parts })
    }

    fn len(&self) -> usize {
        self.parts.len()
    }

    /// Writes the children of `parent` (top-level parts for `None`) as a list, each with its own
    /// children; counts the parts written.
    fn write(
        &self,
        parent: Option<i64>,
        object: &ObjectPlan<'_>,
        out: &mut Vec<u8>,
        written: &mut usize,
    ) -> Result<(), String> {
        let start = self.parts.partition_point(|p| p.parent < parent);
        let end = self.parts.partition_point(|p| p.parent <= parent);
        out.push(b'[');
        for (n, part) in self.parts[start..end].iter().enumerate() {
            if n > 0 {
                out.push(b',');
            }
            *written += 1;
            let mut children =
                |out: &mut Vec<u8>| self.write(Some(part.id), object, out, &mut *written);
            object.write(part.item, true, out, Some(&mut children))?;
        }
        out.push(b']');
        Ok(())
    }

    /// Why some parts were not written: their parent is missing (or they form a cycle).
    fn unreachable(&self) -> String {
        let ids: Vec<i64> = self.parts.iter().map(|p| p.id).collect();
        let orphans: Vec<String> = self
            .parts
            .iter()
            .filter(|p| p.parent.is_some_and(|parent| !ids.contains(&parent)))
            .map(|p| p.id.to_string())
            .collect();
        if orphans.is_empty() {
            "answer parts form a cycle of parent_answer_id".into()
        } else {
            format!(
                "answer parts {} have a parent_answer_id that is no answer_id of the question",
                orphans.join(", ")
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use arrow::datatypes::{DataType, Field, Schema};
    use serde_json::json;

    use super::*;

    fn batch(rows: &[Value]) -> RecordBatch {
        let text: Vec<String> = rows.iter().map(Value::to_string).collect();
        let text = text.join("\n");
        let schema = cxrlake_schemas::pipeline::scene_graphs();
        let mut reader = arrow::json::ReaderBuilder::new(schema)
            .build(text.as_bytes())
            .expect("reader");
        reader.next().expect("a batch").expect("decoded")
    }

    fn row(regions: Value) -> Value {
        json!({
            "patient_id": "p10000032", "study_id": "s50414267",
            "observations": [{"obs_id": "O01", "child_level": 0, "modifiers": null}],
            "regions": regions,
            "study_img_localization_quality": [
                {"image_id": "a", "localization_quality": "BOX_LOCALIZATION"}
            ],
            "extractor": "rules", "embedder": "lexical"
        })
    }

    fn written(batch: &RecordBatch, row: usize) -> Result<Value, String> {
        let root = scene_graph_column(batch).map_err(|e| e.to_string())?;
        let writer = SceneGraphWriter::new(&root).map_err(|e| e.to_string())?;
        let mut out = Vec::new();
        writer.write(row, &mut out)?;
        Ok(serde_json::from_slice(&out).expect("valid JSON"))
    }

    #[test]
    fn lists_keyed_by_id_become_dicts_and_nulls_become_empty() {
        let value = written(&batch(&[row(json!([]))]), 0).expect("write");
        let observation = &value["observations"]["O01"];
        assert_eq!(
            observation["modifiers"],
            json!({"severity": [], "texture": [], "spread": [], "temporal": []})
        );
        assert_eq!(observation["localization"], json!({}));
        // Quality levels are written as their values (table 11: BOX_LOCALIZATION = 3).
        assert_eq!(value["study_img_localization_quality"], json!({"a": 3}));
        assert_eq!(value["indication"], Value::Null);
        assert_eq!(value["sentences"], json!([]));
        assert_eq!(value["regions"], json!({}));
    }

    #[test]
    fn a_repeated_dict_key_is_an_error() {
        let twice = json!([{"region": "heart"}, {"region": "heart"}]);
        let err = written(&batch(&[row(twice)]), 0).expect_err("duplicate");
        assert_eq!(err, "two region entries have region heart");
    }

    #[test]
    fn a_column_of_the_wrong_type_is_refused() {
        let batch = batch(&[row(json!([]))]);
        let index = batch.schema().index_of("regions").expect("regions");
        let mut columns = batch.columns().to_vec();
        columns[index] = Arc::new(arrow::array::StringArray::from(vec!["heart"]));
        let mut fields: Vec<_> = batch.schema().fields().iter().cloned().collect();
        fields[index] = Arc::new(Field::new("regions", DataType::Utf8, true));
        let wrong = RecordBatch::try_new(Arc::new(Schema::new(fields)), columns).expect("batch");
        let err = written(&wrong, 0).expect_err("wrong type");
        assert!(
            err.contains("scene_graphs.regions has type Utf8, expected a list"),
            "{err}"
        );
    }

    fn qa_batch(rows: &[Value]) -> RecordBatch {
        let text: Vec<String> = rows.iter().map(Value::to_string).collect();
        let text = text.join("\n");
        let schema = cxrlake_schemas::pipeline::qa();
        let mut reader = arrow::json::ReaderBuilder::new(schema)
            .build(text.as_bytes())
            .expect("reader");
        reader.next().expect("a batch").expect("decoded")
    }

    fn part(answer_id: i64, parent: Option<i64>, level: i32) -> Value {
        json!({
            "answer_id": answer_id, "parent_answer_id": parent, "answer_level": level,
            "answer_type": if level == 0 { "main_answer" } else { "details" },
            "text": format!("part {answer_id}"), "from_report": true,
            "regions": ["left lung"], "modifiers": [{"modifier_type": "severity", "value": "small"}],
            "localization": [{
                "image_id": "img1", "bboxes": [[1.0, 2.0, 3.0, 4.0]],
                "localization_reference_ids": ["left lung"], "missing_localization": [],
                "is_fallback": true, "localization_quality": "FALLBACK_LOCALIZATION"
            }]
        })
    }

    fn question(answers: Value) -> Value {
        json!({
            "patient_id": "p10000032", "study_id": "s50414267",
            "question_id": "D02_has_finding_001", "question_type": "D02_has_finding",
            "question_strategy": "finding",
            "variables": [{"name": "finding", "value_json": "\"pneumonia\""},
                          {"name": "regions", "value_json": "[\n\"left lung\"]"}],
            "obs_ids": ["O01"], "contains_report_answers": true,
            "contains_template_answers": false,
            "extraction_quality": null,
            "question_img_localization_quality": [
                {"image_id": "img1", "localization_quality": "BOX_AND_MASK_LOCALIZATION"},
                {"image_id": "img2", "localization_quality": "FALLBACK_LOCALIZATION"}
            ],
            "question": "Is there any indication of pneumonia?",
            "answers": answers,
            "question_quality": {"question_clarity": "OPTIMAL", "rating": "not rated"},
            "extractor": "rules", "embedder": "lexical"
        })
    }

    fn written_question(row: Value) -> Result<Value, String> {
        let batch = qa_batch(&[row]);
        let root = question_column(&batch).map_err(|e| e.to_string())?;
        let writer = QuestionWriter::new(&root).map_err(|e| e.to_string())?;
        let mut out = Vec::new();
        writer.write(0, &mut out)?;
        Ok(serde_json::from_slice(&out).expect("valid JSON"))
    }

    #[test]
    fn flat_answer_parts_are_nested_in_answer_id_order() {
        let mut child = part(1, Some(0), 1);
        child["laterality"] = json!("likely bilateral");
        let answers = json!([
            part(2, None, 0),
            child,
            part(0, None, 0),
            part(3, Some(1), 2)
        ]);
        let value = written_question(question(answers)).expect("write");
        let ids = |parts: &Value| -> Vec<i64> {
            parts
                .as_array()
                .expect("list")
                .iter()
                .map(|p| p["answer_id"].as_i64().expect("id"))
                .collect()
        };
        let answers = &value["answers"];
        // 1-based in the release (the lake's 0, 2, 1, 3).
        assert_eq!(ids(answers), [1, 3]);
        assert_eq!(ids(&answers[0]["sub_answers"]), [2]);
        assert_eq!(ids(&answers[0]["sub_answers"][0]["sub_answers"]), [4]);
        assert_eq!(answers[1]["sub_answers"], json!([]));
        let child = &answers[0]["sub_answers"][0];
        assert_eq!(child["laterality"], json!("likely_bilateral"));
        assert_eq!(child["modifiers"], json!([["severity", "small"]]));
        assert_eq!(
            child["localization"],
            json!({"img1": {"bboxes": [[1.0, 2.0, 3.0, 4.0]],
                            "localization_reference_ids": ["left lung"],
                            "missing_localization": [], "is_fallback": true,
                            "localization_quality": 1}})
        );
        // The worst of the part's images: FALLBACK_LOCALIZATION (1).
        assert_eq!(
            child["extraction_quality"]["localization_quality"],
            json!(1)
        );
        assert_eq!(
            child["answer_quality"],
            json!({"entailment": null, "relevance": null, "answer_clarity": null, "rating": null})
        );
        assert_eq!(
            value["variables"],
            json!({"finding": "pneumonia", "regions": ["left lung"]})
        );
        assert_eq!(
            value["extraction_quality"],
            json!({"region_extract_quality": null, "entity_extract_quality": null,
                   "sentence_name_quality": null, "change_quality": null,
                   "general_issue_level": null, "localization_quality": 1})
        );
        assert_eq!(
            value["question_quality"],
            json!({"question_clarity": 2, "completeness": null, "rating": "0_not rated"})
        );
        let deviations = crate::validate_qa(&json!({
            "patient_id": "p10000032", "study_id": "s50414267", "questions": [value]
        }));
        assert_eq!(deviations, Vec::<String>::new());
    }

    #[test]
    fn levels_and_ratings_take_their_release_codes() {
        let mut row = question(json!([part(0, None, 0)]));
        row["question_quality"] = json!({"completeness": "DETAILS_MISSING", "rating": "A+"});
        row["answers"][0]["answer_quality"] = json!({"entailment": "NON_ALIGNED_CONTRADICTING", "relevance": "REDUNDANT_INFO",
                   "rating": "D"});
        let value = written_question(row).expect("write");
        assert_eq!(
            value["question_quality"],
            json!({"question_clarity": null, "completeness": 1, "rating": "5_A+"})
        );
        assert_eq!(
            value["answers"][0]["answer_quality"],
            json!({"entailment": -3, "relevance": -1, "answer_clarity": null, "rating": "1_D"})
        );

        let mut unknown = question(json!([part(0, None, 0)]));
        unknown["question_quality"] = json!({"question_clarity": "CLEAR"});
        let err = written_question(unknown).expect_err("unknown level");
        assert!(
            err.starts_with("CLEAR is not a question_clarity level; valid levels are UNANSWERABLE"),
            "{err}"
        );
        let mut bad = question(json!([part(0, None, 0)]));
        bad["question_quality"] = json!({"rating": "E"});
        let err = written_question(bad).expect_err("not a rating");
        assert!(err.starts_with("'E' is not a rating"), "{err}");
    }

    #[test]
    fn broken_hierarchies_are_refused() {
        let orphan = json!([part(0, None, 0), part(1, Some(7), 1)]);
        let err = written_question(question(orphan)).expect_err("orphan");
        assert_eq!(
            err,
            "answer parts 1 have a parent_answer_id that is no answer_id of the question"
        );
        let cycle = json!([part(0, None, 0), part(1, Some(2), 1), part(2, Some(1), 1)]);
        let err = written_question(question(cycle)).expect_err("cycle");
        assert_eq!(err, "answer parts form a cycle of parent_answer_id");
        let twice = json!([part(0, None, 0), part(0, None, 0)]);
        let err = written_question(question(twice)).expect_err("duplicate");
        assert_eq!(err, "two answer parts have answer_id 0");

        let mut bad = question(json!([part(0, None, 0)]));
        bad["variables"] = json!([{"name": "finding", "value_json": "pneumonia"}]);
        let err = written_question(bad).expect_err("not JSON");
        assert!(
            err.starts_with("variable finding: value_json is not JSON"),
            "{err}"
        );
    }
}
