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

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// Suffix of temporary files.
pub(crate) const TEMP_SUFFIX: &str = ".tmp";

static NEXT_TEMP: AtomicU64 = AtomicU64::new(0);

/// Writes `bytes` to `path` atomically (see the module doc).
pub(crate) fn write_atomic(path: &Path, bytes: &[u8]) -> io::Result<()> {
    write_atomic_with(path, |file| file.write_all(bytes))
}

/// Writes `path` atomically with `write`; if `write` fails, `path` is left as it was.
pub(crate) fn write_atomic_with(
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
