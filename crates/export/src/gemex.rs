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
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::time::Instant;

use cxrlake_gemex::export::{ExportIds, gemex_record, llava};
use cxrlake_gemex::generate::QaRecord;
use cxrlake_lake::Lake;
use datafusion::arrow::json::LineDelimitedWriter;
use futures::StreamExt;
use serde_json::Value;

use crate::error::{ExportError, Result};
use crate::files::{create_folder, hidden_temp};
use crate::scan::{filtered_table, nothing_to_export};

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
#[derive(Debug, Clone, PartialEq)]
pub struct GemexSummary {
    /// Questions per split.
    pub splits: BTreeMap<String, usize>,
    /// Files written.
    pub files: Vec<PathBuf>,
    /// Bytes written.
    pub bytes: u64,
    /// Wall-clock seconds.
    pub seconds: f64,
}

impl std::fmt::Display for GemexSummary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let splits: Vec<String> = self
            .splits
            .iter()
            .map(|(split, n)| format!("{split} {n}"))
            .collect();
        write!(
            f,
            "gemex: {} questions ({}) → {} files ({:.1} MB) in {:.2} s",
            self.splits.values().sum::<usize>(),
            splits.join(", "),
            self.files.len(),
            self.bytes as f64 / 1e6,
            self.seconds
        )
    }
}

/// One output file being written: its temporary file, target and whether a record was written.
struct Output {
    writer: BufWriter<File>,
    temp: PathBuf,
    target: PathBuf,
    first: bool,
}

impl Output {
    fn open(target: PathBuf) -> Result<Self> {
        let temp = hidden_temp(&target)?;
        let file = File::create(&temp).map_err(|source| ExportError::Io {
            path: temp.clone(),
            source,
        })?;
        let mut output = Output {
            writer: BufWriter::new(file),
            temp,
            target,
            first: true,
        };
        output.write(b"[")?;
        Ok(output)
    }

    fn write(&mut self, bytes: &[u8]) -> Result<()> {
        self.writer
            .write_all(bytes)
            .map_err(|source| ExportError::Io {
                path: self.temp.clone(),
                source,
            })
    }

    fn record(&mut self, value: &Value) -> Result<()> {
        let separator: &[u8] = if self.first { b"\n" } else { b",\n" };
        self.first = false;
        self.write(separator)?;
        let json = serde_json::to_vec(value)?;
        self.write(&json)
    }

    /// Closes the array and renames the file into place; its size.
    fn finish(mut self) -> Result<u64> {
        self.write(b"\n]\n")?;
        let io = |path: &Path| {
            let path = path.to_path_buf();
            move |source| ExportError::Io { path, source }
        };
        let file = self.writer.into_inner().map_err(|e| ExportError::Io {
            path: self.temp.clone(),
            source: e.into_error(),
        })?;
        file.sync_all().map_err(io(&self.temp))?;
        let bytes = file.metadata().map_err(io(&self.temp))?.len();
        drop(file);
        std::fs::rename(&self.temp, &self.target).map_err(io(&self.target))?;
        Ok(bytes)
    }
}

/// The image file of `image_id`, as MIMIC-CXR-JPG names it.
fn image_path(patient_id: &str, study_id: &str, image_id: &str) -> String {
    let group = patient_id.get(..3).unwrap_or(patient_id);
    format!("files/{group}/{patient_id}/{study_id}/{image_id}.jpg")
}

/// Writes the `gemex_qa` rows of `lake` (matching the export's filter) as GEMeX and LLaVA
/// files per split.
pub async fn export_gemex(lake: &Lake, export: &GemexExport) -> Result<GemexSummary> {
    let started = Instant::now();
    let frame = filtered_table(lake, "gemex_qa", export.filter.as_deref()).await?;
    let mut stream = frame.execute_stream().await?;
    create_folder(&export.out_dir)?;
    let mut outputs: BTreeMap<(String, &'static str), Output> = BTreeMap::new();
    let mut splits: BTreeMap<String, usize> = BTreeMap::new();
    let mut row = 0;
    let kinds: &[&'static str] = match export.format {
        GemexFormat::Gemex => &["gemex"],
        GemexFormat::Llava => &["llava"],
        GemexFormat::Both => &["gemex", "llava"],
    };
    while let Some(batch) = stream.next().await {
        let batch = batch?;
        if batch.num_rows() == 0 {
            continue;
        }
        let mut writer = LineDelimitedWriter::new(Vec::new());
        writer.write(&batch)?;
        writer.finish()?;
        let lines = writer.into_inner();
        for line in lines.split(|b| *b == b'\n').filter(|l| !l.is_empty()) {
            let value: Value = serde_json::from_slice(line)?;
            let record: QaRecord =
                serde_json::from_value(value.clone()).map_err(|e| ExportError::Record {
                    table: "gemex_qa",
                    row,
                    question_id: value
                        .get("question_id")
                        .and_then(Value::as_str)
                        .map(str::to_string),
                    reason: e.to_string(),
                })?;
            row += 1;
            let text = |key: &str| value.get(key).and_then(Value::as_str).unwrap_or_default();
            let split = value
                .get("split")
                .and_then(Value::as_str)
                .unwrap_or("none")
                .to_string();
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
                    outputs.insert(key.clone(), Output::open(target)?);
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
        }
    }
    if splits.is_empty() {
        return Err(nothing_to_export(
            lake,
            "gemex_qa",
            export.filter.as_deref(),
        ));
    }
    let mut files = Vec::new();
    let mut bytes = 0;
    for output in outputs.into_values() {
        files.push(output.target.clone());
        bytes += output.finish()?;
    }
    Ok(GemexSummary {
        splits,
        files,
        bytes,
        seconds: started.elapsed().as_secs_f64(),
    })
}
