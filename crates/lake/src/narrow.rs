//! A table read with some fields of a nested column left out, so the Parquet reader decodes only
//! the leaves of the fields kept ([`crate::Lake::narrow`]).
//!
//! ```text
//! table version ── data files, their deletion vectors ──► per file: row groups to read whole,
//!                                                        row selections where rows are deleted
//!   ParquetSource (table schema: the narrowed one) ── DataFusion's adapter casts each file's
//!                                                     column to the narrowed type; the reader
//!                                                     reads only the leaves the cast keeps
//! ```
//!
//! delta-rs's own provider casts to a given read schema only after reading every leaf of the
//! file's columns, so a query over a few fields of `qa.answers` decoded all forty of them (the
//! boxes, four lists deep, are a quarter of the column's bytes).

use std::sync::Arc;

use async_trait::async_trait;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::catalog::Session;
use datafusion::datasource::listing::PartitionedFile;
use datafusion::datasource::object_store::ObjectStoreUrl;
use datafusion::datasource::physical_plan::parquet::{ParquetAccessPlan, RowGroupAccess};
use datafusion::datasource::physical_plan::{FileGroup, FileScanConfigBuilder, ParquetSource};
use datafusion::datasource::source::DataSourceExec;
use datafusion::datasource::{TableProvider, TableType};
use datafusion::error::Result as DfResult;
use datafusion::execution::runtime_env::RuntimeEnv;
use datafusion::logical_expr::Expr;
use datafusion::parquet::arrow::arrow_reader::RowSelection;
use datafusion::physical_plan::ExecutionPlan;
use datafusion::physical_plan::empty::EmptyExec;
use deltalake::DeltaTable;
use futures::{StreamExt, TryStreamExt};
use roaring::RoaringTreemap;

use crate::deletion;
use crate::error::{LakeError, Result};
use crate::read::footer;

/// One data file of the table version, with the access plan its deletion vector gives.
#[derive(Debug, Clone)]
struct DataFile {
    path: String,
    size: u64,
    /// `None`: every row is read.
    plan: Option<ParquetAccessPlan>,
}

/// The files of one table version read through a narrowed schema.
#[derive(Debug)]
pub(crate) struct NarrowScan {
    schema: SchemaRef,
    store: ObjectStoreUrl,
    files: Vec<DataFile>,
}

impl NarrowScan {
    /// The data files of `table`'s loaded version (`name` names it in errors), read as
    /// `schema` (the table's schema, some nested fields left out); `runtime` gets the store
    /// rooted at the table, the files' paths being relative to it.
    pub(crate) async fn new(
        table: &DeltaTable,
        name: &str,
        schema: SchemaRef,
        runtime: &RuntimeEnv,
    ) -> Result<Self> {
        let url = table.log_store().object_store_url();
        if runtime.object_store(&url).is_err() {
            runtime.register_object_store(url.as_ref(), table.log_store().object_store(None));
        }
        let snapshot = table.snapshot().map_err(|e| LakeError::delta(name, e))?;
        let store = table.object_store();
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
        let files: Vec<DataFile> = futures::stream::iter(snapshot.log_data().iter().map(|file| {
            #[allow(deprecated)]
            let add = file.add_action();
            (file.object_store_path(), file.size().max(0) as u64, add)
        }))
        .map(|(path, size, add)| {
            let store = store.clone();
            async move {
                let plan = match &add.deletion_vector {
                    None => None,
                    Some(dv) => {
                        let deleted = deletion::read(&store, name, dv).await?;
                        let metadata = footer(&store, &path, size).await?;
                        let rows: Vec<u64> = metadata
                            .row_groups()
                            .iter()
                            .map(|group| group.num_rows().max(0) as u64)
                            .collect();
                        Some(access_plan(&rows, &deleted))
                    }
                };
                Ok::<_, LakeError>(DataFile {
                    path: path.to_string(),
                    size,
                    plan,
                })
            }
        })
        .buffered(2 * threads)
        .try_collect()
        .await?;
        Ok(Self {
            schema,
            store: url,
            files,
        })
    }
}

/// Per row group of `rows` rows each: read whole, skipped when all its rows are deleted, or read
/// with a selection that skips the deleted ones.
fn access_plan(rows: &[u64], deleted: &RoaringTreemap) -> ParquetAccessPlan {
    let mut first = 0;
    let groups = rows
        .iter()
        .map(|&n| {
            let range = first..first + n;
            first += n;
            match deleted.range_cardinality(range.clone()) {
                0 => RowGroupAccess::Scan,
                gone if gone == n => RowGroupAccess::Skip,
                _ => {
                    let keep: Vec<bool> = range.map(|row| !deleted.contains(row)).collect();
                    RowGroupAccess::Selection(RowSelection::from_filters(&[keep.into()]))
                }
            }
        })
        .collect();
    ParquetAccessPlan::new(groups)
}

#[async_trait]
impl TableProvider for NarrowScan {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }

    fn table_type(&self) -> TableType {
        TableType::Base
    }

    async fn scan(
        &self,
        state: &dyn Session,
        projection: Option<&Vec<usize>>,
        _filters: &[Expr],
        limit: Option<usize>,
    ) -> DfResult<Arc<dyn ExecutionPlan>> {
        let projected = match projection {
            Some(indices) => Arc::new(self.schema.project(indices)?),
            None => self.schema.clone(),
        };
        if self.files.is_empty() {
            return Ok(Arc::new(EmptyExec::new(projected)));
        }
        // Whole files, balanced by size over the session's partitions (a file's row selection
        // covers the whole file, so files are not split into byte ranges).
        let partitions = state.config().target_partitions().max(1);
        let mut groups: Vec<(u64, Vec<PartitionedFile>)> = vec![(0, Vec::new()); partitions];
        let mut files = self.files.clone();
        files.sort_by_key(|file| std::cmp::Reverse(file.size));
        for file in files {
            let mut part = PartitionedFile::new(file.path, file.size);
            if let Some(plan) = file.plan {
                part = part.with_extension(plan);
            }
            let lightest = groups
                .iter_mut()
                .min_by_key(|(bytes, _)| *bytes)
                .expect("at least one partition");
            lightest.0 += file.size;
            lightest.1.push(part);
        }
        let groups: Vec<FileGroup> = groups
            .into_iter()
            .filter(|(_, files)| !files.is_empty())
            .map(|(_, files)| FileGroup::new(files))
            .collect();
        let source = ParquetSource::new(self.schema.clone());
        let config = FileScanConfigBuilder::new(self.store.clone(), Arc::new(source))
            .with_file_groups(groups)
            .with_limit(limit)
            .with_projection_indices(projection.cloned())?
            .build();
        Ok(DataSourceExec::from_data_source(config))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deleted_rows_become_skipped_groups_and_selections() {
        let deleted: RoaringTreemap = [3u64, 4, 5, 6, 12].into_iter().collect();
        // Groups of rows 0-2, 3-6, 7-11, 12-15.
        let plan = access_plan(&[3, 4, 5, 4], &deleted);
        assert!(plan.should_scan(0));
        assert!(!plan.should_scan(1), "all four rows deleted");
        assert!(plan.should_scan(2));
        let groups = plan.inner();
        assert!(matches!(groups[0], RowGroupAccess::Scan));
        assert!(matches!(groups[2], RowGroupAccess::Scan));
        let RowGroupAccess::Selection(selection) = &groups[3] else {
            panic!("row 12 of 12-15 deleted: {:?}", groups[3]);
        };
        assert_eq!(selection.row_count(), 3);
        assert_eq!(selection.skipped_row_count(), 1);
    }
}
