//! MIMIC-CXR reports: `files/pXX/pXXXXXXXX/sXXXXXXXX.txt`, from a folder tree or read in place
//! from `mimic-cxr-reports.zip`. The ids come from the path (`p…` folder, `s…` file name).

use std::sync::Arc;

use arrow::array::{ArrayRef, RecordBatch, StringBuilder};
use sha2::{Digest, Sha256};

use crate::discover::{InputFile, Location};
use crate::error::Result;
use crate::ids;
use crate::quarantine::{Quarantined, Target};
use crate::writer::Row;

/// One `reports` row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReportRow {
    /// `p10000032`.
    pub patient_id: String,
    /// `s50414267`.
    pub study_id: String,
    /// The report text as in the file.
    pub text: String,
    /// `files/p10/p10000032/s50414267.txt` (the same for the tree and the zip); for a symbolic
    /// link, the file it points to.
    pub source_path: String,
    /// SHA-256 of the file's bytes, hex.
    pub content_hash: String,
}

impl Row for ReportRow {
    const TABLE: &'static str = "reports";

    fn key(&self) -> String {
        self.study_id.clone()
    }

    fn approx_bytes(&self) -> usize {
        self.text.len() + self.source_path.len() + 96
    }

    fn batch(rows: &[Self]) -> Result<RecordBatch> {
        let mut columns: [StringBuilder; 5] = Default::default();
        for row in rows {
            columns[0].append_value(&row.patient_id);
            columns[1].append_value(&row.study_id);
            columns[2].append_value(&row.text);
            columns[3].append_value(&row.source_path);
            columns[4].append_value(&row.content_hash);
        }
        let columns: Vec<ArrayRef> = columns
            .into_iter()
            .map(|mut b| Arc::new(b.finish()) as ArrayRef)
            .collect();
        Ok(RecordBatch::try_new(
            cxrlake_schemas::sources::reports(),
            columns,
        )?)
    }
}

/// The release-relative path of a report: from its last `files/` folder on (the same for a tree,
/// a sub-folder of it and the zip), else the file name.
pub fn source_path(path: &str) -> String {
    let segments: Vec<&str> = path.split('/').collect();
    match segments.iter().rposition(|s| *s == "files") {
        Some(i) => segments[i..].join("/"),
        None => segments.last().copied().unwrap_or(path).to_string(),
    }
}

/// Parses one report file.
pub fn parse(file: &InputFile, bytes: Vec<u8>) -> std::result::Result<ReportRow, Quarantined> {
    let slashes = |path: &std::path::Path| path.to_string_lossy().replace('\\', "/");
    // The ids come from the name the corpus gives the file; the source is the file read.
    let (full, read) = match &file.location {
        Location::File(path) => (slashes(path), slashes(path)),
        Location::Link { link, target } => (slashes(link), slashes(target)),
        Location::ZipMember { name, .. } => (name.clone(), name.clone()),
    };
    let mut segments = full.rsplit('/');
    let name = segments.next().unwrap_or_default();
    let folder = segments.next().unwrap_or_default();
    let stem = name.strip_suffix(".txt").unwrap_or(name);
    let quarantine = |reason: String, raw: Vec<u8>| {
        Quarantined::new(Target::Reports, file.source(), "file", reason, raw)
    };
    let Some(study_id) = stem.starts_with('s').then(|| ids::study_id(stem)).flatten() else {
        return Err(quarantine(
            format!("invalid study id '{stem}' in the file name: expected s + 8 digits"),
            bytes,
        ));
    };
    let Some(patient_id) = folder
        .starts_with('p')
        .then(|| ids::patient_id(folder))
        .flatten()
    else {
        return Err(quarantine(
            format!("invalid patient id '{folder}' in the folder name: expected p + 8 digits"),
            bytes,
        ));
    };
    let content_hash = hex::encode(Sha256::digest(&bytes));
    let text = match String::from_utf8(bytes) {
        Ok(text) => text,
        Err(err) => {
            let reason = format!("report is not UTF-8: {}", err.utf8_error());
            return Err(quarantine(reason, err.into_bytes()));
        }
    };
    Ok(ReportRow {
        patient_id,
        study_id,
        text,
        source_path: source_path(&read),
        content_hash,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn source_path_starts_at_files() {
        assert_eq!(
            source_path("mimic/files/p10/p10000032/s50414267.txt"),
            "files/p10/p10000032/s50414267.txt"
        );
        assert_eq!(source_path("s50414267.txt"), "s50414267.txt");
    }
}
