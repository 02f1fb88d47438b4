//! `cxrlake evaluate gemex`: the GEMeX scores (paper 004, sec. 5.2) of a predictions file
//! against the lake's `gemex_qa`: the A-score (answer or choice accuracy of closed-ended,
//! single- and multi-choice questions) and the V-score (mean IoU of the predicted against the
//! target boxes, Hungarian-matched), per question type and overall.
//!
//! ```text
//!  gemex_qa (image_id, question_id, question_type, answer, location) ─┐
//!                                                                      ├─ LEFT JOIN ─► A-score, V-score ─► bootstrap over images
//!  predictions (image_id, question_id, answer[, location])            ─┘
//! ```
//!
//! - `location` in the predictions: a list of `[x1, y1, x2, y2]` boxes in the image's original
//!   pixels (as `gemex_qa.location`); missing or empty means no boxes (V-score 0 where the
//!   target has boxes).
//! - A question without a prediction counts as wrong with V-score 0 (a note gives how many).
//! - Open-ended answers have no A-score; score their text with `cxrlake evaluate text`.

use std::path::PathBuf;

use cxrlake_evaluate::assign::{ChoiceKind, choice_correct, v_score};
use cxrlake_evaluate::masks::Rect;
use cxrlake_lake::Lake;
use serde_json::json;

use cxrlake_pipeline::error::{PipelineError, Result};
use cxrlake_pipeline::evaluate::scores::{
    EvalOptions, Evaluation, ScoreDef, file_system_name, systems_defs, systems_statistic,
};
use cxrlake_pipeline::evaluate::{STAGE, register_file, require_columns, strings};
use cxrlake_pipeline::sql::collect;

/// Options of `cxrlake evaluate gemex`.
#[derive(Debug, Clone)]
pub struct GemexOptions {
    /// The model's answers: `image_id, question_id, answer[, location]`.
    pub predictions: PathBuf,
    /// Another model's answers: scored on the same questions, with paired differences.
    pub baseline: Option<PathBuf>,
    /// Bootstrap settings.
    pub eval: EvalOptions,
}

/// One scored question.
#[derive(Debug, Clone)]
struct Row {
    image: usize,
    kind: String,
    correct: Option<bool>,
    v: Option<f64>,
}

/// The questions of `gemex_qa` in (image, question) order, scored against the answers of the
/// registered file `table`; with the image ids in order and the questions it left unanswered.
async fn score_rows(
    ctx: &datafusion::prelude::SessionContext,
    table: &str,
    path: &std::path::Path,
) -> Result<(Vec<Row>, Vec<String>, usize)> {
    let have = require_columns(ctx, table, path, &["image_id", "question_id", "answer"]).await?;
    let predicted_location = if have.iter().any(|c| c == "location") {
        "array_to_string(flatten(p.location), ',')"
    } else {
        "''"
    };
    let query = format!(
        "SELECT q.image_id, q.question_type, q.answer, \
                array_to_string(flatten(arrow_cast(q.location, 'List(List(Float32))')), ','), \
                CAST(p.answer AS VARCHAR), {predicted_location}, p.question_id IS NOT NULL \
         FROM gemex_qa q LEFT JOIN {table} p \
           ON CAST(p.image_id AS VARCHAR) = q.image_id AND CAST(p.question_id AS VARCHAR) = q.question_id \
         ORDER BY q.image_id, q.question_id"
    );
    let rows = strings(&collect(ctx, STAGE, &query).await?)?;
    let mut images: Vec<String> = Vec::new();
    let mut scored = Vec::with_capacity(rows.len());
    let mut missing = 0usize;
    for row in &rows {
        let [image, kind, target, target_boxes, answer, boxes, found] = row.as_slice() else {
            continue;
        };
        let found = found == "true";
        if !found {
            missing += 1;
        }
        if images.last() != Some(image) {
            images.push(image.clone());
        }
        let choice = match kind.as_str() {
            "closed-ended" => Some(ChoiceKind::Closed),
            "single-choice" => Some(ChoiceKind::Single),
            "multi-choice" => Some(ChoiceKind::Multi),
            _ => None,
        };
        let correct = choice.map(|c| found && choice_correct(answer, target, c));
        let target_boxes = rects(target_boxes);
        let v = (!target_boxes.is_empty())
            .then(|| v_score(&rects(boxes), &target_boxes).unwrap_or(0.0));
        scored.push(Row {
            image: images.len() - 1,
            kind: kind.clone(),
            correct,
            v,
        });
    }
    Ok((scored, images, missing))
}

/// A-score and V-score of the predictions (and the baseline's, with paired differences)
/// against the lake's `gemex_qa`.
pub async fn gemex_scores(lake: &Lake, options: &GemexOptions) -> Result<Evaluation> {
    let ctx = lake.session().await?;
    let mut files = vec![("predictions", &options.predictions)];
    if let Some(baseline) = &options.baseline {
        files.push(("baseline", baseline));
    }
    let mut systems = Vec::new();
    let mut images = Vec::new();
    let mut missing = 0;
    for (table, path) in &files {
        register_file(&ctx, table, path).await?;
        let (scored, image_ids, unanswered) = score_rows(&ctx, table, path).await?;
        if systems.is_empty() {
            images = image_ids;
            missing = unanswered;
        }
        systems.push(scored);
    }
    let scored = &systems[0];
    if scored.is_empty() {
        return Err(PipelineError::Refused(
            "the lake's gemex_qa is empty: run `cxrlake run --flavour gemex` first".into(),
        ));
    }
    let mut kinds: Vec<String> = scored.iter().map(|r| r.kind.clone()).collect();
    kinds.sort();
    kinds.dedup();
    let mut defs = Vec::new();
    let count = |kind: Option<&str>, a: bool| -> u64 {
        scored
            .iter()
            .filter(|r| kind.is_none_or(|k| r.kind == k))
            .filter(|r| {
                if a {
                    r.correct.is_some()
                } else {
                    r.v.is_some()
                }
            })
            .count() as u64
    };
    for kind in kinds.iter().map(|k| Some(k.as_str())).chain([None]) {
        let (scope, name) = match kind {
            Some(k) => ("question_type", k),
            None => ("overall", "all"),
        };
        defs.push(ScoreDef::new(
            "predictions",
            scope,
            name,
            "a_score",
            count(kind, true),
        ));
        defs.push(ScoreDef::new(
            "predictions",
            scope,
            name,
            "v_score",
            count(kind, false),
        ));
    }
    let mut names = vec!["predictions".to_string()];
    names.extend(options.baseline.as_deref().map(file_system_name));
    let defs = systems_defs(&defs, &names);
    let statistic = systems_statistic(names.len(), |weights: &[u32], system: usize| {
        let mut out = Vec::new();
        for kind in kinds.iter().map(|k| Some(k.as_str())).chain([None]) {
            let (mut a, mut an, mut v, mut vn) = (0.0, 0.0, 0.0, 0.0);
            for r in systems[system]
                .iter()
                .filter(|r| kind.is_none_or(|k| r.kind == k))
            {
                let w = f64::from(weights[r.image]);
                if let Some(c) = r.correct {
                    a += w * f64::from(u8::from(c));
                    an += w;
                }
                if let Some(x) = r.v {
                    v += w * x;
                    vn += w;
                }
            }
            out.push((an > 0.0).then(|| a / an));
            out.push((vn > 0.0).then(|| v / vn));
        }
        out
    });
    let settings = json!({
        "predictions": options.predictions.display().to_string(),
        "baseline": options.baseline.as_ref().map(|p| p.display().to_string()),
        "targets": "gemex_qa",
        "options": options.eval.to_json(),
    });
    let mut evaluation = Evaluation::bootstrap(
        "gemex",
        settings,
        options.eval,
        images.len(),
        defs,
        statistic,
    );
    evaluation.notes.push(format!(
        "{} questions on {} images, {missing} without a prediction (wrong, V-score 0)",
        scored.len(),
        images.len()
    ));
    Ok(evaluation)
}

/// Boxes from `x1,y1,x2,y2,x1,…` (empty: none; a trailing partial box is dropped).
fn rects(text: &str) -> Vec<Rect> {
    let numbers: Vec<f64> = text
        .split(',')
        .filter_map(|v| v.trim().parse().ok())
        .collect();
    numbers
        .chunks_exact(4)
        .map(|c| Rect::new(c[0], c[1], c[2], c[3]))
        .collect()
}
