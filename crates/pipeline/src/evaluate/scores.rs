//! One evaluation's scores: their bootstrap intervals, the `eval_<kind>` rows, the printed table.

use std::fmt;
use std::sync::Arc;

use chrono::{DateTime, Utc};
use cxrlake_evaluate::bootstrap::{Interval, percentile_cis};
use cxrlake_lake::{Lake, StageCommit};
use datafusion::arrow::array::{
    ArrayRef, Float64Array, Int64Array, RecordBatch, StringArray, TimestampMicrosecondArray,
};
use serde::Serialize;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::error::{PipelineError, Result};

/// How every evaluation computes its intervals.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct EvalOptions {
    /// Bootstrap resamples (0: no intervals, `ci_low = ci_high = estimate`).
    pub n_boot: usize,
    /// Seed of the resampling (the same seed gives the same intervals).
    pub seed: u64,
    /// Confidence level of the percentile interval.
    pub level: f64,
}

impl Default for EvalOptions {
    /// 1,000 resamples (the papers' n), seed 0, 95 %.
    fn default() -> Self {
        Self {
            n_boot: 1000,
            seed: 0,
            level: 0.95,
        }
    }
}

impl EvalOptions {
    /// The options as they enter `settings`.
    pub fn to_json(self) -> Value {
        json!({"n_boot": self.n_boot, "seed": self.seed, "level": self.level})
    }
}

/// One score: what was measured, on what, its estimate and interval, and how many items.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Score {
    /// `lake`, a predictions file's name, the baseline's name, or `difference`.
    pub system: String,
    /// `class`, `subset`, `micro`, `sub-metric`, `overall`, …
    pub scope: String,
    /// The class, subset, sub-metric or category.
    pub name: String,
    /// The metric (`precision`, `mcc`, `iou@30`, …).
    pub metric: String,
    /// Point estimate (None: undefined, e.g. no relevant items).
    pub estimate: Option<f64>,
    /// Lower end of the percentile interval.
    pub ci_low: Option<f64>,
    /// Upper end of the percentile interval.
    pub ci_high: Option<f64>,
    /// Items behind the estimate (studies, pairs, samples).
    pub n: u64,
}

/// The definition of one score before the bootstrap: its labels and item count.
#[derive(Debug, Clone, PartialEq)]
pub struct ScoreDef {
    pub system: String,
    pub scope: String,
    pub name: String,
    pub metric: String,
    pub n: u64,
}

impl ScoreDef {
    pub fn new(system: &str, scope: &str, name: &str, metric: &str, n: u64) -> Self {
        Self {
            system: system.into(),
            scope: scope.into(),
            name: name.into(),
            metric: metric.into(),
            n,
        }
    }
}

/// The result of one `cxrlake evaluate <kind>`.
#[derive(Debug, Clone, Serialize)]
pub struct Evaluation {
    /// The evaluation kind (`labels`, `boxes`, …); its table is `eval_<kind>`.
    pub kind: &'static str,
    /// `<kind>-<UTC time>-<settings hash>`.
    pub eval_id: String,
    /// When it ran.
    pub created_at: DateTime<Utc>,
    /// Inputs and options.
    pub settings: Value,
    /// The scores, in printing order.
    pub scores: Vec<Score>,
    /// Remarks for the reader (classes left out, ignored samples, …), printed under the table.
    pub notes: Vec<String>,
}

impl Evaluation {
    /// Scores `defs` with one percentile bootstrap over `n_items` items: `statistic` maps a
    /// weight per item (how often the resample drew it; all 1 for the estimate) to one value per
    /// definition, in order.
    pub fn bootstrap<F>(
        kind: &'static str,
        settings: Value,
        options: EvalOptions,
        n_items: usize,
        defs: Vec<ScoreDef>,
        statistic: F,
    ) -> Self
    where
        F: Fn(&[u32]) -> Vec<Option<f64>> + Sync,
    {
        let intervals = percentile_cis(
            n_items,
            options.n_boot,
            options.seed,
            options.level,
            defs.len(),
            statistic,
        );
        let scores = defs
            .into_iter()
            .zip(intervals)
            .map(|(def, interval)| score(def, interval))
            .collect();
        Self::new(kind, settings, scores)
    }

    /// An evaluation of already computed scores.
    pub fn new(kind: &'static str, settings: Value, scores: Vec<Score>) -> Self {
        let created_at = Utc::now();
        let hash = hex::encode(Sha256::digest(settings.to_string().as_bytes()));
        Self {
            kind,
            eval_id: format!(
                "{kind}-{}-{}",
                created_at.format("%Y%m%dT%H%M%SZ"),
                &hash[..8]
            ),
            created_at,
            settings,
            scores,
            notes: Vec::new(),
        }
    }

    /// The lake table of this kind.
    pub fn table(&self) -> String {
        format!("eval_{}", self.kind)
    }

    /// The scores as rows of `eval_<kind>`.
    pub fn batch(&self) -> Result<RecordBatch> {
        let n = self.scores.len();
        let text = |f: &dyn Fn(&Score) -> &str| -> ArrayRef {
            Arc::new(StringArray::from_iter_values(self.scores.iter().map(f)))
        };
        let float = |f: &dyn Fn(&Score) -> Option<f64>| -> ArrayRef {
            Arc::new(Float64Array::from_iter(self.scores.iter().map(f)))
        };
        let repeated = |value: &str| -> ArrayRef {
            Arc::new(StringArray::from_iter_values(std::iter::repeat_n(value, n)))
        };
        let created: ArrayRef = Arc::new(
            TimestampMicrosecondArray::from(vec![self.created_at.timestamp_micros(); n])
                .with_timezone("UTC"),
        );
        let columns = vec![
            repeated(&self.eval_id),
            created,
            repeated(self.kind),
            text(&|s| &s.system),
            text(&|s| &s.scope),
            text(&|s| &s.name),
            text(&|s| &s.metric),
            float(&|s| s.estimate),
            float(&|s| s.ci_low),
            float(&|s| s.ci_high),
            Arc::new(Int64Array::from_iter_values(
                self.scores.iter().map(|s| s.n as i64),
            )),
            repeated(&self.settings.to_string()),
        ];
        RecordBatch::try_new(cxrlake_schemas::evaluate::eval_scores(), columns).map_err(|e| {
            PipelineError::Schema {
                stage: super::STAGE,
                table: self.table(),
                reason: e.to_string(),
            }
        })
    }

    /// Appends the scores to `eval_<kind>` in one commit.
    pub async fn commit(&self, lake: &Lake) -> Result<()> {
        let commit = StageCommit::new(super::STAGE)
            .with_fingerprint(self.settings.clone())
            .with_metrics(json!({"eval_id": self.eval_id, "scores": self.scores.len()}));
        lake.write(&self.table())
            .append()
            .commit(commit)
            .execute(vec![self.batch()?])
            .await?;
        Ok(())
    }
}

fn score(def: ScoreDef, interval: Interval) -> Score {
    let finite = |x: f64| x.is_finite().then_some(x);
    Score {
        system: def.system,
        scope: def.scope,
        name: def.name,
        metric: def.metric,
        estimate: finite(interval.estimate),
        ci_low: finite(interval.low),
        ci_high: finite(interval.high),
        n: def.n,
    }
}

impl fmt::Display for Evaluation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let level = self.settings["options"]["level"].as_f64().unwrap_or(0.95);
        let ci = format!("{:.0} % CI", level * 100.0);
        let head = [
            "system",
            "scope",
            "name",
            "metric",
            "estimate",
            ci.as_str(),
            "n",
        ];
        let number = |x: Option<f64>| x.map_or_else(|| "-".to_string(), |x| format!("{x:.3}"));
        let rows: Vec<[String; 7]> = self
            .scores
            .iter()
            .map(|s| {
                [
                    s.system.clone(),
                    s.scope.clone(),
                    s.name.clone(),
                    s.metric.clone(),
                    number(s.estimate),
                    format!("[{}, {}]", number(s.ci_low), number(s.ci_high)),
                    s.n.to_string(),
                ]
            })
            .collect();
        let mut widths = head.map(str::len);
        for row in &rows {
            for (width, cell) in widths.iter_mut().zip(row) {
                *width = (*width).max(cell.chars().count());
            }
        }
        writeln!(f, "{} → table {}", self.eval_id, self.table())?;
        let line = |f: &mut fmt::Formatter<'_>, cells: [&str; 7]| -> fmt::Result {
            for (i, (cell, width)) in cells.iter().zip(widths).enumerate() {
                let pad = width - cell.chars().count();
                // Text left-aligned, numbers right-aligned.
                if i >= 4 {
                    write!(f, "{}{cell}", " ".repeat(pad))?;
                } else {
                    write!(f, "{cell}{}", " ".repeat(pad))?;
                }
                f.write_str(if i == 6 { "\n" } else { "  " })?;
            }
            Ok(())
        };
        line(f, head)?;
        for row in &rows {
            line(f, row.each_ref().map(String::as_str))?;
        }
        for note in &self.notes {
            writeln!(f, "note: {note}")?;
        }
        Ok(())
    }
}

/// The score definitions of one system repeated for every system of `names` and, with two
/// systems, for `difference` (first − second) after them.
pub fn systems_defs(defs: &[ScoreDef], names: &[String]) -> Vec<ScoreDef> {
    let mut all: Vec<&str> = names.iter().map(String::as_str).collect();
    if names.len() == 2 {
        all.push("difference");
    }
    all.iter()
        .flat_map(|system| {
            defs.iter().map(move |d| ScoreDef {
                system: system.to_string(),
                ..d.clone()
            })
        })
        .collect()
}

/// A statistic over every system (`one(weights, system)`), in [`systems_defs`] order: each
/// system's values, then with two systems their differences on the same resample (paired).
pub fn systems_statistic<F>(n_systems: usize, one: F) -> impl Fn(&[u32]) -> Vec<Option<f64>> + Sync
where
    F: Fn(&[u32], usize) -> Vec<Option<f64>> + Sync,
{
    move |weights| {
        let mut all: Vec<Vec<Option<f64>>> = (0..n_systems).map(|s| one(weights, s)).collect();
        if n_systems == 2 {
            let difference = all[0]
                .iter()
                .zip(&all[1])
                .map(|(a, b)| Some((*a)? - (*b)?))
                .collect();
            all.push(difference);
        }
        all.concat()
    }
}

/// The name a file gives its system: its file name.
pub fn file_system_name(path: &std::path::Path) -> String {
    path.file_name().map_or_else(
        || path.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    )
}
