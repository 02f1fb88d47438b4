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
//!
//! each zip: one reader takes the members as stored (compressed), in order, into chunks
//!   (≤ CHUNK_STUDIES studies or CHUNK_BYTES inflated bytes; their stored bytes in one buffer)
//!   ─▶ groups of one kind (≈ GROUP_BYTES), on every core (rayon):
//!        inflate + CRC-32 (members.rs, one buffer per group) ─▶ JSON pull reader (json.rs) driven by the layout
//!          (decode.rs) ─▶ Arrow columns (columns.rs), their buffers reserved in proportion
//!          to the last batch of the table (`Sizes`), so that they do not grow by copying
//!        ─▶ one batch per group
//!   ─▶ one append per table and chunk, running while the next chunk is read and decoded:
//!        its batches encoded into one Parquet file per decoding thread, at once, and
//!        committed together (`TableWrite::writers`)
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

mod columns;
mod decode;
mod json;
pub(crate) mod members;

use std::collections::{BTreeMap, HashSet};
use std::fs::File;
use std::io::{BufReader, Read};
use std::path::{Path, PathBuf};
use std::time::Instant;

use arrow::array::{ArrayRef, RecordBatch};
use cxrlake_lake::{Lake, QuarantineRow, StageCommit, quarantine_batch};
use rayon::prelude::*;
use serde_json::{Value, json};

pub use decode::{Codes, FileIds, rating};

use decode::Rows;
use members::{Kind, Member};

use crate::error::{ExportError, Result};

/// The stage name of import commits and quarantine rows.
pub const STAGE: &str = "import";

/// Studies decoded and committed together at most.
const CHUNK_STUDIES: usize = 1_000;
/// Member bytes held at once at most.
const CHUNK_BYTES: u64 = 128 << 20;

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
    /// Written by cxrlake before 2026-12-06 (its folders described themselves in a
    /// `dataset_info.json` with `cxrlake_version`): answer ids start at 0, not 1.
    zero_based_answers: bool,
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
            zero_based_answers: false,
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
        sources.zero_based_answers = candidates.iter().any(|dir| {
            std::fs::read(dir.join("dataset_info.json"))
                .ok()
                .and_then(|bytes| serde_json::from_slice::<Value>(&bytes).ok())
                .is_some_and(|info| info.get("cxrlake_version").is_some())
        });
        Ok(sources)
    }
}

/// The sha256 of a file, hex.
fn sha256(path: &Path) -> Result<String> {
    let mut file = File::open(path).map_err(|e| import_error(path, e.to_string()))?;
    // ring's SHA-256 (assembly) hashes ~1.7× faster than sha2's portable code on CPUs without
    // SHA-NI; a full release's zips are 5 GB.
    let mut hasher = ring::digest::Context::new(&ring::digest::SHA256);
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
    Ok(hex::encode(hasher.finish()))
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
    /// Whether the member's rows are in the lake already, or it was quarantined before.
    fn holds(&self, source: &str, member: &Member) -> bool {
        let studies = match member.kind {
            Kind::Qa => &self.qa,
            Kind::SceneGraph => &self.scene_graphs,
            // A study's images are new or present together.
            Kind::StudyMetadata => &self.image_studies,
        };
        studies.contains(&member.study_id)
            || self
                .quarantined
                .contains(&(source.to_string(), member.name.clone()))
    }

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

/// The release's metadata: version and quality codes.
#[derive(Debug)]
struct Release {
    version: String,
    codes: Codes,
    provenance: String,
}

impl Release {
    /// Adds a member's rows (`content`, its inflated bytes) to `rows`, of its kind's table, and
    /// returns how many; the error says why the member cannot be used.
    fn decode(&self, rows: &mut Rows, member: &Member, content: &[u8]) -> Result<usize, String> {
        let ids = FileIds {
            patient_id: &member.patient_id,
            study_id: &member.study_id,
            provenance: &self.provenance,
        };
        match member.kind {
            Kind::Qa => rows.qa(content, ids, &self.codes),
            Kind::SceneGraph => rows.scene_graph(content, ids, &self.codes),
            Kind::StudyMetadata => rows.images(content, ids),
        }
    }
}

/// Imports the release at `import.path` (see the module doc).
pub async fn import_release(lake: &Lake, import: &ReleaseImport) -> Result<ImportSummary> {
    let started = Instant::now();
    let sources = Sources::find(&import.path)?;
    let mut codes = match &sources.mappings {
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
    if sources.zero_based_answers {
        codes.answer_ids_from = 0;
    }
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
    let mut chunk = Chunk::default();
    let mut bytes = 0u64;
    let mut studies = HashSet::new();
    let mut pending: Pending = None;
    let sizes = Sizes::default();
    let target = Target {
        lake,
        source: &source,
        release,
        commit,
        sizes: &sizes,
    };
    let mut reading = std::time::Duration::ZERO;
    let mut decoding = std::time::Duration::ZERO;
    for index in 0..archive.len() {
        let read_started = Instant::now();
        let stored_before = chunk.stored.len();
        let member = Member::read(&mut archive, index, &mut chunk.stored)
            .map_err(|e| import_error(path, format!("member {index}: {e}")))?;
        let Some(member) = member else {
            chunk.stored.truncate(stored_before);
            continue;
        };
        if present.holds(&source, &member) {
            chunk.stored.truncate(stored_before);
            summary.present += 1;
            continue;
        }
        reading += read_started.elapsed();
        bytes += member.size;
        studies.insert(member.study_id.clone());
        chunk.members.push(member);
        if studies.len() >= import.chunk_studies || bytes >= CHUNK_BYTES {
            let decode_started = Instant::now();
            flush(&target, &mut chunk, present, summary, &mut pending).await?;
            decoding += decode_started.elapsed();
            bytes = 0;
            studies.clear();
        }
    }
    flush(&target, &mut chunk, present, summary, &mut pending).await?;
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
    sizes: &'a Sizes,
}

/// The members read for the next flush, and their stored bytes (one buffer, kept for the next
/// chunk: see `members.rs`).
#[derive(Debug, Default)]
struct Chunk {
    members: Vec<Member>,
    stored: Vec<u8>,
}

/// Uncompressed member bytes decoded into one batch, about.
const GROUP_BYTES: u64 = 8 << 20;

/// The rows of one group of members: their table, the batch (none if no member could be used)
/// and its rows, the studies read, and the members that cannot be used (name, reason, bytes).
struct Decoded {
    table: &'static str,
    batch: Option<RecordBatch>,
    rows: u64,
    studies: Vec<String>,
    rejected: Vec<(String, String, Vec<u8>)>,
}

/// The members split into groups of one kind (in their order) of about [`GROUP_BYTES`].
fn groups(members: Vec<Member>) -> Vec<Vec<Member>> {
    let mut kinds: Vec<(Kind, Vec<Member>)> = Vec::new();
    for member in members {
        match kinds.iter_mut().find(|(kind, _)| *kind == member.kind) {
            Some((_, list)) => list.push(member),
            None => kinds.push((member.kind, vec![member])),
        }
    }
    let mut groups = Vec::new();
    for (_, list) in kinds {
        let mut group = Vec::new();
        let mut bytes = 0;
        for member in list {
            bytes += member.size;
            group.push(member);
            if bytes >= GROUP_BYTES {
                groups.push(std::mem::take(&mut group));
                bytes = 0;
            }
        }
        if !group.is_empty() {
            groups.push(group);
        }
    }
    groups
}

/// The sizes of the last batch decoded per table, with its members' bytes: a new batch reserves
/// its columns' buffers in proportion, so that they grow without being copied.
#[derive(Debug, Default)]
struct Sizes(std::sync::Mutex<BTreeMap<&'static str, (u64, Vec<usize>)>>);

impl Sizes {
    /// Reserves room in `rows` for `bytes` of members of `table`.
    fn reserve(&self, table: &'static str, rows: &mut Rows, bytes: u64) {
        let sizes = self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some((seen, sizes)) = sizes.get(table).filter(|(seen, _)| *seen > 0) {
            rows.reserve(sizes, 1.05 * bytes as f64 / *seen as f64);
        }
    }

    /// Keeps the sizes of `rows`, decoded from `bytes` of members of `table`.
    fn note(&self, table: &'static str, rows: &Rows, bytes: u64) {
        let sizes = rows.sizes();
        let mut all = self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        all.insert(table, (bytes, sizes));
    }
}

/// Inflates and decodes a group of members of one kind (their stored bytes in `stored`) into
/// one batch of its table.
fn decode_group(
    release: &Release,
    sizes: &Sizes,
    stored: &[u8],
    members: Vec<Member>,
) -> Result<Decoded> {
    let table = members.first().map_or("qa", |m| m.kind.table());
    let schema = cxrlake_schemas::table(table)
        .map(|def| (def.schema)())
        .ok_or_else(|| import_error(Path::new(table), "no such lake table"))?;
    let mut rows = Rows::new(&schema).map_err(|e| import_error(Path::new(table), e))?;
    let bytes: u64 = members.iter().map(|m| m.size).sum();
    sizes.reserve(table, &mut rows, bytes);
    let mut decoded = Decoded {
        table,
        batch: None,
        rows: 0,
        studies: Vec::new(),
        rejected: Vec::new(),
    };
    // One buffer for the group's members, inflated one after another.
    let mut content = Vec::new();
    for mut member in members {
        let read = member
            .inflate(stored, &mut content)
            .and_then(|()| release.decode(&mut rows, &member, &content));
        match read {
            Ok(_) => decoded.studies.push(member.study_id),
            Err(reason) => decoded
                .rejected
                .push((member.name, reason, content.clone())),
        }
    }
    decoded.rows = rows.len() as u64;
    if decoded.rows > 0 {
        sizes.note(table, &rows, bytes);
        decoded.batch = Some(rows.finish()?);
    }
    Ok(decoded)
}

/// Inflates and decodes the chunk's members in parallel and starts appending their rows (one
/// commit per table) once the previous chunk's appends are done; members that cannot be used
/// go to quarantine.
async fn flush(
    target: &Target<'_>,
    chunk: &mut Chunk,
    present: &mut Present,
    summary: &mut ImportSummary,
    pending: &mut Pending,
) -> Result<()> {
    let Target {
        lake,
        source,
        release,
        commit,
        sizes,
    } = *target;
    let members = std::mem::take(&mut chunk.members);
    if members.is_empty() {
        return Ok(());
    }
    let stored = chunk.stored.as_slice();
    let decoded: Vec<Decoded> = groups(members)
        .into_par_iter()
        .map(|group| decode_group(release, sizes, stored, group))
        .collect::<Result<_>>()?;
    chunk.stored.clear();
    let mut tables: BTreeMap<&'static str, (Vec<RecordBatch>, u64)> = BTreeMap::new();
    let mut rejected = Vec::new();
    for group in decoded {
        let set = match group.table {
            "qa" => &mut present.qa,
            "scene_graphs" => &mut present.scene_graphs,
            _ => &mut present.image_studies,
        };
        set.extend(group.studies);
        rejected.extend(group.rejected);
        if let Some(batch) = group.batch {
            let (batches, rows) = tables.entry(group.table).or_default();
            batches.push(batch);
            *rows += group.rows;
        }
    }
    let mut writes: Vec<(&'static str, Vec<RecordBatch>, u64)> = tables
        .into_iter()
        .map(|(table, (batches, rows))| (table, batches, rows))
        .collect();
    if !rejected.is_empty() {
        writes.push((
            "quarantine",
            vec![quarantine(source, &rejected, present, summary)?],
            0,
        ));
    }
    // One chunk's appends at a time, while the next chunk is read and decoded.
    settle(pending, summary).await?;
    let (lake, commit) = (lake.clone(), commit.clone());
    // As many files as the decoder has threads: encoding them is as much work as decoding.
    let writers = rayon::current_num_threads();
    *pending = Some(tokio::spawn(async move {
        let mut rows = Vec::new();
        let mut commits = 0;
        for (table, batches, count) in writes {
            lake.write(table)
                .commit(commit.clone())
                .writers(writers)
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

/// The quarantine rows of the members that cannot be used (name, reason, bytes), noted as
/// quarantined.
fn quarantine(
    source: &str,
    rejected: &[(String, String, Vec<u8>)],
    present: &mut Present,
    summary: &mut ImportSummary,
) -> Result<RecordBatch> {
    for (name, reason, _) in rejected {
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
    Ok(quarantine_batch(STAGE, rows)?)
}
