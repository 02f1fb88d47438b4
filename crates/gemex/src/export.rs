//! `cxrlake export gemex`: the `gemex_qa` table as GEMeX JSON (one array per split, the records of
//! crate `cxrlake-gemex`) and as LLaVA-style instruction data (paper 004, tables 3 and 11–14:
//! the type-aware system prompt, `<answer> … <reason> … <location>[[…]]`).
//!
//! ```text
//! <out>/gemex/train.json   [{question_id, image_id, study_id, split, question_type, …}, …]
//! <out>/llava/train.json   [{id, image, system, conversations: [human, gpt]}, …]
//!   (and validate.json, test.json; rows without a split go to none.json)
//! ```
//!
//! Each file is streamed (a JSON array, one record per line) to a hidden temporary file and
//! renamed into place when complete. Images are named as MIMIC-CXR-JPG stores them:
//! `files/pXX/pXXXXXXXX/sXXXXXXXX/<image_id>.jpg`.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Instant;

use crate::generate::QaRecord;
use crate::records::{ExportIds, gemex_record, llava};
use cxrlake_lake::Lake;
use serde_json::Value;

use cxrlake_export::error::Result;
use cxrlake_export::files::{JsonArray, create_folder, image_path};
use cxrlake_export::flavour::{SplitFiles, each_json_row, finish_all, record_error, split_of};
use cxrlake_export::scan::{filtered_table, nothing_to_export};

/// Which files `export gemex` writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum GemexFormat {
    /// GEMeX JSON per split.
    Gemex,
    /// LLaVA conversations per split.
    Llava,
    /// Both (the default).
    #[default]
    Both,
}

/// What `cxrlake export gemex` writes.
#[derive(Debug, Clone)]
pub struct GemexExport {
    out_dir: PathBuf,
    filter: Option<String>,
    format: GemexFormat,
}

impl GemexExport {
    /// Writes under `out_dir`.
    pub fn new(out_dir: impl Into<PathBuf>) -> Self {
        Self {
            out_dir: out_dir.into(),
            filter: None,
            format: GemexFormat::Both,
        }
    }

    /// Only the questions matching this SQL predicate over `gemex_qa` columns.
    pub fn with_filter(mut self, filter: impl Into<String>) -> Self {
        self.filter = Some(filter.into());
        self
    }

    /// Which files.
    pub fn with_format(mut self, format: GemexFormat) -> Self {
        self.format = format;
        self
    }
}

/// What a GEMeX export wrote.
pub type GemexSummary = SplitFiles;

/// Writes the `gemex_qa` rows of `lake` (matching the export's filter) as GEMeX and LLaVA
/// files per split.
pub async fn export_gemex(lake: &Lake, export: &GemexExport) -> Result<GemexSummary> {
    let started = Instant::now();
    let frame = filtered_table(lake, "gemex_qa", export.filter.as_deref()).await?;
    create_folder(&export.out_dir)?;
    let mut outputs: BTreeMap<(String, &'static str), JsonArray> = BTreeMap::new();
    let mut splits: BTreeMap<String, usize> = BTreeMap::new();
    let mut row = 0;
    let kinds: &[&'static str] = match export.format {
        GemexFormat::Gemex => &["gemex"],
        GemexFormat::Llava => &["llava"],
        GemexFormat::Both => &["gemex", "llava"],
    };
    each_json_row(frame, |value| {
        let record: QaRecord = serde_json::from_value(value.clone())
            .map_err(|e| record_error("gemex_qa", row, &value, e.to_string()))?;
        row += 1;
        let text = |key: &str| value.get(key).and_then(Value::as_str).unwrap_or_default();
        let split = split_of(&value);
        let image = image_path(text("patient_id"), text("study_id"), text("image_id"));
        let ids = ExportIds {
            question_id: text("question_id"),
            image_id: text("image_id"),
            study_id: text("study_id"),
            split: value.get("split").and_then(Value::as_str),
            image: &image,
        };
        for kind in kinds {
            let key = (split.clone(), *kind);
            if !outputs.contains_key(&key) {
                let target = export.out_dir.join(kind).join(format!("{split}.json"));
                outputs.insert(key.clone(), JsonArray::open(target)?);
            }
            let rendered = match *kind {
                "gemex" => gemex_record(&record, &ids),
                _ => llava(&record, &ids),
            };
            if let Some(output) = outputs.get_mut(&key) {
                output.record(&rendered)?;
            }
        }
        *splits.entry(split).or_default() += 1;
        Ok(())
    })
    .await?;
    if splits.is_empty() {
        return Err(nothing_to_export(
            lake,
            "gemex_qa",
            export.filter.as_deref(),
        ));
    }
    let (files, bytes) = finish_all(outputs.into_values())?;
    Ok(SplitFiles {
        flavour: "gemex",
        unit: "questions",
        splits,
        files,
        bytes,
        seconds: started.elapsed().as_secs_f64(),
    })
}
