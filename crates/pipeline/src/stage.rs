//! The stage model: a stage is a declaration ([`StageDef`]: name, SQL file, input and output
//! tables, settings read, chunking, how it writes) and a few hooks ([`Stage`]: the functions and
//! parameters a run needs, the definitions its rows depend on, stage-specific scoping). One
//! runner (`runner.rs`) executes every stage; the pipeline graph (`stages.rs`) lists them once,
//! and `plan`, `status`, `run` and the incremental logic read it.
//!
//! ```text
//!  StageDef ──┐                 ┌─ per chunk: session over the inputs (patients or studies),
//!             ├─ runner::run ───┤   run_scope + $full, Prepared::functions, every statement,
//!  Stage::prepare → Prepared ───┘   conform, detect changed studies, commit with Fingerprint
//!             │                        └─ RunHooks: before_chunk / after_statement / finish
//!  Stage::definitions ───► Fingerprint::definitions ───► incremental::decide (+ Stage::rescope)
//! ```

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use async_trait::async_trait;
use cxrlake_refdefs::RefDefs;
use cxrlake_schemas::TableDef;
use cxrlake_udfs::portable::{self, Recipe};
use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::logical_expr::ScalarUDF;
use datafusion::prelude::{Expr, SessionContext};
use datafusion::scalar::ScalarValue;
use serde_json::Value;

use crate::error::{PipelineError, Result};
use crate::fingerprint::Fingerprint;
use crate::incremental::StagePlan;
use crate::pipeline::Pipeline;
use crate::scope::Scope;
use crate::settings;
use crate::sql::Statement;

/// How a stage splits its work.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Chunking {
    /// Chunks of patients of its first input table (`cxrlake.chunk_patients`, else `default`
    /// patients; a scoped run takes 30 times as many studies per chunk); one commit per chunk
    /// and table, so memory is bounded by the chunk.
    Patients {
        /// Patients per chunk when `cxrlake.chunk_patients` is 0.
        default: usize,
    },
    /// One chunk: every statement runs before any table is written (a failing step changes
    /// nothing).
    Whole,
}

/// How a stage writes its tables.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Writes {
    /// Replace: a full run's first chunk overwrites each table, later chunks append; a scoped
    /// run replaces exactly its studies' rows of per-study tables.
    Replace,
    /// Append only (content-addressed tables such as `qa_judgements`).
    Append,
}

/// Which studies a stage runs over.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Coverage {
    /// Each study on its own: a run may cover some studies.
    PerStudy,
    /// The whole dataset at once (e.g. `qa_balance` counts over all scene graphs): any change
    /// reruns it over everything.
    Dataset,
}

/// A stage's declaration.
#[derive(Debug, Clone, Copy)]
pub struct StageDef {
    /// Stage name = SQL file name (`sql/<name>.sql`) = module name.
    pub name: &'static str,
    /// One line on what it computes.
    pub doc: &'static str,
    /// Its SQL (`include_str!` of the file).
    pub sql: &'static str,
    /// That file, from the repository's root (`sql/qa.sql`, `crates/gemex/sql/generate.sql`):
    /// what errors and plans name.
    pub file: &'static str,
    /// Tables it reads; the first lists the patients of a chunked run. The producer of each is
    /// the nearest stage before it in the graph that writes it (else a source table).
    pub inputs: &'static [&'static str],
    /// Tables it also reads, whole and at their newest version, without tracking them: their
    /// changes do not make the stage stale (extract reads `quarantine` to keep the other stages'
    /// rows when it rewrites its own).
    pub side_inputs: &'static [&'static str],
    /// Tables it writes (every `-- @table` of its SQL is one of them).
    pub outputs: &'static [&'static str],
    /// The `cxrlake.*` settings it reads. This is its identity ([`identity`]): the value of each
    /// is in its fingerprint, except the operational ones
    /// ([`OPERATIONAL_KEYS`](crate::settings::OPERATIONAL_KEYS)), the folders and files
    /// ([`PATH_KEYS`](crate::settings::PATH_KEYS)), whose content versions
    /// [`Stage::definitions`] gives, and `llm_model`, which the backend ids carry.
    pub settings: &'static [&'static str],
    /// How it splits its work.
    pub chunking: Chunking,
    /// How it writes.
    pub writes: Writes,
    /// Which studies a run covers.
    pub coverage: Coverage,
    /// Whether an incremental run compares each study's new rows with its old ones and passes
    /// on only the studies that changed (else the whole scope).
    pub detects_changes: bool,
    /// Whether an edit of the definitions' synonyms alone can change its rows (extract and map
    /// read synonyms; localize, graph and qa see only mapped names and the structure).
    pub reads_synonyms: bool,
}

/// What a generation stage reads: its backend, the LLM, its prompts, its chunk size.
pub const GENERATION_SETTINGS: &[&str] = &[
    "generator",
    "llm_endpoint",
    "llm_model",
    "flavour_prompts",
    "chunk_patients",
];

/// [`GENERATION_SETTINGS`] and the reference definitions folder (whose flavour definitions the
/// task loads).
pub const GENERATION_SETTINGS_AND_REFDEFS: &[&str] = &[
    "refdefs",
    "generator",
    "llm_endpoint",
    "llm_model",
    "flavour_prompts",
    "chunk_patients",
];

impl StageDef {
    /// A flavour's generation stage ([`GenerationStage`](crate::generation::GenerationStage)):
    /// per study, in chunks of 2,000 patients (`cxrlake.chunk_patients`), replacing its rows,
    /// its rejects written to `quarantine` (which it reads whole, as a side input), passing on
    /// only the studies whose rows changed; a synonym edit can change its rows.
    pub const fn generation(
        name: &'static str,
        doc: &'static str,
        sql: &'static str,
        file: &'static str,
        inputs: &'static [&'static str],
        outputs: &'static [&'static str],
        settings: &'static [&'static str],
    ) -> StageDef {
        StageDef {
            name,
            doc,
            sql,
            file,
            inputs,
            side_inputs: &["quarantine"],
            outputs,
            settings,
            chunking: Chunking::Patients { default: 2000 },
            writes: Writes::Replace,
            coverage: Coverage::PerStudy,
            detects_changes: true,
            reads_synonyms: true,
        }
    }
}

/// What `stage`'s rows depend on besides its input tables, by name: [`Stage::definitions`] (the
/// identities of what it loads: refdefs fingerprint, templates and prompts versions, backend
/// ids) and the value of every setting [`StageDef::settings`] declares, so that a declared
/// setting cannot be left out of the fingerprint. Operational settings, folders and files
/// (their content is in the definitions) and `llm_model` (in the backend ids) are not added as
/// values. The pipeline's runner and planner read a stage's fingerprint only through here.
pub async fn identity(stage: &dyn Stage, pipeline: &Pipeline) -> Result<BTreeMap<String, String>> {
    let def = stage.def();
    let mut identity = stage.definitions(pipeline).await?;
    for key in def.settings {
        let value = pipeline.settings().get(key).ok_or_else(|| {
            PipelineError::setting(
                key,
                format!(
                    "stage {} declares the setting {key}, which is not a cxrlake.* key",
                    def.name
                ),
            )
        })?;
        let by_backend = settings::BACKEND_PARTS.iter().any(|(part, _)| part == key);
        if settings::OPERATIONAL_KEYS.contains(key)
            || settings::PATH_KEYS.contains(key)
            || by_backend
        {
            continue;
        }
        identity.entry((*key).to_string()).or_insert(value);
    }
    Ok(identity)
}

/// How many LLM requests a stage run sends ([`Stage::llm_requests`]).
#[derive(Debug, Clone, Copy)]
pub struct LlmRequests {
    /// The setting naming the stage's backend (`extractor`, `generator`): requests are sent
    /// when it is `llm`.
    pub backend: &'static str,
    /// SQL over the lake with one row, with its `study_id`, per request (retries aside); `plan`
    /// counts the rows of the studies the run recomputes, as the lake holds them now.
    pub rows: &'static str,
}

/// What a stage run computes with, built by [`Stage::prepare`].
pub struct Prepared {
    /// SQL functions besides cxrlake's own (they hold the run's definitions).
    pub functions: Vec<ScalarUDF>,
    /// `$name` parameters of the SQL.
    pub params: Vec<(&'static str, ScalarValue)>,
    /// The run's state between chunks.
    pub hooks: Box<dyn RunHooks>,
}

impl fmt::Debug for Prepared {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Prepared")
            .field(
                "functions",
                &self
                    .functions
                    .iter()
                    .map(ScalarUDF::name)
                    .collect::<Vec<_>>(),
            )
            .field("params", &self.params)
            .finish_non_exhaustive()
    }
}

/// A stage's functions built from `recipe` over `defs`: they travel to a cluster's executors
/// with it (`cxrlake_udfs::portable`).
pub(crate) fn recipe_functions(
    stage: &'static str,
    recipe: Recipe,
    defs: &RefDefs,
) -> Result<Vec<ScalarUDF>> {
    portable::stage_functions(recipe, defs).map_err(|e| PipelineError::query(stage, e))
}

impl Prepared {
    /// Functions and parameters without per-run state.
    pub fn new(functions: Vec<ScalarUDF>, params: Vec<(&'static str, ScalarValue)>) -> Self {
        Self {
            functions,
            params,
            hooks: Box::new(NoHooks),
        }
    }

    /// With per-run state.
    pub fn with_hooks(mut self, hooks: impl RunHooks + 'static) -> Self {
        self.hooks = Box::new(hooks);
        self
    }
}

/// Stage-specific figures of a run (`images`, `judged`, LLM call counts, …), shown in its
/// report.
pub type Metrics = BTreeMap<String, Value>;

/// A chunk as the hooks see it.
#[derive(Debug, Clone, Copy)]
pub struct ChunkInfo<'a> {
    /// 0-based index …
    pub index: usize,
    /// … of this many chunks.
    pub chunks: usize,
    /// The studies of a scoped chunk (`None`: a range of patients).
    pub studies: Option<&'a [String]>,
}

/// A stage run's state across its chunks.
#[async_trait]
pub trait RunHooks: Send {
    /// Before a chunk's statements, with its session (e.g. register a table).
    async fn before_chunk(&mut self, _ctx: &SessionContext, _chunk: ChunkInfo<'_>) -> Result<()> {
        Ok(())
    }

    /// After each statement, with its result (a `@table` statement's as the table declares it).
    async fn after_statement(
        &mut self,
        _ctx: &SessionContext,
        _statement: &Statement,
        _batches: &[RecordBatch],
    ) -> Result<()> {
        Ok(())
    }

    /// Tables for the statements after `statement`, computed from its result (e.g. its rows
    /// looked up in an index the hooks hold for the run). The runner keeps them as it keeps the
    /// stage's steps: in memory, or on a cluster as the chunk's scratch tables in the lake, which
    /// the executors read as files instead of receiving them inside every plan. Called after
    /// [`Self::after_statement`].
    fn tables_after(
        &mut self,
        _statement: &Statement,
        _batches: &[RecordBatch],
    ) -> Result<Vec<HookTable>> {
        Ok(Vec::new())
    }

    /// Studies of the chunk just run whose rows are incomplete because an LLM answer could not
    /// be used; the chunk's commits record them and the next run recomputes them (drained once
    /// per chunk).
    fn unfinished(&mut self) -> BTreeSet<String> {
        BTreeSet::new()
    }

    /// Whether [`Self::after_statement`] or [`Self::tables_after`] read the rows of the `@table`
    /// statement `statement`. On a cluster the executors write the rows of the others as data
    /// files, which this process commits without reading them: the hooks are not called for
    /// those statements.
    fn reads_rows(&self, _statement: &Statement) -> bool {
        false
    }

    /// For an append-only output table, the rows this chunk's rows replace (in the same commit;
    /// every written row must match the predicate), e.g. the failed verdicts a rerun asked
    /// again. Called after the chunk's statements; `None` appends.
    fn replaces(&mut self, _table: &str) -> Option<Expr> {
        None
    }

    /// After the last chunk was written: write caches, count, and return the run's metrics.
    async fn finish(&mut self, _pipeline: &Pipeline, _scope: &Scope) -> Result<Metrics> {
        Ok(Metrics::new())
    }
}

/// A table that hooks add to a chunk's session ([`RunHooks::tables_after`]).
#[derive(Debug)]
pub struct HookTable {
    /// The name the SQL reads.
    pub name: &'static str,
    /// Its schema.
    pub schema: SchemaRef,
    /// Its rows.
    pub batches: Vec<RecordBatch>,
}

/// Hooks that do nothing.
#[derive(Debug)]
struct NoHooks;

impl RunHooks for NoHooks {}

/// How a stage run ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RunMode {
    /// Compute and write.
    #[default]
    Write,
    /// Compute and count, write nothing (`cxrlake run judge --plan`).
    CountOnly,
}

/// One pipeline stage. Implementations are small: a [`StageDef`], the functions of a run, and
/// the definitions its rows depend on; everything else is the runner's.
#[async_trait]
pub trait Stage: fmt::Debug + Send + Sync {
    /// The declaration.
    fn def(&self) -> &'static StageDef;

    /// The definition of output table `name` (the lake's tables by default).
    fn table(&self, name: &str) -> Option<TableDef> {
        cxrlake_schemas::table(name).copied()
    }

    /// The identities of the definitions and backends the stage loads (refdefs fingerprint,
    /// templates version, extractor id, …), one for each folder or file setting it declares.
    /// With the values of its declared settings this is its fingerprint's `definitions`
    /// ([`identity`]); an entry named after a setting replaces that setting's value.
    async fn definitions(&self, pipeline: &Pipeline) -> Result<BTreeMap<String, String>>;

    /// The functions, parameters and per-run state of a run.
    async fn prepare(&self, pipeline: &Pipeline, mode: RunMode) -> Result<Prepared>;

    /// Stage-specific scoping of an incremental run: `plan` holds what the generic rules found
    /// (inputs rewritten since `last`); a stage adds what its changed definitions mean. The
    /// default recomputes every study when any definition changed, except for an edit of the
    /// definitions' synonyms alone in a stage that does not read them.
    async fn rescope(
        &self,
        pipeline: &Pipeline,
        last: &Fingerprint,
        now: &BTreeMap<String, String>,
        plan: &mut StagePlan,
    ) -> Result<()> {
        if self.def().reads_synonyms {
            crate::incremental::rescope_other_definitions(last, now, plan, &[]);
            Ok(())
        } else {
            crate::incremental::rescope_structural(pipeline, last, now, plan).await
        }
    }

    /// The studies an input table's rewrite since version `since` changes for this stage;
    /// `None` for the generic rule (the studies its producer's commits name).
    async fn input_changes(
        &self,
        pipeline: &Pipeline,
        table: &str,
        since: u64,
        now: u64,
    ) -> Result<Option<(Scope, String)>> {
        let _ = (pipeline, table, since, now);
        Ok(None)
    }

    /// The LLM requests a run sends when the stage's backend is an LLM, for `plan`: `None` for
    /// a stage that never asks one (the judge's calls are counted from the QA pairs it judges).
    fn llm_requests(&self) -> Option<LlmRequests> {
        None
    }

    /// A one-line summary of a run's report (the runner's generic one by default).
    fn describe(&self, report: &StageReport) -> String {
        report.generic_summary()
    }
}

/// What one stage run did.
#[derive(Debug, Clone, PartialEq)]
pub struct StageReport {
    /// The stage.
    pub stage: &'static str,
    /// The studies it ran over.
    pub scope: Scope,
    /// Rows written (or computed, when counting only) per output table.
    pub rows: Vec<(String, usize)>,
    /// Chunks run.
    pub chunks: usize,
    /// The last table version committed (0 when nothing was written).
    pub version: u64,
    /// The studies whose rows changed (the scope unless the stage detects changes).
    pub changed: Scope,
    /// Studies (or patients of a full run) covered, for the rate.
    pub units: (usize, &'static str),
    /// Wall time in seconds.
    pub seconds: f64,
    /// Stage-specific figures.
    pub metrics: Metrics,
    /// The stage's one-line summary.
    pub summary: String,
}

impl StageReport {
    /// Rows written to `table`.
    pub fn rows(&self, table: &str) -> usize {
        self.rows
            .iter()
            .find(|(name, _)| name == table)
            .map_or(0, |(_, n)| *n)
    }

    /// Rows written to all tables.
    pub fn total_rows(&self) -> usize {
        self.rows.iter().map(|(_, n)| n).sum()
    }

    /// A stage-specific figure as a number (0 when absent).
    pub fn metric(&self, name: &str) -> u64 {
        self.metrics.get(name).and_then(Value::as_u64).unwrap_or(0)
    }

    /// A stage-specific figure as text (empty when absent).
    pub fn metric_text(&self, name: &str) -> String {
        match self.metrics.get(name) {
            Some(Value::String(s)) => s.clone(),
            Some(other) => other.to_string(),
            None => String::new(),
        }
    }

    /// `stage: N table, … in S s (R rows/s; U patients in C chunks), vV`.
    pub fn generic_summary(&self) -> String {
        let rows: Vec<String> = self
            .rows
            .iter()
            .map(|(table, n)| format!("{n} {table}"))
            .collect();
        let (units, unit) = self.units;
        let mut line = format!(
            "{}: {} in {:.1} s ({:.0} rows/s; {units} {unit} in {} chunk{})",
            self.stage,
            if rows.is_empty() {
                "nothing written".to_string()
            } else {
                rows.join(", ")
            },
            self.seconds,
            self.total_rows() as f64 / self.seconds.max(1e-9),
            self.chunks,
            if self.chunks == 1 { "" } else { "s" },
        );
        if self.version > 0 {
            line.push_str(&format!(", v{}", self.version));
        }
        line
    }
}

impl fmt::Display for StageReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.summary)
    }
}
