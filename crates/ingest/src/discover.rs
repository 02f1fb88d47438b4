//! Finds the input files: walks folders and zip archives (members are listed, never extracted)
//! and classifies every file by its name.
//!
//! ```text
//!  files/pXX/pXXXXXXXX/sXXXXXXXX.txt        → Report        (also inside any .zip)
//!  *-metadata.csv[.gz]                      → Metadata
//!  *-split.csv[.gz]                         → Split
//!  *-chexpert.csv[.gz] / *-negbio.csv[.gz]  → Labels
//!  <dicom_id>_SceneGraph.json               → SceneGraph    (also inside any .zip)
//!  *.json under a folder `cxas…`            → Cxas          (COCO with compressed RLE; a file
//!                                             of another shape is quarantined as not CXAS)
//!  anything else                            → skipped (counted)
//! ```
//!
//! Untrusted input stays bounded ([`Limits`], the `ingest_*` settings): a symbolic link is
//! followed only to a file or folder inside its input folder (else it is quarantined with where
//! it points), every folder is walked once (a link back up is no cycle), an input with more than
//! `ingest_max_files` files is quarantined whole, and no read returns more than its limit: a
//! report above `ingest_max_report_bytes`, another file above `ingest_max_file_bytes` and a zip
//! member above `ingest_max_zip_ratio` × its compressed size are quarantined with their sizes.

use std::collections::{HashMap, HashSet};
use std::fs::File;
use std::io::{BufReader, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use cxrlake_lake::CxrlakeConfig;
use serde_json::{Value, json};

use crate::error::{IngestError, Result};
use crate::quarantine::{Quarantined, Target};

/// CheXpert-style labeler of a label CSV.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Labeler {
    /// `mimic-cxr-2.0.0-chexpert.csv`.
    Chexpert,
    /// `mimic-cxr-2.0.0-negbio.csv`.
    Negbio,
}

impl Labeler {
    /// The `labeler` column value.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Chexpert => "chexpert",
            Self::Negbio => "negbio",
        }
    }
}

/// What an input file holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    /// A MIMIC-CXR report text.
    Report,
    /// MIMIC-CXR-JPG metadata CSV.
    Metadata,
    /// MIMIC-CXR-JPG split CSV.
    Split,
    /// CheXpert or NegBio label CSV.
    Labels(Labeler),
    /// Chest ImaGenome scene graph JSON.
    SceneGraph,
    /// CXAS COCO JSON.
    Cxas,
}

/// Where an input file's bytes are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Location {
    /// A plain file.
    File(PathBuf),
    /// A symbolic link inside the input folder to a file inside it: named (and classified) by
    /// the link, read from the target.
    Link {
        /// The link's path.
        link: PathBuf,
        /// The file it resolves to (canonical).
        target: PathBuf,
    },
    /// A member of a zip archive, by index in its central directory.
    ZipMember {
        /// The archive.
        archive: PathBuf,
        /// Member index.
        index: usize,
        /// Member name.
        name: String,
    },
}

/// One classified input file.
#[derive(Debug, Clone)]
pub struct InputFile {
    /// What it holds.
    pub kind: Kind,
    /// Where it is.
    pub location: Location,
    /// Path relative to the input folder or archive, with `/` separators.
    pub rel_path: String,
    /// Size in bytes (uncompressed size for zip members).
    pub size: u64,
}

impl InputFile {
    /// How the file is named in `quarantine.source` and logs: the path, or `archive!member`.
    pub fn source(&self) -> String {
        match &self.location {
            Location::File(path) => path.display().to_string(),
            Location::Link { link, target } => {
                format!("{} -> {}", link.display(), target.display())
            }
            Location::ZipMember { archive, name, .. } => format!("{}!{name}", archive.display()),
        }
    }

    /// Whether the bytes are gzip-compressed (by name).
    pub fn is_gzip(&self) -> bool {
        self.rel_path.to_ascii_lowercase().ends_with(".gz")
    }

    /// The file name (last path segment).
    pub fn file_name(&self) -> &str {
        self.rel_path.rsplit('/').next().unwrap_or(&self.rel_path)
    }
}

/// Zip members decompressing to at most this many bytes are never zip bombs, whatever their
/// ratio (a 4 kB member of one repeated byte is fine).
const ZIP_RATIO_FLOOR: u64 = 1 << 20;

/// How much ingest reads from untrusted input: the `ingest_*` settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Largest report file, in bytes (`ingest_max_report_bytes`).
    pub max_report_bytes: u64,
    /// Largest other file or zip member, in bytes after decompression
    /// (`ingest_max_file_bytes`).
    pub max_file_bytes: u64,
    /// Largest ratio of a zip member's size to its compressed size (`ingest_max_zip_ratio`).
    pub max_zip_ratio: u64,
    /// Most files one input may hold (`ingest_max_files`).
    pub max_files: u64,
}

impl Limits {
    /// The limits of a configuration.
    pub fn of(config: &CxrlakeConfig) -> Self {
        Self {
            max_report_bytes: config.ingest_max_report_bytes,
            max_file_bytes: config.ingest_max_file_bytes,
            max_zip_ratio: config.ingest_max_zip_ratio,
            max_files: config.ingest_max_files,
        }
    }

    /// The size limit of a file of `kind`, with its setting's name.
    fn max_bytes(&self, kind: Kind) -> (u64, &'static str) {
        match kind {
            Kind::Report => (self.max_report_bytes, "ingest_max_report_bytes"),
            _ => (self.max_file_bytes, "ingest_max_file_bytes"),
        }
    }

    /// A reader of `file` that fails once it has given more bytes than `file` may hold: the
    /// size limit of its kind, and for a zip member also `ingest_max_zip_ratio` × `compressed`.
    pub(crate) fn bounded<R: Read>(
        &self,
        file: &InputFile,
        inner: R,
        compressed: Option<u64>,
    ) -> Bounded<R> {
        let (max, setting) = self.max_bytes(file.kind);
        let mut limit = Bound {
            bytes: max,
            why: format!("more than {max} bytes ({setting} = {max})"),
        };
        if let Some(compressed) = compressed {
            let bomb = self
                .max_zip_ratio
                .saturating_mul(compressed.max(1))
                .max(ZIP_RATIO_FLOOR);
            if bomb < limit.bytes {
                limit = Bound {
                    bytes: bomb,
                    why: format!(
                        "more than {bomb} bytes from {compressed} compressed, a zip bomb \
                         (ingest_max_zip_ratio = {})",
                        self.max_zip_ratio
                    ),
                };
            }
        }
        Bounded {
            inner,
            left: limit.bytes,
            limit,
        }
    }

    /// Why `file` is refused before it is read: its (declared) size is above its limit.
    pub(crate) fn refuse_by_size(&self, file: &InputFile) -> Option<String> {
        let (max, setting) = self.max_bytes(file.kind);
        (file.size > max).then(|| {
            format!(
                "{} bytes, more than {setting} = {max}: not read; raise it (`--set \
                 {setting}=N`) if the file is genuine",
                file.size
            )
        })
    }
}

impl Default for Limits {
    fn default() -> Self {
        Self::of(&CxrlakeConfig::default())
    }
}

/// The most bytes a [`Bounded`] reader gives, and how to say it.
#[derive(Debug, Clone)]
pub(crate) struct Bound {
    bytes: u64,
    why: String,
}

/// The error of a [`Bounded`] reader past its bound.
#[derive(Debug)]
pub(crate) struct TooLarge(String);

impl std::fmt::Display for TooLarge {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for TooLarge {}

/// A reader that fails (`InvalidData`, saying its bound) once more bytes than its bound came
/// through, so that no input is read whole into memory beyond its limit.
pub(crate) struct Bounded<R> {
    inner: R,
    left: u64,
    limit: Bound,
}

impl<R: Read> Read for Bounded<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        // One byte beyond the bound is asked for, to tell "exactly the limit" from "more".
        let want = usize::try_from(self.left.saturating_add(1))
            .unwrap_or(usize::MAX)
            .min(buf.len());
        let n = self.inner.read(&mut buf[..want])?;
        if n as u64 > self.left {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                TooLarge(format!("{}: not read", self.limit.why)),
            ));
        }
        self.left -= n as u64;
        Ok(n)
    }
}

/// Everything found under the inputs.
#[derive(Debug, Default)]
pub struct Discovered {
    /// Classified files, in a deterministic order (inputs in order, paths sorted).
    pub files: Vec<InputFile>,
    /// Files that are none of the known kinds.
    pub skipped: usize,
    /// Archives that could not be opened.
    pub quarantined: Vec<Quarantined>,
    /// Input paths with their file counts and total sizes (the commits' fingerprint).
    pub fingerprint: Value,
}

impl Discovered {
    /// Names the inputs in the fingerprint by `names` (in input order) where given.
    pub fn rename_inputs(&mut self, names: &[Option<String>]) {
        let Some(Value::Array(inputs)) = self.fingerprint.get_mut("inputs") else {
            return;
        };
        for (input, name) in inputs.iter_mut().zip(names) {
            if let (Some(name), Some(object)) = (name, input.as_object_mut()) {
                object.insert("path".into(), Value::from(name.as_str()));
            }
        }
    }
}

/// Walks `inputs` (folders, files, zip archives) within `limits`.
pub fn discover(inputs: &[PathBuf], limits: &Limits) -> Result<Discovered> {
    if inputs.is_empty() {
        return Err(IngestError::NoInputs);
    }
    let mut found = Discovered::default();
    let mut described = Vec::new();
    for input in inputs {
        let before = (found.files.len(), found.skipped, found.quarantined.len());
        let meta = std::fs::metadata(input).map_err(|source| IngestError::Input {
            path: input.clone(),
            source,
        })?;
        if meta.is_dir() {
            let root = std::fs::canonicalize(input).map_err(|source| IngestError::Input {
                path: input.clone(),
                source,
            })?;
            let mut walk = Walk {
                root: input,
                real_root: root,
                visited: HashSet::new(),
                files: 0,
                limits,
            };
            if walk.dir(input, &mut found).is_err() {
                // More files than allowed: none of this input is ingested.
                found.files.truncate(before.0);
                found.skipped = before.1;
                found.quarantined.truncate(before.2);
                found.quarantined.push(too_many_files(input, limits));
            }
        } else if !meta.is_file() {
            found.quarantined.push(not_regular(input));
        } else {
            let name = input
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            add_file(
                Location::File(input.clone()),
                &name,
                meta.len(),
                limits,
                &mut found,
            );
        }
        let files = &found.files[before.0..];
        described.push(json!({
            "path": input.display().to_string(),
            "files": files.len(),
            "bytes": total_bytes(files.iter().map(|f| f.size)),
        }));
    }
    found.fingerprint = json!({ "inputs": described });
    Ok(found)
}

/// The quarantine row of an input (a folder or an archive) with more files than allowed.
fn too_many_files(input: &Path, limits: &Limits) -> Quarantined {
    input_row(
        input,
        "input",
        format!(
            "more than ingest_max_files = {} files: not ingested; ingest its parts one by one \
             or raise the limit (`--set ingest_max_files=N`)",
            limits.max_files
        ),
    )
}

/// The quarantine row of an input (a file, folder or archive) at `path`.
fn input_row(path: &Path, location: impl Into<String>, reason: impl Into<String>) -> Quarantined {
    Quarantined::new(
        Target::Archive,
        path.display().to_string(),
        location,
        reason,
        Vec::new(),
    )
}

/// The quarantine row of a FIFO, socket or device: reading it could block forever or never end.
fn not_regular(path: &Path) -> Quarantined {
    input_row(
        path,
        "file",
        "not a regular file (a FIFO, socket or device): not read; replace it with the file it \
         stands for",
    )
}

/// One folder input being walked: links are followed only inside `real_root`, every real
/// folder once.
struct Walk<'a> {
    root: &'a Path,
    real_root: PathBuf,
    visited: HashSet<PathBuf>,
    files: u64,
    limits: &'a Limits,
}

/// The walk met more files than `ingest_max_files`.
struct TooManyFiles;

impl Walk<'_> {
    fn dir(&mut self, dir: &Path, found: &mut Discovered) -> std::result::Result<(), TooManyFiles> {
        // A folder reached twice (through a link, or a link back up) is walked once.
        let real = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
        if !self.visited.insert(real) {
            return Ok(());
        }
        let entries = match std::fs::read_dir(dir) {
            Ok(entries) => entries,
            Err(err) => {
                found.quarantined.push(input_row(
                    dir,
                    "folder",
                    format!("unreadable folder: {err}"),
                ));
                return Ok(());
            }
        };
        let mut entries: Vec<_> = entries
            .filter_map(|entry| entry.ok())
            .map(|entry| entry.path())
            .collect();
        entries.sort();
        for path in entries {
            let Ok(meta) = std::fs::symlink_metadata(&path) else {
                found.skipped += 1;
                continue;
            };
            let (meta, target) = if meta.file_type().is_symlink() {
                match self.follow(&path) {
                    Ok((target, meta)) => (meta, Some(target)),
                    Err(record) => {
                        found.quarantined.push(record);
                        continue;
                    }
                }
            } else {
                (meta, None)
            };
            if meta.is_dir() {
                self.dir(&path, found)?;
                continue;
            }
            self.files += 1;
            if self.files > self.limits.max_files {
                return Err(TooManyFiles);
            }
            if !meta.is_file() {
                found.quarantined.push(not_regular(&path));
                continue;
            }
            let rel = path
                .strip_prefix(self.root)
                .unwrap_or(&path)
                .components()
                .map(|c| c.as_os_str().to_string_lossy())
                .collect::<Vec<_>>()
                .join("/");
            let location = match target {
                Some(target) => Location::Link { link: path, target },
                None => Location::File(path),
            };
            add_file(location, &rel, meta.len(), self.limits, found);
        }
        Ok(())
    }

    /// Where the link at `path` leads and what is there, or its quarantine row when it leads
    /// nowhere or out of the input folder (an untrusted corpus must not pull in local files).
    fn follow(
        &self,
        path: &Path,
    ) -> std::result::Result<(PathBuf, std::fs::Metadata), Quarantined> {
        let points_to = std::fs::read_link(path)
            .map(|p| p.display().to_string())
            .unwrap_or_default();
        let refuse = |reason: String| {
            Quarantined::new(
                Target::Archive,
                path.display().to_string(),
                "file",
                reason,
                points_to.clone().into_bytes(),
            )
        };
        let target = std::fs::canonicalize(path).map_err(|err| {
            refuse(format!(
                "a symbolic link to '{points_to}' that cannot be followed ({err}): not read"
            ))
        })?;
        if !target.starts_with(&self.real_root) {
            return Err(refuse(format!(
                "a symbolic link to '{}', outside the input folder '{}': not followed; copy \
                 the file into the folder if it belongs to the corpus",
                target.display(),
                self.real_root.display()
            )));
        }
        let meta = std::fs::metadata(&target).map_err(|err| {
            refuse(format!(
                "a symbolic link to '{}' that cannot be read ({err})",
                target.display()
            ))
        })?;
        Ok((target, meta))
    }
}

/// Adds one file found at `location` (`rel`: its path within the input), listing a zip's
/// members.
fn add_file(location: Location, rel: &str, size: u64, limits: &Limits, found: &mut Discovered) {
    let (named, read_from) = match &location {
        Location::File(path) => (path, path),
        Location::Link { link, target } => (link, target),
        Location::ZipMember { archive, .. } => (archive, archive),
    };
    if rel.to_ascii_lowercase().ends_with(".zip") {
        add_zip(read_from, limits, found);
        return;
    }
    match classify(&named.to_string_lossy(), rel) {
        Some(kind) => found.files.push(InputFile {
            kind,
            location,
            rel_path: rel.to_string(),
            size,
        }),
        None => found.skipped += 1,
    }
}

fn add_zip(path: &Path, limits: &Limits, found: &mut Discovered) {
    let archive = File::open(path)
        .map_err(|e| e.to_string())
        .and_then(|file| zip::ZipArchive::new(BufReader::new(file)).map_err(|e| e.to_string()));
    let mut archive = match archive {
        Ok(archive) => archive,
        Err(reason) => {
            found.quarantined.push(input_row(
                path,
                "archive",
                format!("unreadable zip archive: {reason}"),
            ));
            return;
        }
    };
    if archive.len() as u64 > limits.max_files {
        found.quarantined.push(too_many_files(path, limits));
        return;
    }
    let mut members = Vec::new();
    for index in 0..archive.len() {
        match archive.by_index_raw(index) {
            Ok(member) if member.is_dir() => {}
            Ok(member) => members.push((member.name().to_string(), index, member.size())),
            Err(err) => found.quarantined.push(input_row(
                path,
                format!("member {index}"),
                format!("unreadable zip member: {err}"),
            )),
        }
    }
    // The zip library keeps one member per name: a name the central directory lists twice
    // would otherwise vanish without a trace.
    if let Ok(names) = central_directory_names(path) {
        let mut counts: HashMap<&str, usize> = HashMap::new();
        for name in &names {
            *counts.entry(name.as_str()).or_default() += 1;
        }
        let mut repeated: Vec<(&str, usize)> = counts.into_iter().filter(|(_, n)| *n > 1).collect();
        repeated.sort();
        for (name, times) in repeated {
            found.quarantined.push(input_row(
                path,
                format!("member {name}"),
                format!(
                    "the archive lists '{name}' {times} times; only one of them is read: \
                     remove the duplicates (or unpack and check which is right)"
                ),
            ));
        }
    }
    members.sort();
    let archive_name = path.to_string_lossy();
    for (name, index, size) in members {
        match classify(&format!("{archive_name}/{name}"), &name) {
            Some(kind) => found.files.push(InputFile {
                kind,
                location: Location::ZipMember {
                    archive: path.to_path_buf(),
                    index,
                    name: name.clone(),
                },
                rel_path: name,
                size,
            }),
            None => found.skipped += 1,
        }
    }
}

/// Classifies a file by its name; `full` is the whole path (folders tell CXAS output and report
/// trees apart), `rel` the path within the input.
pub fn classify(full: &str, rel: &str) -> Option<Kind> {
    let name = rel.rsplit('/').next().unwrap_or(rel).to_ascii_lowercase();
    let name = name.strip_suffix(".gz").unwrap_or(&name);
    let full = full.replace('\\', "/").to_ascii_lowercase();
    let folders: Vec<&str> = full.split('/').collect();
    let folders = &folders[..folders.len().saturating_sub(1)];
    if name.ends_with("-metadata.csv") {
        Some(Kind::Metadata)
    } else if name.ends_with("-split.csv") {
        Some(Kind::Split)
    } else if name.ends_with("-chexpert.csv") {
        Some(Kind::Labels(Labeler::Chexpert))
    } else if name.ends_with("-negbio.csv") {
        Some(Kind::Labels(Labeler::Negbio))
    } else if name.ends_with("_scenegraph.json") {
        Some(Kind::SceneGraph)
    } else if name.ends_with(".json") && folders.iter().any(|f| f.starts_with("cxas")) {
        Some(Kind::Cxas)
    } else if name.ends_with(".txt") && (folders.contains(&"files") || name.starts_with('s')) {
        Some(Kind::Report)
    } else {
        None
    }
}

/// Reads whole input files within their [`Limits`], keeping zip archives open between reads.
#[derive(Debug, Default)]
pub struct FileReader {
    limits: Limits,
    archives: HashMap<PathBuf, zip::ZipArchive<BufReader<File>>>,
}

impl FileReader {
    /// A reader that refuses what is beyond `limits`.
    pub fn new(limits: Limits) -> Self {
        Self {
            limits,
            archives: HashMap::new(),
        }
    }

    /// The limits it reads within.
    pub(crate) fn limits(&self) -> Limits {
        self.limits
    }

    /// The file's bytes (gzip is not undone here), or why they cannot be read.
    pub fn read(&mut self, file: &InputFile) -> std::result::Result<Vec<u8>, String> {
        let mut bytes = Vec::with_capacity(initial_capacity(file.size));
        self.open(file)?.read_to_end(&mut bytes).map_err(|err| {
            let what = match file.location {
                Location::ZipMember { .. } => "unreadable zip member",
                _ => "unreadable file",
            };
            match err.get_ref().and_then(|e| e.downcast_ref::<TooLarge>()) {
                Some(too_large) => too_large.to_string(),
                None => format!("{what}: {err}"),
            }
        })?;
        Ok(bytes)
    }

    /// A reader of the file's bytes that fails beyond the file's limits.
    pub fn open(
        &mut self,
        file: &InputFile,
    ) -> std::result::Result<Box<dyn Read + Send + '_>, String> {
        if let Some(reason) = self.limits.refuse_by_size(file) {
            return Err(reason);
        }
        match &file.location {
            Location::File(path) | Location::Link { target: path, .. } => {
                let plain = File::open(path).map_err(|e| format!("unreadable file: {e}"))?;
                Ok(Box::new(self.limits.bounded(file, plain, None)))
            }
            Location::ZipMember { archive, index, .. } => {
                if !self.archives.contains_key(archive) {
                    let opened = File::open(archive)
                        .map_err(|e| e.to_string())
                        .and_then(|f| {
                            zip::ZipArchive::new(BufReader::new(f)).map_err(|e| e.to_string())
                        })
                        .map_err(|e| format!("unreadable zip archive: {e}"))?;
                    self.archives.insert(archive.clone(), opened);
                }
                let zip = self
                    .archives
                    .get_mut(archive)
                    .ok_or_else(|| "zip archive vanished".to_string())?;
                let member = zip
                    .by_index(*index)
                    .map_err(|e| format!("unreadable zip member: {e}"))?;
                let compressed = member.compressed_size();
                Ok(Box::new(self.limits.bounded(
                    file,
                    member,
                    Some(compressed),
                )))
            }
        }
    }
}

/// The member names of the zip at `path` as its central directory lists them, duplicates
/// included (ZIP64 too); an error when the directory cannot be found or read.
fn central_directory_names(path: &Path) -> std::io::Result<Vec<String>> {
    let invalid =
        |what: &str| std::io::Error::new(std::io::ErrorKind::InvalidData, what.to_string());
    let u16_at = |b: &[u8], at: usize| u16::from_le_bytes([b[at], b[at + 1]]);
    let u32_at = |b: &[u8], at: usize| u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]]);
    let u64_at = |b: &[u8], at: usize| {
        let mut bytes = [0u8; 8];
        bytes.copy_from_slice(&b[at..at + 8]);
        u64::from_le_bytes(bytes)
    };
    let mut file = File::open(path)?;
    let length = file.metadata()?.len();
    // The end-of-central-directory record: 22 bytes and a comment of at most 65,535.
    let tail_length = length.min(22 + 65_535);
    let mut tail = vec![0u8; tail_length as usize];
    file.seek(SeekFrom::Start(length - tail_length))?;
    file.read_exact(&mut tail)?;
    let eocd = (0..tail.len().saturating_sub(21))
        .rev()
        .find(|&at| tail[at..at + 4] == [0x50, 0x4b, 0x05, 0x06])
        .ok_or_else(|| invalid("no end of central directory"))?;
    let (mut size, mut offset) = (
        u64::from(u32_at(&tail, eocd + 12)),
        u64::from(u32_at(&tail, eocd + 16)),
    );
    if offset == u64::from(u32::MAX) || size == u64::from(u32::MAX) {
        // ZIP64: the locator (20 bytes) just before the record points at the ZIP64 record.
        let locator = eocd
            .checked_sub(20)
            .ok_or_else(|| invalid("no ZIP64 locator"))?;
        if tail[locator..locator + 4] != [0x50, 0x4b, 0x06, 0x07] {
            return Err(invalid("no ZIP64 locator"));
        }
        let record_at = u64_at(&tail, locator + 8);
        let mut record = [0u8; 56];
        file.seek(SeekFrom::Start(record_at))?;
        file.read_exact(&mut record)?;
        if record[..4] != [0x50, 0x4b, 0x06, 0x06] {
            return Err(invalid("no ZIP64 end of central directory"));
        }
        size = u64_at(&record, 40);
        offset = u64_at(&record, 48);
    }
    if offset.checked_add(size).is_none_or(|end| end > length) {
        return Err(invalid("central directory past the end of the file"));
    }
    let mut directory = vec![0u8; size as usize];
    file.seek(SeekFrom::Start(offset))?;
    file.read_exact(&mut directory)?;
    let mut names = Vec::new();
    let mut at = 0;
    while at + 46 <= directory.len() && directory[at..at + 4] == [0x50, 0x4b, 0x01, 0x02] {
        let name_length = usize::from(u16_at(&directory, at + 28));
        let skip =
            usize::from(u16_at(&directory, at + 30)) + usize::from(u16_at(&directory, at + 32));
        let name = directory
            .get(at + 46..at + 46 + name_length)
            .ok_or_else(|| invalid("truncated central directory"))?;
        names.push(String::from_utf8_lossy(name).into_owned());
        at += 46 + name_length + skip;
    }
    Ok(names)
}

/// The buffer to reserve for a file that declares `declared` bytes: the declaration of a forged
/// archive can say 2^64 − 1 (ZIP64), so at most 64 MiB up front; the buffer grows with what is
/// really read.
fn initial_capacity(declared: u64) -> usize {
    usize::try_from(declared.min(64 << 20)).unwrap_or(0)
}

/// The sum of declared sizes, saturating (forged ZIP64 members can declare 2^63 bytes each).
fn total_bytes(sizes: impl Iterator<Item = u64>) -> u64 {
    sizes.fold(0, u64::saturating_add)
}

/// File bytes read per chunk at most (bounds memory for CXAS files of ~100 KB per study).
pub const CHUNK_BYTES: u64 = 128 << 20;

/// Splits files into chunks of at most `count` files and [`CHUNK_BYTES`] bytes.
pub fn chunks(files: &[InputFile], count: usize) -> Vec<&[InputFile]> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut bytes = 0u64;
    for (i, file) in files.iter().enumerate() {
        // Sizes are declared by the input (a forged ZIP64 member says 2^63 bytes): saturating.
        if i > start && (i - start >= count.max(1) || bytes.saturating_add(file.size) > CHUNK_BYTES)
        {
            out.push(&files[start..i]);
            start = i;
            bytes = 0;
        }
        bytes = bytes.saturating_add(file.size);
    }
    if start < files.len() {
        out.push(&files[start..]);
    }
    out
}

/// Reads many files: plain files in parallel (rayon), zip members in order from open archives.
pub fn read_all(
    reader: &mut FileReader,
    files: &[InputFile],
) -> Vec<std::result::Result<Vec<u8>, String>> {
    use rayon::prelude::*;
    let limits = reader.limits;
    let mut out: Vec<Option<std::result::Result<Vec<u8>, String>>> = files
        .par_iter()
        .map(|file| match &file.location {
            Location::File(_) | Location::Link { .. } => Some(FileReader::new(limits).read(file)),
            Location::ZipMember { .. } => None,
        })
        .collect();
    for (slot, file) in out.iter_mut().zip(files) {
        if slot.is_none() {
            *slot = Some(reader.read(file));
        }
    }
    out.into_iter()
        .map(|slot| slot.unwrap_or_else(|| Err("not read".to_string())))
        .collect()
}

#[cfg(test)]
mod tests {

    #[cfg(unix)]
    #[test]
    fn a_fifo_is_quarantined_not_read() {
        let dir = tempfile::tempdir().expect("tempdir");
        let reports = dir.path().join("files/p10/p10000032");
        std::fs::create_dir_all(&reports).expect("mkdir");
        let fifo = reports.join("s50414267.txt");
        let status = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .expect("mkfifo");
        assert!(status.success());
        let found = discover(&[dir.path().to_path_buf()], &Limits::default()).expect("discover");
        assert!(found.files.is_empty());
        assert_eq!(found.quarantined.len(), 1);
        assert!(found.quarantined[0].reason.contains("not a regular file"));
        let found = discover(&[fifo], &Limits::default()).expect("discover the FIFO itself");
        assert!(found.files.is_empty() && found.quarantined.len() == 1);
    }

    #[test]
    fn a_member_name_listed_twice_is_quarantined() {
        use std::io::Write;
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("reports.zip");
        {
            let mut zip = zip::ZipWriter::new(File::create(&path).expect("create"));
            let options = zip::write::SimpleFileOptions::default();
            for name in [
                "files/p10/p10000032/s50414267.txt",
                "files/p10/p10000032/s50414268.txt",
            ] {
                zip.start_file(name, options).expect("start");
                zip.write_all(b"FINDINGS: No effusion.").expect("write");
            }
            zip.finish().expect("finish");
        }
        // Rename the second member to the first one's name (local header and directory).
        let bytes = std::fs::read(&path).expect("read");
        let patched = String::from_utf8_lossy(&bytes)
            .contains("s50414268")
            .then(|| {
                let mut out = bytes.clone();
                let needle = b"s50414268.txt";
                let mut at = 0;
                while let Some(found) = out[at..].windows(needle.len()).position(|w| w == needle) {
                    out[at + found..at + found + needle.len()].copy_from_slice(b"s50414267.txt");
                    at += found + needle.len();
                }
                out
            })
            .expect("patched");
        std::fs::write(&path, patched).expect("write");
        assert_eq!(
            central_directory_names(&path).expect("names"),
            [
                "files/p10/p10000032/s50414267.txt",
                "files/p10/p10000032/s50414267.txt"
            ]
        );
        let found = discover(std::slice::from_ref(&path), &Limits::default()).expect("discover");
        assert_eq!(found.quarantined.len(), 1, "{:?}", found.quarantined);
        assert!(
            found.quarantined[0]
                .reason
                .contains("lists 'files/p10/p10000032/s50414267.txt' 2 times"),
            "{}",
            found.quarantined[0].reason
        );
        assert_eq!(found.files.len(), 1);
    }

    #[test]
    fn a_forged_member_size_reserves_at_most_64_mib() {
        assert_eq!(initial_capacity(u64::MAX), 64 << 20);
        assert_eq!(initial_capacity(1 << 62), 64 << 20);
        assert_eq!(initial_capacity(1234), 1234);
        assert_eq!(total_bytes([1u64 << 63, 1 << 63, 5].into_iter()), u64::MAX);
        assert_eq!(total_bytes([2u64, 3].into_iter()), 5);
    }

    use super::*;

    #[test]
    fn classifies_by_name() {
        let c = |rel: &str| classify(&format!("/corpus/{rel}"), rel);
        assert_eq!(c("files/p10/p10000032/s50414267.txt"), Some(Kind::Report));
        assert_eq!(c("mimic-cxr-2.0.0-metadata.csv.gz"), Some(Kind::Metadata));
        assert_eq!(c("mimic-cxr-2.0.0-split.csv"), Some(Kind::Split));
        assert_eq!(
            c("mimic-cxr-2.0.0-negbio.csv.gz"),
            Some(Kind::Labels(Labeler::Negbio))
        );
        assert_eq!(
            c("imagenome/scene_graph/0a-1b-2c-3d-4e_SceneGraph.json"),
            Some(Kind::SceneGraph)
        );
        assert_eq!(c("cxas/p10/p10000032/s50414267.json"), Some(Kind::Cxas));
        assert_eq!(c("cxas-2024/s50414267.json"), Some(Kind::Cxas));
        assert_eq!(c("cxas.zip/p10/p10000032/s50414267.json"), Some(Kind::Cxas));
        assert_eq!(c("notcxas/s50414267.json"), None);
        assert_eq!(c("reports/mimic-cxas-notes/s50414267.json"), None);
        assert_eq!(c("manifest.json"), None);
        assert_eq!(c("ground_truth.jsonl"), None);
    }

    #[test]
    fn chunks_are_bounded_by_count_and_bytes() {
        let file = |size| InputFile {
            kind: Kind::Report,
            location: Location::File(PathBuf::from("s1.txt")),
            rel_path: "s1.txt".into(),
            size,
        };
        let files: Vec<InputFile> = (0..10).map(|_| file(10)).collect();
        let sizes: Vec<usize> = chunks(&files, 4).iter().map(|c| c.len()).collect();
        assert_eq!(sizes, [4, 4, 2]);
        let big = vec![file(CHUNK_BYTES), file(1), file(CHUNK_BYTES)];
        let sizes: Vec<usize> = chunks(&big, 100).iter().map(|c| c.len()).collect();
        assert_eq!(sizes, [1, 1, 1]);
        // Two forged ZIP64 members of 2^63 bytes each: no overflow, one chunk each.
        let forged = vec![file(1 << 63), file(1 << 63), file(u64::MAX)];
        let sizes: Vec<usize> = chunks(&forged, 100).iter().map(|c| c.len()).collect();
        assert_eq!(sizes, [1, 1, 1]);
    }
}
