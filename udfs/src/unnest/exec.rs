//! `SliceUnnestExec`: unnests one list column by slicing its values array (see the module doc);
//! schema, partitioning and ordering are those of the `UnnestExec` it replaces.

use std::sync::Arc;

use datafusion::arrow::array::{
    Array, ArrayRef, AsArray, GenericListArray, OffsetSizeTrait, RecordBatch, RecordBatchOptions,
    UInt32Array, UInt64Array,
};
use datafusion::arrow::compute::take;
use datafusion::arrow::datatypes::{DataType, SchemaRef};
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::common::{NullHandling, Result, internal_datafusion_err};
use datafusion::execution::TaskContext;
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_plan::metrics::{BaselineMetrics, ExecutionPlanMetricsSet, MetricsSet};
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::unnest::UnnestExec;
use datafusion::physical_plan::{
    ChildrenPropertiesMode, DisplayAs, DisplayFormatType, ExecutionPlan, PlanProperties,
    ReplaceChildrenOptions, SendableRecordBatchStream,
};
use futures::StreamExt;

/// Unnests the list column `list_column` of its input (one level, NULL and empty lists give no
/// rows), output batches of about `batch_size` rows.
#[derive(Debug, Clone)]
pub struct SliceUnnestExec {
    /// The plan this one replaces: input, schema and properties.
    unnest: UnnestExec,
    /// Index of the unnested column, in the input and in the output.
    list_column: usize,
    metrics: ExecutionPlanMetricsSet,
}

impl SliceUnnestExec {
    /// The zero-copy version of `unnest`, or `None` when it does something else than unnest
    /// one `List`/`LargeList` column one level deep, dropping NULL and empty lists.
    pub fn try_new(unnest: &UnnestExec) -> Option<Self> {
        let [list] = unnest.list_column_indices() else {
            return None;
        };
        let input_type = unnest
            .input()
            .schema()
            .field(list.index_in_input_schema)
            .data_type()
            .clone();
        let slices = list.depth == 1
            && unnest.struct_column_indices().is_empty()
            && unnest.options().null_handling == NullHandling::Drop
            && matches!(input_type, DataType::List(_) | DataType::LargeList(_));
        slices.then(|| Self {
            unnest: unnest.clone(),
            list_column: list.index_in_input_schema,
            metrics: ExecutionPlanMetricsSet::new(),
        })
    }

    /// The `UnnestExec` this one replaces (what a plan codec sends: the receiver calls
    /// [`SliceUnnestExec::try_new`] on it again).
    pub fn unnest(&self) -> &UnnestExec {
        &self.unnest
    }
}

impl DisplayAs for SliceUnnestExec {
    fn fmt_as(&self, t: DisplayFormatType, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        match t {
            DisplayFormatType::Default | DisplayFormatType::Verbose => {
                write!(f, "SliceUnnestExec: column={}", self.list_column)
            }
            DisplayFormatType::TreeRender => write!(f, "column={}", self.list_column),
        }
    }
}

impl ExecutionPlan for SliceUnnestExec {
    fn name(&self) -> &'static str {
        "SliceUnnestExec"
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        self.unnest.properties()
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        vec![self.unnest.input()]
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
        options: ReplaceChildrenOptions,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let unnest = Arc::new(self.unnest.clone()).replace_children(children, options)?;
        let unnest = unnest
            .downcast_ref::<UnnestExec>()
            .ok_or_else(|| internal_datafusion_err!("UnnestExec replaced by another plan"))?;
        Ok(Arc::new(Self {
            unnest: unnest.clone(),
            list_column: self.list_column,
            metrics: ExecutionPlanMetricsSet::new(),
        }))
    }

    fn with_new_children(
        self: Arc<Self>,
        children: Vec<Arc<dyn ExecutionPlan>>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        self.replace_children(
            children,
            ReplaceChildrenOptions::new(ChildrenPropertiesMode::Recompute),
        )
    }

    fn execute(
        &self,
        partition: usize,
        context: Arc<TaskContext>,
    ) -> Result<SendableRecordBatchStream> {
        let batch_size = context.session_config().batch_size();
        let input = self.unnest.input().execute(partition, context)?;
        let metrics = BaselineMetrics::new(&self.metrics, partition);
        let schema = self.schema();
        let list_column = self.list_column;
        let output = input.flat_map(move |batch| {
            let timer = metrics.elapsed_compute().timer();
            let unnested = batch.and_then(|b| unnest_batch(&b, &schema, list_column, batch_size));
            timer.done();
            if let Ok(batches) = &unnested {
                metrics.record_output(batches.iter().map(RecordBatch::num_rows).sum());
            }
            let results: Vec<Result<RecordBatch>> = match unnested {
                Ok(batches) => batches.into_iter().map(Ok).collect(),
                Err(e) => vec![Err(e)],
            };
            futures::stream::iter(results)
        });
        Ok(Box::pin(RecordBatchStreamAdapter::new(
            self.schema(),
            output,
        )))
    }

    fn metrics(&self) -> Option<MetricsSet> {
        Some(self.metrics.clone_inner())
    }
}

/// `batch` with column `list_column` unnested, in batches of about `batch_size` rows (an input
/// row is never split, so a longer list makes a longer batch).
fn unnest_batch(
    batch: &RecordBatch,
    schema: &SchemaRef,
    list_column: usize,
    batch_size: usize,
) -> Result<Vec<RecordBatch>> {
    let list = batch.column(list_column);
    match list.data_type() {
        DataType::List(_) => unnest_list(
            batch,
            list.as_list::<i32>(),
            schema,
            list_column,
            batch_size,
        ),
        DataType::LargeList(_) => unnest_list(
            batch,
            list.as_list::<i64>(),
            schema,
            list_column,
            batch_size,
        ),
        other => Err(internal_datafusion_err!(
            "SliceUnnestExec: column {list_column} is {other}, not a list"
        )),
    }
}

fn unnest_list<O: OffsetSizeTrait>(
    batch: &RecordBatch,
    list: &GenericListArray<O>,
    schema: &SchemaRef,
    list_column: usize,
    batch_size: usize,
) -> Result<Vec<RecordBatch>> {
    let offsets = list.value_offsets();
    let length = |row: usize| {
        if list.is_null(row) {
            0
        } else {
            (offsets[row + 1] - offsets[row]).as_usize()
        }
    };
    // Values are contiguous unless a NULL list covers some (Arrow allows it; readers and
    // builders write empty NULL lists).
    let contiguous = list.null_count() == 0
        || (0..list.len()).all(|row| list.is_valid(row) || offsets[row] == offsets[row + 1]);
    let mut out = Vec::new();
    let mut first = 0;
    while first < list.len() {
        // Rows first..end make about batch_size output rows (at least one input row).
        let mut end = first;
        let mut rows = 0;
        while end < list.len() && (end == first || rows + length(end) <= batch_size) {
            rows += length(end);
            end += 1;
        }
        if rows > 0 {
            let values = if contiguous {
                let start = offsets[first].as_usize();
                list.values().slice(start, offsets[end].as_usize() - start)
            } else {
                let indices: UInt64Array = (first..end)
                    .filter(|&row| list.is_valid(row))
                    .flat_map(|row| {
                        offsets[row].as_usize() as u64..offsets[row + 1].as_usize() as u64
                    })
                    .map(Some)
                    .collect();
                take(list.values(), &indices, None)?
            };
            let repeat: UInt32Array = (first..end)
                .flat_map(|row| std::iter::repeat_n(row as u32, length(row)))
                .map(Some)
                .collect();
            let columns = batch
                .columns()
                .iter()
                .enumerate()
                .map(|(index, column)| -> Result<ArrayRef> {
                    if index == list_column {
                        Ok(values.clone())
                    } else {
                        Ok(take(column, &repeat, None)?)
                    }
                })
                .collect::<Result<Vec<_>>>()?;
            let options = RecordBatchOptions::new().with_row_count(Some(rows));
            out.push(RecordBatch::try_new_with_options(
                schema.clone(),
                columns,
                &options,
            )?);
        }
        first = end;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use datafusion::arrow::array::{
        Array, Int32Array, ListArray, RecordBatch, StringArray, StructArray,
    };
    use datafusion::arrow::buffer::{NullBuffer, OffsetBuffer};
    use datafusion::arrow::compute::concat_batches;
    use datafusion::arrow::datatypes::{DataType, Field, Fields, Schema};
    use datafusion::datasource::MemTable;
    use datafusion::physical_plan::displayable;
    use datafusion::prelude::{SessionConfig, SessionContext};

    /// Keys `k0..k5` with lists of `{n, tags}` structs over the values `n = 0..6`: `[0, 1]`,
    /// NULL, `[2]`, `[3]`, NULL, `[4, 5]`; with `null_covers`, the first NULL list covers value 2
    /// (which Arrow allows) and `k2`'s list is empty.
    fn table(null_covers: bool) -> RecordBatch {
        let tags = ListArray::new(
            Arc::new(Field::new("item", DataType::Utf8, true)),
            OffsetBuffer::from_lengths([2, 0, 1, 1, 3, 1]),
            Arc::new(StringArray::from(vec![
                "a", "b", "c", "d", "e", "f", "g", "h",
            ])),
            Some(NullBuffer::from(vec![true, false, true, true, true, true])),
        );
        let fields = Fields::from(vec![
            Field::new("n", DataType::Int32, false),
            Field::new("tags", tags.data_type().clone(), true),
        ]);
        let items = StructArray::new(
            fields.clone(),
            vec![
                Arc::new(Int32Array::from(vec![0, 1, 2, 3, 4, 5])),
                Arc::new(tags),
            ],
            None,
        );
        let lengths = if null_covers {
            [2, 1, 0, 1, 0, 2]
        } else {
            [2, 0, 1, 1, 0, 2]
        };
        let list = ListArray::new(
            Arc::new(Field::new("item", DataType::Struct(fields), true)),
            OffsetBuffer::from_lengths(lengths),
            Arc::new(items),
            Some(NullBuffer::from(vec![true, false, true, true, false, true])),
        );
        let keys = StringArray::from(vec!["k0", "k1", "k2", "k3", "k4", "k5"]);
        let schema = Schema::new(vec![
            Field::new("k", DataType::Utf8, false),
            Field::new("l", list.data_type().clone(), true),
        ]);
        RecordBatch::try_new(Arc::new(schema), vec![Arc::new(keys), Arc::new(list)]).expect("batch")
    }

    async fn run(ctx: &SessionContext, batch: &RecordBatch, sql: &str) -> (String, RecordBatch) {
        let table = MemTable::try_new(batch.schema(), vec![vec![batch.clone()]]).expect("table");
        ctx.register_table("t", Arc::new(table)).expect("register");
        let frame = ctx.sql(sql).await.expect("plan");
        let plan = frame
            .clone()
            .create_physical_plan()
            .await
            .expect("physical");
        let shown = displayable(plan.as_ref()).indent(true).to_string();
        let batches = frame.collect().await.expect("run");
        let schema = batches.first().map_or(plan.schema(), RecordBatch::schema);
        (shown, concat_batches(&schema, &batches).expect("concat"))
    }

    #[tokio::test]
    async fn sliced_unnest_equals_datafusions_for_every_batch_size() {
        let single = "SELECT k, unnest(l) AS x FROM t";
        let fields = "SELECT k, unnest(l)['n'] AS n, unnest(l)['tags'] AS tags FROM t";
        // Two list columns: left to DataFusion.
        let two = "SELECT k, unnest(l) AS x, unnest(make_array(1, 2)) AS y FROM t";
        for null_covers in [false, true] {
            let batch = table(null_covers);
            for batch_size in [1, 2, 3, 1000] {
                for sql in [single, fields, two] {
                    let config = SessionConfig::new().with_batch_size(batch_size);
                    let (plain_plan, expected) = run(
                        &SessionContext::new_with_config(config.clone()),
                        &batch,
                        sql,
                    )
                    .await;
                    let (plan, got) = run(&crate::session_context(config), &batch, sql).await;
                    assert!(plain_plan.contains("UnnestExec"), "{plain_plan}");
                    assert_eq!(plan.contains("SliceUnnestExec"), sql != two, "{plan}");
                    assert_eq!(got, expected, "{sql}, batch size {batch_size}");
                    if sql != two {
                        assert_eq!(got.num_rows(), if null_covers { 5 } else { 6 }, "{sql}");
                    }
                }
            }
        }
    }
}
