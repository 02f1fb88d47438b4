//! `cxrlake evaluate givcxr-bias`: GIV-CXR's bias analysis (paper 002, supplementary tables 6
//! and 7): per model, the scores of QA pairs about common against rare clinical findings and
//! common against rare anatomical locations: both means, their difference with a two-sample
//! percentile-bootstrap interval, a permutation-test p-value and Cohen's d.
//!
//! ```text
//!  scores file (qa_id, score[, model]) ─┐
//!                                       ├─ JOIN givcxr_dataset USING (qa_id) ─┐
//!  or givcxr_verdicts (score = 1 − is_hallucination, model judge:<judge>)     │
//!                    ─ JOIN givcxr_qa ────────────────────────────────────────┤
//!                                                                             ▼
//!  per model × level (finding = clinical_finding, location = region):
//!     group shares ──► rare (share < --rare-share) | common
//!     ──► mean common, mean rare, difference (common − rare) with bootstrap CI,
//!         permutation p-value, Cohen's d
//! ```
//!
//! - **Rare** is cxrlake's choice: the paper names its groups (common diseases: opacity,
//!   effusion, pneumonia, …; rare: cardiomegaly, nodule, fracture, …; rare locations: spine,
//!   clavicle, trachea, …) but not the rule behind them. Here a finding or region is rare when
//!   its share of the model's scored pairs at that level is below `rare_share` (default 2 %),
//!   else common.
//! - The finding level leaves out pairs whose finding is `normal` or missing (the paper's
//!   disease-level analysis compares diseases only); the location level keeps every pair.
//! - The scores file's pairs are those of `givcxr_dataset` (the exported pairs, whose test split
//!   the paper's models answered); a score without a pair there is left out (a note says how
//!   many). Without a file, the judge's verdicts on every generated pair of `givcxr_qa` give
//!   the score `1 − is_hallucination` per judge: whether the generator hallucinates more on
//!   rare findings and locations (the dataset would hide that, it drops hallucinated pairs).
//! - Intervals: each group resampled separately (`--n-boot`, default 10,000 as in the paper);
//!   p-values: a two-sided permutation test with as many permutations; both seeded by `--seed`.

use std::collections::{BTreeMap, HashSet};
use std::path::PathBuf;

use cxrlake_evaluate::permutation::{cohens_d, mean_difference, permutation_test};
use cxrlake_lake::Lake;
use serde_json::json;

use cxrlake_pipeline::error::{PipelineError, Result};
use cxrlake_pipeline::evaluate::scores::{EvalOptions, Evaluation, Score, file_system_name};
use cxrlake_pipeline::evaluate::{STAGE, register_file, require_columns, strings};
use cxrlake_pipeline::sql::collect;

/// The rare-share threshold when none is given: 2 % of the scored pairs.
pub const DEFAULT_RARE_SHARE: f64 = 0.02;

/// Options of `cxrlake evaluate givcxr-bias`.
#[derive(Debug, Clone)]
pub struct GivcxrBiasOptions {
    /// Scores per QA pair: `qa_id, score[, model]` (.csv, .jsonl or .parquet); None: the lake's
    /// judge verdicts (`1 − is_hallucination`).
    pub scores: Option<PathBuf>,
    /// A finding or region is rare when its share of the scored pairs is below this.
    pub rare_share: f64,
    /// Bootstrap settings (also the number of permutations).
    pub eval: EvalOptions,
}

/// One scored QA pair.
#[derive(Debug, Clone, PartialEq)]
struct Item {
    score: f64,
    /// The clinical finding, None when `normal` or missing.
    finding: Option<String>,
    region: String,
}

/// One finding or region with its share of the scored pairs.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Group {
    pub name: String,
    pub n: usize,
    pub share: f64,
    pub rare: bool,
}

/// The scores of one level split into common and rare groups.
#[derive(Debug, Clone, PartialEq, Default)]
pub(crate) struct Split {
    pub common: Vec<f64>,
    pub rare: Vec<f64>,
    /// Every group, most pairs first (ties by name).
    pub groups: Vec<Group>,
}

/// Splits `(group, score)` pairs into common and rare: a group is rare when its share of all
/// the pairs is below `rare_share`.
pub(crate) fn split_by_share<'a>(
    items: impl IntoIterator<Item = (&'a str, f64)>,
    rare_share: f64,
) -> Split {
    let items: Vec<(&str, f64)> = items.into_iter().collect();
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    for (group, _) in &items {
        *counts.entry(group).or_default() += 1;
    }
    let total = items.len() as f64;
    let mut groups: Vec<Group> = counts
        .into_iter()
        .map(|(name, n)| {
            let share = n as f64 / total;
            Group {
                name: name.to_string(),
                n,
                share,
                rare: share < rare_share,
            }
        })
        .collect();
    groups.sort_by(|a, b| b.n.cmp(&a.n).then_with(|| a.name.cmp(&b.name)));
    let rare: HashSet<&str> = groups
        .iter()
        .filter(|g| g.rare)
        .map(|g| g.name.as_str())
        .collect();
    let mut split = Split::default();
    for (group, score) in items {
        if rare.contains(group) {
            split.rare.push(score);
        } else {
            split.common.push(score);
        }
    }
    split.groups = groups;
    split
}

/// The pairs' scores per model, with what was left out.
#[derive(Debug, Default)]
struct Scored {
    models: BTreeMap<String, Vec<Item>>,
    /// Rows whose qa_id has no pair.
    unmatched: usize,
    /// Rows without a finite numeric score.
    unscored: usize,
    /// Rows in all.
    rows: usize,
}

/// The rows `model, qa_id, score, clinical_finding, region, paired` of `query`.
async fn scored(
    ctx: &datafusion::prelude::SessionContext,
    query: &str,
    default_model: &str,
) -> Result<Scored> {
    let rows = strings(&collect(ctx, STAGE, query).await?)?;
    let mut out = Scored {
        rows: rows.len(),
        ..Scored::default()
    };
    for row in &rows {
        let [model, _, score, finding, region, paired] = row.as_slice() else {
            continue;
        };
        if paired != "true" {
            out.unmatched += 1;
            continue;
        }
        let Some(score) = score.parse::<f64>().ok().filter(|s| s.is_finite()) else {
            out.unscored += 1;
            continue;
        };
        let model = if model.is_empty() {
            default_model
        } else {
            model
        };
        out.models.entry(model.to_string()).or_default().push(Item {
            score,
            finding: (!finding.is_empty() && finding != "normal").then(|| finding.clone()),
            region: region.clone(),
        });
    }
    Ok(out)
}

/// Common against rare findings and locations, per model.
pub async fn givcxr_bias(lake: &Lake, options: &GivcxrBiasOptions) -> Result<Evaluation> {
    if !(options.rare_share > 0.0 && options.rare_share < 1.0) {
        return Err(PipelineError::Input(format!(
            "the rare share must be within (0, 1), got {}",
            options.rare_share
        )));
    }
    let ctx = lake.session().await?;
    let (data, source) = match &options.scores {
        Some(path) => {
            register_file(&ctx, "scores", path).await?;
            let have = require_columns(&ctx, "scores", path, &["qa_id", "score"]).await?;
            let model = if have.iter().any(|c| c == "model") {
                "CAST(s.model AS VARCHAR)"
            } else {
                "''"
            };
            let query = format!(
                "SELECT {model}, CAST(s.qa_id AS VARCHAR), TRY_CAST(s.score AS DOUBLE), \
                        d.clinical_finding, d.region, d.qa_id IS NOT NULL \
                 FROM scores s \
                 LEFT JOIN givcxr_dataset d ON d.qa_id = CAST(s.qa_id AS VARCHAR) \
                 ORDER BY 1, 2"
            );
            (
                scored(&ctx, &query, &file_system_name(path)).await?,
                "scores file joined to givcxr_dataset",
            )
        }
        None => {
            let query = "SELECT 'judge:' || v.judge, v.qa_id, \
                                CASE WHEN v.is_hallucination THEN 0.0 ELSE 1.0 END, \
                                q.clinical_finding, q.region, q.qa_id IS NOT NULL \
                         FROM givcxr_verdicts v \
                         LEFT JOIN givcxr_qa q ON q.qa_id = v.qa_id \
                         ORDER BY 1, 2";
            (
                scored(&ctx, query, "judge").await?,
                "givcxr_verdicts (1 − is_hallucination) joined to givcxr_qa",
            )
        }
    };
    let settings = json!({
        "scores": options.scores.as_ref().map(|p| p.display().to_string()),
        "source": source,
        "rare_share": options.rare_share,
        "options": options.eval.to_json(),
    });
    let mut scores = Vec::new();
    let mut notes = Vec::new();
    for (model, items) in &data.models {
        let levels = [
            (
                "finding",
                split_by_share(
                    items
                        .iter()
                        .filter_map(|i| Some((i.finding.as_deref()?, i.score))),
                    options.rare_share,
                ),
            ),
            (
                "location",
                split_by_share(
                    items.iter().map(|i| (i.region.as_str(), i.score)),
                    options.rare_share,
                ),
            ),
        ];
        let without_finding = items.iter().filter(|i| i.finding.is_none()).count();
        if without_finding > 0 {
            notes.push(format!(
                "{model}: {without_finding} of {} pairs without a finding other than normal \
                 (left out of the finding level)",
                items.len()
            ));
        }
        for (level, split) in &levels {
            scores.extend(level_scores(model, level, split, options.eval));
            let names = |rare: bool| {
                let names: Vec<String> = split
                    .groups
                    .iter()
                    .filter(|g| g.rare == rare)
                    .map(|g| format!("{} ({:.1} %)", g.name, 100.0 * g.share))
                    .collect();
                if names.is_empty() {
                    "none".to_string()
                } else {
                    names.join(", ")
                }
            };
            notes.push(format!(
                "{model} / {level}: rare (< {:.1} % of {} pairs): {}; common: {}",
                100.0 * options.rare_share,
                split.common.len() + split.rare.len(),
                names(true),
                names(false)
            ));
        }
    }
    let mut evaluation = Evaluation::new("givcxr_bias", settings, scores);
    evaluation.notes.push(format!(
        "{} score rows: {} without a pair in {} (left out), {} without a numeric score; \
         rare = share of the scored pairs below {} (cxrlake's rule; the paper does not give \
         one)",
        data.rows,
        data.unmatched,
        if options.scores.is_some() {
            "givcxr_dataset"
        } else {
            "givcxr_qa"
        },
        data.unscored,
        options.rare_share
    ));
    evaluation.notes.extend(notes);
    if data.models.is_empty() {
        evaluation
            .notes
            .push("no scored pairs: nothing to compare".into());
    }
    Ok(evaluation)
}

/// The scores of one model at one level: the two means, their difference, the p-value,
/// Cohen's d, and the share of each rare group.
fn level_scores(model: &str, level: &str, split: &Split, eval: EvalOptions) -> Vec<Score> {
    let finite = |x: f64| x.is_finite().then_some(x);
    let (common, rare) = (&split.common, &split.rare);
    let both = (common.len() + rare.len()) as u64;
    let means = mean_difference(common, rare, eval.n_boot, eval.seed, eval.level);
    let test = permutation_test(common, rare, eval.n_boot, eval.seed);
    let score =
        |name: &str, metric: &str, estimate: Option<f64>, ci: Option<(f64, f64)>, n| Score {
            system: model.to_string(),
            scope: level.to_string(),
            name: name.to_string(),
            metric: metric.to_string(),
            estimate,
            ci_low: ci.and_then(|c| finite(c.0)),
            ci_high: ci.and_then(|c| finite(c.1)),
            n,
        };
    let interval = |i: cxrlake_evaluate::bootstrap::Interval| {
        (
            finite(i.estimate),
            finite(i.estimate).map(|_| (i.low, i.high)),
        )
    };
    let (common_mean, common_ci) = interval(means.a);
    let (rare_mean, rare_ci) = interval(means.b);
    let (difference, difference_ci) = interval(means.difference);
    let mut out = vec![
        score(
            "common",
            "mean",
            common_mean,
            common_ci,
            common.len() as u64,
        ),
        score("rare", "mean", rare_mean, rare_ci, rare.len() as u64),
        score("common-rare", "difference", difference, difference_ci, both),
        score("common-rare", "p_value", finite(test.p_value), None, both),
        score(
            "common-rare",
            "cohens_d",
            cohens_d(common, rare),
            None,
            both,
        ),
    ];
    out.extend(split.groups.iter().filter(|g| g.rare).map(|g| {
        score(
            &format!("rare: {}", g.name),
            "share",
            Some(g.share),
            None,
            g.n as u64,
        )
    }));
    out
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use cxrlake_lake::StageCommit;
    use datafusion::arrow::array::{
        ArrayRef, BooleanArray, Float64Array, Int32Array, RecordBatch, StringArray, new_null_array,
    };
    use datafusion::arrow::datatypes::{DataType, SchemaRef};

    use super::*;

    #[test]
    fn evaluate_givcxr_bias_rare_threshold() {
        // 100 pairs: a 60, b 30, c 8, d 2.
        let mut items = Vec::new();
        for (group, n, score) in [("a", 60, 4.0), ("b", 30, 3.0), ("c", 8, 2.0), ("d", 2, 1.0)] {
            items.extend(std::iter::repeat_n((group, score), n));
        }
        let split = split_by_share(items.iter().copied(), 0.1);
        let rare: Vec<&str> = split
            .groups
            .iter()
            .filter(|g| g.rare)
            .map(|g| g.name.as_str())
            .collect();
        assert_eq!(rare, ["c", "d"]);
        assert_eq!((split.common.len(), split.rare.len()), (90, 10));
        assert_eq!(split.rare.iter().sum::<f64>(), 8.0 * 2.0 + 2.0);
        assert_eq!(split.groups[0].name, "a");
        assert!((split.groups[2].share - 0.08).abs() < 1e-12);
        // The threshold is strict: a share of exactly 2 % is common.
        let split = split_by_share(items.iter().copied(), 0.02);
        assert_eq!(split.rare.len(), 0);
        let split = split_by_share(items.iter().copied(), 0.021);
        assert_eq!(split.rare, [1.0, 1.0]);
        // Nothing to split.
        let empty = split_by_share(std::iter::empty(), 0.02);
        assert!(empty.groups.is_empty() && empty.common.is_empty());
    }

    #[test]
    fn evaluate_givcxr_bias_level_scores() {
        let mut items = Vec::new();
        for i in 0..50 {
            items.push(("common", 4.0 + f64::from(i % 2)));
        }
        for i in 0..5 {
            items.push(("rare", 1.0 + f64::from(i % 2)));
        }
        let split = split_by_share(items, 0.2);
        let eval = EvalOptions {
            n_boot: 500,
            seed: 1,
            level: 0.95,
        };
        let scores = level_scores("m", "finding", &split, eval);
        let get = |name: &str, metric: &str| {
            scores
                .iter()
                .find(|s| s.name == name && s.metric == metric)
                .unwrap_or_else(|| panic!("{name} {metric}"))
        };
        assert_eq!(get("common", "mean").estimate, Some(4.5));
        assert_eq!(get("rare", "mean").estimate, Some(1.4));
        let difference = get("common-rare", "difference");
        assert!((difference.estimate.expect("difference") - 3.1).abs() < 1e-12);
        assert!(difference.ci_low.expect("low") > 2.0);
        assert_eq!(difference.n, 55);
        assert_eq!(get("common-rare", "p_value").estimate, Some(1.0 / 501.0));
        assert!(get("common-rare", "cohens_d").estimate.expect("d") > 3.0);
        let share = get("rare: rare", "share");
        assert_eq!((share.estimate, share.n), (Some(5.0 / 55.0), 5));
        // No rare group: the rare side is undefined.
        let split = split_by_share([("x", 1.0), ("x", 2.0)], 0.02);
        let scores = level_scores("m", "location", &split, eval);
        assert_eq!(scores.len(), 5);
        assert!(scores[1..].iter().all(|s| s.estimate.is_none()));
    }

    /// A batch of `schema` with the given string, boolean and float columns, NULL (or an empty
    /// or zero value where the column is not nullable) elsewhere.
    fn batch(schema: SchemaRef, n: usize, columns: &[(&str, ArrayRef)]) -> RecordBatch {
        let arrays = schema
            .fields()
            .iter()
            .map(|field| {
                if let Some((_, array)) = columns.iter().find(|(name, _)| name == field.name()) {
                    return array.clone();
                }
                match field.data_type() {
                    _ if field.is_nullable() => new_null_array(field.data_type(), n),
                    DataType::Utf8 => Arc::new(StringArray::from(vec![""; n])) as ArrayRef,
                    DataType::Int32 => Arc::new(Int32Array::from(vec![0; n])),
                    DataType::Boolean => Arc::new(BooleanArray::from(vec![false; n])),
                    DataType::Float64 => Arc::new(Float64Array::from(vec![0.0; n])),
                    other => panic!("no default for {other}"),
                }
            })
            .collect();
        RecordBatch::try_new(schema, arrays).expect("batch")
    }

    fn text(values: &[String]) -> ArrayRef {
        Arc::new(StringArray::from(values.to_vec()))
    }

    #[tokio::test]
    async fn evaluate_givcxr_bias_on_a_lake() {
        let dir = tempfile::tempdir().expect("tempdir");
        let lake = Lake::open_url(dir.path().join("lake").to_str().expect("utf8")).expect("lake");
        lake.init().await.expect("init");
        // 60 pairs: 50 effusion in the left lung, 5 rib fractures at the trachea (hallucinated),
        // 5 normal in the left lung.
        let n = 60;
        let ids: Vec<String> = (0..n).map(|i| format!("q{i:02}")).collect();
        let findings: Vec<String> = (0..n)
            .map(|i| match i {
                0..50 => "pleural_effusion",
                50..55 => "rib_fracture",
                _ => "normal",
            })
            .map(String::from)
            .collect();
        let regions: Vec<String> = (0..n)
            .map(|i| {
                if (50..55).contains(&i) {
                    "trachea"
                } else {
                    "left_lung"
                }
            })
            .map(String::from)
            .collect();
        let hallucinated: Vec<bool> = (0..n).map(|i| (50..55).contains(&i)).collect();
        let qa = batch(
            cxrlake_schemas::givcxr::givcxr_qa(),
            n,
            &[
                ("qa_id", text(&ids)),
                ("clinical_finding", text(&findings)),
                ("region", text(&regions)),
            ],
        );
        let verdicts = batch(
            cxrlake_schemas::givcxr::givcxr_verdicts(),
            n,
            &[
                ("qa_id", text(&ids)),
                (
                    "is_hallucination",
                    Arc::new(BooleanArray::from(hallucinated)),
                ),
                ("judge", text(&vec!["j1".to_string(); n])),
            ],
        );
        for (table, rows) in [
            ("givcxr_qa", qa),
            ("givcxr_verdicts", verdicts),
            (
                "givcxr_dataset",
                batch(
                    cxrlake_schemas::givcxr::givcxr_dataset(),
                    n,
                    &[
                        ("qa_id", text(&ids)),
                        ("clinical_finding", text(&findings)),
                        ("region", text(&regions)),
                    ],
                ),
            ),
        ] {
            lake.write(table)
                .commit(StageCommit::new("test"))
                .execute(vec![rows])
                .await
                .expect("write");
        }
        let eval = EvalOptions {
            n_boot: 200,
            seed: 3,
            level: 0.95,
        };
        let options = GivcxrBiasOptions {
            scores: None,
            rare_share: 0.1,
            eval,
        };
        let judged = givcxr_bias(&lake, &options).await.expect("judge bias");
        let get = |e: &Evaluation, system: &str, scope: &str, name: &str, metric: &str| {
            e.scores
                .iter()
                .find(|s| {
                    s.system == system && s.scope == scope && s.name == name && s.metric == metric
                })
                .unwrap_or_else(|| panic!("{system} {scope} {name} {metric}: {e}"))
                .clone()
        };
        for level in ["finding", "location"] {
            let common = get(&judged, "judge:j1", level, "common", "mean");
            let rare = get(&judged, "judge:j1", level, "rare", "mean");
            assert_eq!((common.estimate, rare.estimate), (Some(1.0), Some(0.0)));
            assert_eq!(rare.n, 5);
            let p = get(&judged, "judge:j1", level, "common-rare", "p_value");
            assert!(p.estimate.expect("p") < 0.01);
        }
        assert_eq!(get(&judged, "judge:j1", "finding", "common", "mean").n, 50);
        assert_eq!(get(&judged, "judge:j1", "location", "common", "mean").n, 55);
        assert_eq!(
            get(&judged, "judge:j1", "location", "rare: trachea", "share").estimate,
            Some(5.0 / 60.0)
        );

        // A scores file with two models, a pair the dataset lacks and a score that is no number.
        let path = dir.path().join("g-eval.csv");
        let mut csv = String::from("qa_id,score,model\n");
        for (i, id) in ids.iter().enumerate() {
            let score = if (50..55).contains(&i) { 2 } else { 4 };
            csv.push_str(&format!("{id},{score},m1\n{id},3,m2\n"));
        }
        csv.push_str("nope,5,m1\nq00,high,m2\n");
        std::fs::write(&path, csv).expect("csv");
        let options = GivcxrBiasOptions {
            scores: Some(path),
            ..options
        };
        let evaluation = givcxr_bias(&lake, &options).await.expect("file bias");
        let difference = get(&evaluation, "m1", "finding", "common-rare", "difference");
        assert_eq!(difference.estimate, Some(2.0));
        assert_eq!(difference.n, 55);
        let flat = get(&evaluation, "m2", "location", "common-rare", "p_value");
        assert_eq!(flat.estimate, Some(1.0));
        // m2's second score of q00 is no number: left out, the first one kept.
        assert_eq!(get(&evaluation, "m2", "location", "common", "mean").n, 55);
        assert_eq!(get(&evaluation, "m2", "location", "rare", "mean").n, 5);
        assert!(
            evaluation.notes[0].contains("1 without a pair")
                && evaluation.notes[0].contains("1 without a numeric score"),
            "{:?}",
            evaluation.notes
        );
        evaluation.commit(&lake).await.expect("commit");
        let ctx = lake.session().await.expect("session");
        let stored = collect(&ctx, STAGE, "SELECT count(*) FROM eval_givcxr_bias")
            .await
            .expect("stored");
        assert_eq!(
            strings(&stored).expect("rows")[0][0],
            evaluation.scores.len().to_string()
        );
    }
}
