//! Scratch tables: rows a stage computes for its later statements, kept as Parquet files under
//! the lake's root so that a cluster's executors read them like any lake file, instead of
//! receiving them inside every plan (a plan over 16 MiB is refused by Ballista's gRPC).
//!
//! ```text
//! <root>/_cxrlake/scratch/<stage>/<chunk>/<name>-<uuid>.parquet
//! ```
//!
//! Stages write under the lake's write lease, so no other writer uses a stage's folder; a run
//! killed mid-stage leaves its files, which the stage's next run removes before it starts.

use std::sync::Arc;

use datafusion::arrow::datatypes::SchemaRef;
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::catalog::TableProvider;
use datafusion::datasource::file_format::parquet::ParquetFormat;
use datafusion::datasource::listing::{
    ListingOptions, ListingTable, ListingTableConfig, ListingTableUrl,
};
use datafusion::execution::runtime_env::RuntimeEnv;
use datafusion::parquet::arrow::ArrowWriter;
use futures::{StreamExt, TryStreamExt};
use object_store::path::Path;
use object_store::{ObjectStoreExt, PutPayload};

use crate::error::Result;
use crate::lake::Lake;

const SCRATCH_DIR: &str = "scratch";

impl Lake {
    fn scratch_path(&self, folder: &str) -> Path {
        folder
            .split('/')
            .filter(|part| !part.is_empty())
            .fold(self.meta_path(SCRATCH_DIR), |path, part| path.join(part))
    }

    /// Writes `batches` as the scratch table `<folder>/<name>` and returns a provider over it
    /// for sessions on `runtime` (the lake's object store is registered there, so that a local
    /// plan of it reads too).
    pub async fn put_scratch(
        &self,
        folder: &str,
        name: &str,
        schema: SchemaRef,
        batches: &[RecordBatch],
        runtime: &RuntimeEnv,
    ) -> Result<Arc<dyn TableProvider>> {
        // A new name each time: a table shadowed by one of its name is never overwritten in place
        // (processes that read it may cache what a file of that path holds).
        let file = format!("{name}-{}.parquet", uuid::Uuid::new_v4().simple());
        let path = self.scratch_path(folder).join(file);
        let mut bytes = Vec::new();
        let mut writer = ArrowWriter::try_new(&mut bytes, Arc::clone(&schema), None)?;
        for batch in batches {
            writer.write(batch)?;
        }
        writer.close()?;
        self.store().put(&path, PutPayload::from(bytes)).await?;

        let mut url = self.root().clone();
        url.set_path(&format!("/{path}"));
        self.listing_table(url.as_str(), schema, runtime)
    }

    /// A provider over the Parquet file or folder of the lake at `url`, for sessions on
    /// `runtime` (the lake's object store is registered there, so that a local plan of it reads
    /// too; on a cluster it travels as a listing table).
    pub(crate) fn listing_table(
        &self,
        url: &str,
        schema: SchemaRef,
        runtime: &RuntimeEnv,
    ) -> Result<Arc<dyn TableProvider>> {
        let mut store_url = self.root().clone();
        store_url.set_path("/");
        runtime.register_object_store(&store_url, Arc::clone(self.store()));
        let table_url = ListingTableUrl::parse(url)?;
        let options =
            ListingOptions::new(Arc::new(ParquetFormat::default())).with_file_extension(".parquet");
        let config = ListingTableConfig::new(table_url)
            .with_listing_options(options)
            .with_schema(schema);
        Ok(Arc::new(ListingTable::try_new(config)?))
    }

    /// Removes the scratch tables under `folder` (all of a stage's, or one chunk's).
    pub async fn clear_scratch(&self, folder: &str) -> Result<()> {
        let prefix = self.scratch_path(folder);
        let deleted = self.delete_under(&prefix).await?;
        tracing::debug!(folder, files = deleted, "scratch removed");
        Ok(())
    }

    /// Deletes every object under `prefix`; how many.
    pub(crate) async fn delete_under(&self, prefix: &Path) -> Result<usize> {
        let listed = self.store().list(Some(prefix)).map_ok(|meta| meta.location);
        let deleted: Vec<Path> = self
            .store()
            .delete_stream(listed.boxed())
            .try_collect()
            .await?;
        Ok(deleted.len())
    }
}
