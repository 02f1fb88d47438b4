//! Reading an exported table: the table by name, filtered by the user's SQL predicate, with the
//! errors that say what to run when it is missing, empty or the filter is wrong.

use arrow::array::{ArrayRef, RecordBatch};
use arrow::compute::cast;
use arrow::datatypes::DataType;
use cxrlake_distributed::Engine;
use cxrlake_lake::Lake;
use datafusion::dataframe::DataFrame;
use datafusion::error::DataFusionError;
use datafusion::execution::SendableRecordBatchStream;
use datafusion::physical_plan::EmptyRecordBatchStream;
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use futures::StreamExt;

use crate::error::{ExportError, Result};

/// `frame`'s rows in an order that depends only on its inputs: its partitions one after the
/// other, each computed ahead in the background (two batches deep), instead of interleaved as
/// they finish. The same lake then always exports the same bytes (row order of Parquet, CSV and
/// JSON files).
pub async fn ordered_stream(
    frame: DataFrame,
) -> datafusion::error::Result<SendableRecordBatchStream> {
    let schema = std::sync::Arc::clone(frame.schema().inner());
    let mut partitions = frame.execute_stream_partitioned().await?;
    if partitions.len() <= 1 {
        return Ok(partitions
            .pop()
            .unwrap_or_else(|| Box::pin(EmptyRecordBatchStream::new(schema))));
    }
    let receivers: Vec<_> = partitions
        .into_iter()
        .map(|mut partition| {
            let (sender, receiver) = tokio::sync::mpsc::channel(2);
            tokio::spawn(async move {
                while let Some(batch) = partition.next().await {
                    if sender.send(batch).await.is_err() {
                        break;
                    }
                }
            });
            receiver
        })
        .collect();
    let batches = futures::stream::iter(receivers).flat_map(|receiver| {
        futures::stream::unfold(receiver, |mut receiver| async move {
            receiver.recv().await.map(|batch| (batch, receiver))
        })
    });
    Ok(Box::pin(RecordBatchStreamAdapter::new(schema, batches)))
}

/// A session over `lake` with cxrlake's SQL functions (ordered ratings, the release functions),
/// whatever factory the caller opened the lake with.
pub async fn session(lake: &Lake) -> Result<datafusion::prelude::SessionContext> {
    let lake = lake
        .clone()
        .with_session_factory(cxrlake_udfs::session_context_on);
    let ctx = lake.session().await?;
    // Joins keep their probe side's partitions (no hash repartitioning), so that
    // [`ordered_stream`] gives rows in an order that depends on the lake alone: the release's
    // joins pair large tables with small ones (its studies, images), which are built once.
    ctx.state_ref()
        .write()
        .config_mut()
        .options_mut()
        .optimizer
        .repartition_joins = false;
    Ok(ctx)
}

/// `ctx` (a [`session`] of `lake`) on the lake's engine (the `engine` setting): itself for a
/// run in this process, else a client of the Ballista cluster with the same tables, views and
/// functions, whose queries are planned by its scheduler and read the lake on its executors.
pub async fn on_engine(
    lake: &Lake,
    ctx: &datafusion::prelude::SessionContext,
) -> Result<datafusion::prelude::SessionContext> {
    let engine: Engine = lake.settings().cxrlake.engine.parse()?;
    if engine == Engine::Local {
        return Ok(ctx.clone());
    }
    tracing::info!("the export's scan of the lake runs on {engine}");
    Ok(engine.connect(ctx.state()).await?)
}

/// `table` of the lake, keeping only the rows matching `filter` (SQL over its columns).
pub async fn filtered_table(
    lake: &Lake,
    table: &'static str,
    filter: Option<&str>,
) -> Result<DataFrame> {
    let ctx = session(lake).await?;
    if !ctx.table_exist(table)? {
        return Err(ExportError::NoTable {
            table,
            root: lake.root().to_string(),
        });
    }
    let frame = ctx.table(table).await?;
    let Some(filter) = filter else {
        return Ok(frame);
    };
    let invalid = filter_error(table, filter);
    let predicate = frame.parse_sql_expr(filter).map_err(&invalid)?;
    frame.filter(predicate).map_err(invalid)
}

/// How a DataFusion error of a filtered query reads: the filter is invalid.
pub fn filter_error(table: &'static str, filter: &str) -> impl Fn(DataFusionError) -> ExportError {
    move |source| ExportError::Filter {
        table,
        filter: filter.to_string(),
        source: Box::new(source),
    }
}

/// The error of an export that found nothing: the filter matched nothing, or the table is empty.
pub fn nothing_to_export(lake: &Lake, table: &'static str, filter: Option<&str>) -> ExportError {
    match filter {
        Some(filter) => ExportError::NoMatch {
            table,
            filter: filter.to_string(),
        },
        None => ExportError::Empty {
            table,
            root: lake.root().to_string(),
        },
    }
}

/// A column of `batch` as `utf8`.
pub fn text_column(
    batch: &RecordBatch,
    name: &'static str,
    table: &'static str,
) -> Result<ArrayRef> {
    let column = batch
        .column_by_name(name)
        .ok_or_else(|| ExportError::MissingColumns {
            table,
            missing: name.to_string(),
        })?;
    Ok(cast(column, &DataType::Utf8)?)
}
