//! Atomic file writes: a hidden temporary file in the target's folder, renamed over the target
//! once complete, so an interrupted export leaves either the old file, the new one, or nothing —
//! never a truncated one.
//!
//! ```text
//! p10/p10000032/.s50414267.scene_graph.json.<pid>-<n>.tmp   write all bytes
//!        │ rename (atomic within one folder)
//!        ▼
//! p10/p10000032/s50414267.scene_graph.json
//! ```
//!
//! A failed write removes its temporary file. A killed process can leave one behind; its name
//! starts with `.` and ends with `.tmp`, so it never matches `*.scene_graph.json` and can be
//! deleted. There is no fsync: the guarantee covers interrupted processes, not power loss.
//!
//! Also here: the release's folder layout (`pXX/pXXXXXXXX/`) and the id checks that keep file
//! names inside it.

use std::fs::{File, OpenOptions};
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use serde::Serialize;

use crate::error::{ExportError, Result};

/// `p10/p10000032`: the folder of a patient's files (`pXX` = the first three characters of the
/// prefixed patient id).
pub fn patient_folder(patient_id: &str) -> PathBuf {
    let group = patient_id.get(..3).unwrap_or(patient_id);
    [group, patient_id].iter().collect()
}

/// `prefix` followed by at least `min_digits` ASCII digits and nothing else.
pub fn is_id(id: &str, prefix: char, min_digits: usize) -> bool {
    id.strip_prefix(prefix).is_some_and(|digits| {
        digits.len() >= min_digits && digits.bytes().all(|b| b.is_ascii_digit())
    })
}

/// The ids of row `row` of `table` if they are safe to name folders and files with: a patient
/// id of `p` and two digits at least (the folder `pXX` takes the first three characters), a
/// study id of `s` and digits.
pub fn checked_ids<'a>(
    table: &'static str,
    row: usize,
    patient_id: Option<&'a str>,
    study_id: Option<&'a str>,
) -> Result<(&'a str, &'a str)> {
    let malformed = |field, expected| ExportError::MalformedId {
        table,
        row,
        field,
        expected,
        patient_id: patient_id.map(str::to_string),
        study_id: study_id.map(str::to_string),
    };
    let Some(patient) = patient_id.filter(|id| is_id(id, 'p', 2)) else {
        return Err(malformed(
            "patient_id",
            "'p' followed by digits, e.g. p10000032",
        ));
    };
    let Some(study) = study_id.filter(|id| is_id(id, 's', 1)) else {
        return Err(malformed(
            "study_id",
            "'s' followed by digits, e.g. s50414267",
        ));
    };
    Ok((patient, study))
}

/// Creates `folder` and its parents.
pub fn create_folder(folder: &Path) -> Result<()> {
    std::fs::create_dir_all(folder).map_err(|source| ExportError::Io {
        path: folder.to_path_buf(),
        source,
    })
}

/// A hidden temporary name next to `target` (`.qa.zip.<pid>.tmp`), for a file renamed over
/// `target` once complete; `target`'s folder is created.
pub fn hidden_temp(target: &Path) -> Result<PathBuf> {
    if let Some(parent) = target.parent() {
        create_folder(parent)?;
    }
    let name = target
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    Ok(target.with_file_name(format!(".{name}.{}{TEMP_SUFFIX}", std::process::id())))
}

/// Writes `bytes` to `path` atomically, naming the path if it fails.
pub fn write_file(path: &Path, bytes: &[u8]) -> Result<()> {
    write_atomic(path, bytes).map_err(|source| ExportError::Io {
        path: path.to_path_buf(),
        source,
    })
}

/// Suffix of temporary files.
pub const TEMP_SUFFIX: &str = ".tmp";

/// The deflate level of zip members and `.csv.gz` files: 6, zlib's default and what Python's
/// `zipfile` writes. With flate2's zlib-rs backend, synthetic studies' `qa.json` files compress
/// 31× at ~280 MB/s where level 1 gave 15× at ~670 MB/s, and the metadata CSVs 17–29× instead of
/// 8–17×: a release about half the size for a little more export CPU.
pub const DEFLATE_LEVEL: u32 = 6;

static NEXT_TEMP: AtomicU64 = AtomicU64::new(0);

/// Writes `bytes` to `path` atomically (see the module doc).
pub fn write_atomic(path: &Path, bytes: &[u8]) -> io::Result<()> {
    write_atomic_with(path, |file| file.write_all(bytes))
}

/// Writes `path` atomically with `write`; if `write` fails, `path` is left as it was.
pub fn write_atomic_with(
    path: &Path,
    write: impl FnOnce(&mut File) -> io::Result<()>,
) -> io::Result<()> {
    let temp = TempFile::new(path)?;
    let mut file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&temp.path)?;
    write(&mut file)?;
    drop(file);
    std::fs::rename(&temp.path, path)?;
    temp.disarm();
    Ok(())
}

/// A temporary file name next to the target, removed on drop unless disarmed.
struct TempFile {
    path: PathBuf,
    armed: bool,
}

impl TempFile {
    fn new(target: &Path) -> io::Result<Self> {
        let name = target.file_name().ok_or_else(|| {
            io::Error::new(io::ErrorKind::InvalidInput, "target has no file name")
        })?;
        let n = NEXT_TEMP.fetch_add(1, Ordering::Relaxed);
        let temp_name = format!(
            ".{}.{}-{n}{TEMP_SUFFIX}",
            name.to_string_lossy(),
            std::process::id()
        );
        Ok(Self {
            path: target.with_file_name(temp_name),
            armed: true,
        })
    }

    fn disarm(mut self) {
        self.armed = false;
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        if self.armed {
            // Nothing else to do if the file was never created or is already gone.
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

/// A JSON array file being written (one record per line) to a hidden temporary file, renamed
/// into place by [`JsonArray::finish`]. The array is the whole file, or sits in an envelope
/// ([`JsonArray::open_enveloped`]).
#[derive(Debug)]
pub struct JsonArray {
    writer: BufWriter<File>,
    temp: PathBuf,
    target: PathBuf,
    first: bool,
    suffix: &'static [u8],
}

impl JsonArray {
    /// Starts the array of `target`.
    pub fn open(target: PathBuf) -> Result<Self> {
        Self::open_enveloped(target, b"[", b"\n]\n")
    }

    /// Starts the array of `target` inside an envelope: `prefix` ends with the array's `[`,
    /// `suffix` (written by [`JsonArray::finish`]) starts with a newline and its `]`.
    pub fn open_enveloped(target: PathBuf, prefix: &[u8], suffix: &'static [u8]) -> Result<Self> {
        let temp = hidden_temp(&target)?;
        let file = File::create(&temp).map_err(|source| ExportError::Io {
            path: temp.clone(),
            source,
        })?;
        let mut output = JsonArray {
            writer: BufWriter::new(file),
            temp,
            target,
            first: true,
            suffix,
        };
        output.write(prefix)?;
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

    /// Appends one record.
    pub fn record(&mut self, value: &impl Serialize) -> Result<()> {
        let separator: &[u8] = if self.first { b"\n" } else { b",\n" };
        self.first = false;
        self.write(separator)?;
        let json = serde_json::to_vec(value)?;
        self.write(&json)
    }

    /// The file it becomes.
    pub fn target(&self) -> &Path {
        &self.target
    }

    /// Closes the array (and its envelope) and renames the file into place; its size.
    pub fn finish(mut self) -> Result<u64> {
        self.write(self.suffix)?;
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
pub fn image_path(patient_id: &str, study_id: &str, image_id: &str) -> String {
    let group = patient_id.get(..3).unwrap_or(patient_id);
    format!("files/{group}/{patient_id}/{study_id}/{image_id}.jpg")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(dir: &Path) -> Vec<String> {
        let mut names: Vec<_> = std::fs::read_dir(dir)
            .expect("read dir")
            .map(|entry| {
                entry
                    .expect("entry")
                    .file_name()
                    .to_string_lossy()
                    .into_owned()
            })
            .collect();
        names.sort();
        names
    }

    #[test]
    fn an_interrupted_write_leaves_no_partial_file() {
        let dir = tempfile::tempdir().expect("tempdir");
        let target = dir.path().join("s1.scene_graph.json");

        let failed = write_atomic_with(&target, |file| {
            file.write_all(b"{\"patient_id\": \"p1")?;
            Err(io::Error::other("disk full"))
        });
        assert!(failed.is_err());
        assert!(names(dir.path()).is_empty(), "{:?}", names(dir.path()));

        write_atomic(&target, b"{\"old\":true}\n").expect("write");
        let failed = write_atomic_with(&target, |file| {
            file.write_all(b"{\"new\"")?;
            Err(io::Error::other("killed"))
        });
        assert!(failed.is_err());
        assert_eq!(
            std::fs::read_to_string(&target).expect("read"),
            "{\"old\":true}\n"
        );
        assert_eq!(names(dir.path()), ["s1.scene_graph.json"]);

        write_atomic(&target, b"{\"new\":true}\n").expect("rewrite");
        assert_eq!(
            std::fs::read_to_string(&target).expect("read"),
            "{\"new\":true}\n"
        );
        assert_eq!(names(dir.path()), ["s1.scene_graph.json"]);
    }

    #[test]
    fn ids_need_their_prefix_and_digits() {
        assert!(is_id("p10000032", 'p', 2));
        assert!(is_id("s5", 's', 1));
        for bad in ["10000032", "p1", "p1000003x", "P10000032", "p../etc", ""] {
            assert!(!is_id(bad, 'p', 2), "{bad}");
        }
        assert_eq!(patient_folder("p10000032"), Path::new("p10/p10000032"));
    }

    #[test]
    fn temporary_names_are_hidden_and_never_results() {
        let temp = TempFile::new(Path::new("/x/p10/s1.scene_graph.json")).expect("temp");
        let name = temp
            .path
            .file_name()
            .expect("name")
            .to_string_lossy()
            .into_owned();
        assert!(name.starts_with(".s1.scene_graph.json."), "{name}");
        assert!(name.ends_with(TEMP_SUFFIX));
        assert!(!name.ends_with(".scene_graph.json"));
        temp.disarm();
    }
}
