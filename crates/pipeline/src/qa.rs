//! The `qa` stage (`sql/qa.sql`): question–answer pairs from every scene graph with the template
//! engine of `generate_qa` (paper 000, section 3.2, E.2, D.2), chunk by chunk of patients.
//! Reads `qa_balance` (run the balance stage first) for the sampling probabilities and the
//! correlated findings.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use cxrlake_lake::Lake;
use cxrlake_map::Reference;
use cxrlake_qa::{Balance, Engine};
use cxrlake_refdefs::RefDefs;
use cxrlake_templates::Templates;
use cxrlake_udfs::qa::GenerateQaFunc;
use datafusion::arrow::array::{Array, ArrayRef, AsArray};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Float64Type};
use datafusion::logical_expr::ScalarUDF;
use serde_json::json;

use crate::error::{PipelineError, Result};
use crate::scope::Scope;
use crate::stage::{ChunkedStage, collect, sql_hash};

/// Stage name (= SQL file name = module name).
pub const STAGE: &str = "qa";
/// The stage's SQL.
pub const SQL: &str = include_str!("../../../sql/qa.sql");

const INPUTS: [&str; 1] = ["scene_graphs"];

/// Options of the qa stage.
#[derive(Debug, Clone)]
pub struct QaOptions {
    /// Patients per chunk.
    pub chunk_patients: usize,
    /// A templates folder to use instead of the embedded one.
    pub templates: Option<PathBuf>,
}

impl Default for QaOptions {
    fn default() -> Self {
        Self {
            chunk_patients: 100,
            templates: None,
        }
    }
}

impl QaOptions {
    /// The templates these options name, checked against `defs`.
    pub fn load_templates(&self, defs: &RefDefs) -> Result<Templates> {
        Ok(match &self.templates {
            Some(dir) => Templates::load(dir, defs)?,
            None => Templates::embedded(defs)?,
        })
    }
}

/// What a qa run did.
#[derive(Debug, Clone, PartialEq)]
pub struct QaSummary {
    /// Questions written.
    pub questions: usize,
    /// Studies that have a scene graph.
    pub studies: usize,
    /// Templates version.
    pub templates: String,
    /// Table version committed last.
    pub version: u64,
    /// Wall time in seconds.
    pub seconds: f64,
}

impl std::fmt::Display for QaSummary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "qa: {} questions for {} studies ({:.1} per study) in {:.1} s ({:.0} QA pairs/s), \
             templates {}, qa v{}",
            self.questions,
            self.studies,
            self.questions as f64 / self.studies.max(1) as f64,
            self.seconds,
            self.questions as f64 / self.seconds.max(1e-9),
            self.templates,
            self.version
        )
    }
}

/// Reads `qa_balance` into the engine's sampling inputs.
pub async fn read_balance(lake: &Lake) -> Result<Balance> {
    let ctx = lake.session().await?;
    let batches = collect(
        &ctx,
        STAGE,
        "SELECT kind, name, sample_probability, correlated FROM qa_balance ORDER BY kind, name",
    )
    .await?;
    let mut balance = Balance::default();
    for batch in &batches {
        let kinds = utf8(batch.column(0))?;
        let names = utf8(batch.column(1))?;
        let kinds = kinds.as_string::<i32>();
        let names = names.as_string::<i32>();
        let probabilities = batch.column(2).as_primitive::<Float64Type>();
        let correlated = batch.column(3).as_list::<i32>();
        for row in 0..batch.num_rows() {
            let name = names.value(row).to_string();
            let p = probabilities.value(row);
            match kinds.value(row) {
                "region" if p > 0.0 => balance.regions.push((name.clone(), p)),
                "finding" if p > 0.0 => balance.findings.push((name.clone(), p)),
                _ => {}
            }
            if correlated.is_valid(row) {
                let list = utf8(&correlated.value(row))?;
                let values: Vec<String> = list
                    .as_string::<i32>()
                    .iter()
                    .flatten()
                    .map(str::to_string)
                    .collect();
                if !values.is_empty() {
                    balance.correlated.insert(name, values);
                }
            }
        }
    }
    Ok(balance)
}

/// `array` as UTF-8 (Delta reads strings as views).
fn utf8(array: &ArrayRef) -> Result<ArrayRef> {
    cast(array, &DataType::Utf8).map_err(|e| PipelineError::query(STAGE, e.into()))
}

/// Runs the stage over the whole lake and replaces `qa`.
pub async fn run(lake: &Lake, defs: &RefDefs, options: &QaOptions) -> Result<QaSummary> {
    run_scoped(lake, defs, options, &Scope::All).await
}

/// Runs the stage over `scope`'s studies and replaces their QA pairs.
///
/// Unlike the stages before it, it does not compare the studies' new rows with their old ones:
/// the old rows carry what grade wrote (ratings, judge), which the new ones lack, so every
/// scoped study would differ, and judge and grade recompute the whole scope anyway.
pub async fn run_scoped(
    lake: &Lake,
    defs: &RefDefs,
    options: &QaOptions,
    scope: &Scope,
) -> Result<QaSummary> {
    let started = Instant::now();
    let templates = options.load_templates(defs)?;
    let version = templates.version().to_string();
    let ctx = lake.session().await?;
    let studies = crate::stage::count(&ctx, STAGE, "SELECT count(*) FROM scene_graphs").await?;
    let counted = crate::stage::count(&ctx, STAGE, "SELECT count(*) FROM qa_balance").await?;
    if studies > 0 && counted == 0 {
        return Err(PipelineError::Config(
            "qa_balance is empty: run `cxrlake run balance` before `cxrlake run qa` (the \
             sampling probabilities come from it)"
                .into(),
        ));
    }
    let balance = read_balance(lake).await?;
    let identity = format!("{}/{}/{}", defs.fingerprint(), version, balance.identity());
    let engine = Arc::new(Engine::new(templates, Reference::new(defs), balance));
    let stage = ChunkedStage {
        stage: STAGE,
        sql: SQL,
        inputs: &INPUTS,
        functions: vec![ScalarUDF::from(GenerateQaFunc::new(
            engine,
            identity.clone(),
        ))],
        params: Vec::new(),
        chunk_patients: options.chunk_patients,
    };
    let fingerprint = json!({
        "inputs": stage.input_versions(lake).await?,
        "qa_balance": lake.table("qa_balance").await?.version(),
        "refdefs": defs.fingerprint(),
        "templates": version,
        "sql": sql_hash(SQL),
        "code": env!("CARGO_PKG_VERSION"),
    });
    let run = stage
        .run_scoped(lake, &HashMap::new(), &fingerprint, scope, false)
        .await?;
    let summary = QaSummary {
        questions: run.rows.iter().map(|(_, n)| n).sum(),
        studies,
        templates: version,
        version: run.version,
        seconds: started.elapsed().as_secs_f64(),
    };
    Ok(summary)
}
