//! The `scene_graphs` export: one D.1 JSON file per study in the release's folder layout.
//!
//! ```text
//! scene_graphs ─execute_stream─▶ batch ─check ids─▶ spawn_blocking ─rayon, per row─▶ file
//!  (filtered)      (streamed)      (row numbers,   (≤ 2 batches    Arrow row → D.1 JSON
//!                                   duplicates)     in flight)     → atomic write
//! ```
//!
//! Each batch is read through one [`Column`] tree built once, turned into `serde_json` values,
//! reshaped by [`crate::layout`] (lists keyed by id → dicts, nulls → `[]`/`{}`) and written as
//! compact UTF-8 JSON with a trailing newline, keys in D.1 order.

use std::collections::{HashSet, VecDeque};
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use arrow::array::{Array, ArrayRef, AsArray, RecordBatch, StructArray};
use arrow::compute::cast;
use arrow::datatypes::DataType;
use cxrlake_lake::Lake;
use datafusion::error::DataFusionError;
use datafusion::physical_plan::SendableRecordBatchStream;
use futures::StreamExt;
use rayon::prelude::*;
use serde_json::{Map, Value};
use tokio::task::JoinHandle;
use tracing::Instrument;

use crate::error::{ExportError, Result};
use crate::files::write_atomic;
use crate::layout::{self, Node, Shape};
use crate::ordered::InOrder;
use crate::values::Column;

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
    let group = patient_id.get(..3).unwrap_or(patient_id);
    [
        group,
        patient_id,
        &format!("{study_id}{SCENE_GRAPH_SUFFIX}"),
    ]
    .iter()
    .collect()
}

/// One `scene_graphs` row as its D.1 JSON object.
pub fn scene_graph_json(batch: &RecordBatch, row: usize) -> Result<Value> {
    if row >= batch.num_rows() {
        return Err(ExportError::RowOutOfRange {
            row,
            rows: batch.num_rows(),
        });
    }
    SceneGraphRows::new(batch)?.json(row)
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

/// Writes every row of `batch` as a file under `out_dir`, rows in parallel.
fn write_batch(out_dir: &Path, batch: &RecordBatch) -> Result<Written> {
    let rows = SceneGraphRows::new(batch)?;
    (0..batch.num_rows())
        .into_par_iter()
        .map(|row| write_study(out_dir, &rows, row))
        .try_reduce(Written::default, |a, b| Ok(a.add(b)))
}

fn write_study(out_dir: &Path, rows: &SceneGraphRows, row: usize) -> Result<Written> {
    let value = rows.json(row)?;
    let id = |key: &str| value.get(key).and_then(Value::as_str).unwrap_or_default();
    let path = out_dir.join(study_path(id("patient_id"), id("study_id")));
    let node = &layout::ROOT;
    let mut bytes = serde_json::to_vec(&InOrder {
        node,
        value: &value,
    })?;
    bytes.push(b'\n');
    let io_error = |source| ExportError::Io {
        path: path.clone(),
        source,
    };
    if let Some(folder) = path.parent() {
        std::fs::create_dir_all(folder).map_err(io_error)?;
    }
    write_atomic(&path, &bytes).map_err(io_error)?;
    Ok(Written {
        studies: 1,
        bytes: bytes.len() as u64,
    })
}

/// The rows of one `scene_graphs` batch, read as D.1 objects.
struct SceneGraphRows {
    root: Column,
}

impl SceneGraphRows {
    fn new(batch: &RecordBatch) -> Result<Self> {
        let schema = batch.schema();
        let mut indices = Vec::new();
        let mut missing = Vec::new();
        for key in layout::ROOT.keys() {
            match schema.index_of(key) {
                Ok(index) => indices.push(index),
                Err(_) => missing.push(key),
            }
        }
        if !missing.is_empty() {
            return Err(ExportError::MissingColumns {
                missing: missing.join(", "),
            });
        }
        let root: ArrayRef = Arc::new(StructArray::from(batch.project(&indices)?));
        Ok(Self {
            root: Column::new(TABLE, &root)?,
        })
    }

    fn json(&self, row: usize) -> Result<Value> {
        let value = self.root.value(row);
        let study_id = value
            .get("study_id")
            .and_then(Value::as_str)
            .unwrap_or("(null)")
            .to_string();
        reshape_object(&layout::ROOT, value)
            .map_err(|detail| ExportError::Shape { study_id, detail })
    }
}

/// An Arrow struct value as the D.1 object `node`: its keys in order, each value reshaped.
fn reshape_object(node: &Node, value: Value) -> Result<Value, String> {
    let mut fields = match value {
        Value::Object(fields) => fields,
        Value::Null => Map::new(),
        other => return Err(format!("a {} is {other}, not a struct", node.name)),
    };
    let mut object = Map::new();
    for (key, shape) in node.fields {
        // Reuse the key string read from Arrow; a missing struct field reads as null.
        let (key, value) = fields
            .remove_entry(*key)
            .unwrap_or_else(|| ((*key).to_string(), Value::Null));
        let value = reshape(*shape, value)?;
        object.insert(key, value);
    }
    Ok(Value::Object(object))
}

fn reshape(shape: Shape, value: Value) -> Result<Value, String> {
    Ok(match (shape, value) {
        (Shape::Scalar(_), value) => value,
        (Shape::Optional(_), Value::Null) => Value::Null,
        (Shape::Optional(node) | Shape::Fixed(node), value) => reshape_object(node, value)?,
        (Shape::List(_) | Shape::Boxes | Shape::Objects(_), Value::Null) => Value::Array(vec![]),
        (Shape::Dict(..) | Shape::LevelDict, Value::Null) => Value::Object(Map::new()),
        (Shape::List(_) | Shape::Boxes, list @ Value::Array(_)) => list,
        (Shape::Objects(node), Value::Array(items)) => Value::Array(
            items
                .into_iter()
                .map(|item| reshape_object(node, item))
                .collect::<Result<_, _>>()?,
        ),
        (Shape::Dict(node, key), Value::Array(items)) => {
            let mut dict = Map::new();
            for item in items {
                let item = reshape_object(node, item)?;
                let id = item.get(key).and_then(Value::as_str).map(str::to_string);
                let Some(id) = id else {
                    return Err(format!("a {} has no {key}", node.name));
                };
                if dict.insert(id.clone(), item).is_some() {
                    return Err(format!("two {} entries have {key} {id}", node.name));
                }
            }
            Value::Object(dict)
        }
        (Shape::LevelDict, Value::Array(items)) => {
            let mut dict = Map::new();
            for mut item in items {
                let Some(image_id) = item.get("image_id").and_then(Value::as_str) else {
                    return Err("a per-image localization quality has no image_id".into());
                };
                let image_id = image_id.to_string();
                let level = item
                    .get_mut("localization_quality")
                    .map(Value::take)
                    .unwrap_or_default();
                if dict.insert(image_id.clone(), level).is_some() {
                    return Err(format!("image {image_id} has two localization qualities"));
                }
            }
            Value::Object(dict)
        }
        (_, other) => return Err(format!("expected a list, found {other}")),
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

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
    fn lists_keyed_by_id_become_dicts_and_nulls_become_empty() {
        let modifiers = reshape(Shape::Fixed(&layout::MODIFIERS), Value::Null).expect("shape");
        assert_eq!(
            modifiers,
            json!({"severity": [], "texture": [], "spread": [], "temporal": []})
        );
        let levels = reshape(
            Shape::LevelDict,
            json!([{"image_id": "a", "localization_quality": "BOX_LOCALIZATION"}]),
        )
        .expect("shape");
        assert_eq!(levels, json!({"a": "BOX_LOCALIZATION"}));
        let twice = json!([{"region": "heart"}, {"region": "heart"}]);
        let err = reshape(Shape::Dict(&layout::REGION, "region"), twice).expect_err("duplicate");
        assert_eq!(err, "two region entries have region heart");
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
