//! Where per-study JSON files go: a folder (one file each, written atomically) or a zip archive
//! read in place by users (`qa.zip` with members `qa/pXX/pXXXXXXXX/sXXXXXXXX.qa.json`).
//!
//! ```text
//! rayon, per study ─ bytes ─▶ Folder: atomic file write
//!                            Zip:    deflated in memory (level 6, CRC-32) as a [`Deflated`]
//!                                     └─ after the batch: appended to the archive under one lock
//! archive: .qa.zip.<pid>.tmp ── finish: central directory (ZIP64 where needed) ──rename──▶ qa.zip
//! ```
//!
//! Compression runs on every core; only the append to the archive is serial. Members are
//! appended in the order batches complete; when that is not name order, `finish` copies them
//! into name order, so an archive's bytes depend only on its members. The archive format is
//! [`crate::archive`]'s.

use std::fs::File;
use std::io::BufWriter;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use crate::archive::{Deflated, ZipWriter};
use crate::error::{ExportError, Result};
use crate::files::{DEFLATE_LEVEL, create_folder, hidden_temp, patient_folder, write_file};
use crate::inflight::Written;

/// Where per-study files are written.
#[derive(Debug)]
pub(crate) enum Sink {
    /// Files under this folder.
    Folder(PathBuf),
    /// Members of one zip archive.
    Zip(Box<ZipSink>),
}

impl Sink {
    /// Makes `patient_id`'s folder exist (folders only).
    pub fn prepare_patient(&self, patient_id: &str) -> Result<()> {
        match self {
            Sink::Folder(dir) => create_folder(&dir.join(patient_folder(patient_id))),
            Sink::Zip(_) => Ok(()),
        }
    }

    /// Writes `bytes` as `relative` (a folder file now; a zip member returned for [`Sink::merge`]).
    pub fn put(&self, relative: &Path, bytes: &[u8]) -> Result<Option<Deflated>> {
        match self {
            Sink::Folder(dir) => write_file(&dir.join(relative), bytes).map(|()| None),
            Sink::Zip(zip) => zip.member(relative, bytes).map(Some),
        }
    }

    /// Adds up what per-study writes returned, merging their zip members; the total.
    pub fn gather(&self, results: Vec<(Written, Option<Deflated>)>) -> Result<Written> {
        let mut written = Written::default();
        let mut members = Vec::new();
        for (study, member) in results {
            written = written.add(study);
            members.extend(member);
        }
        self.merge(members)?;
        Ok(written)
    }

    /// Adds the members [`Sink::put`] returned.
    pub fn merge(&self, members: Vec<Deflated>) -> Result<()> {
        match self {
            Sink::Folder(_) => Ok(()),
            Sink::Zip(zip) => zip.merge(members),
        }
    }
}

/// A zip archive being written: a temporary file renamed over the target by [`ZipSink::finish`].
#[derive(Debug)]
pub(crate) struct ZipSink {
    /// Member name prefix (`qa/`).
    prefix: String,
    target: PathBuf,
    temp: PathBuf,
    writer: Mutex<Option<ZipWriter<BufWriter<File>>>>,
}

fn io_error(path: &Path) -> impl Fn(std::io::Error) -> ExportError + '_ {
    move |source| ExportError::Io {
        path: path.to_path_buf(),
        source,
    }
}

impl ZipSink {
    /// Starts `target` (its folder is created); members are named `prefix` + relative path.
    pub fn create(target: &Path, prefix: &str) -> Result<Self> {
        let temp = hidden_temp(target)?;
        let file = File::create(&temp).map_err(io_error(&temp))?;
        let writer = ZipWriter::new(BufWriter::new(file)).map_err(io_error(&temp))?;
        Ok(Self {
            prefix: prefix.to_string(),
            target: target.to_path_buf(),
            temp,
            writer: Mutex::new(Some(writer)),
        })
    }

    /// The member name of `relative` (`/` separators).
    fn name(&self, relative: &Path) -> String {
        let parts: Vec<_> = relative
            .components()
            .map(|c| c.as_os_str().to_string_lossy())
            .collect();
        format!("{}{}", self.prefix, parts.join("/"))
    }

    /// `bytes` deflated at [`DEFLATE_LEVEL`], ready for [`ZipSink::merge`].
    fn member(&self, relative: &Path, bytes: &[u8]) -> Result<Deflated> {
        Deflated::new(self.name(relative), bytes, DEFLATE_LEVEL).map_err(io_error(&self.target))
    }

    /// Appends deflated members to the archive.
    fn merge(&self, members: Vec<Deflated>) -> Result<()> {
        let mut guard = self.writer.lock().map_err(|_| ExportError::Poisoned)?;
        let writer = guard.as_mut().ok_or(ExportError::Poisoned)?;
        for member in members {
            writer.add(member).map_err(io_error(&self.temp))?;
        }
        Ok(())
    }

    /// Writes the central directory and renames the archive into place; returns its size.
    pub fn finish(&self) -> Result<u64> {
        let mut guard = self.writer.lock().map_err(|_| ExportError::Poisoned)?;
        let writer = guard.take().ok_or(ExportError::Poisoned)?;
        if writer.in_name_order() {
            // finish flushes; the file is closed before the rename.
            drop(writer.finish().map_err(io_error(&self.temp))?);
            std::fs::rename(&self.temp, &self.target).map_err(io_error(&self.target))?;
        } else {
            // Batches finished out of order: the members are copied in name order, so that the
            // same rows always make the same bytes.
            let sorted = self.temp.with_extension("sorted");
            let source = File::open(&self.temp).map_err(io_error(&self.temp))?;
            let finished = File::create(&sorted).and_then(|out| {
                writer.finish_in_name_order(std::io::BufReader::new(source), BufWriter::new(out))
            });
            let _ = std::fs::remove_file(&self.temp);
            match finished {
                // The file is flushed and closed before the rename.
                Ok(out) => drop(out),
                Err(e) => {
                    let _ = std::fs::remove_file(&sorted);
                    return Err(io_error(&sorted)(e));
                }
            }
            std::fs::rename(&sorted, &self.target).map_err(io_error(&self.target))?;
        }
        let bytes = std::fs::metadata(&self.target)
            .map_err(io_error(&self.target))?
            .len();
        tracing::info!(file = %self.target.display(), bytes, "zip written");
        Ok(bytes)
    }
}

impl Drop for ZipSink {
    fn drop(&mut self) {
        // An archive that was not finished is removed; a finished one was renamed already.
        let _ = std::fs::remove_file(&self.temp);
    }
}

#[cfg(test)]
mod tests {
    use std::io::Read;

    use super::*;

    #[test]
    fn members_are_compressed_in_parallel_and_merged_under_their_prefix() {
        let dir = tempfile::tempdir().expect("tempdir");
        let target = dir.path().join("qa.zip");
        let sink = ZipSink::create(&target, "qa/").expect("create");
        let members: Vec<_> = (0..3)
            .map(|i| {
                let relative = PathBuf::from(format!("p10/p10000032/s5{i}.qa.json"));
                sink.member(&relative, format!("{{\"n\":{i}}}\n").as_bytes())
                    .expect("member")
            })
            .collect();
        sink.merge(members).expect("merge");
        assert!(!target.exists(), "only finish makes the archive visible");
        sink.finish().expect("finish");
        let mut archive = zip::ZipArchive::new(File::open(&target).expect("open")).expect("zip");
        let names: Vec<_> = archive.file_names().map(str::to_string).collect();
        assert_eq!(names.len(), 3);
        let mut text = String::new();
        archive
            .by_name("qa/p10/p10000032/s51.qa.json")
            .expect("member")
            .read_to_string(&mut text)
            .expect("read");
        assert_eq!(text, "{\"n\":1}\n");
        let leftovers: Vec<_> = std::fs::read_dir(dir.path())
            .expect("dir")
            .map(|e| e.expect("entry").file_name())
            .collect();
        assert_eq!(leftovers, ["qa.zip"]);
    }
}
