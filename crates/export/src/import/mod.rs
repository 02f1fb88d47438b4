//! `cxrlake import release PATH`: a released MIMIC-Ext-CXR-QBA (the PhysioNet layout, its root or
//! an `exports/<subset>` folder; zips read in place) into the lake's `qa`, `scene_graphs` and
//! `images` tables, so that SQL with ordered ratings, the statistics, the subset exports and the
//! stages that need only scene graphs work without rebuilding the dataset.
//!
//! ```text
//! quality_mappings.csv ─▶ Codes (integer levels → names)
//! scene_data.zip | scene_graph.zip ─┬─ *.scene_graph.json ─decode (layout::ROOT)─▶ scene_graphs
//!                                   └─ *.metadata.json ────────────────────────▶ images
//! qa.zip ── *.qa.json ─decode (layout::QA_FILE)─▶ qa (rating = question_quality.rating)
//!    members read in order, chunk by chunk (≤ CHUNK_STUDIES studies or CHUNK_BYTES bytes),
//!    decoded in parallel, one append per table and chunk
//! ```
//!
//! Idempotent and resumable: a study already in a table is skipped (a study's rows are one
//! member, committed together), so a killed import continues where its last commit ended and a
//! repeated import commits nothing. A member that cannot be used (invalid JSON, an unknown
//! level code, ids that do not match its path) goes to `quarantine` (stage `import`, the zip as
//! source, the member name as location) with its bytes, once. Every commit records the release
//! (`metadata/dataset_info.json`'s version) and the sha256 of each source file.
//!
//! Decisions where the release leaves room (`schemas/README.md`, Import): quality values are
//! decoded through the release's own `quality_mappings.csv` (cxrlake's table when the folder has
//! none); level names are accepted where a code is expected; a rating is `<rank>_<grade>` or a
//! plain grade, any text after `0_` meaning not rated; the QA pair's `rating` is its
//! `question_quality.rating` (the release folds the overall rating there); questions and scene
//! graphs without cxrlake's provenance keys get `extractor` / `embedder` = `release:<version>`;
//! answer parts keep their `answer_id`s and get `parent_answer_id` from their nesting.

mod decode;

use std::collections::{BTreeMap, HashSet};
use std::fs::File;
use std::io::{BufReader, Read};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use arrow::array::{ArrayRef, RecordBatch};
use arrow::datatypes::SchemaRef;
use arrow::json::reader::ReaderBuilder;
use cxrlake_lake::{Lake, QuarantineRow, StageCommit, quarantine_batch};
use rayon::prelude::*;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

pub use decode::{Codes, FileIds, rating};

use crate::error::{ExportError, Result};

/// The stage name of import commits and quarantine rows.
pub const STAGE: &str = "import";

/// Studies decoded and committed together at most.
const CHUNK_STUDIES: usize = 1_000;
/// Member bytes held at once at most.
const CHUNK_BYTES: usize = 128 << 20;

/// What to import.
#[derive(Debug, Clone)]
pub struct ReleaseImport {
    path: PathBuf,
    chunk_studies: usize,
}

impl ReleaseImport {
    /// A release folder (its root or an `exports/<subset>` folder) or one of its zips.
    pub fn new(path: impl Into<PathBuf>) -> Self {
        Self {
            path: path.into(),
            chunk_studies: CHUNK_STUDIES,
        }
    }

    /// Studies per commit (tests make it small to see several commits).
    pub fn with_chunk_studies(mut self, studies: usize) -> Self {
        self.chunk_studies = studies.max(1);
        self
    }
}

/// What an import did.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ImportSummary {
    /// The release version (`metadata/dataset_info.json`), or `unknown`.
    pub release: String,
    /// Source files with their sha256.
    pub files: BTreeMap<String, String>,
    /// Rows appended per table.
    pub rows: BTreeMap<String, u64>,
    /// Members skipped because their study (image) was in the lake already.
    pub present: u64,
    /// Members sent to quarantine.
    pub quarantined: u64,
    /// Commits made (a repeated import makes none).
    pub commits: u64,
    /// Wall-clock seconds.
    pub seconds: f64,
}

impl std::fmt::Display for ImportSummary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let rows: Vec<String> = self
            .rows
            .iter()
            .map(|(table, rows)| format!("{rows} {table}"))
            .collect();
        write!(
            f,
            "imported release {} ({} files): {} in {} commits, {:.1} s; {} members already in \
             the lake, {} quarantined",
            self.release,
            self.files.len(),
            if rows.is_empty() {
                "nothing new".to_string()
            } else {
                rows.join(", ")
            },
            self.commits,
            self.seconds,
            self.present,
            self.quarantined
        )?;
        if self.quarantined > 0 {
            write!(
                f,
                " (see `cxrlake sql \"SELECT source, location, reason FROM quarantine WHERE \
                 stage = 'import'\"`)"
            )?;
        }
        Ok(())
    }
}

/// The files of a release found at the import's path.
#[derive(Debug)]
struct Sources {
    /// Scene graph zips (with the studies' metadata files), then QA zips.
    zips: Vec<PathBuf>,
    mappings: Option<PathBuf>,
    info: Option<PathBuf>,
}

fn import_error(path: &Path, reason: impl Into<String>) -> ExportError {
    ExportError::Import {
        path: path.to_path_buf(),
        reason: reason.into(),
    }
}

impl Sources {
    fn find(path: &Path) -> Result<Self> {
        let mut sources = Self {
            zips: Vec::new(),
            mappings: None,
            info: None,
        };
        if path.is_file() {
            sources.zips.push(path.to_path_buf());
        } else if path.is_dir() {
            for name in ["scene_data.zip", "scene_graph.zip", "qa.zip"] {
                let zip = path.join(name);
                if zip.is_file() {
                    sources.zips.push(zip);
                }
            }
        } else {
            return Err(import_error(path, "no such file or folder"));
        }
        if sources.zips.is_empty() {
            return Err(import_error(
                path,
                "no qa.zip, scene_data.zip or scene_graph.zip in it; give the release's root \
                 folder (with qa.zip and scene_data.zip) or an exports/<subset> folder",
            ));
        }
        // An exports/<subset> folder shares the root's quality_mappings.csv.
        let folder = if path.is_file() {
            path.parent().unwrap_or(Path::new("."))
        } else {
            path
        };
        let candidates = [folder.to_path_buf(), folder.join("../..")];
        sources.mappings = candidates
            .iter()
            .map(|dir| dir.join("quality_mappings.csv"))
            .find(|file| file.is_file());
        sources.info = candidates
            .iter()
            .map(|dir| dir.join("metadata/dataset_info.json"))
            .find(|file| file.is_file());
        Ok(sources)
    }
}

/// The sha256 of a file, hex.
fn sha256(path: &Path) -> Result<String> {
    let mut file = File::open(path).map_err(|e| import_error(path, e.to_string()))?;
    let mut hasher = Sha256::new();
    let mut buffer = vec![0u8; 1 << 20];
    loop {
        let n = file
            .read(&mut buffer)
            .map_err(|e| import_error(path, e.to_string()))?;
        if n == 0 {
            break;
        }
        hasher.update(&buffer[..n]);
    }
    Ok(hex::encode(hasher.finalize()))
}

/// Keys already in the lake: study ids per table, image ids, quarantined members.
#[derive(Debug, Default)]
struct Present {
    qa: HashSet<String>,
    scene_graphs: HashSet<String>,
    image_studies: HashSet<String>,
    quarantined: HashSet<(String, String)>,
}

async fn strings(lake: &Lake, sql: &str) -> Result<Vec<Vec<String>>> {
    let ctx = lake.session().await?;
    let batches = ctx.sql(sql).await?.collect().await?;
    let mut rows = Vec::new();
    for batch in batches {
        let columns: Vec<ArrayRef> = batch
            .columns()
            .iter()
            .map(|c| arrow::compute::cast(c, &arrow::datatypes::DataType::Utf8))
            .collect::<std::result::Result<_, _>>()?;
        for row in 0..batch.num_rows() {
            rows.push(
                columns
                    .iter()
                    .map(|c| {
                        use arrow::array::AsArray;
                        c.as_string::<i32>().value(row).to_string()
                    })
                    .collect(),
            );
        }
    }
    Ok(rows)
}

impl Present {
    async fn read(lake: &Lake) -> Result<Self> {
        let column = |rows: Vec<Vec<String>>| rows.into_iter().map(|mut r| r.remove(0)).collect();
        Ok(Self {
            qa: column(strings(lake, "SELECT DISTINCT study_id FROM qa").await?),
            scene_graphs: column(strings(lake, "SELECT study_id FROM scene_graphs").await?),
            image_studies: column(strings(lake, "SELECT DISTINCT study_id FROM images").await?),
            quarantined: strings(
                lake,
                &format!("SELECT source, location FROM quarantine WHERE stage = '{STAGE}'"),
            )
            .await?
            .into_iter()
            .map(|mut r| (r.remove(0), r.remove(0)))
            .collect(),
        })
    }
}

/// What a member is, by its name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Qa,
    SceneGraph,
    StudyMetadata,
}

impl Kind {
    fn of(name: &str) -> Option<(Kind, &str)> {
        let file = name.rsplit('/').next().unwrap_or(name);
        [
            (".qa.json", Kind::Qa),
            (".scene_graph.json", Kind::SceneGraph),
            (crate::release::STUDY_METADATA_SUFFIX, Kind::StudyMetadata),
        ]
        .into_iter()
        .find_map(|(suffix, kind)| file.strip_suffix(suffix).map(|study| (kind, study)))
    }
}

/// One member read from a zip.
#[derive(Debug)]
struct Member {
    name: String,
    kind: Kind,
    /// The study id its file name gives, and the patient id of its folder.
    study_id: String,
    patient_id: String,
    bytes: Vec<u8>,
}

/// A member decoded: its table, its rows as JSON lines and how many, or why it cannot be used.
type Decoded = std::result::Result<(&'static str, Vec<u8>, usize), String>;

/// The release's metadata: version and quality codes.
#[derive(Debug)]
struct Release {
    version: String,
    codes: Codes,
    provenance: String,
}

impl Release {
    fn decode(&self, member: &Member) -> Decoded {
        let ids = FileIds {
            patient_id: &member.patient_id,
            study_id: &member.study_id,
            provenance: &self.provenance,
        };
        let mut out = Vec::with_capacity(member.bytes.len() + member.bytes.len() / 4);
        match member.kind {
            Kind::SceneGraph => {
                decode::scene_graph_row(&member.bytes, ids, &self.codes, &mut out)?;
                Ok(("scene_graphs", out, 1))
            }
            Kind::Qa => {
                let rows = decode::qa_rows(&member.bytes, ids, &self.codes, &mut out)?;
                Ok(("qa", out, rows))
            }
            Kind::StudyMetadata => {
                let json: Value = serde_json::from_slice(&member.bytes)
                    .map_err(|e| format!("invalid JSON: {e}"))?;
                let (patient, study) = (json["patient_id"].as_str(), json["study_id"].as_str());
                if patient != Some(ids.patient_id) || study != Some(ids.study_id) {
                    return Err(format!(
                        "ids {}/{} do not match the member's path ({}/{})",
                        patient.unwrap_or("(none)"),
                        study.unwrap_or("(none)"),
                        ids.patient_id,
                        ids.study_id
                    ));
                }
                let images = json["images"].as_array().ok_or("no `images` list")?;
                for image in images {
                    let view = image["view_position"].as_str();
                    let row = json!({
                        "image_id": image["image_id"].as_str().ok_or("an image without image_id")?,
                        "patient_id": json["patient_id"],
                        "study_id": json["study_id"],
                        "view_position": image["dicom_view_position"],
                        "view": view,
                        "is_frontal": view == Some("frontal"),
                        "rows": image["height"],
                        "columns": image["width"],
                        "study_date": json["study_date"],
                        "procedure": json["procedure"],
                        "split": json["split"],
                    });
                    serde_json::to_writer(&mut out, &row).map_err(|e| e.to_string())?;
                    out.push(b'\n');
                }
                Ok(("images", out, images.len()))
            }
        }
    }
}

/// Imports the release at `import.path` (see the module doc).
pub async fn import_release(lake: &Lake, import: &ReleaseImport) -> Result<ImportSummary> {
    let started = Instant::now();
    let sources = Sources::find(&import.path)?;
    let codes = match &sources.mappings {
        Some(file) => {
            let text =
                std::fs::read_to_string(file).map_err(|e| import_error(file, e.to_string()))?;
            Codes::parse(&text).map_err(|e| import_error(file, e))?
        }
        None => {
            tracing::warn!(
                path = %import.path.display(),
                "no quality_mappings.csv next to the release: cxrlake's codes are assumed"
            );
            Codes::builtin()
        }
    };
    let version = sources
        .info
        .as_ref()
        .and_then(|file| std::fs::read(file).ok())
        .and_then(|bytes| serde_json::from_slice::<Value>(&bytes).ok())
        .and_then(|info| {
            info.get("version")
                .or_else(|| info.get("release_version"))
                .and_then(Value::as_str)
                .map(str::to_string)
        })
        .or_else(|| version_in_path(&import.path))
        .unwrap_or_else(|| "unknown".into());
    let mut summary = ImportSummary {
        release: version.clone(),
        ..ImportSummary::default()
    };
    for file in sources
        .zips
        .iter()
        .chain(&sources.mappings)
        .chain(&sources.info)
    {
        summary
            .files
            .insert(file.display().to_string(), sha256(file)?);
    }
    let release = Release {
        provenance: format!("release:{version}"),
        version,
        codes,
    };
    let mut present = Present::read(lake).await?;
    let commit = StageCommit::new(STAGE).with_fingerprint(json!({
        "release": release.version,
        "path": import.path.display().to_string(),
        "files": summary.files,
    }));
    for zip in &sources.zips {
        import_zip(
            lake,
            zip,
            &release,
            import,
            &mut present,
            &commit,
            &mut summary,
        )
        .await?;
    }
    summary.seconds = started.elapsed().as_secs_f64();
    Ok(summary)
}

/// A version-like folder name on the release's path (PhysioNet serves
/// `mimic-ext-cxr-qba/1.0.0/`).
fn version_in_path(path: &Path) -> Option<String> {
    let path = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    path.ancestors()
        .filter_map(|dir| dir.file_name()?.to_str())
        .find(|name| {
            name.split('.').count() >= 2
                && name
                    .split('.')
                    .all(|part| !part.is_empty() && part.bytes().all(|b| b.is_ascii_digit()))
        })
        .map(str::to_string)
}

/// The patient folder and study of a member name `…/pXX/pXXXXXXXX/sXXXXXXXX.<kind>.json`.
fn member_ids(name: &str) -> Option<(Kind, String, String)> {
    let (kind, study) = Kind::of(name)?;
    let mut parts = name.rsplit('/');
    parts.next();
    let patient = parts.next()?;
    Some((kind, patient.to_string(), study.to_string()))
}

async fn import_zip(
    lake: &Lake,
    path: &Path,
    release: &Release,
    import: &ReleaseImport,
    present: &mut Present,
    commit: &StageCommit,
    summary: &mut ImportSummary,
) -> Result<()> {
    let source = path.file_name().map_or_else(
        || path.display().to_string(),
        |n| n.to_string_lossy().into(),
    );
    let file = File::open(path).map_err(|e| import_error(path, e.to_string()))?;
    let mut archive = zip::ZipArchive::new(BufReader::new(file))
        .map_err(|e| import_error(path, format!("not a readable zip: {e}")))?;
    let mut chunk: Vec<Member> = Vec::new();
    let mut bad: Vec<(String, String, Vec<u8>)> = Vec::new();
    let mut bytes = 0usize;
    let mut studies = HashSet::new();
    let mut pending: Pending = None;
    let target = Target {
        lake,
        source: &source,
        release,
        commit,
    };
    let mut reading = std::time::Duration::ZERO;
    let mut decoding = std::time::Duration::ZERO;
    for index in 0..archive.len() {
        let read_started = Instant::now();
        let mut entry = archive
            .by_index(index)
            .map_err(|e| import_error(path, format!("member {index}: {e}")))?;
        let name = entry.name().to_string();
        if entry.is_dir() {
            continue;
        }
        let Some((kind, patient_id, study_id)) = member_ids(&name) else {
            continue;
        };
        let done = match kind {
            Kind::Qa => present.qa.contains(&study_id),
            Kind::SceneGraph => present.scene_graphs.contains(&study_id),
            // A study's images are new or present together.
            Kind::StudyMetadata => present.image_studies.contains(&study_id),
        };
        if done
            || present
                .quarantined
                .contains(&(source.clone(), name.clone()))
        {
            summary.present += 1;
            continue;
        }
        let mut content = Vec::with_capacity(entry.size() as usize);
        if let Err(error) = entry.read_to_end(&mut content) {
            bad.push((name, format!("unreadable member: {error}"), content));
            continue;
        }
        reading += read_started.elapsed();
        bytes += content.len();
        studies.insert(study_id.clone());
        chunk.push(Member {
            name,
            kind,
            study_id,
            patient_id,
            bytes: content,
        });
        if studies.len() >= import.chunk_studies || bytes >= CHUNK_BYTES {
            let decode_started = Instant::now();
            flush(
                &target,
                &mut chunk,
                &mut bad,
                present,
                summary,
                &mut pending,
            )
            .await?;
            decoding += decode_started.elapsed();
            bytes = 0;
            studies.clear();
        }
    }
    flush(
        &target,
        &mut chunk,
        &mut bad,
        present,
        summary,
        &mut pending,
    )
    .await?;
    let settle_started = Instant::now();
    settle(&mut pending, summary).await?;
    tracing::info!(
        zip = %source,
        read_s = reading.as_secs_f64(),
        decode_and_wait_s = decoding.as_secs_f64(),
        last_append_s = settle_started.elapsed().as_secs_f64(),
        "release zip imported"
    );
    Ok(())
}

/// The appends of the chunk before, running while the next chunk is read and decoded: per
/// table, the rows appended, and the commits made.
type Pending = Option<tokio::task::JoinHandle<Result<(Vec<(String, u64)>, u64)>>>;

/// Waits for the pending appends and counts them.
async fn settle(pending: &mut Pending, summary: &mut ImportSummary) -> Result<()> {
    if let Some(handle) = pending.take() {
        let (rows, commits) = handle.await.map_err(|e| ExportError::Import {
            path: PathBuf::from("(lake)"),
            reason: format!("the append task failed: {e}"),
        })??;
        summary.commits += commits;
        for (table, count) in rows {
            *summary.rows.entry(table).or_default() += count;
        }
    }
    Ok(())
}

/// Where a zip's rows go: the lake, the zip's name (quarantine source), the release's codes,
/// the commit record.
#[derive(Clone, Copy)]
struct Target<'a> {
    lake: &'a Lake,
    source: &'a str,
    release: &'a Release,
    commit: &'a StageCommit,
}

/// Decodes the chunk's members in parallel and starts appending their rows (one commit per
/// table) once the previous chunk's appends are done; bad members (and `bad`, the unreadable
/// ones) go to quarantine.
async fn flush(
    target: &Target<'_>,
    chunk: &mut Vec<Member>,
    bad: &mut Vec<(String, String, Vec<u8>)>,
    present: &mut Present,
    summary: &mut ImportSummary,
    pending: &mut Pending,
) -> Result<()> {
    let Target {
        lake,
        source,
        release,
        commit,
    } = *target;
    let members = std::mem::take(chunk);
    let mut rejected = std::mem::take(bad);
    if members.is_empty() && rejected.is_empty() {
        return Ok(());
    }
    let decoded: Vec<(Member, Decoded)> = members
        .into_par_iter()
        .map(|member| {
            let rows = release.decode(&member);
            (member, rows)
        })
        .collect();
    let mut tables: BTreeMap<&'static str, Vec<(Vec<u8>, usize)>> = BTreeMap::new();
    let mut studies: BTreeMap<&'static str, Vec<String>> = BTreeMap::new();
    for (member, rows) in decoded {
        match rows {
            Ok((table, lines, count)) => {
                studies.entry(table).or_default().push(member.study_id);
                tables.entry(table).or_default().push((lines, count));
            }
            Err(reason) => rejected.push((member.name, reason, member.bytes)),
        }
    }
    let mut writes: Vec<(&'static str, Vec<RecordBatch>, u64)> = Vec::new();
    for (table, rows) in tables {
        let schema = cxrlake_schemas::table(table)
            .map(|def| (def.schema)())
            .ok_or_else(|| import_error(Path::new(source), format!("no table {table}")))?;
        let count: usize = rows.iter().map(|(_, count)| count).sum();
        writes.push((table, batches(&schema, &rows)?, count as u64));
    }
    for (table, ids) in studies {
        let set = match table {
            "qa" => &mut present.qa,
            "scene_graphs" => &mut present.scene_graphs,
            _ => &mut present.image_studies,
        };
        set.extend(ids);
    }
    if !rejected.is_empty() {
        for (name, reason, _) in &rejected {
            tracing::warn!(source, member = %name, reason = %reason, "release member quarantined");
            present
                .quarantined
                .insert((source.to_string(), name.clone()));
        }
        summary.quarantined += rejected.len() as u64;
        let rows = rejected.iter().map(|(name, reason, bytes)| QuarantineRow {
            source,
            location: name,
            reason,
            raw: bytes,
        });
        writes.push(("quarantine", vec![quarantine_batch(STAGE, rows)?], 0));
    }
    // One chunk's appends at a time, while the next chunk is read and decoded.
    settle(pending, summary).await?;
    let (lake, commit) = (lake.clone(), commit.clone());
    *pending = Some(tokio::spawn(async move {
        let mut rows = Vec::new();
        let mut commits = 0;
        for (table, batches, count) in writes {
            lake.write(table)
                .commit(commit.clone())
                .execute(batches)
                .await?;
            commits += 1;
            if table != "quarantine" {
                rows.push((table.to_string(), count));
            }
        }
        Ok((rows, commits))
    }));
    Ok(())
}

/// Rows (members' JSON lines with their counts) as batches of `schema`, decoded in parallel,
/// about `ROWS` rows each.
fn batches(schema: &SchemaRef, members: &[(Vec<u8>, usize)]) -> Result<Vec<RecordBatch>> {
    const ROWS: usize = 8192;
    let mut groups: Vec<&[(Vec<u8>, usize)]> = Vec::new();
    let (mut from, mut rows) = (0, 0);
    for (index, (_, count)) in members.iter().enumerate() {
        rows += count;
        if rows >= ROWS {
            groups.push(&members[from..=index]);
            (from, rows) = (index + 1, 0);
        }
    }
    if from < members.len() {
        groups.push(&members[from..]);
    }
    groups
        .par_iter()
        .map(|group| {
            let rows: usize = group.iter().map(|(_, count)| count).sum();
            let mut decoder = ReaderBuilder::new(Arc::clone(schema))
                .with_batch_size(rows.max(1))
                .build_decoder()?;
            for (lines, _) in group.iter() {
                let mut at = 0;
                while at < lines.len() {
                    let read = decoder.decode(&lines[at..])?;
                    if read == 0 {
                        break;
                    }
                    at += read;
                }
            }
            Ok(decoder
                .flush()?
                .unwrap_or_else(|| RecordBatch::new_empty(Arc::clone(schema))))
        })
        .collect()
}
