//! Batch writers in flight: each batch is written on the blocking pool (rows in parallel on
//! rayon's), at most [`BATCHES_IN_FLIGHT`] at once, so reading the next batch overlaps writing
//! the last ones while memory stays bounded.

use std::collections::VecDeque;

use tokio::task::JoinHandle;

use crate::error::Result;

/// Batches being written at once; each is written by rayon's pool, so this bounds memory, not
/// parallelism.
const BATCHES_IN_FLIGHT: usize = 2;

/// Studies, questions and bytes written.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Written {
    pub studies: usize,
    pub questions: usize,
    pub bytes: u64,
}

impl Written {
    pub fn add(self, other: Written) -> Written {
        Written {
            studies: self.studies + other.studies,
            questions: self.questions + other.questions,
            bytes: self.bytes + other.bytes,
        }
    }
}

/// Batch writers in flight, at most [`BATCHES_IN_FLIGHT`].
#[derive(Debug, Default)]
pub(crate) struct Writers {
    pending: VecDeque<JoinHandle<Result<Written>>>,
    written: Written,
}

impl Writers {
    /// Starts `task`, first waiting for the oldest one if too many are running.
    pub async fn push(&mut self, task: JoinHandle<Result<Written>>) -> Result<()> {
        self.pending.push_back(task);
        if self.pending.len() > BATCHES_IN_FLIGHT
            && let Some(oldest) = self.pending.pop_front()
        {
            self.written = self.written.add(oldest.await??);
        }
        Ok(())
    }

    /// Waits for every task; the first error wins.
    pub async fn finish(&mut self) -> Result<Written> {
        let mut first_error = None;
        while let Some(task) = self.pending.pop_front() {
            match task.await {
                Ok(Ok(written)) => self.written = self.written.add(written),
                Ok(Err(err)) => {
                    first_error.get_or_insert(err);
                }
                Err(err) => {
                    first_error.get_or_insert(err.into());
                }
            }
        }
        first_error.map_or(Ok(self.written), Err)
    }
}
