//! The `scene_graphs` export: one D.1 JSON file per study in the release's folder layout.
//!
//! ```text
//! scene_graphs ─execute_stream─▶ batch ─check ids─▶ spawn_blocking ─rayon, per row─▶ file
//!  (filtered)      (streamed)      (row numbers,   (≤ 2 batches    Arrow row → D.1 JSON
//!                                   duplicates)     in flight)     → atomic write
//! ```
//!
//! Each batch is bound to the D.1 layout once ([`crate::writer`]); every row is then written
//! straight to bytes (lists keyed by id → dicts, nulls → `[]`/`{}`, keys in D.1 order) as compact
//! UTF-8 JSON with a trailing newline.

use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use arrow::array::{Array, AsArray, RecordBatch};
use cxrlake_lake::Lake;
use datafusion::dataframe::DataFrame;
use futures::StreamExt;
use rayon::prelude::*;
use serde_json::Value;
use tracing::Instrument;

use crate::archive::Deflated;
use crate::error::{ExportError, Result};
use crate::files::{checked_ids, create_folder, patient_folder};
use crate::inflight::{Writers, Written};
use crate::scan::{filter_error, filtered_table, nothing_to_export, text_column};
use crate::sink::Sink;
use crate::summary::{ExportKind, ExportSummary};
use crate::writer::{SceneGraphWriter, scene_graph_column};

/// The lake table this export reads.
const TABLE: &str = "scene_graphs";

/// Suffix of a study's scene graph file.
pub const SCENE_GRAPH_SUFFIX: &str = ".scene_graph.json";

/// What to export and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SceneGraphExport {
    /// Folder receiving `pXX/pXXXXXXXX/sXXXXXXXX.scene_graph.json` files (created if missing).
    pub out_dir: PathBuf,
    /// A SQL predicate over `scene_graphs` columns, e.g. `study_id = 's50414267'`.
    pub filter: Option<String>,
}

impl SceneGraphExport {
    /// Exports every study into `out_dir`.
    pub fn new(out_dir: impl Into<PathBuf>) -> Self {
        Self {
            out_dir: out_dir.into(),
            filter: None,
        }
    }

    /// Exports only the rows matching `filter` (SQL over `scene_graphs` columns).
    pub fn with_filter(mut self, filter: impl Into<String>) -> Self {
        self.filter = Some(filter.into());
        self
    }
}

/// Where a study's scene graph goes, relative to the export folder:
/// `p10/p10000032/s50414267.scene_graph.json` (`pXX` = the first three characters of the
/// prefixed patient id).
pub fn study_path(patient_id: &str, study_id: &str) -> PathBuf {
    patient_folder(patient_id).join(format!("{study_id}{SCENE_GRAPH_SUFFIX}"))
}

/// One `scene_graphs` row as its D.1 JSON object.
pub fn scene_graph_json(batch: &RecordBatch, row: usize) -> Result<Value> {
    if row >= batch.num_rows() {
        return Err(ExportError::RowOutOfRange {
            row,
            rows: batch.num_rows(),
        });
    }
    let root = scene_graph_column(batch)?;
    let writer = SceneGraphWriter::new(&root)?;
    let mut bytes = Vec::new();
    write_row(&writer, row, &mut bytes)?;
    Ok(serde_json::from_slice(&bytes)?)
}

/// Appends row `row` as JSON, naming the study if it does not fit D.1.
fn write_row(writer: &SceneGraphWriter<'_>, row: usize, out: &mut Vec<u8>) -> Result<()> {
    writer.write(row, out).map_err(|detail| ExportError::Shape {
        table: TABLE,
        study_id: writer.ids(row).1.unwrap_or("(null)").to_string(),
        detail,
    })
}

/// Writes the lake's `scene_graphs` (optionally filtered) as one JSON file per study.
pub async fn export_scene_graphs(lake: &Lake, export: &SceneGraphExport) -> Result<ExportSummary> {
    let span = tracing::info_span!("export_scene_graphs", out = %export.out_dir.display());
    run(lake, export).instrument(span).await
}

async fn run(lake: &Lake, export: &SceneGraphExport) -> Result<ExportSummary> {
    let started = Instant::now();
    let filter = export.filter.as_deref();
    let frame = filtered_table(lake, TABLE, filter).await?;
    create_folder(&export.out_dir)?;
    let sink = Arc::new(Sink::Folder(export.out_dir.clone()));
    let written = write_scene_graphs(frame, filter, sink).await?;
    if written.studies == 0 {
        return Err(nothing_to_export(lake, TABLE, filter));
    }
    let summary = ExportSummary {
        kind: ExportKind::SceneGraphs,
        studies: written.studies,
        files: written.studies,
        questions: 0,
        bytes: written.bytes,
        seconds: started.elapsed().as_secs_f64(),
        out_dir: export.out_dir.clone(),
    };
    tracing::info!(
        studies = summary.studies,
        bytes = summary.bytes,
        seconds = summary.seconds,
        "exported scene graphs"
    );
    Ok(summary)
}

/// Writes the rows of `frame` (`scene_graphs`' columns; `filter` names a user filter in errors)
/// as one D.1 file per study into `sink`.
pub(crate) async fn write_scene_graphs(
    frame: DataFrame,
    filter: Option<&str>,
    sink: Arc<Sink>,
) -> Result<Written> {
    let mut stream = match filter {
        Some(filter) => crate::scan::ordered_stream(frame)
            .await
            .map_err(filter_error(TABLE, filter))?,
        None => crate::scan::ordered_stream(frame).await?,
    };
    let mut checker = RowChecker::default();
    let mut writers = Writers::default();
    let fed = async {
        while let Some(batch) = stream.next().await {
            let batch = batch?;
            checker.check(&batch)?;
            let sink = Arc::clone(&sink);
            writers
                .push(tokio::task::spawn_blocking(move || {
                    write_batch(&sink, &batch)
                }))
                .await?;
        }
        Ok::<_, ExportError>(())
    }
    .await;
    let written = writers.finish().await;
    fed?;
    written
}

/// Validates ids and finds repeated studies across batches, numbering rows in export order.
#[derive(Default)]
struct RowChecker {
    rows: usize,
    seen: HashSet<String>,
}

impl RowChecker {
    fn check(&mut self, batch: &RecordBatch) -> Result<()> {
        let patients = text_column(batch, "patient_id", TABLE)?;
        let studies = text_column(batch, "study_id", TABLE)?;
        let (patients, studies) = (patients.as_string::<i32>(), studies.as_string::<i32>());
        for i in 0..batch.num_rows() {
            let row = self.rows + i;
            let patient_id = patients.is_valid(i).then(|| patients.value(i));
            let study_id = studies.is_valid(i).then(|| studies.value(i));
            let (_, study_id) = checked_ids(TABLE, row, patient_id, study_id)?;
            if !self.seen.insert(study_id.to_string()) {
                return Err(ExportError::DuplicateStudy {
                    study_id: study_id.to_string(),
                    row,
                });
            }
        }
        self.rows += batch.num_rows();
        Ok(())
    }
}

/// Bytes reserved per file (typical graphs take 10–30 kB).
const FILE_CAPACITY: usize = 32 * 1024;

/// Writes every row of `batch` into `sink`, rows in parallel.
fn write_batch(sink: &Sink, batch: &RecordBatch) -> Result<Written> {
    let root = scene_graph_column(batch)?;
    let writer = SceneGraphWriter::new(&root)?;
    let mut patients = HashSet::new();
    for row in 0..batch.num_rows() {
        if let (Some(patient_id), _) = writer.ids(row)
            && patients.insert(patient_id)
        {
            sink.prepare_patient(patient_id)?;
        }
    }
    let results: Vec<(Written, Option<Deflated>)> = (0..batch.num_rows())
        .into_par_iter()
        .map_init(
            || Vec::with_capacity(FILE_CAPACITY),
            |bytes, row| write_study(sink, &writer, row, bytes),
        )
        .collect::<Result<_>>()?;
    sink.gather(results)
}

/// Writes one study's file (its folder exists), reusing `bytes` as the buffer; returns the zip
/// member to merge, if `sink` is a zip.
fn write_study(
    sink: &Sink,
    writer: &SceneGraphWriter<'_>,
    row: usize,
    bytes: &mut Vec<u8>,
) -> Result<(Written, Option<Deflated>)> {
    bytes.clear();
    write_row(writer, row, bytes)?;
    bytes.push(b'\n');
    let (patient_id, study_id) = writer.ids(row);
    let path = study_path(patient_id.unwrap_or_default(), study_id.unwrap_or_default());
    let member = sink.put(&path, bytes)?;
    let written = Written {
        studies: 1,
        questions: 0,
        bytes: bytes.len() as u64,
    };
    Ok((written, member))
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    #[test]
    fn study_paths_follow_the_release_layout() {
        assert_eq!(
            study_path("p10000032", "s50414267"),
            Path::new("p10/p10000032/s50414267.scene_graph.json")
        );
    }
}
