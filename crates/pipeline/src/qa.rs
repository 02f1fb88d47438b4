//! The `qa` stage (`sql/qa.sql`): question–answer pairs from every scene graph with the template
//! engine of crate `cxrlake-qa` behind `generate_qa` (paper 000, section 3.2, E.2, D.2), chunk
//! by chunk of patients. Reads `qa_balance` (the balance stage) for the sampling probabilities
//! and the correlated findings.
//!
//! It does not compare the studies' new rows with their old ones: the old rows carry what grade
//! wrote (ratings, judge), which the new ones lack, so every scoped study would differ, and
//! judge and grade recompute the whole scope anyway.

use std::collections::{BTreeMap, BTreeSet};

use async_trait::async_trait;
use cxrlake_qa::{Balance, unit_hash};
use cxrlake_udfs::portable::Recipe;
use datafusion::arrow::array::{Array, ArrayRef, AsArray};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Float64Type};
use datafusion::prelude::SessionContext;

use crate::error::{PipelineError, Result};
use crate::pipeline::Pipeline;
use crate::scope::Scope;
use crate::sql::{collect, count, first_column_strings};
use crate::stage::{
    Chunking, Coverage, Prepared, RunMode, Stage, StageDef, StageReport, Writes, recipe_functions,
};

/// The stage's declaration.
pub static DEF: StageDef = StageDef {
    name: "qa",
    doc: "qa: question-answer pairs from the scene graphs with the templates",
    sql: include_str!("../../../sql/qa.sql"),
    file: "sql/qa.sql",
    inputs: &["scene_graphs", "qa_balance"],
    side_inputs: &[],
    outputs: &["qa"],
    settings: &["refdefs", "templates", "chunk_patients"],
    chunking: Chunking::Patients { default: 100 },
    writes: Writes::Replace,
    coverage: Coverage::PerStudy,
    detects_changes: false,
    reads_synonyms: false,
};

/// The `qa` stage.
#[derive(Debug)]
pub struct Qa;

#[async_trait]
impl Stage for Qa {
    fn def(&self) -> &'static StageDef {
        &DEF
    }

    async fn definitions(&self, pipeline: &Pipeline) -> Result<BTreeMap<String, String>> {
        Ok(BTreeMap::from([
            ("refdefs".into(), pipeline.defs().fingerprint().to_string()),
            (
                "templates".into(),
                pipeline.templates()?.version().to_string(),
            ),
        ]))
    }

    async fn prepare(&self, pipeline: &Pipeline, _mode: RunMode) -> Result<Prepared> {
        let templates = pipeline.templates()?;
        let defs = pipeline.defs();
        let ctx = pipeline.lake().session().await?;
        let studies = count(&ctx, "qa", "SELECT count(*) FROM scene_graphs").await?;
        let counted = count(&ctx, "qa", "SELECT count(*) FROM qa_balance").await?;
        if studies > 0 && counted == 0 {
            return Err(PipelineError::Refused(
                "qa_balance is empty: run `cxrlake run balance` before `cxrlake run qa` (the \
                 sampling probabilities come from it)"
                    .into(),
            ));
        }
        let recipe = Recipe::Qa {
            templates: templates.files().to_vec(),
            balance: read_balance(&ctx).await?,
        };
        Ok(Prepared::new(
            recipe_functions("qa", recipe, defs)?,
            Vec::new(),
        ))
    }

    async fn input_changes(
        &self,
        pipeline: &Pipeline,
        table: &str,
        since: u64,
        now: u64,
    ) -> Result<Option<(Scope, String)>> {
        if table != "qa_balance" {
            return Ok(None);
        }
        let flips = sampling_flips(pipeline, since).await?;
        let reason = format!(
            "qa_balance v{since} → v{now}: {} whose samples flip",
            flips.describe()
        );
        Ok(Some((flips, reason)))
    }

    fn describe(&self, report: &StageReport) -> String {
        let questions = report.rows("qa");
        let studies = report.units.0.max(1);
        format!(
            "qa: {questions} questions for {} {} in {:.1} s ({:.0} QA pairs/s), qa v{}",
            report.units.0,
            report.units.1,
            report.seconds,
            questions as f64 / report.seconds.max(1e-9),
            report.version
        ) + &if report.units.1 == "studies" {
            format!(" ({:.1} per study)", questions as f64 / studies as f64)
        } else {
            String::new()
        }
    }
}

/// Reads `qa_balance` into the engine's sampling inputs.
pub async fn read_balance(ctx: &SessionContext) -> Result<Balance> {
    let batches = collect(
        ctx,
        "qa",
        "SELECT kind, name, sample_probability, correlated FROM qa_balance ORDER BY kind, name",
    )
    .await?;
    let mut balance = Balance::default();
    for row in balance_rows(&batches)? {
        match row.kind.as_str() {
            "region" if row.probability > 0.0 => {
                balance.regions.push((row.name.clone(), row.probability))
            }
            "finding" if row.probability > 0.0 => {
                balance.findings.push((row.name.clone(), row.probability))
            }
            _ => {}
        }
        if !row.correlated.is_empty() {
            balance.correlated.insert(row.name, row.correlated);
        }
    }
    Ok(balance)
}

/// A `qa_balance` row as the sampling reads it.
struct BalanceRow {
    kind: String,
    name: String,
    probability: f64,
    correlated: Vec<String>,
}

/// Sampling probability and correlated findings by (kind, name).
type Sampling = BTreeMap<(String, String), (f64, Vec<String>)>;

/// The rows of `qa_balance`.
fn balance_rows(batches: &[datafusion::arrow::array::RecordBatch]) -> Result<Vec<BalanceRow>> {
    let mut out = Vec::new();
    for batch in batches {
        let kinds = utf8(batch.column(0))?;
        let names = utf8(batch.column(1))?;
        let (kinds, names) = (kinds.as_string::<i32>(), names.as_string::<i32>());
        let probabilities = batch.column(2).as_primitive::<Float64Type>();
        let correlated = batch.column(3).as_list::<i32>();
        for row in 0..batch.num_rows() {
            let list = if correlated.is_valid(row) {
                let values = utf8(&correlated.value(row))?;
                values
                    .as_string::<i32>()
                    .iter()
                    .flatten()
                    .map(str::to_string)
                    .collect()
            } else {
                Vec::new()
            };
            out.push(BalanceRow {
                kind: kinds.value(row).to_string(),
                name: names.value(row).to_string(),
                probability: probabilities.value(row),
                correlated: list,
            });
        }
    }
    Ok(out)
}

/// `array` as UTF-8 (Delta reads strings as views).
fn utf8(array: &ArrayRef) -> Result<ArrayRef> {
    cast(array, &DataType::Utf8).map_err(|e| PipelineError::query("qa", e.into()))
}

/// Studies whose QA sampling differs between qa_balance at `old` and now: a region or finding
/// whose probability changed samples the studies hashed between the two probabilities, and a
/// finding whose correlated list changed affects every study that may ask about it.
async fn sampling_flips(pipeline: &Pipeline, old: u64) -> Result<Scope> {
    let lake = pipeline.lake();
    let sql = "SELECT kind, name, sample_probability, correlated FROM qa_balance";
    let read = |batches: Vec<datafusion::arrow::array::RecordBatch>| -> Result<Sampling> {
        Ok(balance_rows(&batches)?
            .into_iter()
            .map(|row| ((row.kind, row.name), (row.probability, row.correlated)))
            .collect())
    };
    let pinned = std::collections::HashMap::from([("qa_balance".to_string(), old)]);
    let before = read(collect(&lake.session_with(&pinned).await?, "qa", sql).await?)?;
    let after = read(collect(&lake.session().await?, "qa", sql).await?)?;
    let keys: BTreeSet<_> = before.keys().chain(after.keys()).cloned().collect();
    let mut moved = Vec::new();
    let mut correlated = BTreeSet::new();
    for key in keys {
        let (p0, c0) = before.get(&key).cloned().unwrap_or_default();
        let (p1, c1) = after.get(&key).cloned().unwrap_or_default();
        if p0 != p1 {
            moved.push((key.1.clone(), p0.min(p1), p0.max(p1)));
        }
        if c0 != c1 && key.0 == "finding" {
            correlated.insert(key.1.clone());
        }
    }
    if moved.is_empty() && correlated.is_empty() {
        return Ok(Scope::none());
    }
    let templates = pipeline.templates()?;
    let settings = &templates.strategies;
    if correlated.iter().any(|f| {
        settings.finding.default_findings.contains(f)
            || settings.finding.default_devices.contains(f)
    }) {
        return Ok(Scope::All);
    }
    let ctx = lake.session().await?;
    // Which studies mention which findings matters only for a changed correlated list.
    let batches = if correlated.is_empty() {
        Vec::new()
    } else {
        collect(
            &ctx,
            "qa",
            "SELECT DISTINCT study_id, e FROM (SELECT study_id, \
             unnest(array_concat(obs_entities, obs_entities_parents)) AS e FROM observations)",
        )
        .await?
    };
    let mut mentioned: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for batch in &batches {
        let ids = utf8(batch.column(0))?;
        let names = utf8(batch.column(1))?;
        for (id, name) in ids
            .as_string::<i32>()
            .iter()
            .zip(names.as_string::<i32>().iter())
        {
            if let (Some(id), Some(name)) = (id, name) {
                mentioned
                    .entry(id.to_string())
                    .or_default()
                    .insert(name.to_string());
            }
        }
    }
    let all = first_column_strings(
        "qa",
        &collect(&ctx, "qa", "SELECT study_id FROM scene_graphs").await?,
    )?;
    let seed = settings.seed;
    let mut studies = BTreeSet::new();
    for study in all {
        let names = mentioned.get(&study);
        let flips = moved.iter().any(|(item, lo, hi)| {
            let u = unit_hash(seed, &study, item);
            u >= *lo && u < *hi
        });
        // Asked when mentioned, or sampled under the old or the new probability.
        let asks_correlated = correlated.iter().any(|f| {
            let key = ("finding".to_string(), f.clone());
            names.is_some_and(|n| n.contains(f))
                || [&before, &after].iter().any(|balance| {
                    balance
                        .get(&key)
                        .is_some_and(|(p, _)| unit_hash(seed, &study, f) < *p)
                })
        });
        if flips || asks_correlated {
            studies.insert(study);
        }
    }
    Ok(Scope::Studies(studies))
}
