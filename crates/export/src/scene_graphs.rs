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

use std::collections::{HashSet, VecDeque};
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use arrow::array::{Array, ArrayRef, AsArray, RecordBatch};
use arrow::compute::cast;
use arrow::datatypes::DataType;
use cxrlake_lake::Lake;
use datafusion::error::DataFusionError;
use datafusion::physical_plan::SendableRecordBatchStream;
use futures::StreamExt;
use rayon::prelude::*;
use serde_json::Value;
use tokio::task::JoinHandle;
use tracing::Instrument;

use crate::error::{ExportError, Result};
use crate::files::write_atomic;
use crate::writer::{SceneGraphWriter, root_column};

/// The lake table this export reads.
const TABLE: &str = "scene_graphs";

/// Suffix of a study's scene graph file.
pub const SCENE_GRAPH_SUFFIX: &str = ".scene_graph.json";

/// Batches being written at once; each is written by rayon's pool, so this bounds memory, not
/// parallelism.
const BATCHES_IN_FLIGHT: usize = 2;

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

/// What an export wrote.
#[derive(Debug, Clone, PartialEq)]
pub struct ExportSummary {
    /// Studies exported.
    pub studies: usize,
    /// Files written.
    pub files: usize,
    /// Bytes written.
    pub bytes: u64,
    /// Wall-clock seconds.
    pub seconds: f64,
    /// The output folder.
    pub out_dir: PathBuf,
}

impl fmt::Display for ExportSummary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let rate = if self.seconds > 0.0 {
            self.studies as f64 / self.seconds
        } else {
            0.0
        };
        write!(
            f,
            "scene graphs: {} studies → {} ({:.1} MB) in {:.2} s ({rate:.0} studies/s)",
            self.studies,
            self.out_dir.display(),
            self.bytes as f64 / 1e6,
            self.seconds,
        )
    }
}

/// Where a study's scene graph goes, relative to the export folder:
/// `p10/p10000032/s50414267.scene_graph.json` (`pXX` = the first three characters of the
/// prefixed patient id).
pub fn study_path(patient_id: &str, study_id: &str) -> PathBuf {
    patient_folder(patient_id).join(format!("{study_id}{SCENE_GRAPH_SUFFIX}"))
}

/// `p10/p10000032`.
fn patient_folder(patient_id: &str) -> PathBuf {
    let group = patient_id.get(..3).unwrap_or(patient_id);
    [group, patient_id].iter().collect()
}

/// One `scene_graphs` row as its D.1 JSON object.
pub fn scene_graph_json(batch: &RecordBatch, row: usize) -> Result<Value> {
    if row >= batch.num_rows() {
        return Err(ExportError::RowOutOfRange {
            row,
            rows: batch.num_rows(),
        });
    }
    let root = root_column(batch)?;
    let writer = SceneGraphWriter::new(&root)?;
    let mut bytes = Vec::new();
    write_row(&writer, row, &mut bytes)?;
    Ok(serde_json::from_slice(&bytes)?)
}

/// Appends row `row` as JSON, naming the study if it does not fit D.1.
fn write_row(writer: &SceneGraphWriter<'_>, row: usize, out: &mut Vec<u8>) -> Result<()> {
    writer.write(row, out).map_err(|detail| ExportError::Shape {
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
    let mut stream = scan(lake, export).await?;
    std::fs::create_dir_all(&export.out_dir).map_err(|source| ExportError::Io {
        path: export.out_dir.clone(),
        source,
    })?;

    let out_dir = Arc::new(export.out_dir.clone());
    let mut checker = RowChecker::default();
    let mut writers = Writers::default();
    let fed = async {
        while let Some(batch) = stream.next().await {
            let batch = batch?;
            checker.check(&batch)?;
            let out_dir = Arc::clone(&out_dir);
            writers
                .push(tokio::task::spawn_blocking(move || {
                    write_batch(&out_dir, &batch)
                }))
                .await?;
        }
        Ok::<_, ExportError>(())
    }
    .await;
    let written = writers.finish().await;
    fed?;
    let written = written?;

    if written.studies == 0 {
        return Err(match &export.filter {
            Some(filter) => ExportError::NoMatch {
                filter: filter.clone(),
            },
            None => ExportError::Empty {
                root: lake.root().to_string(),
            },
        });
    }
    let summary = ExportSummary {
        studies: written.studies,
        files: written.studies,
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

/// The filtered table as a stream of batches.
async fn scan(lake: &Lake, export: &SceneGraphExport) -> Result<SendableRecordBatchStream> {
    let ctx = lake.session().await?;
    if !ctx.table_exist(TABLE)? {
        return Err(ExportError::NoSceneGraphs {
            root: lake.root().to_string(),
        });
    }
    let mut frame = ctx.table(TABLE).await?;
    let Some(filter) = &export.filter else {
        return Ok(frame.execute_stream().await?);
    };
    let invalid = |source: DataFusionError| ExportError::Filter {
        filter: filter.clone(),
        source: Box::new(source),
    };
    let predicate = frame.parse_sql_expr(filter).map_err(invalid)?;
    frame = frame.filter(predicate).map_err(invalid)?;
    frame.execute_stream().await.map_err(invalid)
}

/// Studies and bytes written.
#[derive(Debug, Default, Clone, Copy)]
struct Written {
    studies: usize,
    bytes: u64,
}

impl Written {
    fn add(self, other: Written) -> Written {
        Written {
            studies: self.studies + other.studies,
            bytes: self.bytes + other.bytes,
        }
    }
}

/// Batch writers in flight, at most [`BATCHES_IN_FLIGHT`].
#[derive(Default)]
struct Writers {
    pending: VecDeque<JoinHandle<Result<Written>>>,
    written: Written,
}

impl Writers {
    /// Starts `task`, first waiting for the oldest one if too many are running.
    async fn push(&mut self, task: JoinHandle<Result<Written>>) -> Result<()> {
        self.pending.push_back(task);
        if self.pending.len() > BATCHES_IN_FLIGHT
            && let Some(oldest) = self.pending.pop_front()
        {
            self.written = self.written.add(oldest.await??);
        }
        Ok(())
    }

    /// Waits for every task; the first error wins.
    async fn finish(&mut self) -> Result<Written> {
        let mut first_error = None;
        while let Some(task) = self.pending.pop_front() {
            match task.await {
                Ok(Ok(written)) => self.written = self.written.add(written),
                Ok(Err(err)) => {
                    first_error.get_or_insert(err);
                }
                Err(err) => {
                    first_error.get_or_insert(err.into());
                }
            }
        }
        first_error.map_or(Ok(self.written), Err)
    }
}

/// Validates ids and finds repeated studies across batches, numbering rows in export order.
#[derive(Default)]
struct RowChecker {
    rows: usize,
    seen: HashSet<String>,
}

impl RowChecker {
    fn check(&mut self, batch: &RecordBatch) -> Result<()> {
        let patients = text_column(batch, "patient_id")?;
        let studies = text_column(batch, "study_id")?;
        let (patients, studies) = (patients.as_string::<i32>(), studies.as_string::<i32>());
        for i in 0..batch.num_rows() {
            let row = self.rows + i;
            let patient_id = patients.is_valid(i).then(|| patients.value(i));
            let study_id = studies.is_valid(i).then(|| studies.value(i));
            let malformed = |field, expected| ExportError::MalformedId {
                row,
                field,
                expected,
                patient_id: patient_id.map(str::to_string),
                study_id: study_id.map(str::to_string),
            };
            // Two digits at least: the folder `pXX` takes the first three characters.
            if !patient_id.is_some_and(|id| is_id(id, 'p', 2)) {
                return Err(malformed(
                    "patient_id",
                    "'p' followed by digits, e.g. p10000032",
                ));
            }
            let Some(study_id) = study_id.filter(|id| is_id(id, 's', 1)) else {
                return Err(malformed(
                    "study_id",
                    "'s' followed by digits, e.g. s50414267",
                ));
            };
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

/// `prefix` followed by at least `min_digits` ASCII digits and nothing else.
fn is_id(id: &str, prefix: char, min_digits: usize) -> bool {
    id.strip_prefix(prefix).is_some_and(|digits| {
        digits.len() >= min_digits && digits.bytes().all(|b| b.is_ascii_digit())
    })
}

/// A column of `batch` as `utf8`.
fn text_column(batch: &RecordBatch, name: &str) -> Result<ArrayRef> {
    let column = batch
        .column_by_name(name)
        .ok_or_else(|| ExportError::MissingColumns {
            missing: name.to_string(),
        })?;
    Ok(cast(column, &DataType::Utf8)?)
}

/// Bytes reserved per file (typical graphs take 10–30 kB).
const FILE_CAPACITY: usize = 32 * 1024;

/// Writes every row of `batch` as a file under `out_dir`, rows in parallel.
fn write_batch(out_dir: &Path, batch: &RecordBatch) -> Result<Written> {
    let root = root_column(batch)?;
    let writer = SceneGraphWriter::new(&root)?;
    create_folders(out_dir, &writer, batch.num_rows())?;
    (0..batch.num_rows())
        .into_par_iter()
        .map_init(
            || Vec::with_capacity(FILE_CAPACITY),
            |bytes, row| write_study(out_dir, &writer, row, bytes),
        )
        .try_reduce(Written::default, |a, b| Ok(a.add(b)))
}

/// Creates the patient folders of a batch's studies, each once.
fn create_folders(out_dir: &Path, writer: &SceneGraphWriter<'_>, rows: usize) -> Result<()> {
    let mut patients = HashSet::new();
    for row in 0..rows {
        if let (Some(patient_id), _) = writer.ids(row)
            && patients.insert(patient_id)
        {
            let folder = out_dir.join(patient_folder(patient_id));
            std::fs::create_dir_all(&folder).map_err(|source| ExportError::Io {
                path: folder,
                source,
            })?;
        }
    }
    Ok(())
}

/// Writes one study's file (its folder exists), reusing `bytes` as the buffer.
fn write_study(
    out_dir: &Path,
    writer: &SceneGraphWriter<'_>,
    row: usize,
    bytes: &mut Vec<u8>,
) -> Result<Written> {
    bytes.clear();
    write_row(writer, row, bytes)?;
    bytes.push(b'\n');
    let (patient_id, study_id) = writer.ids(row);
    let path = out_dir.join(study_path(
        patient_id.unwrap_or_default(),
        study_id.unwrap_or_default(),
    ));
    write_atomic(&path, bytes).map_err(|source| ExportError::Io {
        path: path.clone(),
        source,
    })?;
    Ok(Written {
        studies: 1,
        bytes: bytes.len() as u64,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn study_paths_follow_the_release_layout() {
        assert_eq!(
            study_path("p10000032", "s50414267"),
            Path::new("p10/p10000032/s50414267.scene_graph.json")
        );
    }

    #[test]
    fn ids_need_their_prefix_and_digits() {
        assert!(is_id("p10000032", 'p', 2));
        assert!(is_id("s5", 's', 1));
        for bad in ["10000032", "p1", "p1000003x", "P10000032", "p../etc", ""] {
            assert!(!is_id(bad, 'p', 2), "{bad}");
        }
    }

    #[test]
    fn the_summary_reads_as_one_line() {
        let summary = ExportSummary {
            studies: 3000,
            files: 3000,
            bytes: 12_500_000,
            seconds: 1.5,
            out_dir: PathBuf::from("out/scene_data"),
        };
        assert_eq!(
            summary.to_string(),
            "scene graphs: 3000 studies → out/scene_data (12.5 MB) in 1.50 s (2000 studies/s)"
        );
    }
}
