//! `cxrlake evaluate choice`: multiple-choice accuracy (ReXVQA, paper 003): overall, per
//! category and per task type, over a targets file and a predictions file joined in SQL.
//!
//! ```text
//!  targets  (question_id, answer[, category][, task_type]) ─┐
//!                                                            ├─ LEFT JOIN USING (question_id) ─► correct? ─► bootstrap
//!  predictions (question_id, answer)                        ─┘
//! ```
//!
//! - `answer` is an option letter (`B`) in the targets, and the model's output in the
//!   predictions: a letter, `(B)`, `B) …`, `The answer is B` (see
//!   `cxrlake_evaluate::assign::choice_correct`); several letters (`A, C`) when the target has
//!   several (multi-choice).
//! - A question without a prediction counts as wrong (a note gives how many).
//! - Intervals resample questions.

use std::collections::BTreeMap;
use std::path::PathBuf;

use cxrlake_evaluate::assign::{ChoiceKind, choice_correct};
use serde_json::json;

use super::scores::{
    EvalOptions, Evaluation, ScoreDef, file_system_name, systems_defs, systems_statistic,
};
use super::{STAGE, register_file, require_columns, strings};
use crate::error::Result;
use crate::sql::collect;

/// Options of `cxrlake evaluate choice`.
#[derive(Debug, Clone)]
pub struct ChoiceOptions {
    /// The questions with their correct letters (and optional `category`, `task_type`).
    pub targets: PathBuf,
    /// The model's answers.
    pub predictions: PathBuf,
    /// Another model's answers: scored on the same questions, with paired differences.
    pub baseline: Option<PathBuf>,
    /// Bootstrap settings.
    pub eval: EvalOptions,
}

/// Accuracy of the predictions against the targets.
pub async fn choice_accuracy(options: &ChoiceOptions) -> Result<Evaluation> {
    let ctx = datafusion::prelude::SessionContext::new();
    register_file(&ctx, "targets", &options.targets).await?;
    register_file(&ctx, "predictions", &options.predictions).await?;
    let baseline = options.baseline.as_ref().unwrap_or(&options.predictions);
    register_file(&ctx, "baseline", baseline).await?;
    require_columns(&ctx, "baseline", baseline, &["question_id", "answer"]).await?;
    let have = require_columns(
        &ctx,
        "targets",
        &options.targets,
        &["question_id", "answer"],
    )
    .await?;
    require_columns(
        &ctx,
        "predictions",
        &options.predictions,
        &["question_id", "answer"],
    )
    .await?;
    let optional = |c: &str| {
        if have.iter().any(|h| h == c) {
            format!("CAST(t.{c} AS VARCHAR)")
        } else {
            "''".to_string()
        }
    };
    let query = format!(
        "SELECT CAST(t.question_id AS VARCHAR), CAST(t.answer AS VARCHAR), \
                CAST(p.answer AS VARCHAR), {}, {}, CAST(b.answer AS VARCHAR) \
         FROM targets t \
         LEFT JOIN predictions p ON CAST(p.question_id AS VARCHAR) = CAST(t.question_id AS VARCHAR) \
         LEFT JOIN baseline b ON CAST(b.question_id AS VARCHAR) = CAST(t.question_id AS VARCHAR) \
         ORDER BY 1",
        optional("category"),
        optional("task_type")
    );
    let rows = strings(&collect(&ctx, STAGE, &query).await?)?;
    let mut missing = 0usize;
    // correct[system][question]
    let mut correct: [Vec<bool>; 2] = [
        Vec::with_capacity(rows.len()),
        Vec::with_capacity(rows.len()),
    ];
    let mut groups: BTreeMap<(&str, String), Vec<usize>> = BTreeMap::new();
    for (i, row) in rows.iter().enumerate() {
        let [_, target, predicted, category, task_type, base] = row.as_slice() else {
            continue;
        };
        if predicted.is_empty() {
            missing += 1;
        }
        let letters = target.chars().filter(char::is_ascii_alphabetic).count();
        let kind = if letters > 1 {
            ChoiceKind::Multi
        } else {
            ChoiceKind::Single
        };
        for (system, answer) in correct.iter_mut().zip([predicted, base]) {
            system.push(!answer.is_empty() && choice_correct(answer, target, kind));
        }
        if !category.is_empty() {
            groups
                .entry(("category", category.clone()))
                .or_default()
                .push(i);
        }
        if !task_type.is_empty() {
            groups
                .entry(("task_type", task_type.clone()))
                .or_default()
                .push(i);
        }
    }
    let mut defs = vec![ScoreDef::new(
        "predictions",
        "overall",
        "all",
        "accuracy",
        rows.len() as u64,
    )];
    for ((scope, name), members) in &groups {
        defs.push(ScoreDef::new(
            "predictions",
            scope,
            name,
            "accuracy",
            members.len() as u64,
        ));
    }
    let mut names = vec!["predictions".to_string()];
    names.extend(options.baseline.as_deref().map(file_system_name));
    let defs = systems_defs(&defs, &names);
    let statistic = systems_statistic(names.len(), |weights: &[u32], system: usize| {
        let correct = &correct[system];
        let accuracy = |members: &mut dyn Iterator<Item = usize>| {
            let (mut hit, mut all) = (0u64, 0u64);
            for i in members {
                let w = u64::from(weights[i]);
                all += w;
                hit += w * u64::from(correct[i]);
            }
            (all > 0).then(|| hit as f64 / all as f64)
        };
        let mut out = vec![accuracy(&mut (0..correct.len()))];
        for members in groups.values() {
            out.push(accuracy(&mut members.iter().copied()));
        }
        out
    });
    let settings = json!({
        "targets": options.targets.display().to_string(),
        "predictions": options.predictions.display().to_string(),
        "baseline": options.baseline.as_ref().map(|p| p.display().to_string()),
        "options": options.eval.to_json(),
    });
    let mut evaluation = Evaluation::bootstrap(
        "choice",
        settings,
        options.eval,
        rows.len(),
        defs,
        statistic,
    );
    evaluation.notes.push(format!(
        "{} questions, {missing} without a prediction (counted wrong)",
        rows.len()
    ));
    Ok(evaluation)
}
