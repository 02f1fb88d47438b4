//! Which studies a stage run recomputes, and which studies' rows a run actually changed.
//!
//! An incremental run (see [`crate::incremental`]) gives each per-study stage a [`Scope`]: the
//! studies whose inputs or definitions changed. The stage recomputes exactly those studies and
//! replaces their rows (Delta replace-where by `study_id`). Before writing, it compares every
//! scoped study's new rows with its old rows as an order-independent multiset digest (count and
//! two sums of 64-bit row hashes over all columns); only the studies whose rows differ are
//! passed on as the next stage's scope (not in qa: see [`crate::qa::run_scoped`]).

use std::collections::{BTreeSet, HashMap};

use cxrlake_lake::Lake;
use datafusion::arrow::array::{Array, AsArray, RecordBatch, new_null_array};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::DataType;
use datafusion::common::hash_utils::{RandomState, create_hashes};
use datafusion::prelude::{Expr, SessionContext};
use futures::StreamExt;

use crate::error::{PipelineError, Result};
use crate::sql::conform;

/// The studies a stage run covers.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Scope {
    /// Every study (a full run).
    #[default]
    All,
    /// Only these studies (study ids).
    Studies(BTreeSet<String>),
}

impl Scope {
    /// No study at all.
    pub fn none() -> Self {
        Scope::Studies(BTreeSet::new())
    }

    /// Whether no study is covered.
    pub fn is_empty(&self) -> bool {
        matches!(self, Scope::Studies(s) if s.is_empty())
    }

    /// Whether every study is covered.
    pub fn is_all(&self) -> bool {
        matches!(self, Scope::All)
    }

    /// Adds `other`'s studies.
    pub fn extend(&mut self, other: &Scope) {
        match (&mut *self, other) {
            (Scope::All, _) => {}
            (_, Scope::All) => *self = Scope::All,
            (Scope::Studies(mine), Scope::Studies(theirs)) => mine.extend(theirs.iter().cloned()),
        }
    }

    /// Adds studies.
    pub fn add(&mut self, studies: impl IntoIterator<Item = String>) {
        if let Scope::Studies(mine) = self {
            mine.extend(studies);
        }
    }

    /// The union of `self` and `other`.
    pub fn union(mut self, other: &Scope) -> Scope {
        self.extend(other);
        self
    }

    /// The studies, `None` for all.
    pub fn studies(&self) -> Option<&BTreeSet<String>> {
        match self {
            Scope::All => None,
            Scope::Studies(s) => Some(s),
        }
    }

    /// "all studies" or "N studies".
    pub fn describe(&self) -> String {
        match self {
            Scope::All => "all studies".into(),
            Scope::Studies(s) if s.len() == 1 => "1 study".into(),
            Scope::Studies(s) => format!("{} studies", s.len()),
        }
    }

    /// The scope as commit metrics: `"all"` or the list of study ids.
    pub fn to_json(&self) -> serde_json::Value {
        match self {
            Scope::All => serde_json::json!("all"),
            Scope::Studies(s) => serde_json::json!(s),
        }
    }

    /// The scope recorded by [`Scope::to_json`]; anything else (an older commit) is all.
    pub fn from_json(value: &serde_json::Value) -> Scope {
        match value.as_array() {
            Some(ids) => Scope::Studies(
                ids.iter()
                    .filter_map(|v| v.as_str().map(str::to_string))
                    .collect(),
            ),
            None => Scope::All,
        }
    }
}

/// Per study: row count and two wrapping sums of row hashes (a multiset digest).
pub(crate) type Digests = StudyDigests;

/// Adds the rows of `batches` (conformed to the table's schema) to `digests`, by `study_id`
/// (under `""` for a table without one, e.g. `qa_balance`).
pub(crate) fn digest(
    stage: &'static str,
    batches: &[RecordBatch],
    digests: &mut Digests,
) -> Result<()> {
    let first = RandomState::with_seed(0x5eed_0001);
    let second = RandomState::with_seed(0x5eed_0002);
    for batch in batches.iter().filter(|b| b.num_rows() > 0) {
        let n = batch.num_rows();
        let study = match batch.column_by_name("study_id") {
            Some(study) => cast(study, &DataType::Utf8),
            None => cast(&new_null_array(&DataType::Utf8, n), &DataType::Utf8),
        }
        .map_err(|e| PipelineError::query(stage, e.into()))?;
        let study = study.as_string::<i32>();
        let (mut a, mut b) = (vec![0u64; n], vec![0u64; n]);
        create_hashes(batch.columns(), &first, &mut a)
            .map_err(|e| PipelineError::query(stage, e))?;
        create_hashes(batch.columns(), &second, &mut b)
            .map_err(|e| PipelineError::query(stage, e))?;
        for row in 0..n {
            let id = if study.is_null(row) {
                ""
            } else {
                study.value(row)
            };
            let entry = digests.entry(id.to_string()).or_default();
            entry.0 += 1;
            entry.1 = entry.1.wrapping_add(a[row]);
            entry.2 = entry.2.wrapping_add(b[row]);
        }
    }
    Ok(())
}

/// The digests of the rows `table` holds in `ctx` (the snapshot before a write) that match
/// `filter` (all rows without one).
pub(crate) async fn table_digests(
    ctx: &SessionContext,
    stage: &'static str,
    table: &str,
    filter: Option<Expr>,
) -> Result<Digests> {
    // Rows as the table declares them (a table cxrlake does not declare: as read).
    let schema = cxrlake_schemas::table(table).map(|t| (t.schema)());
    let frame = ctx
        .table(table)
        .await
        .map_err(|e| PipelineError::query(stage, e))?;
    let frame = match filter {
        Some(filter) => frame
            .filter(filter)
            .map_err(|e| PipelineError::query(stage, e))?,
        None => frame,
    };
    // Streamed: a whole table's rows need not fit in memory.
    let mut stream = frame
        .execute_stream()
        .await
        .map_err(|e| PipelineError::query(stage, e))?;
    let mut digests = Digests::new();
    while let Some(batch) = stream.next().await {
        let batch = batch.map_err(|e| PipelineError::query(stage, e))?;
        if batch.num_rows() > 0 {
            let batch = match &schema {
                Some(schema) => conform(stage, table, schema, &batch)?,
                None => batch,
            };
            digest(stage, &[batch], &mut digests)?;
        }
    }
    Ok(digests)
}

/// The digests of the rows of `ids` in `table` (its latest version in `lake`), reading only
/// the row groups that hold them.
pub(crate) async fn study_digests_of(
    lake: &Lake,
    stage: &'static str,
    table: &str,
    ids: &BTreeSet<String>,
) -> Result<Digests> {
    let batches = lake.read_studies(table, None, ids).await?;
    let mut digests = Digests::new();
    digest(stage, &batches, &mut digests)?;
    Ok(digests)
}

/// Per study of `table` (its current version in `lake`): row count and two sums of row hashes,
/// to compare the contents of two lakes, or of one lake at two times, order-independently.
pub type StudyDigests = HashMap<String, (u64, u64, u64)>;

/// The [`StudyDigests`] of `table` in `lake`.
pub async fn study_digests(lake: &Lake, table: &'static str) -> Result<StudyDigests> {
    table_digests(&lake.session().await?, "digest", table, None).await
}

/// The studies whose digests differ between `old` and `new`.
pub(crate) fn changed(old: &Digests, new: &Digests) -> BTreeSet<String> {
    old.iter()
        .filter(|(id, d)| new.get(*id) != Some(d))
        .map(|(id, _)| id.clone())
        .chain(new.keys().filter(|id| !old.contains_key(*id)).cloned())
        .collect()
}
