//! `scene_graphs` rows → D.1 JSON bytes. The layout ([`crate::layout`]) is bound to one batch's
//! columns once — every field resolved to its column, every type checked — and then applied to
//! each row straight into a byte buffer, with no intermediate `serde_json::Value`.
//!
//! ```text
//! layout::ROOT ─┐                       row ──▶ {"patient_id":…,"observations":{"O01":{…}},…}
//!               ├─ ObjectPlan (per batch) ─┘
//! root Column ──┘
//! ```
//!
//! Keys come out in D.1 order; dict entries in the order of the lake's lists.

use std::sync::Arc;

use arrow::array::{ArrayRef, RecordBatch, StructArray};
use serde_json::Value;

use crate::columns::{Column, put};
use crate::error::{ExportError, Result};
use crate::layout::{self, Node, Shape};

/// The name of the root column in messages.
const ROOT_NAME: &str = "scene_graphs";

/// A batch's columns as one struct column, in the order of the layout's root keys.
pub(crate) fn root_column(batch: &RecordBatch) -> Result<Column> {
    let schema = batch.schema();
    let mut indices = Vec::new();
    let mut missing = Vec::new();
    for key in layout::ROOT.keys() {
        match schema.index_of(key) {
            Ok(index) => indices.push(index),
            Err(_) => missing.push(key),
        }
    }
    if !missing.is_empty() {
        return Err(ExportError::MissingColumns {
            missing: missing.join(", "),
        });
    }
    let root: ArrayRef = Arc::new(StructArray::from(batch.project(&indices)?));
    Column::new(ROOT_NAME, &root)
}

/// Writes the rows of one batch (see the module doc).
#[derive(Debug)]
pub(crate) struct SceneGraphWriter<'c> {
    root: ObjectPlan<'c>,
    patient_id: Option<&'c Column>,
    study_id: Option<&'c Column>,
}

impl<'c> SceneGraphWriter<'c> {
    /// Binds the layout to `root` (from [`root_column`]).
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
        self.root.write(row, true, out)
    }
}

/// One D.1 object bound to a struct column (absent: every field is null).
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
    /// The object of `Objects`, `Dict`, `Optional` and `Fixed` shapes.
    object: Option<ObjectPlan<'c>>,
    /// The key column of a `Dict`'s items; `image_id` of a `LevelDict`.
    id: Option<&'c Column>,
    /// `localization_quality` of a `LevelDict`.
    level: Option<&'c Column>,
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
                FieldPlan::new(key, *shape, child, &format!("{path}.{key}"))
            })
            .collect::<Result<_>>()?;
        Ok(Self {
            node,
            column,
            fields,
        })
    }

    /// Writes the object at `row`; when `present` is false (a null parent) every field is null.
    fn write(&self, row: usize, present: bool, out: &mut Vec<u8>) -> Result<(), String> {
        let present = present && self.column.is_some_and(|c| !c.is_null(row));
        out.push(b'{');
        for (n, field) in self.fields.iter().enumerate() {
            if n > 0 {
                out.push(b',');
            }
            out.extend_from_slice(field.prefix.as_bytes());
            field.write(row, present, out)?;
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
        path: &str,
    ) -> Result<Self> {
        let mut plan = Self {
            key,
            prefix: format!("{}:", Value::from(key)),
            shape,
            column,
            object: None,
            id: None,
            level: None,
        };
        match shape {
            Shape::Scalar(_) => {}
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
                let items = list_items(column, path)?;
                if let Some(items) = items.filter(|c| !c.is_struct()) {
                    return Err(mismatch(path, items, "a list of structs"));
                }
                plan.id = items.and_then(|c| c.child("image_id"));
                plan.level = items.and_then(|c| c.child("localization_quality"));
            }
        }
        Ok(plan)
    }

    /// Writes the value at `row` (null when `present` is false), nulls as D.1 wants them.
    fn write(&self, row: usize, present: bool, out: &mut Vec<u8>) -> Result<(), String> {
        let column = self.column.filter(|c| present && !c.is_null(row));
        match (self.shape, column, &self.object) {
            (Shape::Scalar(_) | Shape::List(_) | Shape::Boxes, Some(column), _) => {
                column.write_json(row, out)?;
            }
            (Shape::Scalar(_) | Shape::Optional(_), None, _) => out.extend_from_slice(b"null"),
            (Shape::List(_) | Shape::Boxes | Shape::Objects(_), None, _) => {
                out.extend_from_slice(b"[]");
            }
            (Shape::Dict(..) | Shape::LevelDict, None, _) => out.extend_from_slice(b"{}"),
            (Shape::Fixed(_), _, Some(object)) => object.write(row, column.is_some(), out)?,
            (Shape::Optional(_), Some(_), Some(object)) => object.write(row, true, out)?,
            (Shape::Objects(_), Some(column), Some(object)) => {
                out.push(b'[');
                for (n, item) in column.item_range(row).enumerate() {
                    if n > 0 {
                        out.push(b',');
                    }
                    object.write(item, true, out)?;
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
                    object.write(item, true, out)?;
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
                    match self.level {
                        Some(level) => level.write_json(item, out)?,
                        None => out.extend_from_slice(b"null"),
                    }
                }
                out.push(b'}');
            }
            (
                Shape::Objects(_) | Shape::Dict(..) | Shape::Optional(_) | Shape::Fixed(_),
                _,
                None,
            ) => {
                return Err(format!("{} has no object plan", self.key));
            }
        }
        Ok(())
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
        let root = root_column(batch).map_err(|e| e.to_string())?;
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
        assert_eq!(
            value["study_img_localization_quality"],
            json!({"a": "BOX_LOCALIZATION"})
        );
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
}
