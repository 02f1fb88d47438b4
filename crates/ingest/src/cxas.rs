//! CXAS segmentation output as COCO JSON with compressed RLE → `cxas_masks`, one row per image
//! and class, keeping the RLE string (never a dense mask).
//!
//! ```text
//!  images[]       {id, file_name: "<dicom_id>.jpg", width, height}
//!  categories[]   {id, name}  (optional; without it ids are CXAS label ids)
//!  annotations[]  {image_id, category_id, segmentation: {size: [h, w], counts}}
//!  per annotation: class id known? size = COCO image = metadata rows×columns? runs cover h·w?
//!                  one mask per (image, class)?          no → quarantine, the rest goes on
//! ```
//! Uncompressed `counts` (a list of run lengths) are accepted and stored compressed. Area and
//! box are computed from the runs (`bbox` is `[x1, y1, x2, y2]`, exclusive right/bottom edges).

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;

use arrow::array::{ArrayRef, Int32Builder, Int64Builder, RecordBatch, StringBuilder};
use cxrlake_masks::Rle;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::boxes::box_column;
use crate::discover::InputFile;
use crate::error::Result;
use crate::ids;
use crate::jpg_csv::ImageInfo;
use crate::quarantine::{Quarantined, Target};
use crate::writer::{Row, Unit, content_hash};

/// One `cxas_masks` row.
#[derive(Debug, Clone, PartialEq)]
pub struct MaskRow {
    /// DICOM id.
    pub image_id: String,
    /// `p…`.
    pub patient_id: String,
    /// `s…`.
    pub study_id: String,
    /// CXAS label id.
    pub class_id: i32,
    /// CXAS label name.
    pub class_name: String,
    /// Mask height.
    pub height: i32,
    /// Mask width.
    pub width: i32,
    /// pycocotools compressed counts.
    pub rle_counts: String,
    /// Foreground pixels.
    pub area: i64,
    /// Tight box `[x1, y1, x2, y2]`, none for an empty mask.
    pub bbox: Option<[f32; 4]>,
    /// Path of the COCO file within its input.
    pub source_path: String,
}

impl Row for MaskRow {
    const TABLE: &'static str = "cxas_masks";

    fn key(&self) -> String {
        self.image_id.clone()
    }

    fn approx_bytes(&self) -> usize {
        self.rle_counts.len() + self.source_path.len() + 128
    }

    fn batch(rows: &[Self]) -> Result<RecordBatch> {
        let mut image_id = StringBuilder::new();
        let mut patient_id = StringBuilder::new();
        let mut study_id = StringBuilder::new();
        let mut class_id = Int32Builder::new();
        let mut class_name = StringBuilder::new();
        let mut height = Int32Builder::new();
        let mut width = Int32Builder::new();
        let mut counts = StringBuilder::new();
        let mut area = Int64Builder::new();
        let mut source_path = StringBuilder::new();
        for row in rows {
            image_id.append_value(&row.image_id);
            patient_id.append_value(&row.patient_id);
            study_id.append_value(&row.study_id);
            class_id.append_value(row.class_id);
            class_name.append_value(&row.class_name);
            height.append_value(row.height);
            width.append_value(row.width);
            counts.append_value(&row.rle_counts);
            area.append_value(row.area);
            source_path.append_value(&row.source_path);
        }
        let columns: Vec<ArrayRef> = vec![
            Arc::new(image_id.finish()),
            Arc::new(patient_id.finish()),
            Arc::new(study_id.finish()),
            Arc::new(class_id.finish()),
            Arc::new(class_name.finish()),
            Arc::new(height.finish()),
            Arc::new(width.finish()),
            Arc::new(counts.finish()),
            Arc::new(area.finish()),
            box_column(rows.iter().map(|r| r.bbox)),
            Arc::new(source_path.finish()),
        ];
        Ok(RecordBatch::try_new(
            cxrlake_schemas::sources::cxas_masks(),
            columns,
        )?)
    }
}

/// Fast path: the whole file in typed form.
#[derive(Debug, Deserialize)]
struct CocoTyped {
    images: Vec<CocoImage>,
    #[serde(default)]
    categories: Vec<Category>,
    #[serde(default)]
    annotations: Vec<Annotation>,
}

/// Slow path, when the typed parse fails: elements one by one, so one bad element is
/// quarantined alone.
#[derive(Debug, Deserialize)]
struct CocoLoose {
    images: Vec<Value>,
    #[serde(default)]
    categories: Vec<Value>,
    #[serde(default)]
    annotations: Vec<Value>,
}

/// A class of the file: CXAS writes the label id and the class name.
#[derive(Debug, Deserialize, Serialize)]
struct Category {
    id: i64,
    name: String,
}

/// An element parsed, or why not with its raw JSON.
type Element<T> = std::result::Result<T, (String, Value)>;

/// The images, categories and annotations of one file.
type Elements = (
    Vec<Element<CocoImage>>,
    Vec<Element<Category>>,
    Vec<Element<Annotation>>,
);

fn loose<T: serde::de::DeserializeOwned>(values: Vec<Value>, what: &str) -> Vec<Element<T>> {
    values
        .into_iter()
        .map(|value| {
            T::deserialize(&value).map_err(|e| (format!("invalid COCO {what}: {e}"), value))
        })
        .collect()
}

#[derive(Debug, Deserialize, Serialize)]
struct CocoImage {
    id: i64,
    file_name: String,
    width: Option<u32>,
    height: Option<u32>,
}

#[derive(Debug, Deserialize, Serialize)]
struct Annotation {
    image_id: i64,
    category_id: i64,
    segmentation: Segmentation,
}

#[derive(Debug, Deserialize, Serialize)]
struct Segmentation {
    size: [u32; 2],
    counts: Counts,
}

#[derive(Debug, Deserialize, Serialize)]
#[serde(untagged)]
enum Counts {
    Compressed(String),
    Runs(Vec<u32>),
}

/// An image of the COCO file, resolved to lake ids.
struct Image {
    dicom_id: String,
    patient_id: String,
    study_id: String,
    height: u32,
    width: u32,
}

/// `p10000032` from `…/p10000032/s50414267.json`, when the file lies in a patient folder.
fn patient_of_file(file: &InputFile) -> Option<String> {
    let mut parts = file.rel_path.rsplit('/');
    parts.next();
    parts
        .next()
        .filter(|folder| folder.starts_with('p'))
        .and_then(ids::patient_id)
}

/// `s50414267` from `…/s50414267.json`, when the file is named by study.
fn study_of_file(file: &InputFile) -> Option<String> {
    let name = file.file_name();
    let stem = name.strip_suffix(".json").unwrap_or(name);
    stem.starts_with('s').then(|| ids::study_id(stem)).flatten()
}

/// Parses one CXAS COCO file into one unit per image.
pub fn parse(
    file: &InputFile,
    bytes: &[u8],
    images: &HashMap<String, ImageInfo>,
) -> std::result::Result<Vec<Unit<MaskRow>>, Quarantined> {
    let source = file.source();
    let invalid_json = |e: serde_json::Error| {
        Quarantined::new(
            Target::CxasMasks,
            &source,
            format!("line {}, column {}", e.line(), e.column()),
            crate::quarantine::json_reason(&e, "a CXAS COCO file"),
            bytes.to_vec(),
        )
    };
    let (coco_images, categories, annotations): Elements =
        match serde_json::from_slice::<CocoTyped>(bytes) {
            Ok(coco) => (
                coco.images.into_iter().map(Ok).collect(),
                coco.categories.into_iter().map(Ok).collect(),
                coco.annotations.into_iter().map(Ok).collect(),
            ),
            Err(_) => {
                let coco: CocoLoose = serde_json::from_slice(bytes).map_err(invalid_json)?;
                (
                    loose(coco.images, "image"),
                    loose(coco.categories, "category"),
                    loose(coco.annotations, "annotation"),
                )
            }
        };
    let content = content_hash(bytes);
    let file_study = study_of_file(file);
    let file_patient = patient_of_file(file);
    let mut quarantined = Vec::new();
    let reject = |location: String, reason: String, raw: Vec<u8>| {
        Quarantined::new(Target::CxasMasks, &source, location, reason, raw)
    };

    // Class names: the file's own categories when it lists them, else the CXAS label mapping.
    let mut file_classes: HashMap<i64, String> = HashMap::new();
    let lists_categories = !categories.is_empty();
    for (index, category) in categories.into_iter().enumerate() {
        match category {
            Ok(category) => {
                file_classes.insert(category.id, category.name);
            }
            Err((reason, raw)) => {
                quarantined.push(reject(
                    format!("categories[{index}]"),
                    reason,
                    to_json(&raw),
                ));
            }
        }
    }
    let labels = cxrlake_refdefs::cxas_labels();

    let mut resolved: HashMap<i64, Image> = HashMap::new();
    let listed: HashSet<i64> = coco_images
        .iter()
        .filter_map(|image| image.as_ref().ok().map(|i| i.id))
        .collect();
    for (index, image) in coco_images.into_iter().enumerate() {
        let location = format!("images[{index}]");
        let image = match image {
            Ok(image) => image,
            Err((reason, raw)) => {
                quarantined.push(reject(location, reason, to_json(&raw)));
                continue;
            }
        };
        let value = &image;
        let base = image
            .file_name
            .rsplit('/')
            .next()
            .unwrap_or(&image.file_name);
        let dicom_id = base.split('.').next().unwrap_or(base).to_string();
        if !ids::is_dicom_id(&dicom_id) {
            quarantined.push(reject(
                location,
                format!("invalid dicom id '{dicom_id}' in file_name: expected five dash-separated hex groups"),
                to_json(value),
            ));
            continue;
        }
        let known = images.get(&dicom_id);
        let Some(study_id) = known
            .map(|i| i.study_id.clone())
            .or_else(|| file_study.clone())
        else {
            quarantined.push(reject(
                location,
                format!("study of image {dicom_id} is unknown: not in the metadata and the file is not named sXXXXXXXX.json"),
                to_json(value),
            ));
            continue;
        };
        let Some(patient_id) = known
            .map(|i| i.patient_id.clone())
            .or_else(|| file_patient.clone())
        else {
            quarantined.push(reject(
                location,
                format!("patient of image {dicom_id} is unknown: not in the metadata and the file is not in a pXXXXXXXX folder"),
                to_json(value),
            ));
            continue;
        };
        let meta_size = known.and_then(|i| Some((i.rows? as u32, i.columns? as u32)));
        let coco_size = image.height.zip(image.width);
        if let (Some(meta), Some(coco)) = (meta_size, coco_size)
            && meta != coco
        {
            quarantined.push(reject(
                location,
                format!(
                    "COCO image size {}x{} disagrees with the metadata's {}x{} (height x width)",
                    coco.0, coco.1, meta.0, meta.1
                ),
                to_json(value),
            ));
            continue;
        }
        let Some((height, width)) = meta_size.or(coco_size) else {
            quarantined.push(reject(
                location,
                format!(
                    "size of image {dicom_id} is unknown: no width/height and not in the metadata"
                ),
                to_json(value),
            ));
            continue;
        };
        if height == 0
            || width == 0
            || height > crate::MAX_IMAGE_SIDE
            || width > crate::MAX_IMAGE_SIDE
        {
            quarantined.push(reject(
                location,
                format!(
                    "size {height}x{width} of image {dicom_id} is not 1 to {} pixels a side \
                     (JPEG's limit)",
                    crate::MAX_IMAGE_SIDE
                ),
                to_json(value),
            ));
            continue;
        }
        if resolved.values().any(|i| i.dicom_id == dicom_id) || resolved.contains_key(&image.id) {
            quarantined.push(reject(
                location,
                format!("duplicate image {dicom_id} (id {})", image.id),
                to_json(value),
            ));
            continue;
        }
        resolved.insert(
            image.id,
            Image {
                dicom_id,
                patient_id,
                study_id,
                height,
                width,
            },
        );
    }

    let mut per_image: BTreeMap<i64, Vec<MaskRow>> = BTreeMap::new();
    let mut classes: HashSet<(i64, i64)> = HashSet::new();
    for (index, annotation) in annotations.into_iter().enumerate() {
        let location = format!("annotations[{index}]");
        let annotation = match annotation {
            Ok(annotation) => annotation,
            Err((reason, raw)) => {
                quarantined.push(reject(location, reason, to_json(&raw)));
                continue;
            }
        };
        let value = &annotation;
        let Some(image) = resolved.get(&annotation.image_id) else {
            let reason = if listed.contains(&annotation.image_id) {
                format!(
                    "annotation of image id {} whose image entry was quarantined",
                    annotation.image_id
                )
            } else {
                format!(
                    "annotation refers to image id {} that the file does not list",
                    annotation.image_id
                )
            };
            quarantined.push(reject(location, reason, to_json(value)));
            continue;
        };
        let Ok(class_id) = i32::try_from(annotation.category_id) else {
            quarantined.push(reject(
                location,
                format!(
                    "class id {} is out of range: class ids are 32-bit integers (CXAS uses \
                     0..{})",
                    annotation.category_id,
                    labels.len() - 1
                ),
                to_json(value),
            ));
            continue;
        };
        let class_name = if lists_categories {
            file_classes.get(&annotation.category_id).cloned()
        } else {
            u32::try_from(annotation.category_id)
                .ok()
                .and_then(|id| labels.get(&id).cloned())
        };
        let Some(class_name) = class_name else {
            let expected = if lists_categories {
                "an id listed in the file's categories".to_string()
            } else {
                format!("a CXAS label id 0..{}", labels.len() - 1)
            };
            quarantined.push(reject(
                location,
                format!(
                    "unknown class id {}: expected {expected}",
                    annotation.category_id
                ),
                to_json(value),
            ));
            continue;
        };
        let [height, width] = annotation.segmentation.size;
        if (height, width) != (image.height, image.width) {
            quarantined.push(reject(
                location,
                format!(
                    "RLE size {height}x{width} disagrees with image {} of size {}x{} (height x width)",
                    image.dicom_id, image.height, image.width
                ),
                to_json(value),
            ));
            continue;
        }
        let stats = match &annotation.segmentation.counts {
            Counts::Compressed(text) => cxrlake_masks::summarize(text, height, width),
            Counts::Runs(runs) => {
                Rle::new(height, width, runs.clone()).map(|rle| cxrlake_masks::RleSummary {
                    area: rle.area(),
                    bbox: rle.bbox(),
                })
            }
        };
        let stats = match stats {
            Ok(stats) => stats,
            Err(e) => {
                quarantined.push(reject(
                    location,
                    format!("invalid RLE: {e}"),
                    to_json(value),
                ));
                continue;
            }
        };
        if !classes.insert((annotation.image_id, annotation.category_id)) {
            quarantined.push(reject(
                location,
                format!(
                    "duplicate mask of class '{class_name}' for image {}",
                    image.dicom_id
                ),
                to_json(value),
            ));
            continue;
        }
        let rle_counts = match annotation.segmentation.counts {
            Counts::Compressed(text) => text,
            Counts::Runs(runs) => cxrlake_masks::encode_counts(&runs),
        };
        per_image
            .entry(annotation.image_id)
            .or_default()
            .push(MaskRow {
                image_id: image.dicom_id.clone(),
                patient_id: image.patient_id.clone(),
                study_id: image.study_id.clone(),
                class_id,
                class_name,
                height: height as i32,
                width: width as i32,
                rle_counts,
                area: stats.area as i64,
                bbox: stats.bbox,
                source_path: file.rel_path.clone(),
            });
    }

    let mut units: Vec<Unit<MaskRow>> = per_image
        .into_iter()
        .filter_map(|(id, rows)| {
            resolved.get(&id).map(|image| Unit {
                key: image.dicom_id.clone(),
                content,
                rows,
                quarantined: Vec::new(),
            })
        })
        .collect();
    match units.first_mut() {
        Some(first) => first.quarantined = quarantined,
        None => units.push(Unit {
            key: String::new(),
            content,
            rows: Vec::new(),
            quarantined,
        }),
    }
    Ok(units)
}

fn to_json<T: Serialize>(value: &T) -> Vec<u8> {
    serde_json::to_vec(value).unwrap_or_default()
}
