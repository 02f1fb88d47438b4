//! The `qa` export: one D.2 JSON file per study, `{patient_id, study_id, questions: [...]}`, in
//! the release's folder layout.
//!
//! ```text
//! qa ─(1) count questions per study──▶ expected: study → (patient, questions)
//!  (filtered)
//!    ─(2) project, scan once ─▶ batch ─StudyCollector─────────────────────────┐
//!          (any order)               check ids; add each row to its open       │
//!                                    study; a study is complete once it has    │
//!                                    its expected questions                    ▼
//!                     spawn_blocking (≤ 2 batches in flight) ◀─ completed studies + the batches
//!                       ─rayon, per study─▶ sort by question_id → question JSON → atomic write
//! ```
//!
//! A file is written as soon as its study's last question has been read, so memory holds the
//! open studies only, and the batches their rows are in: the lake writes `qa` sorted by
//! (patient_id, study_id, question_id), so a study's rows come together and only about one
//! study per scan partition is open at a time. Any other layout still exports correctly, with
//! more studies open. Rows are never copied: each batch is bound to the D.2 layout once
//! ([`crate::writer`]) and each question written straight to bytes from where it is.
//!
//! The file's questions are in `question_id` order, keys in release order (see [`crate::d2`]);
//! answer parts are nested by `parent_answer_id` into `sub_answers` (always present). The lake's
//! judged columns fill `question_quality` (`rating` is the QA pair's overall `rating`, else
//! `question_quality.rating`) and each part's `answer_quality`; before the judge stage every
//! value there is `null`. Each question also carries cxrlake's provenance, `extractor` and
//! `embedder`, which [`crate::validate_qa`] accepts but does not require.

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use arrow::array::{Array, AsArray, RecordBatch, StringArray};
use arrow::compute::cast;
use arrow::datatypes::{DataType, Int64Type};
use cxrlake_lake::Lake;
use datafusion::dataframe::DataFrame;
use datafusion::execution::SendableRecordBatchStream;
use datafusion::functions_aggregate::expr_fn::count;
use datafusion::prelude::{col, lit};
use futures::StreamExt;
use rayon::prelude::*;
use tracing::Instrument;

use crate::archive::Deflated;
use crate::d2;
use crate::error::{ExportError, Result};
use crate::files::{checked_ids, create_folder, patient_folder};
use crate::inflight::{Writers, Written};
use crate::scan::{filter_error, filtered_table, nothing_to_export, text_column};
use crate::sink::Sink;
use crate::summary::{ExportKind, ExportSummary};
use crate::writer::{QuestionWriter, question_column};

/// The lake table this export reads.
const TABLE: &str = "qa";

/// Suffix of a study's QA file.
pub const QA_SUFFIX: &str = ".qa.json";

/// The question's own columns, `d2::QUESTION` without `question_quality`.
const QUESTION_COLUMNS: usize = 11;
/// `question_quality`, folding in the QA pair's overall rating.
const QUESTION_QUALITY: &str = "named_struct('question_clarity', question_quality['question_clarity'], \
     'completeness', question_quality['completeness'], \
     'rating', coalesce(rating, question_quality['rating'])) AS question_quality";

/// ids, `d2::QUESTION` in release order, cxrlake's provenance.
fn projection() -> Vec<&'static str> {
    let mut columns = vec!["patient_id", "study_id"];
    columns.extend(&d2::QUESTION[..QUESTION_COLUMNS]);
    columns.push(QUESTION_QUALITY);
    columns.extend(["extractor", "embedder"]);
    columns
}

/// What to export and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QaExport {
    /// Folder receiving `pXX/pXXXXXXXX/sXXXXXXXX.qa.json` files (created if missing).
    pub out_dir: PathBuf,
    /// A SQL predicate over `qa` columns, e.g. `question_type = 'D02_has_finding'`; a study's
    /// file holds its matching questions, studies with none get no file.
    pub filter: Option<String>,
}

impl QaExport {
    /// Exports every question into `out_dir`.
    pub fn new(out_dir: impl Into<PathBuf>) -> Self {
        Self {
            out_dir: out_dir.into(),
            filter: None,
        }
    }

    /// Exports only the questions matching `filter` (SQL over `qa` columns).
    pub fn with_filter(mut self, filter: impl Into<String>) -> Self {
        self.filter = Some(filter.into());
        self
    }
}

/// Where a study's QA file goes, relative to the export folder:
/// `p10/p10000032/s50414267.qa.json` (`pXX` = the first three characters of the prefixed
/// patient id).
pub fn qa_path(patient_id: &str, study_id: &str) -> PathBuf {
    patient_folder(patient_id).join(format!("{study_id}{QA_SUFFIX}"))
}

/// Writes the lake's `qa` questions (optionally filtered) as one JSON file per study.
pub async fn export_qa(lake: &Lake, export: &QaExport) -> Result<ExportSummary> {
    let span = tracing::info_span!("export_qa", out = %export.out_dir.display());
    run(lake, export).instrument(span).await
}

async fn run(lake: &Lake, export: &QaExport) -> Result<ExportSummary> {
    let started = Instant::now();
    let filter = export.filter.as_deref();
    let frame = filtered_table(lake, TABLE, filter).await?;
    create_folder(&export.out_dir)?;
    let sink = Arc::new(Sink::Folder(export.out_dir.clone()));
    let written = write_questions(frame, filter, sink).await?;
    if written.studies == 0 {
        return Err(nothing_to_export(lake, TABLE, filter));
    }

    let summary = ExportSummary {
        kind: ExportKind::Qa,
        studies: written.studies,
        files: written.studies,
        questions: written.questions,
        bytes: written.bytes,
        seconds: started.elapsed().as_secs_f64(),
        out_dir: export.out_dir.clone(),
    };
    tracing::info!(
        studies = summary.studies,
        questions = summary.questions,
        bytes = summary.bytes,
        seconds = summary.seconds,
        "exported qa"
    );
    Ok(summary)
}

/// Writes the questions of `frame` (rows of `qa`'s columns; `filter` names a user filter in
/// errors) as one D.2 file per study into `sink`; nothing is written for an empty frame.
pub(crate) async fn write_questions(
    frame: DataFrame,
    filter: Option<&str>,
    sink: Arc<Sink>,
) -> Result<Written> {
    let expected = study_sizes(&frame, filter).await?;
    if expected.is_empty() {
        return Ok(Written::default());
    }
    let stream = question_stream(frame, filter).await?;
    write_question_stream(stream, expected, sink).await
}

/// The rows of `frame` (`qa`'s columns) as the D.2 writer reads them, planned and started.
pub(crate) async fn question_stream(
    frame: DataFrame,
    filter: Option<&str>,
) -> Result<SendableRecordBatchStream> {
    let projected = async { crate::scan::ordered_stream(frame.select_exprs(&projection())?).await };
    Ok(match filter {
        Some(filter) => projected.await.map_err(filter_error(TABLE, filter))?,
        None => projected.await?,
    })
}

/// Writes the questions of `stream` (from [`question_stream`]), `expected` questions per
/// study (from [`study_sizes`]), as one D.2 file per study into `sink`.
pub(crate) async fn write_question_stream(
    mut stream: SendableRecordBatchStream,
    expected: StudySizes,
    sink: Arc<Sink>,
) -> Result<Written> {
    let mut collector = StudyCollector::new(expected);
    let mut writers = Writers::default();
    let fed = async {
        while let Some(batch) = stream.next().await {
            let job = collector.push(batch?)?;
            if job.studies.is_empty() {
                continue;
            }
            let sink = Arc::clone(&sink);
            writers
                .push(tokio::task::spawn_blocking(move || write_job(&sink, job)))
                .await?;
        }
        collector.finish()
    }
    .await;
    let written = writers.finish().await;
    fed?;
    written
}

/// How many questions each study has, and its patient.
pub(crate) type StudySizes = HashMap<String, (Option<String>, usize)>;

/// The questions per study of the filtered table (a scan of the two id columns).
pub(crate) async fn study_sizes(frame: &DataFrame, filter: Option<&str>) -> Result<StudySizes> {
    let counted = async {
        frame
            .clone()
            .aggregate(
                vec![col("patient_id"), col("study_id")],
                vec![count(lit(1)).alias("questions")],
            )?
            .collect()
            .await
    };
    let batches = match filter {
        Some(filter) => counted.await.map_err(filter_error(TABLE, filter))?,
        None => counted.await?,
    };
    let mut sizes = StudySizes::new();
    for batch in &batches {
        let patients = text_column(batch, "patient_id", TABLE)?;
        let studies = text_column(batch, "study_id", TABLE)?;
        let (patients, studies) = (patients.as_string::<i32>(), studies.as_string::<i32>());
        let questions = cast(batch.column(2), &DataType::Int64)?;
        let questions = questions.as_primitive::<Int64Type>();
        for i in 0..batch.num_rows() {
            // A row without a study id fails the id check when it is read.
            let Some(study_id) = text_at(studies, i) else {
                continue;
            };
            let patient_id = text_at(patients, i).map(str::to_string);
            let size = usize::try_from(questions.value(i)).unwrap_or_default();
            match sizes.get(study_id) {
                Some((first, _)) if *first != patient_id => {
                    let name = |id: &Option<String>| id.clone().unwrap_or_else(|| "null".into());
                    return Err(ExportError::StudyOfTwoPatients {
                        study_id: study_id.to_string(),
                        patient_id: name(first),
                        other_patient_id: name(&patient_id),
                    });
                }
                _ => {
                    sizes.insert(study_id.to_string(), (patient_id, size));
                }
            }
        }
    }
    Ok(sizes)
}

/// The string at `row`, `None` when null.
fn text_at(array: &StringArray, row: usize) -> Option<&str> {
    array.is_valid(row).then(|| array.value(row))
}

/// Where a question is among a job's batches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct RowRef {
    batch: usize,
    row: usize,
}

/// A complete study: its ids and where its questions are (in scan order).
#[derive(Debug, Clone, PartialEq, Eq)]
struct StudyRows {
    patient_id: String,
    study_id: String,
    rows: Vec<RowRef>,
}

/// Studies to write and the batches their rows are in.
#[derive(Debug, Default)]
struct Job {
    batches: Vec<RecordBatch>,
    studies: Vec<StudyRows>,
}

/// A study still missing questions.
#[derive(Debug)]
struct OpenStudy {
    patient_id: String,
    /// `(batch number, row)` of its questions so far.
    rows: Vec<(usize, usize)>,
    /// The batch numbers in `rows`.
    batches: Vec<usize>,
}

/// Gathers the rows of each study from the scan and hands a study on once it is complete.
#[derive(Debug)]
struct StudyCollector {
    /// Studies not complete yet: their patients and question counts.
    expected: StudySizes,
    /// Studies with some of their questions read.
    open: HashMap<String, OpenStudy>,
    /// Batches with rows of open studies, by number.
    live: HashMap<usize, RecordBatch>,
    /// Batches read.
    batches: usize,
    /// Rows read.
    rows: usize,
}

impl StudyCollector {
    fn new(expected: StudySizes) -> Self {
        Self {
            expected,
            open: HashMap::new(),
            live: HashMap::new(),
            batches: 0,
            rows: 0,
        }
    }

    /// Takes the next batch; returns the studies it completes.
    fn push(&mut self, batch: RecordBatch) -> Result<Job> {
        let number = self.batches;
        self.batches += 1;
        let patients = text_column(&batch, "patient_id", TABLE)?;
        let studies = text_column(&batch, "study_id", TABLE)?;
        let questions = text_column(&batch, "question_id", TABLE)?;
        let (patients, studies) = (patients.as_string::<i32>(), studies.as_string::<i32>());
        let questions = questions.as_string::<i32>();
        let mut completed = Vec::new();
        for i in 0..batch.num_rows() {
            let row = self.rows + i;
            let (patient_id, study_id) =
                checked_ids(TABLE, row, text_at(patients, i), text_at(studies, i))?;
            if text_at(questions, i).is_none_or(str::is_empty) {
                return Err(ExportError::MalformedId {
                    table: TABLE,
                    row,
                    field: "question_id",
                    expected: "a question id, e.g. D02_has_finding_001",
                    patient_id: Some(patient_id.to_string()),
                    study_id: Some(study_id.to_string()),
                });
            }
            let size = match self.expected.get(study_id) {
                Some((_, size)) => *size,
                None => return Err(self.not_counted(study_id)),
            };
            if !self.open.contains_key(study_id) {
                let open = OpenStudy {
                    patient_id: patient_id.to_string(),
                    rows: Vec::with_capacity(size),
                    batches: Vec::new(),
                };
                self.open.insert(study_id.to_string(), open);
            }
            let Some(open) = self.open.get_mut(study_id) else {
                continue;
            };
            open.rows.push((number, i));
            if open.batches.last() != Some(&number) {
                open.batches.push(number);
            }
            if open.rows.len() == size {
                completed.push(study_id.to_string());
            }
        }
        self.rows += batch.num_rows();
        self.live.insert(number, batch);

        let mut job = Job::default();
        let mut job_batch: HashMap<usize, usize> = HashMap::new();
        for study_id in completed {
            self.expected.remove(&study_id);
            let Some(open) = self.open.remove(&study_id) else {
                continue;
            };
            let mut rows = Vec::with_capacity(open.rows.len());
            for (number, row) in open.rows {
                let batch =
                    match job_batch.get(&number) {
                        Some(batch) => *batch,
                        None => {
                            let batch = self.live.get(&number).cloned().ok_or_else(|| {
                                ExportError::Shape {
                                    table: TABLE,
                                    study_id: study_id.clone(),
                                    detail: format!("batch {number} of its rows was released"),
                                }
                            })?;
                            job.batches.push(batch);
                            job_batch.insert(number, job.batches.len() - 1);
                            job.batches.len() - 1
                        }
                    };
                rows.push(RowRef { batch, row });
            }
            job.studies.push(StudyRows {
                patient_id: open.patient_id,
                study_id,
                rows,
            });
        }
        let referenced: HashSet<usize> = self
            .open
            .values()
            .flat_map(|open| open.batches.iter().copied())
            .collect();
        self.live.retain(|number, _| referenced.contains(number));
        Ok(job)
    }

    /// Checks that every counted study was read whole.
    fn finish(&self) -> Result<()> {
        match self.expected.iter().next() {
            Some((study_id, (_, expected))) => Err(ExportError::QuestionsMissing {
                study_id: study_id.clone(),
                read: self.open.get(study_id).map_or(0, |open| open.rows.len()),
                expected: *expected,
            }),
            None => Ok(()),
        }
    }

    /// A study that the count did not see: the table changed between the two reads.
    fn not_counted(&self, study_id: &str) -> ExportError {
        ExportError::QuestionsMissing {
            study_id: study_id.to_string(),
            read: self.open.get(study_id).map_or(0, |open| open.rows.len()) + 1,
            expected: 0,
        }
    }
}

/// Bytes reserved per file (a study's questions take some 0.2–1 MB).
const FILE_CAPACITY: usize = 512 * 1024;

/// Writes every study of `job` into `sink`, studies in parallel.
fn write_job(sink: &Sink, job: Job) -> Result<Written> {
    let Job { batches, studies } = job;
    let roots: Vec<_> = batches.iter().map(question_column).collect::<Result<_>>()?;
    let writers: Vec<_> = roots
        .iter()
        .map(QuestionWriter::new)
        .collect::<Result<_>>()?;
    let mut folders = HashSet::new();
    for study in &studies {
        if folders.insert(study.patient_id.as_str()) {
            sink.prepare_patient(&study.patient_id)?;
        }
    }
    let results: Vec<(Written, Option<Deflated>)> = studies
        .into_par_iter()
        .map_init(
            || Vec::with_capacity(FILE_CAPACITY),
            |bytes, study| write_study(sink, &writers, study, bytes),
        )
        .collect::<Result<_>>()?;
    sink.gather(results)
}

/// Writes one study's file (its folder exists), questions in `question_id` order, reusing
/// `bytes` as the buffer; returns the zip member to merge, if `sink` is a zip.
fn write_study(
    sink: &Sink,
    writers: &[QuestionWriter<'_>],
    mut study: StudyRows,
    bytes: &mut Vec<u8>,
) -> Result<(Written, Option<Deflated>)> {
    let question_id = |at: &RowRef| writers[at.batch].question_id(at.row).unwrap_or_default();
    study
        .rows
        .sort_unstable_by(|a, b| question_id(a).cmp(question_id(b)));
    if let Some(pair) = study
        .rows
        .windows(2)
        .find(|pair| question_id(&pair[0]) == question_id(&pair[1]))
    {
        return Err(ExportError::DuplicateQuestion {
            study_id: study.study_id,
            question_id: question_id(&pair[0]).to_string(),
        });
    }

    bytes.clear();
    bytes.extend_from_slice(b"{\"patient_id\":");
    serde_json::to_writer(&mut *bytes, &study.patient_id)?;
    bytes.extend_from_slice(b",\"study_id\":");
    serde_json::to_writer(&mut *bytes, &study.study_id)?;
    bytes.extend_from_slice(b",\"questions\":[");
    for (n, at) in study.rows.iter().enumerate() {
        if n > 0 {
            bytes.push(b',');
        }
        writers[at.batch]
            .write(at.row, bytes)
            .map_err(|detail| ExportError::Shape {
                table: TABLE,
                study_id: study.study_id.clone(),
                detail: format!("question {}: {detail}", question_id(at)),
            })?;
    }
    bytes.extend_from_slice(b"]}\n");
    let member = sink.put(&qa_path(&study.patient_id, &study.study_id), bytes)?;
    let written = Written {
        studies: 1,
        questions: study.rows.len(),
        bytes: bytes.len() as u64,
    };
    Ok((written, member))
}

#[cfg(test)]
mod tests {
    use std::path::Path;
    use std::sync::Arc;

    use arrow::array::ArrayRef;

    use super::*;

    #[test]
    fn qa_paths_follow_the_release_layout() {
        assert_eq!(
            qa_path("p10000032", "s50414267"),
            Path::new("p10/p10000032/s50414267.qa.json")
        );
    }

    /// `(patient, study, question)` rows as a batch.
    fn batch(rows: &[(&str, &str, &str)]) -> RecordBatch {
        let column = |i: usize| -> ArrayRef {
            let values: Vec<&str> = rows.iter().map(|row| [row.0, row.1, row.2][i]).collect();
            Arc::new(StringArray::from(values))
        };
        RecordBatch::try_from_iter([
            ("patient_id", column(0)),
            ("study_id", column(1)),
            ("question_id", column(2)),
        ])
        .expect("batch")
    }

    fn sizes(studies: &[(&str, &str, usize)]) -> StudySizes {
        studies
            .iter()
            .map(|(patient, study, n)| (study.to_string(), (Some(patient.to_string()), *n)))
            .collect()
    }

    /// The studies of a job as `study: (job batch, row)…`.
    fn studies(job: &Job) -> Vec<(String, Vec<(usize, usize)>)> {
        job.studies
            .iter()
            .map(|s| {
                let rows = s.rows.iter().map(|at| (at.batch, at.row)).collect();
                (s.study_id.clone(), rows)
            })
            .collect()
    }

    #[test]
    fn a_study_is_handed_on_once_all_its_questions_are_read() {
        let mut collector = StudyCollector::new(sizes(&[
            ("p10", "s1", 2),
            ("p10", "s2", 1),
            ("p11", "s3", 3),
        ]));
        let first = collector
            .push(batch(&[
                ("p10", "s1", "A_002"),
                ("p11", "s3", "A_001"),
                ("p10", "s2", "A_001"),
            ]))
            .expect("push");
        assert_eq!(studies(&first), [("s2".to_string(), vec![(0, 2)])]);
        assert_eq!(collector.live.len(), 1, "the batch holds open studies");
        let second = collector
            .push(batch(&[("p11", "s3", "B_001"), ("p10", "s1", "A_001")]))
            .expect("push");
        assert_eq!(studies(&second), [("s1".to_string(), vec![(0, 0), (1, 1)])]);
        assert_eq!(second.batches.len(), 2);
        assert!(collector.finish().is_err(), "s3 is open");
        let third = collector
            .push(batch(&[("p11", "s3", "C_001")]))
            .expect("push");
        assert_eq!(
            studies(&third),
            [("s3".to_string(), vec![(0, 1), (1, 0), (2, 0)])]
        );
        assert!(collector.live.is_empty(), "no batch is held");
        collector.finish().expect("every study complete");
    }

    #[test]
    fn malformed_ids_name_their_row() {
        let mut collector = StudyCollector::new(sizes(&[("p10", "s1", 2)]));
        collector
            .push(batch(&[("p10", "s1", "A_001")]))
            .expect("push");
        let err = collector
            .push(batch(&[("p10", "1", "A_001")]))
            .expect_err("malformed");
        assert!(
            matches!(
                &err,
                ExportError::MalformedId {
                    row: 1,
                    field: "study_id",
                    ..
                }
            ),
            "{err}"
        );
        let mut collector = StudyCollector::new(sizes(&[("p10", "s1", 1)]));
        let err = collector
            .push(batch(&[("p10", "s1", "")]))
            .expect_err("no question id");
        assert!(
            matches!(
                &err,
                ExportError::MalformedId {
                    field: "question_id",
                    ..
                }
            ),
            "{err}"
        );
    }

    /// Minimal `qa` rows (ids and the non-null columns) as a batch of the table's schema.
    fn qa_rows(rows: &[(&str, &str, &str)]) -> RecordBatch {
        let lines: Vec<String> = rows
            .iter()
            .map(|(patient, study, question)| {
                serde_json::json!({
                    "patient_id": patient, "study_id": study, "question_id": question,
                    "question_type": "A", "question_strategy": "finding",
                    "contains_report_answers": false, "contains_template_answers": true,
                    "question": format!("{question}?"), "extractor": "rules", "embedder": "lexical"
                })
                .to_string()
            })
            .collect();
        let text = lines.join("\n");
        let mut reader = arrow::json::ReaderBuilder::new(cxrlake_schemas::pipeline::qa())
            .build(text.as_bytes())
            .expect("reader");
        reader.next().expect("a batch").expect("decoded")
    }

    fn job(rows: &[(&str, &str, &str)]) -> Job {
        let mut collector = StudyCollector::new(sizes(&[("p10", "s1", rows.len())]));
        collector.push(qa_rows(rows)).expect("push")
    }

    #[test]
    fn questions_are_written_in_question_id_order_and_once() {
        let dir = tempfile::tempdir().expect("tempdir");
        let rows = [("p10", "s1", "A_002"), ("p10", "s1", "A_001")];
        let sink = Sink::Folder(dir.path().to_path_buf());
        let written = write_job(&sink, job(&rows)).expect("write");
        assert_eq!((written.studies, written.questions), (1, 2));
        let text = std::fs::read_to_string(dir.path().join(qa_path("p10", "s1"))).expect("file");
        let value: serde_json::Value = serde_json::from_str(&text).expect("json");
        let ids: Vec<_> = value["questions"]
            .as_array()
            .expect("questions")
            .iter()
            .map(|q| q["question_id"].as_str().expect("id"))
            .collect();
        assert_eq!(ids, ["A_001", "A_002"]);

        let twice = [("p10", "s1", "A_001"), ("p10", "s1", "A_001")];
        let err = write_job(&sink, job(&twice)).expect_err("duplicate");
        assert!(
            matches!(&err, ExportError::DuplicateQuestion { question_id, .. } if question_id == "A_001"),
            "{err}"
        );
    }
}
