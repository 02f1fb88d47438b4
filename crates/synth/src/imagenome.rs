//! Chest ImaGenome silver scene graphs (`imagenome/scene_graph/<dicom_id>_SceneGraph.json`).
//!
//! Objects carry the 29 canonical ImaGenome boxes in original pixels (`original_*`) and in the
//! 224x224 frame (`x1..y2`: the image scaled by `224 / max(w, h)` and centred with padding).
//! `original_x2 = original_x1 + original_width`, matching the CXAS mask box `[x, y, w, h]` of
//! the same structure. About 1% of images carry one box that runs past the image border, as in
//! the real silver dataset. `synsets` and `attributes_ids` are left empty (no UMLS ids are made up).

use std::collections::BTreeMap;

use rand::Rng;
use serde::Serialize;

use crate::anatomy::Anatomy;
use crate::truth::{Positiveness, StudyTruth};
use crate::vocab;

/// The 29 canonical Chest ImaGenome bbox names, in the usual index order.
pub const BBOX_NAMES: [&str; 29] = [
    "right lung",
    "right upper lung zone",
    "right mid lung zone",
    "right lower lung zone",
    "right hilar structures",
    "right apical zone",
    "right costophrenic angle",
    "right hemidiaphragm",
    "left lung",
    "left upper lung zone",
    "left mid lung zone",
    "left lower lung zone",
    "left hilar structures",
    "left apical zone",
    "left costophrenic angle",
    "left hemidiaphragm",
    "trachea",
    "spine",
    "right clavicle",
    "left clavicle",
    "aortic arch",
    "mediastinum",
    "upper mediastinum",
    "svc",
    "cardiac silhouette",
    "cavoatrial junction",
    "right atrium",
    "carina",
    "abdomen",
];

/// Anatomy structure (CXAS label or `ig:` name) each ImaGenome box is drawn from.
pub const BBOX_STRUCTURES: [(&str, &str); 29] = [
    ("right lung", "right lung"),
    ("right upper lung zone", "right upper zone lung"),
    ("right mid lung zone", "right mid zone lung"),
    ("right lower lung zone", "right lung base"),
    ("right hilar structures", "ig:right hilar structures"),
    ("right apical zone", "right apical zone lung"),
    ("right costophrenic angle", "ig:right costophrenic angle"),
    ("right hemidiaphragm", "right hemidiaphragm"),
    ("left lung", "left lung"),
    ("left upper lung zone", "left upper zone lung"),
    ("left mid lung zone", "left mid zone lung"),
    ("left lower lung zone", "left lung base"),
    ("left hilar structures", "ig:left hilar structures"),
    ("left apical zone", "left apical zone lung"),
    ("left costophrenic angle", "ig:left costophrenic angle"),
    ("left hemidiaphragm", "left hemidiaphragm"),
    ("trachea", "trachea"),
    ("spine", "thoracic spine"),
    ("right clavicle", "clavicle right"),
    ("left clavicle", "clavicle left"),
    ("aortic arch", "aortic arch"),
    ("mediastinum", "cardiomediastinum"),
    ("upper mediastinum", "upper mediastinum"),
    ("svc", "ig:svc"),
    ("cardiac silhouette", "heart"),
    ("cavoatrial junction", "ig:cavoatrial junction"),
    ("right atrium", "heart atrium right"),
    ("carina", "tracheal bifurcation"),
    ("abdomen", "ig:abdomen"),
];

/// One box in original pixels: `[x1, y1, x2, y2]`, x2/y2 exclusive.
pub type PixelBox = [i64; 4];

/// The ImaGenome boxes of one frontal image, in [`BBOX_NAMES`] order (None = structure
/// not visible). `extent_of` gives the inclusive pixel extent of an anatomy structure.
pub fn boxes<R: Rng>(
    rng: &mut R,
    anatomy: &Anatomy,
    extent_of: impl Fn(&str) -> Option<[u32; 4]>,
) -> Vec<(&'static str, Option<PixelBox>)> {
    let mut out: Vec<(&'static str, Option<PixelBox>)> = BBOX_STRUCTURES
        .iter()
        .map(|(bbox, structure)| {
            let extent = extent_of(structure).map(|[x0, y0, x1, y1]| {
                [
                    i64::from(x0),
                    i64::from(y0),
                    i64::from(x1) + 1,
                    i64::from(y1) + 1,
                ]
            });
            (*bbox, extent)
        })
        .collect();
    if rng.random_bool(0.01) {
        let idx = rng.random_range(0..out.len());
        if let Some(b) = out[idx].1.as_mut() {
            let overshoot = rng.random_range(5..60);
            match rng.random_range(0..3) {
                0 => b[0] = -overshoot,
                1 => b[2] = i64::from(anatomy.width) + overshoot,
                _ => b[3] = i64::from(anatomy.height) + overshoot,
            }
        }
    }
    out
}

#[derive(Debug, Serialize)]
struct SceneGraph<'a> {
    image_id: &'a str,
    patient_id: u32,
    study_id: u32,
    viewpoint: &'a str,
    objects: Vec<Object<'a>>,
    attributes: Vec<Attribute>,
    relationships: Vec<serde_json::Value>,
}

#[derive(Debug, Serialize)]
struct Object<'a> {
    object_id: String,
    x1: i64,
    y1: i64,
    x2: i64,
    y2: i64,
    width: i64,
    height: i64,
    bbox_name: &'a str,
    synsets: Vec<String>,
    name: String,
    original_x1: i64,
    original_y1: i64,
    original_x2: i64,
    original_y2: i64,
    original_width: i64,
    original_height: i64,
}

#[derive(Debug, Default, Serialize)]
struct Attribute {
    bbox_name: String,
    name: String,
    synsets: Vec<String>,
    attributes: Vec<Vec<String>>,
    attributes_ids: Vec<Vec<String>>,
    phrases: Vec<String>,
    #[serde(rename = "phrase_IDs")]
    phrase_ids: Vec<String>,
    sections: Vec<String>,
    comparison_cues: Vec<Vec<String>>,
    temporal_cues: Vec<Vec<String>>,
    severity_cues: Vec<Vec<String>>,
    texture_cues: Vec<Vec<String>>,
    object_id: String,
}

/// Identity of the image a scene graph describes.
#[derive(Debug, Clone, Copy)]
pub struct ImageRef<'a> {
    /// DICOM id.
    pub dicom_id: &'a str,
    /// Subject id (no prefix).
    pub subject_id: u32,
    /// Study id (no prefix).
    pub study_id: u32,
    /// `PA` or `AP`.
    pub viewpoint: &'a str,
    /// Image width.
    pub width: u32,
    /// Image height.
    pub height: u32,
}

/// Serialises the scene graph of one frontal image.
pub fn scene_graph_json(
    image: &ImageRef<'_>,
    boxes: &[(&'static str, Option<PixelBox>)],
    truth: &StudyTruth,
) -> serde_json::Result<Vec<u8>> {
    let scale = 224.0 / f64::from(image.width.max(image.height));
    let pad_x = (224.0 - f64::from(image.width) * scale) / 2.0;
    let pad_y = (224.0 - f64::from(image.height) * scale) / 2.0;
    let sx = |v: i64| (v as f64 * scale + pad_x).round() as i64;
    let sy = |v: i64| (v as f64 * scale + pad_y).round() as i64;
    let objects = boxes
        .iter()
        .filter_map(|(name, b)| b.map(|b| (*name, b)))
        .map(|(name, [x1, y1, x2, y2])| Object {
            object_id: format!("{}_{name}", image.dicom_id),
            x1: sx(x1),
            y1: sy(y1),
            x2: sx(x2),
            y2: sy(y2),
            width: sx(x2) - sx(x1),
            height: sy(y2) - sy(y1),
            bbox_name: name,
            synsets: Vec::new(),
            name: capitalize(name),
            original_x1: x1,
            original_y1: y1,
            original_x2: x2,
            original_y2: y2,
            original_width: x2 - x1,
            original_height: y2 - y1,
        })
        .collect();

    let mut by_box: BTreeMap<&'static str, Attribute> = BTreeMap::new();
    let mut sentence_ids: Vec<&str> = Vec::new();
    for f in &truth.findings {
        let phrase_index = match sentence_ids.iter().position(|s| *s == f.sentence) {
            Some(i) => i,
            None => {
                sentence_ids.push(&f.sentence);
                sentence_ids.len() - 1
            }
        };
        let (category, name) = match vocab::finding(&f.finding) {
            Some(def) => def.imagenome,
            None => ("tubesandlines", f.finding.as_str()),
        };
        let polarity = if f.positiveness == Positiveness::Pos {
            "yes"
        } else {
            "no"
        };
        let label = format!("{category}|{polarity}|{name}");
        for region in &f.regions {
            let Some(def) = vocab::region(region) else {
                continue;
            };
            for bbox in def.imagenome {
                if !boxes.iter().any(|(n, b)| n == bbox && b.is_some()) {
                    continue;
                }
                let entry = by_box.entry(bbox).or_insert_with(|| Attribute {
                    bbox_name: (*bbox).to_owned(),
                    name: capitalize(bbox),
                    object_id: format!("{}_{bbox}", image.dicom_id),
                    ..Attribute::default()
                });
                let phrase_id = format!("{}|{phrase_index}", image.study_id);
                let slot = match entry.phrase_ids.iter().position(|p| *p == phrase_id) {
                    Some(slot) => slot,
                    None => {
                        entry.phrase_ids.push(phrase_id);
                        entry.phrases.push(f.sentence.clone());
                        entry.sections.push("finalreport".to_owned());
                        for list in [
                            &mut entry.attributes,
                            &mut entry.attributes_ids,
                            &mut entry.comparison_cues,
                            &mut entry.temporal_cues,
                            &mut entry.severity_cues,
                            &mut entry.texture_cues,
                        ] {
                            list.push(Vec::new());
                        }
                        entry.phrases.len() - 1
                    }
                };
                if !entry.attributes[slot].contains(&label) {
                    entry.attributes[slot].push(label.clone());
                }
                if let Some(change) = &f.change {
                    entry.comparison_cues[slot].push(format!("comparison|yes|{change}"));
                }
                if let Some(severity) = &f.severity {
                    entry.severity_cues[slot].push(format!("severity|yes|{severity}"));
                }
            }
        }
    }
    let graph = SceneGraph {
        image_id: image.dicom_id,
        patient_id: image.subject_id,
        study_id: image.study_id,
        viewpoint: image.viewpoint,
        objects,
        attributes: by_box.into_values().collect(),
        relationships: Vec::new(),
    };
    serde_json::to_vec(&graph)
}

fn capitalize(text: &str) -> String {
    let mut chars = text.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn twenty_nine_distinct_names_each_with_a_structure() {
        let names: HashSet<_> = BBOX_NAMES.iter().collect();
        assert_eq!(names.len(), 29);
        for (i, (bbox, _)) in BBOX_STRUCTURES.iter().enumerate() {
            assert_eq!(*bbox, BBOX_NAMES[i]);
        }
    }
}
