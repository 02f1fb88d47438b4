//! Tables of `cxrlake evaluate`: one long-format score table per evaluation kind, all with the
//! schema [`eval_scores`], so that every evaluation is queryable (and comparable across runs)
//! with the same SQL.

use std::sync::Arc;

use arrow::datatypes::{DataType, Field, Schema, SchemaRef, TimeUnit};

use crate::types::{key, text};

/// The evaluation tables, one per `cxrlake evaluate <kind>`.
pub const EVAL_TABLES: [&str; 8] = [
    "eval_labels",
    "eval_boxes",
    "eval_radstruct",
    "eval_text",
    "eval_gemex",
    "eval_choice",
    "eval_agreement",
    "eval_givcxr_bias",
];

/// One score of one evaluation (key: eval_id, system, scope, name, metric).
///
/// - `eval_id`: `<kind>-<UTC time>-<settings hash>`, one per `cxrlake evaluate` call;
/// - `system`: what was scored (`lake`, a predictions file's name, the `--baseline`'s name, or
///   `difference`, the system minus the baseline with a paired bootstrap interval);
/// - `scope`: `class`, `subset`, `micro`, `macro`, `sub-metric`, `category`, `overall`, …;
/// - `name`: the class, subset, sub-metric or category; `metric`: `precision`, `mcc`,
///   `iou@30`, …;
/// - `estimate` with its 95 % (or `--level`) percentile-bootstrap interval `ci_low..ci_high`
///   (null when undefined), `n` the items behind it (studies, pairs, samples);
/// - `settings`: the evaluation's inputs and options as JSON (files with their sha256).
pub fn eval_scores() -> SchemaRef {
    let float = |name: &str| Field::new(name, DataType::Float64, true);
    Arc::new(Schema::new(vec![
        key("eval_id"),
        Field::new(
            "created_at",
            DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into())),
            false,
        ),
        key("kind"),
        key("system"),
        key("scope"),
        key("name"),
        key("metric"),
        float("estimate"),
        float("ci_low"),
        float("ci_high"),
        Field::new("n", DataType::Int64, false),
        text("settings"),
    ]))
}
