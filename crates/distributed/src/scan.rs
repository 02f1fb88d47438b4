//! Delta scans of lake tables on Ballista.
//!
//! The client sends each lake table as deltalake's serialized `DeltaScan` (its snapshot: the
//! table root, version and active files; no credentials). The scheduler decodes it as a
//! [`LakeTable`], whose plans are [`LakeScanExec`]s: deltalake's own scan plan (`DeltaScanExec`,
//! with deletion vectors, column mapping and partition values) wrapped with what planned it.
//! deltalake has no codec for `DeltaScanExec`, so an executor receives the table, projection,
//! filters and limit and plans the same scan again from the same snapshot, then checks that
//! each partition reads the files the scheduler planned for it.

use std::fmt;
use std::sync::Arc;

use async_trait::async_trait;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::catalog::Session;
use datafusion::common::tree_node::{TreeNode, TreeNodeRecursion};
use datafusion::common::{Constraints, Result, Statistics, internal_datafusion_err};
use datafusion::datasource::TableProvider;
use datafusion::datasource::TableType;
use datafusion::datasource::physical_plan::FileScanConfig;
use datafusion::datasource::source::DataSourceExec;
use datafusion::execution::{SessionStateBuilder, TaskContext};
use datafusion::logical_expr::{Expr, TableProviderFilterPushDown};
use datafusion::physical_expr::{EquivalenceProperties, Partitioning, PhysicalExpr};
use datafusion::physical_plan::execution_plan::{Boundedness, EmissionType};
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::{
    DisplayAs, DisplayFormatType, ExecutionPlan, PlanProperties, ReplaceChildrenOptions,
    SendableRecordBatchStream,
};
use deltalake::delta_datafusion::DeltaScanNext;
use futures::{StreamExt, TryStreamExt};
use tokio::sync::OnceCell;

/// A lake table as the scheduler sees it: deltalake's scan of one table snapshot, kept with
/// its serialized form so that every plan of it can be sent to executors as it came.
#[derive(Debug)]
pub struct LakeTable {
    scan: Arc<DeltaScanNext>,
    encoded: Arc<[u8]>,
}

impl LakeTable {
    /// The table from deltalake's serialized `DeltaScan` (JSON).
    pub fn decode(encoded: &[u8]) -> Result<Self> {
        let scan: DeltaScanNext = serde_json::from_slice(encoded)
            .map_err(|e| internal_datafusion_err!("cannot decode a lake table's scan: {e}"))?;
        Ok(Self {
            scan: Arc::new(scan),
            encoded: encoded.into(),
        })
    }

    /// deltalake's serialized `DeltaScan` of the table.
    pub fn encoded(&self) -> &[u8] {
        &self.encoded
    }
}

#[async_trait]
impl TableProvider for LakeTable {
    fn schema(&self) -> SchemaRef {
        self.scan.schema()
    }

    fn constraints(&self) -> Option<&Constraints> {
        self.scan.constraints()
    }

    fn table_type(&self) -> TableType {
        TableType::Base
    }

    fn supports_filters_pushdown(
        &self,
        filters: &[&Expr],
    ) -> Result<Vec<TableProviderFilterPushDown>> {
        self.scan.supports_filters_pushdown(filters)
    }

    fn statistics(&self) -> Option<Statistics> {
        self.scan.statistics()
    }

    async fn scan(
        &self,
        state: &dyn Session,
        projection: Option<&Vec<usize>>,
        filters: &[Expr],
        limit: Option<usize>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let plan = self.scan.scan(state, projection, filters, limit).await?;
        Ok(Arc::new(LakeScanExec::planned(
            ScanRequest {
                table: Arc::clone(&self.encoded),
                projection: projection.cloned(),
                filters: filters.to_vec(),
                limit,
            },
            plan,
        )))
    }
}

/// What planned a lake table's scan: enough to plan it again on another machine.
#[derive(Debug, Clone)]
pub(crate) struct ScanRequest {
    /// deltalake's serialized `DeltaScan`.
    pub(crate) table: Arc<[u8]>,
    pub(crate) projection: Option<Vec<usize>>,
    pub(crate) filters: Vec<Expr>,
    pub(crate) limit: Option<usize>,
}

impl ScanRequest {
    /// Plans the scan from the serialized table, in a session made of the task's config and
    /// runtime (object stores).
    async fn plan(&self, context: &TaskContext) -> Result<Arc<dyn ExecutionPlan>> {
        let table = LakeTable::decode(&self.table)?;
        let session = SessionStateBuilder::new()
            .with_config(context.session_config().clone())
            .with_runtime_env(context.runtime_env())
            .with_default_features()
            .build();
        table
            .scan
            .scan(
                &session,
                self.projection.as_ref(),
                &self.filters,
                self.limit,
            )
            .await
    }
}

/// A Delta scan of a lake table with what planned it: on the scheduler it runs the scan it
/// wraps; decoded on an executor, it plans that scan again on first use.
pub struct LakeScanExec {
    request: ScanRequest,
    /// The data files each output partition reads, as the scheduler planned them.
    files: Vec<Vec<String>>,
    properties: Arc<PlanProperties>,
    scan: Arc<OnceCell<Arc<dyn ExecutionPlan>>>,
}

impl fmt::Debug for LakeScanExec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LakeScanExec")
            .field("projection", &self.request.projection)
            .field("filters", &self.request.filters)
            .field("limit", &self.request.limit)
            .field("files", &self.files)
            .finish()
    }
}

impl LakeScanExec {
    /// The scan `plan` that `request` planned.
    fn planned(request: ScanRequest, plan: Arc<dyn ExecutionPlan>) -> Self {
        Self {
            request,
            files: file_groups(&plan),
            properties: Arc::clone(plan.properties()),
            scan: Arc::new(OnceCell::new_with(Some(plan))),
        }
    }

    /// The scan as an executor receives it: planned again when a partition first runs.
    pub(crate) fn received(
        request: ScanRequest,
        files: Vec<Vec<String>>,
        schema: SchemaRef,
        partitions: usize,
    ) -> Self {
        let properties = PlanProperties::new(
            EquivalenceProperties::new(schema),
            Partitioning::UnknownPartitioning(partitions),
            EmissionType::Incremental,
            Boundedness::Bounded,
        );
        Self {
            request,
            files,
            properties: Arc::new(properties),
            scan: Arc::new(OnceCell::new()),
        }
    }

    /// What planned the scan.
    pub(crate) fn request(&self) -> &ScanRequest {
        &self.request
    }

    /// The data files each output partition reads.
    pub(crate) fn files(&self) -> &[Vec<String>] {
        &self.files
    }
}

/// The data files of every file group (one per partition) of the file scans in `plan`.
fn file_groups(plan: &Arc<dyn ExecutionPlan>) -> Vec<Vec<String>> {
    let mut groups = Vec::new();
    // The closure never fails.
    let _ = plan.apply(|node| {
        let config = node
            .downcast_ref::<DataSourceExec>()
            .and_then(|source| source.data_source().downcast_ref::<FileScanConfig>());
        if let Some(config) = config {
            groups.extend(config.file_groups.iter().map(|group| {
                group
                    .iter()
                    .map(|file| file.object_meta.location.to_string())
                    .collect()
            }));
        }
        Ok(TreeNodeRecursion::Continue)
    });
    groups
}

impl DisplayAs for LakeScanExec {
    fn fmt_as(&self, t: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        let files: usize = self.files.iter().map(Vec::len).sum();
        match t {
            DisplayFormatType::Default | DisplayFormatType::Verbose => write!(
                f,
                "LakeScanExec: files={files}, projection={:?}, filters={}, limit={:?}",
                self.request.projection,
                self.request.filters.len(),
                self.request.limit
            ),
            DisplayFormatType::TreeRender => write!(f, "files={files}"),
        }
    }
}

impl ExecutionPlan for LakeScanExec {
    fn name(&self) -> &'static str {
        "LakeScanExec"
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        &self.properties
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        Vec::new()
    }

    fn apply_expressions(
        &self,
        _f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> Result<TreeNodeRecursion>,
    ) -> Result<TreeNodeRecursion> {
        Ok(TreeNodeRecursion::Continue)
    }

    fn replace_children(
        self: Arc<Self>,
        children: Vec<Arc<dyn ExecutionPlan>>,
        _options: ReplaceChildrenOptions,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        if children.is_empty() {
            Ok(self)
        } else {
            Err(internal_datafusion_err!("LakeScanExec has no children"))
        }
    }

    fn with_new_children(
        self: Arc<Self>,
        children: Vec<Arc<dyn ExecutionPlan>>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        self.replace_children(
            children,
            ReplaceChildrenOptions::new(
                datafusion::physical_plan::ChildrenPropertiesMode::Recompute,
            ),
        )
    }

    fn execute(
        &self,
        partition: usize,
        context: Arc<TaskContext>,
    ) -> Result<SendableRecordBatchStream> {
        if let Some(scan) = self.scan.get() {
            return scan.execute(partition, context);
        }
        let (cell, request, files) = (
            Arc::clone(&self.scan),
            self.request.clone(),
            self.files.clone(),
        );
        let partitions = self.properties.partitioning.partition_count();
        let stream = futures::stream::once(async move {
            let scan = cell
                .get_or_try_init(|| async {
                    let scan = request.plan(&context).await?;
                    let planned = scan.properties().partitioning.partition_count();
                    if planned != partitions || file_groups(&scan) != files {
                        return Err(internal_datafusion_err!(
                            "an executor planned a lake table's scan differently from the \
                             scheduler ({planned} partitions, {partitions} expected, or other \
                             files per partition)"
                        ));
                    }
                    Ok(scan)
                })
                .await?;
            scan.execute(partition, context)
        })
        .try_flatten();
        Ok(Box::pin(RecordBatchStreamAdapter::new(
            self.schema(),
            stream.boxed(),
        )))
    }
}
