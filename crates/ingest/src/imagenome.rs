//! Chest ImaGenome silver scene graphs (`<dicom_id>_SceneGraph.json`, in a folder or a zip):
//! one `imagenome_boxes` row per object, from `bbox_name` and `original_x1..original_y2`
//! (original pixels), clamped to the image size from the metadata (`clamped` says so), with the
//! attribute labels and phrases of the scene graph's `attributes` entry for the same `bbox_name`.
//! An inverted box (x2 < x1 or y2 < y1) is quarantined: clamping cannot say which corner is
//! wrong.
//!
//! ImaGenome's `original_width`/`original_height` are the *box's* size, not the image's, so
//! when the metadata does not know the image, boxes are only clamped at 0.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use arrow::array::{ArrayRef, BooleanBuilder, ListBuilder, RecordBatch, StringBuilder};
use serde::Deserialize;
use serde_json::Value;

use crate::boxes::box_column;
use crate::discover::InputFile;
use crate::error::Result;
use crate::ids;
use crate::jpg_csv::ImageInfo;
use crate::quarantine::{Quarantined, Target};
use crate::writer::{Row, Unit, content_hash};

/// One `imagenome_boxes` row.
#[derive(Debug, Clone, PartialEq)]
pub struct BoxRow {
    /// DICOM id.
    pub image_id: String,
    /// `p…`.
    pub patient_id: String,
    /// `s…`.
    pub study_id: String,
    /// ImaGenome bbox name (`right lung`).
    pub bbox_name: String,
    /// `[x1, y1, x2, y2]` in original pixels, clamped.
    pub bbox: [f32; 4],
    /// Whether clamping moved the box.
    pub clamped: bool,
    /// Attribute labels (`anatomicalfinding|yes|lung opacity`), deduplicated, in file order.
    pub attributes: Vec<String>,
    /// Report phrases the attributes come from.
    pub phrases: Vec<String>,
    /// Path of the scene graph within its input.
    pub source_path: String,
}

impl Row for BoxRow {
    const TABLE: &'static str = "imagenome_boxes";

    fn key(&self) -> String {
        self.image_id.clone()
    }

    fn approx_bytes(&self) -> usize {
        160 + self.source_path.len()
            + self.attributes.iter().map(String::len).sum::<usize>()
            + self.phrases.iter().map(String::len).sum::<usize>()
    }

    fn batch(rows: &[Self]) -> Result<RecordBatch> {
        let mut image_id = StringBuilder::new();
        let mut patient_id = StringBuilder::new();
        let mut study_id = StringBuilder::new();
        let mut bbox_name = StringBuilder::new();
        let mut clamped = BooleanBuilder::new();
        let mut attributes = ListBuilder::new(StringBuilder::new());
        let mut phrases = ListBuilder::new(StringBuilder::new());
        let mut source_path = StringBuilder::new();
        for row in rows {
            image_id.append_value(&row.image_id);
            patient_id.append_value(&row.patient_id);
            study_id.append_value(&row.study_id);
            bbox_name.append_value(&row.bbox_name);
            clamped.append_value(row.clamped);
            attributes.append_value(row.attributes.iter().map(Some));
            phrases.append_value(row.phrases.iter().map(Some));
            source_path.append_value(&row.source_path);
        }
        let columns: Vec<ArrayRef> = vec![
            Arc::new(image_id.finish()),
            Arc::new(patient_id.finish()),
            Arc::new(study_id.finish()),
            Arc::new(bbox_name.finish()),
            box_column(rows.iter().map(|r| Some(r.bbox))),
            Arc::new(clamped.finish()),
            Arc::new(attributes.finish()),
            Arc::new(phrases.finish()),
            Arc::new(source_path.finish()),
        ];
        Ok(RecordBatch::try_new(
            cxrlake_schemas::sources::imagenome_boxes(),
            columns,
        )?)
    }
}

#[derive(Debug, Deserialize)]
struct SceneGraph {
    image_id: Option<String>,
    patient_id: Option<Value>,
    study_id: Option<Value>,
    #[serde(default)]
    objects: Vec<Value>,
    #[serde(default)]
    attributes: Vec<Value>,
}

/// Attribute labels and phrases of one box.
#[derive(Debug, Default)]
struct BoxAttributes {
    labels: Vec<String>,
    phrases: Vec<String>,
}

/// The scene graph's `attributes` entries by `bbox_name`: `attributes` is a list (one per phrase)
/// of label lists, flattened and deduplicated here. An entry of the wrong shape is quarantined.
fn box_attributes(
    entries: &[Value],
    reject: impl Fn(String, String, &Value) -> Quarantined,
    quarantined: &mut Vec<Quarantined>,
) -> HashMap<String, BoxAttributes> {
    let strings = |value: Option<&Value>| -> Option<Vec<String>> {
        value
            .unwrap_or(&Value::Array(Vec::new()))
            .as_array()?
            .iter()
            .map(|v| v.as_str().map(str::to_string))
            .collect()
    };
    let mut by_box: HashMap<String, BoxAttributes> = HashMap::new();
    for (index, entry) in entries.iter().enumerate() {
        let location = format!("attributes[{index}]");
        let Some(name) = entry.get("bbox_name").and_then(Value::as_str) else {
            quarantined.push(reject(
                location,
                "attribute entry has no bbox_name".into(),
                entry,
            ));
            continue;
        };
        let labels: Option<Vec<Vec<String>>> = entry
            .get("attributes")
            .unwrap_or(&Value::Array(Vec::new()))
            .as_array()
            .and_then(|lists| lists.iter().map(|list| strings(Some(list))).collect());
        let (Some(labels), Some(phrases)) = (labels, strings(entry.get("phrases"))) else {
            quarantined.push(reject(
                location,
                format!("attributes of '{name}' are not lists of strings"),
                entry,
            ));
            continue;
        };
        let target = by_box.entry(name.to_string()).or_default();
        for label in labels.into_iter().flatten() {
            if !target.labels.contains(&label) {
                target.labels.push(label);
            }
        }
        target.phrases.extend(phrases);
    }
    by_box
}

fn id_text(value: &Option<Value>) -> String {
    match value {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Number(n)) => n.to_string(),
        _ => String::new(),
    }
}

/// `<dicom_id>` from `…/<dicom_id>_SceneGraph.json`.
fn image_id_of(file: &InputFile) -> &str {
    let name = file.file_name();
    let cut = name.len().saturating_sub("_SceneGraph.json".len());
    name.get(..cut).unwrap_or(name)
}

/// Parses one scene graph file; `images` gives ids and sizes from the metadata.
pub fn parse(
    file: &InputFile,
    bytes: &[u8],
    images: &HashMap<String, ImageInfo>,
) -> std::result::Result<Unit<BoxRow>, Quarantined> {
    let source = file.source();
    let whole = |location: String, reason: String| {
        Quarantined::new(
            Target::ImagenomeBoxes,
            &source,
            location,
            reason,
            bytes.to_vec(),
        )
    };
    let graph: SceneGraph = serde_json::from_slice(bytes).map_err(|e| {
        whole(
            format!("line {}, column {}", e.line(), e.column()),
            crate::quarantine::json_reason(&e, "a Chest ImaGenome scene graph"),
        )
    })?;
    let image_id = image_id_of(file).to_string();
    if !ids::is_dicom_id(&image_id) {
        return Err(whole(
            "file".into(),
            format!(
                "invalid dicom id '{image_id}' in the file name: expected five dash-separated hex groups"
            ),
        ));
    }
    if let Some(inside) = &graph.image_id
        && *inside != image_id
    {
        return Err(whole(
            "image_id".into(),
            format!("image_id '{inside}' disagrees with the file name's '{image_id}'"),
        ));
    }
    let known = images.get(&image_id);
    let (patient_id, study_id) = match known {
        Some(info) => (info.patient_id.clone(), info.study_id.clone()),
        None => {
            let (patient, study) = (id_text(&graph.patient_id), id_text(&graph.study_id));
            match (ids::patient_id(&patient), ids::study_id(&study)) {
                (Some(p), Some(s)) => (p, s),
                _ => {
                    return Err(whole(
                        "patient_id/study_id".into(),
                        format!(
                            "invalid patient_id '{patient}' or study_id '{study}': expected 8 digits"
                        ),
                    ));
                }
            }
        }
    };
    let size = known.and_then(|info| match (info.columns, info.rows) {
        (Some(w), Some(h)) => Some((w as u32, h as u32)),
        _ => None,
    });
    let mut unit = Unit {
        key: image_id.clone(),
        content: content_hash(bytes),
        rows: Vec::with_capacity(graph.objects.len()),
        quarantined: Vec::new(),
    };
    let mut attributes = box_attributes(
        &graph.attributes,
        |location, reason, raw| {
            Quarantined::new(
                Target::ImagenomeBoxes,
                &source,
                location,
                reason,
                serde_json::to_vec(raw).unwrap_or_default(),
            )
        },
        &mut unit.quarantined,
    );
    let mut names = HashSet::new();
    for (index, object) in graph.objects.iter().enumerate() {
        let location = format!("objects[{index}]");
        let reject = |reason: String| {
            Quarantined::new(
                Target::ImagenomeBoxes,
                &source,
                &location,
                reason,
                serde_json::to_vec(object).unwrap_or_default(),
            )
        };
        let Some(name) = object.get("bbox_name").and_then(Value::as_str) else {
            unit.quarantined
                .push(reject("object has no bbox_name".into()));
            continue;
        };
        let coordinate = |key: &str| object.get(key).and_then(Value::as_f64);
        let coords = [
            coordinate("original_x1"),
            coordinate("original_y1"),
            coordinate("original_x2"),
            coordinate("original_y2"),
        ];
        let [Some(x1), Some(y1), Some(x2), Some(y2)] = coords else {
            unit.quarantined.push(reject(format!(
                "object '{name}' lacks numeric original_x1/original_y1/original_x2/original_y2"
            )));
            continue;
        };
        if !names.insert(name.to_string()) {
            unit.quarantined.push(reject(format!(
                "duplicate bbox_name '{name}' in the scene graph"
            )));
            continue;
        }
        let raw = [x1 as f32, y1 as f32, x2 as f32, y2 as f32];
        if x2 < x1 || y2 < y1 {
            unit.quarantined.push(reject(format!(
                "object '{name}' has an inverted box [{x1}, {y1}, {x2}, {y2}] (x2 < x1 or \
                 y2 < y1)"
            )));
            continue;
        }
        let (bbox, clamped) = match size {
            Some((width, height)) => cxrlake_masks::box_clamp(raw, width, height),
            None => {
                let floored = raw.map(|v| v.max(0.0));
                (floored, floored != raw)
            }
        };
        let BoxAttributes { labels, phrases } = attributes.remove(name).unwrap_or_default();
        unit.rows.push(BoxRow {
            image_id: image_id.clone(),
            patient_id: patient_id.clone(),
            study_id: study_id.clone(),
            bbox_name: name.to_string(),
            bbox,
            clamped,
            attributes: labels,
            phrases,
            source_path: file.rel_path.clone(),
        });
    }
    Ok(unit)
}
