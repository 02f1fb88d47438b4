//! Gzipped CSV outputs in the MIMIC-CXR-JPG shapes.
//!
//! Rows are formatted by the per-patient workers (every field is generator vocabulary, free of
//! commas, quotes and newlines) and concatenated here in patient order.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;

use flate2::Compression;
use flate2::write::GzEncoder;

use crate::error::{Result, SynthError};

/// `mimic-cxr-2.0.0-metadata.csv.gz` header.
pub const METADATA_HEADER: &str = "dicom_id,subject_id,study_id,PerformedProcedureStepDescription,ViewPosition,Rows,Columns,StudyDate,StudyTime,ProcedureCodeSequence_CodeMeaning,ViewCodeSequence_CodeMeaning,PatientOrientationCodeSequence_CodeMeaning";

/// `mimic-cxr-2.0.0-split.csv.gz` header.
pub const SPLIT_HEADER: &str = "dicom_id,study_id,subject_id,split";

/// Header of `mimic-cxr-2.0.0-chexpert.csv.gz` and `mimic-cxr-2.0.0-negbio.csv.gz`.
pub fn labels_header() -> String {
    let mut header = String::from("subject_id,study_id");
    for column in crate::vocab::CHEXPERT_CSV_COLUMNS {
        header.push(',');
        header.push_str(column);
    }
    header
}

/// Writes `header` then every chunk (each a run of newline-terminated rows) gzipped to `path`.
pub fn write_gz<'a>(
    path: &Path,
    header: &str,
    chunks: impl Iterator<Item = &'a str>,
) -> Result<()> {
    let io = |e| SynthError::io(path, e);
    let file = File::create(path).map_err(io)?;
    let mut gz = GzEncoder::new(BufWriter::with_capacity(1 << 20, file), Compression::fast());
    gz.write_all(header.as_bytes()).map_err(io)?;
    gz.write_all(b"\n").map_err(io)?;
    for chunk in chunks {
        gz.write_all(chunk.as_bytes()).map_err(io)?;
    }
    gz.finish().map_err(io)?.flush().map_err(io)?;
    Ok(())
}
