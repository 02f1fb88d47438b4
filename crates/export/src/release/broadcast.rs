//! A table that several queries read at once from one stream: each scan of it (one per query
//! that reads it, made when that query is planned) gets its own channel, and
//! [`Broadcast::feed`] sends every batch of the source to all of them. One scan of a release's
//! subset thus feeds every file computed from it.
//!
//! ```text
//!                            ┌─ channel ─▶ scan ─ question_metadata.sql ─▶ file
//! source ─ batch ─ feed ─────┼─ channel ─▶ scan ─ answer_metadata.sql ───▶ file
//!        (one scan)          └─ channel ─▶ scan ─ sample.sql ─ … ─────────▶ file
//! ```
//!
//! Every query is planned before the feed starts (a scan planned later is an error) and read
//! while it runs: a channel holds at most [`CHANNEL_BATCHES`] batches, so memory stays bounded
//! and the slowest reader sets the pace. A source error reaches every reader, so no file is
//! completed from part of the source.

use std::fmt;
use std::sync::{Arc, Mutex};

use arrow::array::RecordBatch;
use arrow::datatypes::SchemaRef;
use async_trait::async_trait;
use datafusion::catalog::{Session, TableProvider};
use datafusion::common::{DataFusionError, exec_datafusion_err, internal_err};
use datafusion::datasource::TableType;
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::logical_expr::Expr;
use datafusion::physical_plan::ExecutionPlan;
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::streaming::{PartitionStream, StreamingTableExec};
use futures::StreamExt;
use futures::future::join_all;
use tokio::sync::mpsc;

/// Batches a reader's channel holds.
const CHANNEL_BATCHES: usize = 2;

type Message = datafusion::common::Result<RecordBatch>;

/// A table whose rows come from one stream, once, to every query planned over it.
pub(crate) struct Broadcast {
    schema: SchemaRef,
    readers: Mutex<Readers>,
}

#[derive(Default)]
struct Readers {
    senders: Vec<mpsc::Sender<Message>>,
    fed: bool,
}

impl fmt::Debug for Broadcast {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Broadcast")
            .field("columns", &self.schema.fields().len())
            .finish_non_exhaustive()
    }
}

impl Broadcast {
    /// A table of `schema` (the source's).
    pub fn new(schema: SchemaRef) -> Self {
        Self {
            schema,
            readers: Mutex::new(Readers::default()),
        }
    }

    /// A reader of every batch fed, outside any query (e.g. a file writer); like a scan, made
    /// before the feed starts.
    pub fn reader(&self) -> datafusion::common::Result<SendableRecordBatchStream> {
        Ok(receiver_stream(Arc::clone(&self.schema), self.subscribe()?))
    }

    fn readers(&self) -> datafusion::common::Result<std::sync::MutexGuard<'_, Readers>> {
        self.readers
            .lock()
            .map_err(|_| exec_datafusion_err!("a broadcast table's readers were poisoned"))
    }

    /// A new channel of the feed.
    fn subscribe(&self) -> datafusion::common::Result<mpsc::Receiver<Message>> {
        let (sender, receiver) = mpsc::channel(CHANNEL_BATCHES);
        let mut readers = self.readers()?;
        if readers.fed {
            return internal_err!("a reader of a broadcast table was made after its feed started");
        }
        readers.senders.push(sender);
        Ok(receiver)
    }

    /// Sends every batch of `source` to every reader made so far; the rows sent. Readers that
    /// stopped are skipped; a source error is passed to every reader and returned.
    pub async fn feed(
        &self,
        mut source: SendableRecordBatchStream,
    ) -> datafusion::common::Result<u64> {
        let mut senders = {
            let mut readers = self.readers()?;
            if readers.fed {
                return internal_err!("a broadcast table is fed once");
            }
            readers.fed = true;
            std::mem::take(&mut readers.senders)
        };
        let mut rows = 0;
        while let Some(batch) = source.next().await {
            let batch = match batch {
                Ok(batch) => batch,
                Err(err) => {
                    let failed = |_| {
                        Err(DataFusionError::Execution(format!(
                            "the rows this query reads failed: {err}"
                        )))
                    };
                    join_all(senders.iter().map(|s| s.send(failed(())))).await;
                    return Err(err);
                }
            };
            rows += batch.num_rows() as u64;
            let sent = join_all(senders.iter().map(|s| s.send(Ok(batch.clone())))).await;
            let mut open = sent.iter().map(Result::is_ok);
            senders.retain(|_| open.next().unwrap_or(false));
        }
        Ok(rows)
    }
}

#[async_trait]
impl TableProvider for Broadcast {
    fn schema(&self) -> SchemaRef {
        Arc::clone(&self.schema)
    }

    fn table_type(&self) -> TableType {
        TableType::Temporary
    }

    async fn scan(
        &self,
        _state: &dyn Session,
        projection: Option<&Vec<usize>>,
        _filters: &[Expr],
        limit: Option<usize>,
    ) -> datafusion::common::Result<Arc<dyn ExecutionPlan>> {
        let reader = Arc::new(Reader {
            schema: Arc::clone(&self.schema),
            receiver: Mutex::new(Some(self.subscribe()?)),
        });
        Ok(Arc::new(StreamingTableExec::try_new(
            Arc::clone(&self.schema),
            vec![reader],
            projection,
            [],
            false,
            limit,
        )?))
    }
}

/// One scan's end of its channel.
struct Reader {
    schema: SchemaRef,
    receiver: Mutex<Option<mpsc::Receiver<Message>>>,
}

impl fmt::Debug for Reader {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Reader").finish_non_exhaustive()
    }
}

impl PartitionStream for Reader {
    fn schema(&self) -> &SchemaRef {
        &self.schema
    }

    fn execute(&self, _ctx: Arc<TaskContext>) -> SendableRecordBatchStream {
        let schema = Arc::clone(&self.schema);
        match self.receiver.lock().ok().and_then(|mut r| r.take()) {
            Some(receiver) => receiver_stream(schema, receiver),
            None => Box::pin(RecordBatchStreamAdapter::new(
                schema,
                futures::stream::once(async {
                    Err(exec_datafusion_err!(
                        "a scan of a broadcast table is read once"
                    ))
                }),
            )),
        }
    }
}

/// The batches arriving on `receiver` as a stream.
fn receiver_stream(
    schema: SchemaRef,
    receiver: mpsc::Receiver<Message>,
) -> SendableRecordBatchStream {
    let batches = futures::stream::unfold(receiver, |mut receiver| async move {
        receiver.recv().await.map(|message| (message, receiver))
    });
    Box::pin(RecordBatchStreamAdapter::new(schema, batches))
}
