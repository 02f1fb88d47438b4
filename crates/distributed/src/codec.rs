//! The plan codecs of a cxrlake cluster: what Ballista's own codecs do, plus lake tables
//! ([`LakeTable`], [`LakeScanExec`]), in-memory tables (a stage's intermediate results),
//! cxrlake's zero-copy unnest ([`SliceUnnestExec`]) and cxrlake's functions.
//!
//! Every node a codec writes starts with one byte naming who encoded it (Ballista or cxrlake).
//! Functions go by name, as in DataFusion: the receiver looks the name up in its session (the
//! scheduler's and the executors' sessions carry cxrlake's functions) and, failing that, in
//! cxrlake's own function lists. A stage's own functions (which hold the run's definitions)
//! travel with their recipe (`cxrlake_udfs::portable`), and the receiver builds them from it.

use std::sync::Arc;

use ballista_core::serde::{BallistaLogicalExtensionCodec, BallistaPhysicalExtensionCodec};
use cxrlake_udfs::portable;
use cxrlake_udfs::unnest::SliceUnnestExec;
use datafusion::arrow::datatypes::{Schema, SchemaRef};
use datafusion::arrow::ipc::reader::StreamReader;
use datafusion::arrow::ipc::writer::StreamWriter;
use datafusion::catalog::TableProvider;
use datafusion::common::{Result, TableReference, internal_datafusion_err, plan_datafusion_err};
use datafusion::datasource::MemTable;
use datafusion::datasource::file_format::FileFormatFactory;
use datafusion::execution::TaskContext;
use datafusion::logical_expr::{AggregateUDF, Expr, Extension, LogicalPlan, ScalarUDF};
use datafusion::physical_plan::empty::EmptyExec;
use datafusion::physical_plan::unnest::UnnestExec;
use datafusion::physical_plan::{ChildrenPropertiesMode, ExecutionPlan, ReplaceChildrenOptions};
use datafusion_proto::bytes::{
    Serializeable, physical_plan_from_bytes_with_extension_codec,
    physical_plan_to_bytes_with_extension_codec,
};
use datafusion_proto::logical_plan::LogicalExtensionCodec;
use datafusion_proto::physical_plan::{PhysicalExtensionCodec, PhysicalProtoConverterExtension};
use deltalake::delta_datafusion::DeltaScanNext;
use prost::Message;

use crate::scan::{LakeScanExec, LakeTable, ScanRequest};

/// Encoded by Ballista's codec.
const BALLISTA: u8 = 0;
/// A lake table: deltalake's serialized `DeltaScan`.
const LAKE_TABLE: u8 = 1;
/// A [`LakeScanExec`]: a [`LakeScanNode`].
const LAKE_SCAN: u8 = 2;
/// A [`SliceUnnestExec`]: the `UnnestExec` it replaces, over an empty input.
const SLICE_UNNEST: u8 = 3;
/// A `MemTable` (a stage's intermediate results, the run's studies): a [`MemTableNode`].
const MEM_TABLE: u8 = 4;

/// A `MemTable` on the wire: its schema and each partition's batches as an Arrow IPC stream.
#[derive(Clone, PartialEq, Message)]
struct MemTableNode {
    #[prost(message, optional, tag = "1")]
    schema: Option<datafusion_proto::protobuf::Schema>,
    #[prost(bytes = "vec", repeated, tag = "2")]
    partitions: Vec<Vec<u8>>,
}

/// `table` as a [`MemTableNode`].
fn encode_mem_table(table: &MemTable, buf: &mut Vec<u8>) -> Result<()> {
    let schema = table.schema();
    let partitions = table
        .batches
        .iter()
        .map(|partition| {
            let batches = partition.try_read().map_err(|_| {
                internal_datafusion_err!("a MemTable is being written while it is sent")
            })?;
            let mut stream = Vec::new();
            let mut writer = StreamWriter::try_new(&mut stream, &schema)?;
            for batch in batches.iter() {
                writer.write(batch)?;
            }
            writer.finish()?;
            drop(writer);
            Ok(stream)
        })
        .collect::<Result<Vec<_>>>()?;
    let node = MemTableNode {
        schema: Some(
            datafusion_proto::protobuf::Schema::try_from(schema.as_ref())
                .map_err(|e| internal_datafusion_err!("cannot encode a MemTable's schema: {e}"))?,
        ),
        partitions,
    };
    buf.push(MEM_TABLE);
    node.encode(buf)
        .map_err(|e| internal_datafusion_err!("cannot encode a MemTable: {e}"))
}

/// The `MemTable` of a [`MemTableNode`].
fn decode_mem_table(buf: &[u8]) -> Result<MemTable> {
    let node = MemTableNode::decode(buf)
        .map_err(|e| internal_datafusion_err!("cannot decode a MemTable: {e}"))?;
    let schema = node
        .schema
        .as_ref()
        .ok_or_else(|| internal_datafusion_err!("a MemTable without a schema"))?;
    let schema = Arc::new(
        Schema::try_from(schema)
            .map_err(|e| internal_datafusion_err!("cannot decode a MemTable's schema: {e}"))?,
    );
    let partitions = node
        .partitions
        .iter()
        .map(|stream| {
            StreamReader::try_new(stream.as_slice(), None)?
                .collect::<std::result::Result<Vec<_>, _>>()
                .map_err(Into::into)
        })
        .collect::<Result<Vec<_>>>()?;
    MemTable::try_new(schema, partitions)
}

/// The logical codec: lake tables (Delta scans) and in-memory tables besides what Ballista's
/// codec handles.
#[derive(Debug, Default)]
pub struct CxrlakeLogicalCodec {
    ballista: BallistaLogicalExtensionCodec,
}

/// The first byte of `buf` and the rest.
fn tagged(buf: &[u8]) -> Result<(u8, &[u8])> {
    buf.split_first()
        .map(|(tag, rest)| (*tag, rest))
        .ok_or_else(|| internal_datafusion_err!("empty cxrlake plan node"))
}

/// cxrlake's scalar function `name`, or the stage function a recipe builds (`buf`, what
/// [`encode_udf`] wrote).
fn cxrlake_udf(name: &str, buf: &[u8]) -> Result<Arc<ScalarUDF>> {
    if !buf.is_empty() {
        return portable::receive(name, buf).map(Arc::new);
    }
    cxrlake_udfs::scalar_functions()
        .into_iter()
        .find(|f| f.name() == name || f.aliases().iter().any(|a| a == name))
        .ok_or_else(|| plan_datafusion_err!("no scalar function named {name} in cxrlake"))
}

/// A stage function's recipe (nothing for cxrlake's own functions, found by name).
fn encode_udf(node: &ScalarUDF, buf: &mut Vec<u8>) {
    if let Some(recipe) = portable::recipe_of(node) {
        buf.extend_from_slice(recipe);
    }
}

/// cxrlake's aggregate function `name`.
fn cxrlake_udaf(name: &str) -> Result<Arc<AggregateUDF>> {
    cxrlake_udfs::aggregate_functions()
        .into_iter()
        .find(|f| f.name() == name || f.aliases().iter().any(|a| a == name))
        .ok_or_else(|| plan_datafusion_err!("no aggregate function named {name} in cxrlake"))
}

impl LogicalExtensionCodec for CxrlakeLogicalCodec {
    fn try_decode(
        &self,
        buf: &[u8],
        inputs: &[LogicalPlan],
        ctx: &TaskContext,
    ) -> Result<Extension> {
        self.ballista.try_decode(buf, inputs, ctx)
    }

    fn try_encode(&self, node: &Extension, buf: &mut Vec<u8>) -> Result<()> {
        self.ballista.try_encode(node, buf)
    }

    fn try_decode_table_provider(
        &self,
        buf: &[u8],
        table_ref: &TableReference,
        schema: SchemaRef,
        ctx: &TaskContext,
    ) -> Result<Arc<dyn TableProvider>> {
        match tagged(buf)? {
            (LAKE_TABLE, table) => Ok(Arc::new(LakeTable::decode(table)?)),
            (MEM_TABLE, table) => Ok(Arc::new(decode_mem_table(table)?)),
            (BALLISTA, rest) => self
                .ballista
                .try_decode_table_provider(rest, table_ref, schema, ctx),
            (tag, _) => Err(internal_datafusion_err!("unknown table provider tag {tag}")),
        }
    }

    fn try_encode_table_provider(
        &self,
        table_ref: &TableReference,
        node: Arc<dyn TableProvider>,
        buf: &mut Vec<u8>,
    ) -> Result<()> {
        if let Some(table) = node.downcast_ref::<LakeTable>() {
            buf.push(LAKE_TABLE);
            buf.extend_from_slice(table.encoded());
            Ok(())
        } else if let Some(table) = node.downcast_ref::<MemTable>() {
            encode_mem_table(table, buf)
        } else if let Some(scan) = node.downcast_ref::<DeltaScanNext>() {
            buf.push(LAKE_TABLE);
            serde_json::to_writer(buf, scan).map_err(|e| {
                internal_datafusion_err!("cannot encode the Delta table {table_ref}: {e}")
            })
        } else {
            buf.push(BALLISTA);
            self.ballista
                .try_encode_table_provider(table_ref, node, buf)
        }
    }

    fn try_decode_file_format(
        &self,
        buf: &[u8],
        ctx: &TaskContext,
    ) -> Result<Arc<dyn FileFormatFactory>> {
        self.ballista.try_decode_file_format(buf, ctx)
    }

    fn try_encode_file_format(
        &self,
        buf: &mut Vec<u8>,
        node: Arc<dyn FileFormatFactory>,
    ) -> Result<()> {
        self.ballista.try_encode_file_format(buf, node)
    }

    fn try_decode_udf(&self, name: &str, buf: &[u8]) -> Result<Arc<ScalarUDF>> {
        cxrlake_udf(name, buf)
    }

    fn try_encode_udf(&self, node: &ScalarUDF, buf: &mut Vec<u8>) -> Result<()> {
        encode_udf(node, buf);
        Ok(())
    }

    fn try_decode_udaf(&self, name: &str, _buf: &[u8]) -> Result<Arc<AggregateUDF>> {
        cxrlake_udaf(name)
    }
}

/// The physical codec: lake table scans and cxrlake's zero-copy unnest besides what Ballista's
/// codec handles (shuffle readers and writers, …).
#[derive(Debug, Default)]
pub struct CxrlakePhysicalCodec {
    ballista: BallistaPhysicalExtensionCodec,
}

/// A [`LakeScanExec`] on the wire.
#[derive(Clone, PartialEq, Message)]
struct LakeScanNode {
    /// deltalake's serialized `DeltaScan`.
    #[prost(bytes = "vec", tag = "1")]
    table: Vec<u8>,
    /// Whether the scan is projected (an empty projection is one).
    #[prost(bool, tag = "2")]
    projected: bool,
    #[prost(uint64, repeated, tag = "3")]
    projection: Vec<u64>,
    /// The filters pushed into the scan, each a serialized logical expression.
    #[prost(bytes = "vec", repeated, tag = "4")]
    filters: Vec<Vec<u8>>,
    #[prost(uint64, optional, tag = "5")]
    limit: Option<u64>,
    #[prost(message, optional, tag = "6")]
    schema: Option<datafusion_proto::protobuf::Schema>,
    #[prost(uint64, tag = "7")]
    partitions: u64,
    /// The data files of each partition.
    #[prost(message, repeated, tag = "8")]
    files: Vec<FileGroupNode>,
}

/// The data files one partition reads.
#[derive(Clone, PartialEq, Message)]
struct FileGroupNode {
    #[prost(string, repeated, tag = "1")]
    paths: Vec<String>,
}

fn to_u64(n: usize) -> u64 {
    n as u64
}

fn to_usize(n: u64) -> Result<usize> {
    usize::try_from(n).map_err(|e| internal_datafusion_err!("{n} does not fit usize: {e}"))
}

impl CxrlakePhysicalCodec {
    fn encode_scan(scan: &LakeScanExec, buf: &mut Vec<u8>) -> Result<()> {
        let request = scan.request();
        let filters = request
            .filters
            .iter()
            .map(|f| f.to_bytes().map(|b| b.to_vec()))
            .collect::<Result<Vec<_>>>()?;
        let schema = datafusion_proto::protobuf::Schema::try_from(scan.schema().as_ref())
            .map_err(|e| internal_datafusion_err!("cannot encode a lake scan's schema: {e}"))?;
        let node = LakeScanNode {
            table: request.table.to_vec(),
            projected: request.projection.is_some(),
            projection: request
                .projection
                .iter()
                .flatten()
                .copied()
                .map(to_u64)
                .collect(),
            filters,
            limit: request.limit.map(to_u64),
            schema: Some(schema),
            partitions: to_u64(scan.properties().partitioning.partition_count()),
            files: scan
                .files()
                .iter()
                .map(|paths| FileGroupNode {
                    paths: paths.clone(),
                })
                .collect(),
        };
        buf.push(LAKE_SCAN);
        node.encode(buf)
            .map_err(|e| internal_datafusion_err!("cannot encode a lake scan: {e}"))
    }

    fn decode_scan(buf: &[u8], ctx: &TaskContext) -> Result<Arc<dyn ExecutionPlan>> {
        let node = LakeScanNode::decode(buf)
            .map_err(|e| internal_datafusion_err!("cannot decode a lake scan: {e}"))?;
        let schema = node
            .schema
            .as_ref()
            .ok_or_else(|| internal_datafusion_err!("a lake scan without a schema"))?;
        let schema = Schema::try_from(schema)
            .map_err(|e| internal_datafusion_err!("cannot decode a lake scan's schema: {e}"))?;
        let projection = node
            .projected
            .then(|| node.projection.iter().copied().map(to_usize).collect())
            .transpose()?;
        let filters = node
            .filters
            .iter()
            .map(|f| Expr::from_bytes_with_ctx(f, ctx))
            .collect::<Result<Vec<_>>>()?;
        let request = ScanRequest {
            table: node.table.into(),
            projection,
            filters,
            limit: node.limit.map(to_usize).transpose()?,
        };
        let files = node.files.into_iter().map(|g| g.paths).collect();
        Ok(Arc::new(LakeScanExec::received(
            request,
            files,
            Arc::new(schema),
            to_usize(node.partitions)?,
        )))
    }

    fn encode_unnest(&self, unnest: &SliceUnnestExec, buf: &mut Vec<u8>) -> Result<()> {
        let inner = unnest.unnest();
        // The input travels as the node's child: the UnnestExec goes over an empty stand-in.
        let placeholder: Arc<dyn ExecutionPlan> = Arc::new(EmptyExec::new(inner.input().schema()));
        let detached = Arc::new(inner.clone()).replace_children(
            vec![placeholder],
            ReplaceChildrenOptions::new(ChildrenPropertiesMode::Keep),
        )?;
        let bytes = physical_plan_to_bytes_with_extension_codec(detached, self)?;
        buf.push(SLICE_UNNEST);
        buf.extend_from_slice(&bytes);
        Ok(())
    }

    fn decode_unnest(
        &self,
        buf: &[u8],
        inputs: &[Arc<dyn ExecutionPlan>],
        ctx: &TaskContext,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let [input] = inputs else {
            return Err(internal_datafusion_err!(
                "SliceUnnestExec has one input, got {}",
                inputs.len()
            ));
        };
        let detached = physical_plan_from_bytes_with_extension_codec(buf, ctx, self)?;
        let unnest = detached.replace_children(
            vec![Arc::clone(input)],
            ReplaceChildrenOptions::new(ChildrenPropertiesMode::Recompute),
        )?;
        let unnest = unnest
            .downcast_ref::<UnnestExec>()
            .ok_or_else(|| internal_datafusion_err!("SliceUnnestExec without its UnnestExec"))?;
        let sliced = SliceUnnestExec::try_new(unnest)
            .ok_or_else(|| internal_datafusion_err!("the received UnnestExec cannot be sliced"))?;
        Ok(Arc::new(sliced))
    }
}

impl PhysicalExtensionCodec for CxrlakePhysicalCodec {
    fn try_decode(
        &self,
        buf: &[u8],
        inputs: &[Arc<dyn ExecutionPlan>],
        ctx: &TaskContext,
        proto_converter: &dyn PhysicalProtoConverterExtension,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        match tagged(buf)? {
            (BALLISTA, rest) => self.ballista.try_decode(rest, inputs, ctx, proto_converter),
            (LAKE_SCAN, rest) => Self::decode_scan(rest, ctx),
            (SLICE_UNNEST, rest) => self.decode_unnest(rest, inputs, ctx),
            (tag, _) => Err(internal_datafusion_err!("unknown plan node tag {tag}")),
        }
    }

    fn try_encode(
        &self,
        node: Arc<dyn ExecutionPlan>,
        buf: &mut Vec<u8>,
        proto_converter: &dyn PhysicalProtoConverterExtension,
    ) -> Result<()> {
        if let Some(scan) = node.downcast_ref::<LakeScanExec>() {
            Self::encode_scan(scan, buf)
        } else if let Some(unnest) = node.downcast_ref::<SliceUnnestExec>() {
            self.encode_unnest(unnest, buf)
        } else {
            buf.push(BALLISTA);
            self.ballista.try_encode(node, buf, proto_converter)
        }
    }

    fn try_decode_udf(&self, name: &str, buf: &[u8]) -> Result<Arc<ScalarUDF>> {
        cxrlake_udf(name, buf)
    }

    fn try_encode_udf(&self, node: &ScalarUDF, buf: &mut Vec<u8>) -> Result<()> {
        encode_udf(node, buf);
        Ok(())
    }

    fn try_decode_udaf(&self, name: &str, _buf: &[u8]) -> Result<Arc<AggregateUDF>> {
        cxrlake_udaf(name)
    }
}

#[cfg(test)]
mod tests {
    use datafusion::common::tree_node::{TreeNode, TreeNodeRecursion};
    use datafusion::physical_plan::{collect, displayable};
    use datafusion::prelude::SessionConfig;

    use super::*;

    /// Whether `plan` has a node named `name`.
    fn has(plan: &Arc<dyn ExecutionPlan>, name: &str) -> bool {
        let mut found = false;
        plan.apply(|node| {
            found |= node.name() == name;
            Ok(TreeNodeRecursion::Continue)
        })
        .expect("walk the plan");
        found
    }

    #[tokio::test]
    async fn slice_unnest_survives_the_wire() -> Result<()> {
        let ctx = cxrlake_udfs::session_context(SessionConfig::new().with_target_partitions(2));
        let plan = ctx
            .sql(
                "SELECT k, unnest(l) AS v FROM (VALUES (1, [1, 2]), (2, NULL), (3, []), \
                 (4, [3, 4, 5])) AS t(k, l) ORDER BY k, v",
            )
            .await?
            .create_physical_plan()
            .await?;
        assert!(
            has(&plan, "SliceUnnestExec"),
            "{}",
            displayable(plan.as_ref()).indent(false)
        );
        let codec = CxrlakePhysicalCodec::default();
        let bytes = physical_plan_to_bytes_with_extension_codec(Arc::clone(&plan), &codec)?;
        let received =
            physical_plan_from_bytes_with_extension_codec(&bytes, &ctx.task_ctx(), &codec)?;
        assert!(has(&received, "SliceUnnestExec"));
        assert_eq!(received.schema(), plan.schema());
        let sent = collect(plan, ctx.task_ctx()).await?;
        let got = collect(received, ctx.task_ctx()).await?;
        assert_eq!(
            datafusion::arrow::util::pretty::pretty_format_batches(&got)?.to_string(),
            datafusion::arrow::util::pretty::pretty_format_batches(&sent)?.to_string()
        );
        assert_eq!(got.iter().map(|b| b.num_rows()).sum::<usize>(), 5);
        Ok(())
    }

    #[tokio::test]
    async fn mem_tables_survive_the_wire() -> Result<()> {
        let ctx = cxrlake_udfs::session_context(SessionConfig::new());
        let batches = ctx
            .sql("SELECT * FROM (VALUES (1, 'a', [1.5]), (2, NULL, NULL)) AS t(k, s, l)")
            .await?
            .collect()
            .await?;
        let schema = batches[0].schema();
        let table = MemTable::try_new(schema, vec![batches.clone(), Vec::new()])?;
        let (codec, name) = (CxrlakeLogicalCodec::default(), TableReference::bare("t"));
        let mut buf = Vec::new();
        codec.try_encode_table_provider(&name, Arc::new(table), &mut buf)?;
        let received =
            codec.try_decode_table_provider(&buf, &name, batches[0].schema(), &ctx.task_ctx())?;
        let received = received
            .downcast_ref::<MemTable>()
            .ok_or_else(|| internal_datafusion_err!("not a MemTable"))?;
        assert_eq!(received.batches.len(), 2);
        assert_eq!(*received.batches[0].read().await, batches);
        assert!(received.batches[1].read().await.is_empty());
        Ok(())
    }

    #[test]
    fn cxrlake_functions_decode_by_name() -> Result<()> {
        let (logical, physical) = (
            CxrlakeLogicalCodec::default(),
            CxrlakePhysicalCodec::default(),
        );
        assert_eq!(logical.try_decode_udf("box_area", &[])?.name(), "box_area");
        assert_eq!(
            physical.try_decode_udf("rating_rank", &[])?.name(),
            "rating_rank"
        );
        assert_eq!(
            logical.try_decode_udaf("mask_union_agg", &[])?.name(),
            "mask_union_agg"
        );
        assert!(logical.try_decode_udf("no_such_function", &[]).is_err());
        Ok(())
    }
}
