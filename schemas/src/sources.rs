//! Source tables filled by `ingest` from the MIMIC-CXR family of formats, and `quarantine`.

use std::sync::Arc;

use arrow::datatypes::{DataType, Field, Schema, SchemaRef, TimeUnit};

use crate::types::{bbox, key, text, text_list};

/// `reports`: one row per report file (key: study_id).
pub fn reports() -> SchemaRef {
    Arc::new(Schema::new(vec![
        key("patient_id"),
        key("study_id"),
        text("text"),
        text("source_path"),
        key("content_hash"),
    ]))
}

/// `images`: one row per DICOM image from the MIMIC-CXR-JPG metadata and split CSVs (key: image_id).
pub fn images() -> SchemaRef {
    Arc::new(Schema::new(vec![
        key("image_id"),
        key("patient_id"),
        key("study_id"),
        text("view_position"),
        text("view"),
        Field::new("is_frontal", DataType::Boolean, false),
        Field::new("rows", DataType::Int32, true),
        Field::new("columns", DataType::Int32, true),
        text("study_date"),
        text("study_time"),
        text("procedure"),
        text("view_code_meaning"),
        text("patient_orientation"),
        text("split"),
    ]))
}

/// `splits`: the official split per image (key: image_id).
pub fn splits() -> SchemaRef {
    Arc::new(Schema::new(vec![
        key("image_id"),
        key("study_id"),
        key("patient_id"),
        key("split"),
    ]))
}

/// The 14 label column names of `mimic-cxr-2.0.0-chexpert.csv` / `-negbio.csv`, in file order.
pub const CHEXPERT_CSV_COLUMNS: [&str; 14] = [
    "Atelectasis",
    "Cardiomegaly",
    "Consolidation",
    "Edema",
    "Enlarged Cardiomediastinum",
    "Fracture",
    "Lung Lesion",
    "Lung Opacity",
    "No Finding",
    "Pleural Effusion",
    "Pleural Other",
    "Pneumonia",
    "Pneumothorax",
    "Support Devices",
];

/// The 14 CheXpert/NegBio label columns of `chexpert_labels`: [`CHEXPERT_CSV_COLUMNS`],
/// snake-cased.
pub const CHEXPERT_LABELS: [&str; 14] = [
    "atelectasis",
    "cardiomegaly",
    "consolidation",
    "edema",
    "enlarged_cardiomediastinum",
    "fracture",
    "lung_lesion",
    "lung_opacity",
    "no_finding",
    "pleural_effusion",
    "pleural_other",
    "pneumonia",
    "pneumothorax",
    "support_devices",
];

/// `chexpert_labels`: one row per study and labeler (`chexpert` or `negbio`); 1.0, 0.0, -1.0 or null.
pub fn chexpert_labels() -> SchemaRef {
    let mut fields = vec![key("patient_id"), key("study_id"), key("labeler")];
    fields.extend(
        CHEXPERT_LABELS
            .iter()
            .map(|name| Field::new(*name, DataType::Float32, true)),
    );
    Arc::new(Schema::new(fields))
}

/// `imagenome_boxes`: Chest ImaGenome silver boxes in original pixels with the attribute labels
/// (`category|polarity|name`) and phrases the scene graph gives the box (key: image_id, bbox_name).
pub fn imagenome_boxes() -> SchemaRef {
    Arc::new(Schema::new(vec![
        key("image_id"),
        key("patient_id"),
        key("study_id"),
        key("bbox_name"),
        bbox("bbox"),
        Field::new("clamped", DataType::Boolean, false),
        text_list("attributes"),
        text_list("phrases"),
        text("source_path"),
    ]))
}

/// `cxas_masks`: CXAS masks kept as COCO compressed RLE, never dense (key: image_id, class_name).
pub fn cxas_masks() -> SchemaRef {
    Arc::new(Schema::new(vec![
        key("image_id"),
        key("patient_id"),
        key("study_id"),
        Field::new("class_id", DataType::Int32, false),
        key("class_name"),
        Field::new("height", DataType::Int32, false),
        Field::new("width", DataType::Int32, false),
        key("rle_counts"),
        Field::new("area", DataType::Int64, true),
        bbox("bbox"),
        text("source_path"),
    ]))
}

/// `quarantine`: every input that could not be used, with the raw bytes and the reason.
pub fn quarantine() -> SchemaRef {
    Arc::new(Schema::new(vec![
        key("stage"),
        key("source"),
        text("location"),
        key("reason"),
        Field::new("raw", DataType::Binary, true),
        Field::new(
            "recorded_at",
            DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into())),
            false,
        ),
    ]))
}
