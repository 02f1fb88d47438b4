//! Folders on object stores: what an export writes to `s3://…` and what `ingest` or `import`
//! reads from there. Exports and inputs work on local files (zips read in place, members written
//! in parallel, files renamed into place), so an object-store target or source is staged in a
//! local folder (under `TMPDIR`) and copied file by file, in parallel, big files in multipart
//! parts; the storage options are the lake's `[storage]` ones (or `AWS_*`, `GOOGLE_*`, `AZURE_*`).
//!
//! ```text
//! export … --out s3://bucket/rel ── stage in TMPDIR/cxrlake-out-… ── upload ──► s3://bucket/rel/…
//! ingest s3://bucket/corpus ◄── download into TMPDIR/cxrlake-in-… ── list s3://bucket/corpus/
//! ```
//!
//! A failed copy leaves the objects copied so far; running the command again writes them all
//! again (the same keys, the same bytes).

use std::collections::HashMap;
use std::path::{Path as LocalPath, PathBuf};

use futures::{StreamExt, TryStreamExt};
use object_store::buffered::BufWriter;
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt};
use tokio::io::AsyncWriteExt;
use url::Url;

use crate::error::{LakeError, Result};
use crate::store::{parse_root, root_store};

/// How many files are copied at once.
const PARALLEL_COPIES: usize = 8;

/// Whether `text` names an object-store location (`scheme://…`, not a local path).
pub fn is_url(text: &str) -> bool {
    match text.split_once("://") {
        Some((scheme, _)) => {
            scheme.len() > 1
                && scheme
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '+')
        }
        None => false,
    }
}

/// What a copy moved.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Copied {
    /// Files copied.
    pub files: usize,
    /// Their bytes.
    pub bytes: u64,
}

impl std::fmt::Display for Copied {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} files ({:.1} MB)",
            self.files,
            self.bytes as f64 / 1e6
        )
    }
}

/// A folder on an object store: its URL, store and key prefix.
#[derive(Debug)]
pub struct RemoteFolder {
    url: Url,
    store: std::sync::Arc<dyn ObjectStore>,
    prefix: Path,
}

impl RemoteFolder {
    /// The folder at `url` (`s3://bucket/prefix`, …) with the object-store `options`.
    pub fn open(url: &str, options: &HashMap<String, String>) -> Result<Self> {
        let url = parse_root(url)?;
        let (store, prefix) = root_store(&url, options)?;
        Ok(Self { url, store, prefix })
    }

    /// The folder's URL (ends with `/`).
    pub fn url(&self) -> &Url {
        &self.url
    }

    /// Fails with a clear error when the bucket does not exist, the credentials are refused or
    /// the endpoint cannot be reached (one listing of at most a page of keys).
    pub async fn check(&self) -> Result<()> {
        let mut listing = self.store.list(Some(&self.prefix));
        match listing.next().await {
            Some(Err(err)) => Err(storage_error(&self.url, err)),
            _ => Ok(()),
        }
    }

    /// Copies every file under the local folder `local` to this folder, keeping relative paths.
    pub async fn upload(&self, local: &LocalPath) -> Result<Copied> {
        self.check().await?;
        let files = local_files(local)?;
        copy_each(files, |(relative, size)| async move {
            let source = local.join(&relative);
            self.upload_file(&source, &self.key(&relative)).await?;
            Ok(size)
        })
        .await
    }

    /// Copies every object under this folder into the local folder `local`, keeping relative
    /// paths, and returns the local path that stands for the URL: `local` itself, or the file
    /// `local/<name>` when the URL names one object (`s3://bucket/corpus.zip`). Fails when there
    /// is nothing at the URL (a mistyped prefix).
    pub async fn download(&self, local: &LocalPath) -> Result<(PathBuf, Copied)> {
        // The listing fails as `check` would, with the same messages.
        let mut objects: Vec<_> = self
            .store
            .list(Some(&self.prefix))
            .try_collect()
            .await
            .map_err(|e| storage_error(&self.url, e))?;
        let mut root = local.to_path_buf();
        let mut base = self.prefix.clone();
        if objects.is_empty() {
            match self.store.head(&self.prefix).await {
                Ok(meta) => {
                    let name = self.prefix.filename().unwrap_or("object").to_string();
                    root = local.join(&name);
                    base = self
                        .prefix
                        .parts()
                        .take(self.prefix.parts().count() - 1)
                        .collect();
                    objects.push(meta);
                }
                Err(object_store::Error::NotFound { .. }) => {
                    return Err(LakeError::Storage {
                        url: self.url.to_string(),
                        problem: "there is nothing at this location".into(),
                        hint: "check the bucket and the prefix".into(),
                    });
                }
                Err(err) => return Err(storage_error(&self.url, err)),
            }
        }
        let base = &base;
        let copied = copy_each(objects, |meta| async move {
            let relative: Vec<String> = meta
                .location
                .prefix_match(base)
                .map(|parts| parts.map(|p| p.as_ref().to_string()).collect())
                .unwrap_or_default();
            let target = relative.iter().fold(local.to_path_buf(), |p, c| p.join(c));
            self.download_file(&meta.location, &target).await?;
            Ok(meta.size)
        })
        .await?;
        Ok((root, copied))
    }

    /// The key of the local relative path `relative` under this folder.
    fn key(&self, relative: &LocalPath) -> Path {
        relative
            .components()
            .fold(self.prefix.clone(), |key, part| {
                key.join(part.as_os_str().to_string_lossy().as_ref())
            })
    }

    async fn upload_file(&self, source: &LocalPath, target: &Path) -> Result<()> {
        let io = |e: std::io::Error| LakeError::Storage {
            url: format!("{}{}", self.url, target),
            problem: format!("copying {} failed: {e}", source.display()),
            hint: "run the command again".into(),
        };
        let mut file = tokio::fs::File::open(source).await.map_err(io)?;
        let mut writer = BufWriter::new(self.store.clone(), target.clone());
        tokio::io::copy(&mut file, &mut writer).await.map_err(io)?;
        writer.shutdown().await.map_err(io)?;
        Ok(())
    }

    async fn download_file(&self, source: &Path, target: &LocalPath) -> Result<()> {
        let io = |e: std::io::Error| LakeError::Storage {
            url: format!("{}{}", self.url, source),
            problem: format!("copying to {} failed: {e}", target.display()),
            hint: "check the local disk (TMPDIR) and run the command again".into(),
        };
        if let Some(parent) = target.parent() {
            tokio::fs::create_dir_all(parent).await.map_err(io)?;
        }
        let mut stream = self
            .store
            .get(source)
            .await
            .map_err(|e| storage_error(&self.url, e))?
            .into_stream();
        let mut file = tokio::fs::File::create(target).await.map_err(io)?;
        while let Some(chunk) = stream.next().await {
            let chunk = chunk.map_err(|e| storage_error(&self.url, e))?;
            file.write_all(&chunk).await.map_err(io)?;
        }
        file.flush().await.map_err(io)?;
        Ok(())
    }
}

/// Runs `copy` on every item, [`PARALLEL_COPIES`] at a time, each returning the bytes it copied.
async fn copy_each<T, F, Fut>(items: Vec<T>, copy: F) -> Result<Copied>
where
    F: Fn(T) -> Fut,
    Fut: Future<Output = Result<u64>>,
{
    futures::stream::iter(items)
        .map(copy)
        .buffer_unordered(PARALLEL_COPIES)
        .try_fold(Copied::default(), |total, bytes| async move {
            Ok(Copied {
                files: total.files + 1,
                bytes: total.bytes + bytes,
            })
        })
        .await
}

/// Every file under `root` (recursively) as a relative path and its size, sorted.
fn local_files(root: &LocalPath) -> Result<Vec<(PathBuf, u64)>> {
    let io = |path: &LocalPath, e: std::io::Error| LakeError::Storage {
        url: path.display().to_string(),
        problem: format!("cannot read the staged folder: {e}"),
        hint: "check the local disk (TMPDIR)".into(),
    };
    let mut out = Vec::new();
    let mut pending = vec![root.to_path_buf()];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).map_err(|e| io(&dir, e))? {
            let entry = entry.map_err(|e| io(&dir, e))?;
            let path = entry.path();
            let kind = entry.file_type().map_err(|e| io(&path, e))?;
            if kind.is_dir() {
                pending.push(path);
            } else if kind.is_file() {
                let size = entry.metadata().map_err(|e| io(&path, e))?.len();
                if let Ok(relative) = path.strip_prefix(root) {
                    out.push((relative.to_path_buf(), size));
                }
            }
        }
    }
    out.sort();
    Ok(out)
}

/// An object-store error at `url` as the user can act on it: a missing bucket, refused
/// credentials and an unreachable endpoint are named as such.
pub fn storage_error(url: &Url, err: object_store::Error) -> LakeError {
    let text = err.to_string();
    let bucket = url.host_str().unwrap_or_default();
    let (problem, hint) = if text.contains("NoSuchBucket") {
        (
            format!("the bucket '{bucket}' does not exist"),
            "create it first, or check the URL and the endpoint (aws_endpoint in [storage] or \
             AWS_ENDPOINT)"
                .to_string(),
        )
    } else if [
        "InvalidAccessKeyId",
        "SignatureDoesNotMatch",
        "AccessDenied",
        "403 Forbidden",
    ]
    .iter()
    .any(|code| text.contains(code))
    {
        (
            "the object store refused the credentials".to_string(),
            "check aws_access_key_id and aws_secret_access_key in [storage] (or \
             AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY) and the bucket's permissions"
                .to_string(),
        )
    } else if text.contains("error sending request") || text.contains("Connection refused") {
        (
            "the object store cannot be reached".to_string(),
            "check the endpoint (aws_endpoint in [storage] or AWS_ENDPOINT; aws_allow_http for \
             http://) and the network"
                .to_string(),
        )
    } else {
        return LakeError::ObjectStore(err);
    };
    LakeError::Storage {
        url: url.to_string(),
        problem,
        hint: format!("{hint} ({text})"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_and_paths() {
        assert!(is_url("s3://bucket/x"));
        assert!(is_url("gs://bucket"));
        assert!(!is_url("/tmp/x"));
        assert!(!is_url("relative/dir"));
        assert!(!is_url("c:/x"));
    }

    #[tokio::test]
    async fn copies_a_folder_both_ways() -> Result<()> {
        let dir = tempfile::tempdir().map_err(|e| LakeError::Config(e.to_string()))?;
        let source = dir.path().join("source");
        std::fs::create_dir_all(source.join("a/b"))
            .map_err(|e| LakeError::Config(e.to_string()))?;
        std::fs::write(source.join("top.txt"), b"top")
            .map_err(|e| LakeError::Config(e.to_string()))?;
        std::fs::write(source.join("a/b/deep.bin"), vec![7u8; 3 << 20])
            .map_err(|e| LakeError::Config(e.to_string()))?;
        let remote = RemoteFolder::open("memory://bucket/out", &HashMap::new())?;
        let up = remote.upload(&source).await?;
        assert_eq!(up.files, 2);
        assert_eq!(up.bytes, 3 + (3 << 20));
        let back = dir.path().join("back");
        let (root, down) = remote.download(&back).await?;
        assert_eq!((root.as_path(), down), (back.as_path(), up));
        let empty = RemoteFolder::open("memory://bucket/out", &HashMap::new())?;
        let err = empty
            .download(&back)
            .await
            .expect_err("a new in-memory store is empty");
        assert!(
            err.to_string()
                .contains("there is nothing at this location"),
            "{err}"
        );
        // One object (file:// is served by the same code): the file itself comes back.
        let url = format!("file://{}", source.join("top.txt").display());
        let one = RemoteFolder::open(&url, &HashMap::new())?;
        let (file, copied) = one.download(&dir.path().join("one")).await?;
        assert_eq!(copied.files, 1);
        assert_eq!(file, dir.path().join("one/top.txt"));
        assert_eq!(
            std::fs::read(&file).map_err(|e| LakeError::Config(e.to_string()))?,
            b"top"
        );
        assert_eq!(
            std::fs::read(back.join("a/b/deep.bin"))
                .map_err(|e| LakeError::Config(e.to_string()))?,
            vec![7u8; 3 << 20]
        );
        Ok(())
    }
}
