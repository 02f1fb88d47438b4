//! The pipeline side of the generation operator shared by every flavour: which backend a stage
//! binds under the task's SQL name (the offline generator, or the LLM through the lake's
//! `llm_calls` cache, by `cxrlake.generator`), the generator id its fingerprint records, and the
//! run's hooks (a step whose every LLM call failed stops the stage; rejects and LLM calls are
//! counted). [`GenerationStage`] is the shape every flavour's generation stage shares, written
//! once: a flavour declares one as data (its task, record fields, step and own definitions).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use async_trait::async_trait;
use cxrlake_generate::{GenerationTask, PromptSet};
use cxrlake_llm::LlmClient;
use cxrlake_udfs::generate::{GenerateFunc, LlmGenerateFunc};
use datafusion::arrow::array::{Array, AsArray, RecordBatch};
use datafusion::arrow::datatypes::Field;
use datafusion::logical_expr::ScalarUDF;
use datafusion::logical_expr::async_udf::AsyncScalarUDF;
use datafusion::prelude::SessionContext;
use datafusion::scalar::ScalarValue;

use crate::error::{PipelineError, Result};
use crate::llm_calls::{cached_client, check_answers, llm_metrics};
use crate::pipeline::Pipeline;
use crate::scope::Scope;
use crate::sql::Statement;
use crate::stage::{
    LlmRequests, Metrics, Prepared, RunHooks, RunMode, Stage, StageDef, StageReport,
};

/// The generator a task's rows record: the offline generator's id, or
/// `llm:<model>@<prompts version>`.
pub fn generator_id(
    pipeline: &Pipeline,
    task: &dyn GenerationTask,
    prompt_version: &str,
) -> Result<String> {
    Ok(match pipeline.config().generator.as_str() {
        "llm" => format!(
            "llm:{}@{prompt_version}",
            pipeline.required_llm("generator")?.model
        ),
        _ => task.offline_id().to_string(),
    })
}

/// A flavour's prompts: `<folder>/` of `cxrlake.flavour_prompts` when set, else `embedded`;
/// `label` names the flavour in errors.
pub fn flavour_prompts(
    pipeline: &Pipeline,
    folder: &str,
    embedded: fn() -> cxrlake_generate::Result<PromptSet>,
    label: &str,
) -> Result<Arc<PromptSet>> {
    let prompts = match crate::settings::path(&pipeline.config().flavour_prompts) {
        Some(dir) => PromptSet::load(&dir.join(folder)),
        None => embedded(),
    }
    .map_err(|e| PipelineError::Definitions(format!("{label} prompts: {e}")))?;
    Ok(Arc::new(prompts))
}

/// A task bound to its backend: the SQL function (named as the task) and, for an LLM, the
/// client whose calls the hooks count.
#[derive(Debug)]
pub struct Bound {
    /// The function to register.
    pub function: ScalarUDF,
    /// The run's hooks.
    pub hooks: GenerationHooks,
}

/// Binds `task` (records of `record` fields) to the backend `cxrlake.generator` names; `step`
/// is the statement that calls it, whose `g` column (the function's result) the hooks read.
pub async fn bind(
    pipeline: &Pipeline,
    task: Arc<dyn GenerationTask>,
    record: Vec<Field>,
    prompt_version: &str,
    step: &'static str,
) -> Result<Bound> {
    let generator = generator_id(pipeline, task.as_ref(), prompt_version)?;
    let (function, client) = match pipeline.config().generator.as_str() {
        "llm" => {
            let config = pipeline.required_llm("generator")?;
            let client = cached_client(pipeline, task.name(), config, prompt_version).await?;
            let function =
                AsyncScalarUDF::new(Arc::new(LlmGenerateFunc::new(task, client.clone(), record)))
                    .into_scalar_udf();
            (function, Some(client))
        }
        _ => (ScalarUDF::from(GenerateFunc::new(task, record)), None),
    };
    Ok(Bound {
        function,
        hooks: GenerationHooks {
            step,
            generator,
            client,
            rows: 0,
            rejects: 0,
        },
    })
}

/// A generation stage's state: its LLM client and what its step produced.
#[derive(Debug)]
pub struct GenerationHooks {
    step: &'static str,
    generator: String,
    client: Option<Arc<LlmClient>>,
    rows: u64,
    rejects: u64,
}

#[async_trait]
impl RunHooks for GenerationHooks {
    async fn after_statement(
        &mut self,
        _ctx: &SessionContext,
        statement: &Statement,
        batches: &[RecordBatch],
    ) -> Result<()> {
        if statement.name != self.step {
            return Ok(());
        }
        if self.client.is_some() {
            // A generated record that fails its checks after its retries is a reject of the
            // flavour's QC (quarantined, counted); only a step of nothing but rejects fails.
            check_answers(self.step, batches, Some("g"), 1.0, &BTreeSet::new())?;
        }
        for batch in batches {
            self.rows += batch.num_rows() as u64;
            if let Some(errors) = batch
                .column_by_name("g")
                .and_then(|g| g.as_struct_opt())
                .and_then(|g| g.column_by_name("error"))
            {
                self.rejects += (errors.len() - errors.null_count()) as u64;
            }
        }
        Ok(())
    }

    /// The step's rows and rejects are counted.
    fn reads_rows(&self, statement: &Statement) -> bool {
        statement.name == self.step
    }

    async fn finish(&mut self, _pipeline: &Pipeline, _scope: &Scope) -> Result<Metrics> {
        let mut metrics = Metrics::from([
            ("generator".to_string(), self.generator.clone().into()),
            ("inputs".to_string(), self.rows.into()),
            ("rejects".to_string(), self.rejects.into()),
        ]);
        if let Some(client) = &self.client {
            metrics.extend(llm_metrics(&client.stats()));
        }
        Ok(metrics)
    }
}

/// A stage's own functions and parameters besides its task's function.
pub type Extras = (Vec<ScalarUDF>, Vec<(&'static str, ScalarValue)>);

/// A generation stage: one task bound to the generator ([`bind`]) and called by the stage's
/// SQL at `step`; its fingerprint is the generator id and the flavour's `definitions`, its run
/// the bound function and the stage's `extras`.
#[derive(Debug, Clone, Copy)]
pub struct GenerationStage {
    /// The stage's declaration.
    pub def: &'static StageDef,
    /// The task (its prompts' version is the one the rows record).
    pub task: fn(&Pipeline) -> Result<Arc<dyn GenerationTask>>,
    /// The fields of one generated record.
    pub record: fn() -> Vec<Field>,
    /// The statement (`-- @step`) whose `g` column is the task's result.
    pub step: &'static str,
    /// SQL with one row (with its `study_id`) per LLM request at most.
    pub requests: &'static str,
    /// What its rows depend on besides the generator (a vocabulary's version, …).
    pub definitions: fn(&Pipeline) -> Result<BTreeMap<String, String>>,
    /// Its own functions and parameters.
    pub extras: fn(&Pipeline) -> Result<Extras>,
    /// One line on a run (the LLM calls are added).
    pub describe: fn(&StageReport) -> String,
}

/// No extra functions or parameters.
pub fn no_extras(_pipeline: &Pipeline) -> Result<Extras> {
    Ok((Vec::new(), Vec::new()))
}

/// A task's construction error as a configuration error naming the task (`label`).
pub fn task_error<E: std::fmt::Display>(label: &'static str) -> impl Fn(E) -> PipelineError {
    move |e| PipelineError::Definitions(format!("{label}: {e}"))
}

#[async_trait]
impl Stage for GenerationStage {
    fn def(&self) -> &'static StageDef {
        self.def
    }

    fn llm_requests(&self) -> Option<LlmRequests> {
        Some(LlmRequests {
            backend: "generator",
            rows: self.requests,
        })
    }

    async fn definitions(&self, pipeline: &Pipeline) -> Result<BTreeMap<String, String>> {
        let task = (self.task)(pipeline)?;
        let mut definitions = (self.definitions)(pipeline)?;
        definitions.insert(
            "generator".into(),
            generator_id(pipeline, task.as_ref(), task.prompt_version())?,
        );
        Ok(definitions)
    }

    async fn prepare(&self, pipeline: &Pipeline, _mode: RunMode) -> Result<Prepared> {
        let task = (self.task)(pipeline)?;
        let version = task.prompt_version().to_string();
        let bound = bind(pipeline, task, (self.record)(), &version, self.step).await?;
        let (mut functions, params) = (self.extras)(pipeline)?;
        functions.insert(0, bound.function);
        Ok(Prepared::new(functions, params).with_hooks(bound.hooks))
    }

    fn describe(&self, report: &StageReport) -> String {
        (self.describe)(report) + &crate::llm_calls::describe_llm(report)
    }
}
