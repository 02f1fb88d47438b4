//! Lake root URLs and their object stores: folders, file://, memory://, s3://, gs://, az://.
//!
//! delta-rs only knows `file://` and `memory://` out of the box; for the cloud schemes we register
//! object_store's own clients (no cloud SDKs) and delta-rs's default log store, which commits with
//! put-if-absent.

use std::collections::HashMap;
use std::sync::{Arc, Once};

use datafusion::common::Result as DfResult;
use datafusion::error::DataFusionError;
use datafusion::execution::object_store::{DefaultObjectStoreRegistry, ObjectStoreRegistry};
use deltalake::logstore::{
    LogStore, LogStoreFactory, ObjectStoreFactory, ObjectStoreRef, StorageConfig, default_logstore,
    logstore_factories, object_store_factories,
};
use deltalake::{DeltaResult, Path};
use object_store::ObjectStore;
use object_store::memory::InMemory;
use url::Url;

use crate::error::{LakeError, Result};

/// Schemes served through object_store's cloud clients.
const CLOUD_SCHEMES: [&str; 6] = ["s3", "s3a", "gs", "az", "abfs", "abfss"];

/// Parses a lake root given as a URL or a local folder path; the result ends with `/`.
pub fn parse_root(root: &str) -> Result<Url> {
    let invalid = |reason: String| LakeError::InvalidUrl {
        url: root.to_string(),
        reason,
    };
    let trimmed = root.trim();
    if trimmed.is_empty() {
        return Err(invalid("it is empty".into()));
    }
    let mut url = match Url::parse(trimmed) {
        Ok(url) if url.scheme().len() > 1 => url,
        _ => {
            let path = std::path::absolute(trimmed).map_err(|e| invalid(e.to_string()))?;
            Url::from_directory_path(&path)
                .map_err(|()| invalid("not an absolute folder path".into()))?
        }
    };
    match url.scheme() {
        "file" | "memory" => {}
        scheme if CLOUD_SCHEMES.contains(&scheme) => {
            if url.host_str().is_none_or(str::is_empty) {
                return Err(invalid(format!("{scheme}:// needs a bucket or container")));
            }
        }
        scheme => return Err(invalid(format!("scheme '{scheme}' is not supported"))),
    }
    if !url.path().ends_with('/') {
        let path = format!("{}/", url.path());
        url.set_path(&path);
    }
    Ok(url)
}

/// The root object store of a lake URL ("/" = the root of the bucket or file system) and the
/// lake's path inside it.
pub fn root_store(root: &Url, options: &HashMap<String, String>) -> Result<(ObjectStoreRef, Path)> {
    register_cloud_schemes();
    let path = Path::from_url_path(root.path()).map_err(|e| LakeError::InvalidUrl {
        url: root.to_string(),
        reason: e.to_string(),
    })?;
    if root.scheme() == "memory" {
        return Ok((Arc::new(InMemory::new()), path));
    }
    let (store, path) = object_store::parse_url_opts(root, options)?;
    Ok((Arc::from(store), path))
}

/// An object-store registry for processes that read a lake they did not open (Ballista's
/// scheduler and executors): a store not registered yet is made from its URL with `options`
/// (the process's `[storage]` options, e.g. its `AWS_*` variables) the first time it is asked for.
#[derive(Debug)]
pub struct StoreRegistry {
    known: DefaultObjectStoreRegistry,
    options: HashMap<String, String>,
}

impl StoreRegistry {
    /// A registry making stores with the object-store `options`.
    pub fn new(options: HashMap<String, String>) -> Self {
        register_cloud_schemes();
        Self {
            known: DefaultObjectStoreRegistry::new(),
            options,
        }
    }
}

impl ObjectStoreRegistry for StoreRegistry {
    fn register_store(
        &self,
        url: &Url,
        store: Arc<dyn ObjectStore>,
    ) -> Option<Arc<dyn ObjectStore>> {
        self.known.register_store(url, store)
    }

    fn deregister_store(&self, url: &Url) -> DfResult<Arc<dyn ObjectStore>> {
        self.known.deregister_store(url)
    }

    fn get_store(&self, url: &Url) -> DfResult<Arc<dyn ObjectStore>> {
        if let Ok(store) = self.known.get_store(url) {
            return Ok(store);
        }
        if !CLOUD_SCHEMES.contains(&url.scheme()) {
            return self.known.get_store(url);
        }
        let root = Url::parse(&format!("{}://{}", url.scheme(), url.authority()))
            .map_err(|e| DataFusionError::External(Box::new(e)))?;
        let (store, _) = object_store::parse_url_opts(&root, &self.options)?;
        let store: Arc<dyn ObjectStore> = Arc::from(store);
        self.known.register_store(&root, Arc::clone(&store));
        Ok(store)
    }
}

#[derive(Debug, Default)]
struct CloudFactory;

impl ObjectStoreFactory for CloudFactory {
    fn parse_url_opts(
        &self,
        url: &Url,
        config: &StorageConfig,
    ) -> DeltaResult<(ObjectStoreRef, Path)> {
        let (store, path) = object_store::parse_url_opts(url, &config.raw)?;
        Ok((Arc::from(store), path))
    }
}

impl LogStoreFactory for CloudFactory {
    fn with_options(
        &self,
        prefixed_store: ObjectStoreRef,
        root_store: ObjectStoreRef,
        location: &Url,
        options: &StorageConfig,
    ) -> DeltaResult<Arc<dyn LogStore>> {
        Ok(default_logstore(
            prefixed_store,
            root_store,
            location,
            options,
        ))
    }
}

fn register_cloud_schemes() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let factory = Arc::new(CloudFactory);
        for scheme in CLOUD_SCHEMES {
            if let Ok(url) = Url::parse(&format!("{scheme}://")) {
                object_store_factories().insert(url.clone(), factory.clone());
                logstore_factories().insert(url, factory.clone());
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_paths_and_urls() -> Result<()> {
        assert_eq!(parse_root("memory://")?.as_str(), "memory:///");
        assert_eq!(
            parse_root("s3://bucket/lake")?.as_str(),
            "s3://bucket/lake/"
        );
        assert_eq!(parse_root("/tmp/x")?.as_str(), "file:///tmp/x/");
        assert!(parse_root("./lake")?.as_str().ends_with("/lake/"));
        Ok(())
    }

    #[test]
    fn rejects_unknown_schemes_and_missing_buckets() {
        let err = parse_root("ftp://host/x").expect_err("ftp").to_string();
        assert!(err.contains("scheme 'ftp' is not supported"), "{err}");
        assert!(parse_root("s3:///nobucket").is_err());
        assert!(parse_root("  ").is_err());
    }

    #[test]
    fn cloud_stores_build_without_network() -> Result<()> {
        let options = HashMap::from([
            ("aws_region".to_string(), "us-east-1".to_string()),
            ("aws_endpoint".to_string(), "http://127.0.0.1:9".to_string()),
        ]);
        let (_store, path) = root_store(&parse_root("s3://bucket/lake")?, &options)?;
        assert_eq!(path.as_ref(), "lake");
        Ok(())
    }
}
