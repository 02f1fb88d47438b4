//! The folders commands read and write, local or on an object store: `export … --out
//! s3://bucket/rel` and `report --out s3://…` write into a local staging folder (under `TMPDIR`)
//! that is copied to the store when the command succeeds; `ingest s3://bucket/corpus` and
//! `import release s3://bucket/release` copy the objects into one first (`cxrlake_lake::transfer`).
//! The bucket and the credentials are checked before any work.

use std::io::Write;
use std::path::{Path, PathBuf};

use cxrlake_lake::Lake;
use cxrlake_lake::transfer::{RemoteFolder, is_url};

use crate::error::{CliError, Result};
use crate::output::say;

/// A folder a command writes: local, or staged for an object store.
#[derive(Debug)]
pub(crate) enum Output {
    /// A local folder, written in place.
    Local(PathBuf),
    /// A local staging folder, copied to the remote folder by [`Output::finish`].
    Staged {
        /// The staging folder (removed when dropped).
        staged: tempfile::TempDir,
        /// Where it goes.
        remote: RemoteFolder,
    },
}

impl Output {
    /// The output `path` as given to `--out`; a URL is checked (bucket, credentials) now.
    pub(crate) async fn open(path: &Path, lake: &Lake) -> Result<Self> {
        let text = path.to_string_lossy();
        if !is_url(&text) {
            return Ok(Self::Local(path.to_path_buf()));
        }
        let remote = RemoteFolder::open(&text, &lake.settings().storage)?;
        remote.check().await?;
        let staged = staging("cxrlake-out-")?;
        Ok(Self::Staged { staged, remote })
    }

    /// The local folder the command writes.
    pub(crate) fn path(&self) -> PathBuf {
        match self {
            Self::Local(path) => path.clone(),
            Self::Staged { staged, .. } => staged.path().to_path_buf(),
        }
    }

    /// Copies a staged folder to its remote folder and says so; nothing for a local one.
    pub(crate) async fn finish(self, out: &mut dyn Write) -> Result<()> {
        if let Self::Staged { staged, remote } = self {
            let copied = remote.upload(staged.path()).await?;
            say(out, format_args!("copied {copied} to {}", remote.url()))?;
        }
        Ok(())
    }
}

/// An input a command reads: a local path, or objects copied into a staging folder.
#[derive(Debug)]
pub(crate) struct Input {
    path: PathBuf,
    /// The URL it was copied from.
    url: Option<String>,
    /// The staging folder of a remote input (removed when dropped).
    _staged: Option<tempfile::TempDir>,
}

impl Input {
    /// The input `path` as given; a URL's objects are copied now (and said so).
    pub(crate) async fn fetch(path: &Path, lake: &Lake, out: &mut dyn Write) -> Result<Self> {
        let text = path.to_string_lossy();
        if !is_url(&text) {
            return Ok(Self {
                path: path.to_path_buf(),
                url: None,
                _staged: None,
            });
        }
        let remote = RemoteFolder::open(&text, &lake.settings().storage)?;
        let staged = staging("cxrlake-in-")?;
        let (local, copied) = remote.download(staged.path()).await?;
        say(out, format_args!("copied {copied} from {}", remote.url()))?;
        Ok(Self {
            path: local,
            url: Some(text.into_owned()),
            _staged: Some(staged),
        })
    }

    /// The local path to read.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// The URL its objects came from, for a remote input.
    pub(crate) fn url(&self) -> Option<&str> {
        self.url.as_deref()
    }
}

/// A new staging folder under `TMPDIR`.
fn staging(prefix: &str) -> Result<tempfile::TempDir> {
    tempfile::Builder::new()
        .prefix(prefix)
        .tempdir()
        .map_err(|e| CliError::Output {
            path: std::env::temp_dir(),
            source: Box::new(e),
        })
}
