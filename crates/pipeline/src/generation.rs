//! The pipeline side of the generation operator shared by every flavour: which backend a stage
//! binds under the task's SQL name (the offline generator, or the LLM through the lake's
//! `llm_calls` cache, by `cxrlake.generator`), the generator id its fingerprint records, and the
//! run's hooks (a step whose every LLM call failed stops the stage; rejects and LLM calls are
//! counted).

use std::collections::BTreeSet;
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

use crate::error::{PipelineError, Result};
use crate::llm_calls::{cached_client, check_answers, llm_metrics};
use crate::pipeline::Pipeline;
use crate::scope::Scope;
use crate::sql::Statement;
use crate::stage::{Metrics, RunHooks};

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
    .map_err(|e| PipelineError::Config(format!("{label} prompts: {e}")))?;
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

impl Bound {
    /// The stage's run: the bound function, `params`, and the hooks.
    pub fn prepared(
        self,
        params: Vec<(&'static str, datafusion::common::ScalarValue)>,
    ) -> crate::stage::Prepared {
        crate::stage::Prepared::new(vec![self.function], params).with_hooks(self.hooks)
    }
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
