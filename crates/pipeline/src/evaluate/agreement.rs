//! `cxrlake evaluate agreement`: agreement between raters (paper 001 table 3: the LLM judge
//! against three humans; paper 000 table 5: judge against judge): Cohen's kappa per rater pair,
//! Fleiss' kappa, Gwet's AC1 and AC2, over a ratings file `item, rater, value`.
//!
//! ```text
//!  ratings (item, rater, value) ──► items × raters table ──► Cohen (pairs), Fleiss, AC1, AC2 ──► bootstrap over items
//! ```
//!
//! - `--categories a,b,c` orders the values (needed for the linear / quadratic weights of
//!   weighted kappa and AC2, e.g. the rating levels `D,C,B,A,A+,A++`); without it the values
//!   sort as text.
//! - `--weights identity|linear|quadratic` weighs Cohen's and Fleiss' kappa; AC1 is always
//!   unweighted and AC2 uses the weights (quadratic when `identity` is given, as AC2 is the
//!   weighted coefficient by definition).
//! - An item may lack some raters' values (Fleiss and Gwet as irrCAC computes them; Cohen on
//!   the items both raters of the pair rated).

use std::collections::BTreeMap;
use std::path::PathBuf;

use cxrlake_evaluate::agreement::{RatingTable, Weights, cohen_kappa, fleiss_kappa, gwet_ac};
use cxrlake_lake::{Lake, StageCommit};
use datafusion::arrow::array::{ArrayRef, RecordBatch};
use datafusion::arrow::datatypes::SchemaRef;
use serde_json::json;

use super::scores::{EvalOptions, Evaluation, ScoreDef};
use super::{STAGE, register_file, require_columns, strings};
use crate::error::{PipelineError, Result};
use crate::sql::collect;

/// What `cxrlake ratings add` did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RatingsAdded {
    /// Ratings read from the file.
    pub added: usize,
    /// Ratings of the same (item, rater, rubric) they replaced.
    pub replaced: usize,
    /// Ratings in the table afterwards.
    pub total: usize,
    /// The table they went to.
    pub table: &'static str,
    /// What a row is (`ratings`, `reviews`).
    pub unit: &'static str,
}

impl std::fmt::Display for RatingsAdded {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}: {} {} added ({} replaced), {} in all",
            self.table, self.added, self.unit, self.replaced, self.total
        )
    }
}

/// Overwrites `table` with the rows `columns` (of `schema`): a file's ratings (`added`, of which
/// `replaced` replaced older ones of the same item and rater) merged into the table's, committed
/// as `cxrlake ratings add` of `source`; `unit` names a row (`ratings`, `reviews`).
#[allow(clippy::too_many_arguments)]
pub async fn write_ratings(
    lake: &Lake,
    table: &'static str,
    unit: &'static str,
    schema: SchemaRef,
    columns: Vec<ArrayRef>,
    added: usize,
    replaced: usize,
    source: &str,
) -> Result<RatingsAdded> {
    let batch = RecordBatch::try_new(schema, columns).map_err(|e| PipelineError::Schema {
        stage: "ratings",
        table: table.to_string(),
        reason: e.to_string(),
    })?;
    let total = batch.num_rows();
    lake.write(table)
        .overwrite()
        .commit(
            StageCommit::new("ratings")
                .with_metrics(json!({"added": added, "replaced": replaced, "source": source})),
        )
        .execute(vec![batch])
        .await?;
    Ok(RatingsAdded {
        added,
        replaced,
        total,
        table,
        unit,
    })
}

/// Where the ratings come from.
#[derive(Debug, Clone)]
pub enum RatingsSource {
    /// A file with columns `item`, `rater`, `value`.
    File(PathBuf),
    /// A query over the lake with columns `item`, `rater`, `value` (a flavour's judge verdicts
    /// and added ratings, e.g. one MIMIC-CXR-VQA rubric).
    Query {
        /// What the ratings are (printed, recorded).
        name: String,
        /// The query.
        sql: String,
        /// Its ordered categories, worst first (unless `--categories` gives them).
        categories: Option<Vec<String>>,
    },
}

impl RatingsSource {
    fn name(&self) -> String {
        match self {
            Self::File(path) => path.display().to_string(),
            Self::Query { name, .. } => name.clone(),
        }
    }
}

/// Options of `cxrlake evaluate agreement`.
#[derive(Debug, Clone)]
pub struct AgreementOptions {
    /// The ratings.
    pub ratings: RatingsSource,
    /// The ordered categories (else the sorted distinct values).
    pub categories: Option<Vec<String>>,
    /// Weights of Cohen's and Fleiss' kappa and of AC2.
    pub weights: Weights,
    /// Bootstrap settings.
    pub eval: EvalOptions,
}

/// Agreement statistics of the ratings file.
pub async fn rater_agreement(lake: &Lake, options: &AgreementOptions) -> Result<Evaluation> {
    let (ctx, categories) = match &options.ratings {
        RatingsSource::File(path) => {
            let ctx = datafusion::prelude::SessionContext::new();
            register_file(&ctx, "ratings", path).await?;
            require_columns(&ctx, "ratings", path, &["item", "rater", "value"]).await?;
            (ctx, options.categories.clone())
        }
        RatingsSource::Query {
            sql, categories, ..
        } => {
            let ctx = lake.session().await?;
            let query = |e| PipelineError::query(STAGE, e);
            let view = ctx.sql(sql).await.map_err(query)?;
            ctx.register_table("ratings", view.into_view())
                .map_err(query)?;
            let categories = options.categories.clone().or_else(|| categories.clone());
            (ctx, categories)
        }
    };
    let rows = strings(
        &collect(
            &ctx,
            STAGE,
            "SELECT CAST(item AS VARCHAR), CAST(rater AS VARCHAR), CAST(value AS VARCHAR) \
             FROM ratings WHERE value IS NOT NULL",
        )
        .await?,
    )?;
    let mut items: BTreeMap<String, Vec<(String, String)>> = BTreeMap::new();
    for row in rows {
        if let [item, rater, value] = row.as_slice()
            && !value.is_empty()
        {
            items
                .entry(item.clone())
                .or_default()
                .push((rater.clone(), value.clone()));
        }
    }
    let items: Vec<(String, Vec<(String, String)>)> = items.into_iter().collect();
    let table = |weights: &[u32]| -> Result<RatingTable> {
        let mut triples = Vec::new();
        for ((item, ratings), &w) in items.iter().zip(weights) {
            for copy in 0..w {
                for (rater, value) in ratings {
                    triples.push((format!("{item}#{copy}"), rater.clone(), value.clone()));
                }
            }
        }
        Ok(RatingTable::from_triples(triples, categories.clone())?)
    };
    let all = table(&vec![1; items.len()])?;
    let raters: Vec<String> = all.raters().to_vec();
    if raters.len() < 2 {
        return Err(PipelineError::Input(format!(
            "{}: agreement needs at least two raters, found {}",
            options.ratings.name(),
            raters.len()
        )));
    }
    let pairs: Vec<(usize, usize)> = (0..raters.len())
        .flat_map(|a| (a + 1..raters.len()).map(move |b| (a, b)))
        .collect();
    let ac2_weights = match options.weights {
        Weights::Identity => Weights::Quadratic,
        w => w,
    };
    let weights_name = |w: Weights| format!("{w:?}").to_lowercase();
    let n = items.len() as u64;
    let mut defs = Vec::new();
    for &(a, b) in &pairs {
        defs.push(ScoreDef::new(
            "ratings",
            "pair",
            &format!("{} vs {}", raters[a], raters[b]),
            &format!("cohen_kappa ({})", weights_name(options.weights)),
            n,
        ));
    }
    defs.push(ScoreDef::new(
        "ratings",
        "all raters",
        "all",
        &format!("fleiss_kappa ({})", weights_name(options.weights)),
        n,
    ));
    defs.push(ScoreDef::new("ratings", "all raters", "all", "gwet_ac1", n));
    defs.push(ScoreDef::new(
        "ratings",
        "all raters",
        "all",
        &format!("gwet_ac2 ({})", weights_name(ac2_weights)),
        n,
    ));
    let statistic = |weights: &[u32]| -> Vec<Option<f64>> {
        let Ok(full) = table(weights) else {
            return vec![None; pairs.len() + 3];
        };
        let mut out = Vec::new();
        for &(a, b) in &pairs {
            let pair = full.only_raters(&[raters[a].as_str(), raters[b].as_str()]);
            out.push(pair.and_then(|t| cohen_kappa(&t, options.weights)).ok());
        }
        out.push(fleiss_kappa(&full, options.weights).ok());
        out.push(gwet_ac(&full, Weights::Identity).ok());
        out.push(gwet_ac(&full, ac2_weights).ok());
        out.into_iter()
            .map(|v| v.filter(|x| x.is_finite()))
            .collect()
    };
    let settings = json!({
        "ratings": options.ratings.name(),
        "categories": all.categories(),
        "weights": weights_name(options.weights),
        "options": options.eval.to_json(),
    });
    let mut evaluation = Evaluation::bootstrap(
        "agreement",
        settings,
        options.eval,
        items.len(),
        defs,
        statistic,
    );
    evaluation.notes.push(format!(
        "{} items, {} raters ({}), categories in order: {}",
        items.len(),
        raters.len(),
        raters.join(", "),
        all.categories().join(" < ")
    ));
    Ok(evaluation)
}
