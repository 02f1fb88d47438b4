//! MIMIC-CXR-JPG CSVs (plain or `.gz`): metadata → `images`, split → `splits` (and
//! `images.split`), CheXpert / NegBio labels → `chexpert_labels`. Rows are streamed; a row that
//! cannot be used goes to `quarantine` with its line number and raw bytes.

use std::collections::HashMap;
use std::io::{BufReader, Cursor, Read};
use std::sync::Arc;

use arrow::array::{
    ArrayRef, BooleanBuilder, Float32Builder, Int32Builder, RecordBatch, StringBuilder,
};
use cxrlake_schemas::sources::{CHEXPERT_CSV_COLUMNS, CHEXPERT_LABELS};
use flate2::read::MultiGzDecoder;

use crate::discover::{FileReader, InputFile, Labeler, Location};
use crate::error::Result;
use crate::ids;
use crate::quarantine::{Quarantined, Target};
use crate::writer::Row;

/// A CSV input being streamed, with its header's column positions.
pub struct CsvInput {
    reader: csv::Reader<Box<dyn Read + Send>>,
    columns: HashMap<String, usize>,
    width: usize,
    source: String,
    target: Target,
    record: csv::ByteRecord,
    done: bool,
}

impl std::fmt::Debug for CsvInput {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CsvInput")
            .field("source", &self.source)
            .field("columns", &self.width)
            .finish()
    }
}

/// One data row of a CSV input.
#[derive(Debug, Clone)]
pub struct CsvRow {
    /// 1-based line number.
    pub line: u64,
    /// Fields as text (invalid UTF-8 replaced).
    pub fields: Vec<String>,
}

impl CsvRow {
    /// The row as it was (fields joined with commas).
    pub fn raw(&self) -> Vec<u8> {
        self.fields.join(",").into_bytes()
    }

    /// `line N`.
    pub fn location(&self) -> String {
        format!("line {}", self.line)
    }
}

impl CsvInput {
    /// Opens a CSV input and reads its header; `required` columns must be present.
    pub fn open(
        file: &InputFile,
        files: &mut FileReader,
        target: Target,
        required: &[&str],
    ) -> std::result::Result<Self, Quarantined> {
        let source = file.source();
        let quarantine = |location: &str, reason: String| {
            Quarantined::new(target, &source, location, reason, Vec::new())
        };
        // Streamed, but bounded: a CSV (or what its gzip layer inflates to) larger than
        // ingest_max_file_bytes fails at the limit instead of filling memory or disk.
        let limits = files.limits();
        let plain: Box<dyn Read + Send> = match &file.location {
            Location::File(path) | Location::Link { target: path, .. } => {
                if let Some(reason) = limits.refuse_by_size(file) {
                    return Err(quarantine("file", reason));
                }
                Box::new(BufReader::with_capacity(
                    1 << 20,
                    std::fs::File::open(path)
                        .map_err(|e| quarantine("file", format!("unreadable file: {e}")))?,
                ))
            }
            Location::ZipMember { .. } => Box::new(Cursor::new(
                files
                    .read(file)
                    .map_err(|reason| quarantine("file", reason))?,
            )),
        };
        let input: Box<dyn Read + Send> = if file.is_gzip() {
            Box::new(BufReader::with_capacity(
                1 << 20,
                limits.bounded(file, MultiGzDecoder::new(plain), None),
            ))
        } else {
            Box::new(limits.bounded(file, plain, None))
        };
        let mut reader = csv::ReaderBuilder::new()
            .flexible(true)
            .has_headers(true)
            .from_reader(input);
        let header = reader
            .byte_headers()
            .map_err(|e| quarantine("line 1", format!("unreadable CSV header: {e}")))?
            .clone();
        let columns: HashMap<String, usize> = header
            .iter()
            .enumerate()
            .map(|(i, name)| (String::from_utf8_lossy(name).trim().to_string(), i))
            .collect();
        let missing: Vec<&str> = required
            .iter()
            .copied()
            .filter(|name| !columns.contains_key(*name))
            .collect();
        if !missing.is_empty() {
            return Err(Quarantined::new(
                target,
                &source,
                "line 1",
                format!("CSV header lacks column(s) {}", missing.join(", ")),
                header.as_slice().to_vec(),
            ));
        }
        Ok(Self {
            reader,
            width: header.len(),
            columns,
            source,
            target,
            record: csv::ByteRecord::new(),
            done: false,
        })
    }

    /// Position of a column (present when it was required).
    pub fn column(&self, name: &str) -> Option<usize> {
        self.columns.get(name).copied()
    }

    /// The next row; `Err` for a malformed row (the stream goes on) or an unreadable stream
    /// (the stream ends).
    pub fn next_row(&mut self) -> Option<std::result::Result<CsvRow, Quarantined>> {
        if self.done {
            return None;
        }
        match self.reader.read_byte_record(&mut self.record) {
            Ok(false) => {
                self.done = true;
                None
            }
            Ok(true) => {
                let line = self.record.position().map_or(0, |p| p.line());
                let fields: Vec<String> = self
                    .record
                    .iter()
                    .map(|f| String::from_utf8_lossy(f).into_owned())
                    .collect();
                let row = CsvRow { line, fields };
                if row.fields.len() != self.width {
                    let joined = row
                        .fields
                        .iter()
                        .map(|f| f.matches('\n').count())
                        .sum::<usize>();
                    let hint = if joined > 0 {
                        format!(
                            "; a quoted field runs over {} more line(s): an unclosed quote (\") \
                             probably joined the following rows into this one; close the quote",
                            joined
                        )
                    } else {
                        String::new()
                    };
                    return Some(Err(self.quarantine(
                        &row,
                        format!(
                            "malformed CSV row: {} fields, the header has {}{hint}",
                            row.fields.len(),
                            self.width
                        ),
                    )));
                }
                Some(Ok(row))
            }
            Err(err) => {
                self.done = true;
                let location = err
                    .position()
                    .map_or_else(|| "unknown".to_string(), |p| format!("line {}", p.line()));
                Some(Err(Quarantined::new(
                    self.target,
                    &self.source,
                    location,
                    format!("unreadable CSV, the rest of the file is skipped: {err}"),
                    Vec::new(),
                )))
            }
        }
    }

    /// A quarantine record for `row`.
    pub fn quarantine(&self, row: &CsvRow, reason: String) -> Quarantined {
        Quarantined::new(self.target, &self.source, row.location(), reason, row.raw())
    }
}

fn field<'a>(input: &CsvInput, row: &'a CsvRow, name: &str) -> &'a str {
    input
        .column(name)
        .and_then(|i| row.fields.get(i))
        .map_or("", |s| s.trim())
}

fn optional(value: &str) -> Option<String> {
    (!value.is_empty()).then(|| value.to_string())
}

fn ids_of(input: &CsvInput, row: &CsvRow) -> std::result::Result<(String, String), String> {
    let subject = field(input, row, "subject_id");
    let study = field(input, row, "study_id");
    let patient_id = ids::patient_id(subject)
        .ok_or_else(|| format!("invalid subject_id '{subject}': expected 8 digits"))?;
    let study_id = ids::study_id(study)
        .ok_or_else(|| format!("invalid study_id '{study}': expected 8 digits"))?;
    Ok((patient_id, study_id))
}

fn dicom_of(input: &CsvInput, row: &CsvRow) -> std::result::Result<String, String> {
    let dicom = field(input, row, "dicom_id");
    if ids::is_dicom_id(dicom) {
        Ok(dicom.to_string())
    } else {
        Err(format!(
            "invalid dicom_id '{dicom}': expected five dash-separated hex groups"
        ))
    }
}

/// Columns the metadata CSV must have.
pub const METADATA_COLUMNS: &[&str] = &[
    "dicom_id",
    "subject_id",
    "study_id",
    "ViewPosition",
    "Rows",
    "Columns",
];
/// Columns the split CSV must have.
pub const SPLIT_COLUMNS: &[&str] = &["dicom_id", "study_id", "subject_id", "split"];

/// `images.view` of a `ViewPosition`: `frontal` for PA/AP and their variants (`AP AXIAL`,
/// `PA LLD`, …), `lateral` for `LATERAL`/`LL` (and `XTABLE LATERAL`), otherwise none.
pub fn view_of(position: &str) -> Option<&'static str> {
    let position = position.trim().to_ascii_uppercase();
    let first = position.split_whitespace().next().unwrap_or("");
    if first == "PA" || first == "AP" {
        Some("frontal")
    } else if matches!(position.as_str(), "LATERAL" | "LL" | "XTABLE LATERAL") {
        Some("lateral")
    } else {
        None
    }
}

/// What later sources need to know about an image: ids and size.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImageInfo {
    /// `p…`.
    pub patient_id: String,
    /// `s…`.
    pub study_id: String,
    /// Height in pixels.
    pub rows: Option<i32>,
    /// Width in pixels.
    pub columns: Option<i32>,
}

/// One `images` row.
#[derive(Debug, Clone, PartialEq)]
pub struct ImageRow {
    /// DICOM id.
    pub image_id: String,
    /// Ids and size.
    pub info: ImageInfo,
    /// Raw `ViewPosition`.
    pub view_position: Option<String>,
    /// `frontal` / `lateral`.
    pub view: Option<&'static str>,
    /// `StudyDate`.
    pub study_date: Option<String>,
    /// `StudyTime`.
    pub study_time: Option<String>,
    /// Procedure code meaning (or step description).
    pub procedure: Option<String>,
    /// `ViewCodeSequence_CodeMeaning`.
    pub view_code_meaning: Option<String>,
    /// `PatientOrientationCodeSequence_CodeMeaning`.
    pub patient_orientation: Option<String>,
    /// Split from the split CSV.
    pub split: Option<String>,
}

fn parse_size(value: &str, name: &str) -> std::result::Result<Option<i32>, String> {
    if value.is_empty() {
        return Ok(None);
    }
    let parsed = value.parse::<i32>().ok().or_else(|| {
        value
            .parse::<f64>()
            .ok()
            .filter(|v| v.fract() == 0.0 && v.abs() <= f64::from(i32::MAX))
            .map(|v| v as i32)
    });
    match parsed {
        Some(v) if v > 0 && v.cast_unsigned() <= crate::MAX_IMAGE_SIDE => Ok(Some(v)),
        _ => Err(format!(
            "{name} '{value}' is not a pixel count from 1 to {} (JPEG's limit)",
            crate::MAX_IMAGE_SIDE
        )),
    }
}

/// Parses one metadata row.
pub fn metadata_row(
    input: &CsvInput,
    row: &CsvRow,
    splits: &HashMap<String, String>,
) -> std::result::Result<ImageRow, String> {
    let image_id = dicom_of(input, row)?;
    let (patient_id, study_id) = ids_of(input, row)?;
    let rows = parse_size(field(input, row, "Rows"), "Rows")?;
    let columns = parse_size(field(input, row, "Columns"), "Columns")?;
    let position = field(input, row, "ViewPosition");
    let procedure = optional(field(input, row, "ProcedureCodeSequence_CodeMeaning"))
        .or_else(|| optional(field(input, row, "PerformedProcedureStepDescription")));
    Ok(ImageRow {
        split: splits.get(&image_id).cloned(),
        image_id,
        info: ImageInfo {
            patient_id,
            study_id,
            rows,
            columns,
        },
        view_position: optional(position),
        view: view_of(position),
        study_date: optional(field(input, row, "StudyDate")),
        study_time: optional(field(input, row, "StudyTime")),
        procedure,
        view_code_meaning: optional(field(input, row, "ViewCodeSequence_CodeMeaning")),
        patient_orientation: optional(field(
            input,
            row,
            "PatientOrientationCodeSequence_CodeMeaning",
        )),
    })
}

impl Row for ImageRow {
    const TABLE: &'static str = "images";

    fn key(&self) -> String {
        self.image_id.clone()
    }

    fn approx_bytes(&self) -> usize {
        256
    }

    fn batch(rows: &[Self]) -> Result<RecordBatch> {
        let mut image_id = StringBuilder::new();
        let mut patient_id = StringBuilder::new();
        let mut study_id = StringBuilder::new();
        let mut view_position = StringBuilder::new();
        let mut view = StringBuilder::new();
        let mut is_frontal = BooleanBuilder::new();
        let mut height = Int32Builder::new();
        let mut width = Int32Builder::new();
        let mut study_date = StringBuilder::new();
        let mut study_time = StringBuilder::new();
        let mut procedure = StringBuilder::new();
        let mut view_code_meaning = StringBuilder::new();
        let mut patient_orientation = StringBuilder::new();
        let mut split = StringBuilder::new();
        for row in rows {
            image_id.append_value(&row.image_id);
            patient_id.append_value(&row.info.patient_id);
            study_id.append_value(&row.info.study_id);
            view_position.append_option(row.view_position.as_deref());
            view.append_option(row.view);
            is_frontal.append_value(row.view == Some("frontal"));
            height.append_option(row.info.rows);
            width.append_option(row.info.columns);
            study_date.append_option(row.study_date.as_deref());
            study_time.append_option(row.study_time.as_deref());
            procedure.append_option(row.procedure.as_deref());
            view_code_meaning.append_option(row.view_code_meaning.as_deref());
            patient_orientation.append_option(row.patient_orientation.as_deref());
            split.append_option(row.split.as_deref());
        }
        let columns: Vec<ArrayRef> = vec![
            Arc::new(image_id.finish()),
            Arc::new(patient_id.finish()),
            Arc::new(study_id.finish()),
            Arc::new(view_position.finish()),
            Arc::new(view.finish()),
            Arc::new(is_frontal.finish()),
            Arc::new(height.finish()),
            Arc::new(width.finish()),
            Arc::new(study_date.finish()),
            Arc::new(study_time.finish()),
            Arc::new(procedure.finish()),
            Arc::new(view_code_meaning.finish()),
            Arc::new(patient_orientation.finish()),
            Arc::new(split.finish()),
        ];
        Ok(RecordBatch::try_new(
            cxrlake_schemas::sources::images(),
            columns,
        )?)
    }
}

/// One `splits` row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SplitRow {
    /// DICOM id.
    pub image_id: String,
    /// `s…`.
    pub study_id: String,
    /// `p…`.
    pub patient_id: String,
    /// `train`, `validate` or `test`.
    pub split: String,
}

/// Parses one split row.
pub fn split_row(input: &CsvInput, row: &CsvRow) -> std::result::Result<SplitRow, String> {
    let image_id = dicom_of(input, row)?;
    let (patient_id, study_id) = ids_of(input, row)?;
    let split = field(input, row, "split");
    if !matches!(split, "train" | "validate" | "test") {
        return Err(format!(
            "unknown split '{split}': expected train, validate or test"
        ));
    }
    Ok(SplitRow {
        image_id,
        study_id,
        patient_id,
        split: split.to_string(),
    })
}

impl Row for SplitRow {
    const TABLE: &'static str = "splits";

    fn key(&self) -> String {
        self.image_id.clone()
    }

    fn approx_bytes(&self) -> usize {
        128
    }

    fn batch(rows: &[Self]) -> Result<RecordBatch> {
        let mut columns: [StringBuilder; 4] = Default::default();
        for row in rows {
            columns[0].append_value(&row.image_id);
            columns[1].append_value(&row.study_id);
            columns[2].append_value(&row.patient_id);
            columns[3].append_value(&row.split);
        }
        let columns: Vec<ArrayRef> = columns
            .into_iter()
            .map(|mut b| Arc::new(b.finish()) as ArrayRef)
            .collect();
        Ok(RecordBatch::try_new(
            cxrlake_schemas::sources::splits(),
            columns,
        )?)
    }
}

/// One `chexpert_labels` row.
#[derive(Debug, Clone, PartialEq)]
pub struct LabelRow {
    /// `p…`.
    pub patient_id: String,
    /// `s…`.
    pub study_id: String,
    /// `chexpert` or `negbio`.
    pub labeler: Labeler,
    /// The 14 labels in [`CHEXPERT_LABELS`] order.
    pub labels: [Option<f32>; 14],
}

/// Parses one label row.
pub fn label_row(
    input: &CsvInput,
    row: &CsvRow,
    labeler: Labeler,
) -> std::result::Result<LabelRow, String> {
    let (patient_id, study_id) = ids_of(input, row)?;
    let mut labels = [None; 14];
    for (slot, column) in labels.iter_mut().zip(CHEXPERT_CSV_COLUMNS) {
        let value = field(input, row, column);
        *slot = match value {
            "" => None,
            _ => match value.parse::<f32>() {
                Ok(v) if v == 1.0 || v == 0.0 || v == -1.0 => Some(v),
                _ => {
                    return Err(format!(
                        "invalid {column} label '{value}': expected 1.0, 0.0, -1.0 or blank"
                    ));
                }
            },
        };
    }
    Ok(LabelRow {
        patient_id,
        study_id,
        labeler,
        labels,
    })
}

impl Row for LabelRow {
    const TABLE: &'static str = "chexpert_labels";

    fn key(&self) -> String {
        format!("{}\u{1f}{}", self.study_id, self.labeler.as_str())
    }

    fn approx_bytes(&self) -> usize {
        128
    }

    fn batch(rows: &[Self]) -> Result<RecordBatch> {
        let mut patient_id = StringBuilder::new();
        let mut study_id = StringBuilder::new();
        let mut labeler = StringBuilder::new();
        let mut labels: Vec<Float32Builder> = (0..CHEXPERT_LABELS.len())
            .map(|_| Float32Builder::new())
            .collect();
        for row in rows {
            patient_id.append_value(&row.patient_id);
            study_id.append_value(&row.study_id);
            labeler.append_value(row.labeler.as_str());
            for (builder, value) in labels.iter_mut().zip(row.labels) {
                builder.append_option(value);
            }
        }
        let mut columns: Vec<ArrayRef> = vec![
            Arc::new(patient_id.finish()),
            Arc::new(study_id.finish()),
            Arc::new(labeler.finish()),
        ];
        columns.extend(
            labels
                .into_iter()
                .map(|mut b| Arc::new(b.finish()) as ArrayRef),
        );
        Ok(RecordBatch::try_new(
            cxrlake_schemas::sources::chexpert_labels(),
            columns,
        )?)
    }
}

#[cfg(test)]
mod tests {

    #[test]
    fn image_sizes_beyond_jpeg_are_refused_not_saturated() {
        assert_eq!(parse_size("2544", "Rows"), Ok(Some(2544)));
        assert_eq!(parse_size("3056.0", "Rows"), Ok(Some(3056)));
        assert_eq!(parse_size("", "Rows"), Ok(None));
        for bad in ["1e10", "10000000000", "70000", "0", "-5", "12.5", "abc"] {
            let err = parse_size(bad, "Rows").expect_err(bad);
            assert!(
                err.contains("is not a pixel count from 1 to 65535"),
                "{bad}: {err}"
            );
        }
    }

    use super::*;

    #[test]
    fn views() {
        assert_eq!(view_of("PA"), Some("frontal"));
        assert_eq!(view_of("AP AXIAL"), Some("frontal"));
        assert_eq!(view_of("PA LLD"), Some("frontal"));
        assert_eq!(view_of("LATERAL"), Some("lateral"));
        assert_eq!(view_of("LL"), Some("lateral"));
        assert_eq!(view_of(""), None);
        assert_eq!(view_of("LAO"), None);
        assert_eq!(view_of("APPLE"), None);
    }

    #[test]
    fn label_columns_snake_case_to_schema() {
        for (column, label) in CHEXPERT_CSV_COLUMNS.iter().zip(CHEXPERT_LABELS) {
            assert_eq!(column.to_ascii_lowercase().replace(' ', "_"), label);
        }
    }
}
