//! `cxrlake evaluate text`: free-text answer metrics (paper 001 table 4, GEMeX 004 table 5):
//! BLEU-1..4, METEOR, ROUGE-L, CIDEr-D and, with an ONNX embedder, BERTScore, of a predictions
//! file against the lake's `qa` answers, `gemex_qa` answers or a references file.
//!
//! ```text
//!  targets: qa (answer parts' texts in order) | gemex_qa (answer + reason) | FILE (question_id[, study_id], answer)
//!      │                                                     several rows per key = several references
//!      └─ JOIN predictions (same key, answer) ─► candidates, references ─► per-item scores ─► bootstrap
//! ```
//!
//! - Keys: `study_id, question_id` for `qa` (question ids repeat across studies),
//!   `image_id, question_id` for `gemex_qa`, `question_id` (and `study_id` when both files have
//!   it) for a file. Targets without a prediction are scored against an empty answer (0) and
//!   counted in a note; predictions without a target are ignored and counted.
//! - BLEU is corpus BLEU (pooled n-gram counts; each resample pools the counts of its draws);
//!   METEOR, ROUGE-L, CIDEr-D (with the document frequencies of the whole evaluated corpus) and
//!   BERTScore are means of the per-item scores.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use cxrlake_embed::OnnxEmbedder;
use cxrlake_evaluate::text::{self as metrics, BleuStats};
use cxrlake_lake::Lake;
use serde_json::json;

use super::scores::{
    EvalOptions, Evaluation, ScoreDef, file_system_name, systems_defs, systems_statistic,
};
use super::{STAGE, register_file, require_columns, strings};
use crate::error::{PipelineError, Result};
use crate::sql::collect;

/// Where the reference texts come from.
#[derive(Debug, Clone, PartialEq)]
pub enum TextTargets {
    /// The lake's `qa`: the texts of a question's answer parts, in order.
    Qa,
    /// The lake's `gemex_qa`: answer and reason.
    Gemex,
    /// A file with `question_id` (optionally `study_id`) and `answer`.
    File(PathBuf),
}

/// Options of `cxrlake evaluate text`.
#[derive(Debug, Clone)]
pub struct TextOptions {
    /// The model's answers.
    pub predictions: PathBuf,
    /// The references.
    pub targets: TextTargets,
    /// Another model's answers (same columns): scored on the same items, with paired
    /// differences.
    pub baseline: Option<PathBuf>,
    /// An ONNX embedder for BERTScore.
    pub embedder: Option<Arc<OnnxEmbedder>>,
    /// Bootstrap settings.
    pub eval: EvalOptions,
}

/// The text metrics of the predictions against the references.
pub async fn text_scores(lake: &Lake, options: &TextOptions) -> Result<Evaluation> {
    let ctx = lake.session().await?;
    register_file(&ctx, "predictions", &options.predictions).await?;
    let predicted_columns = require_columns(
        &ctx,
        "predictions",
        &options.predictions,
        &["question_id", "answer"],
    )
    .await?;
    let has = |c: &str| predicted_columns.iter().any(|h| h == c);
    let (targets_sql, key) = match &options.targets {
        TextTargets::Qa => {
            if !has("study_id") {
                return Err(PipelineError::Input(format!(
                    "{}: needs a study_id column (qa question ids repeat across studies)",
                    options.predictions.display()
                )));
            }
            (
                "SELECT study_id AS k1, question_id AS k2, \
                        string_agg(a['text'], ' ' ORDER BY a['answer_id']) AS reference \
                 FROM (SELECT study_id, question_id, unnest(answers) AS a FROM qa) \
                 GROUP BY study_id, question_id"
                    .to_string(),
                "study_id",
            )
        }
        TextTargets::Gemex => {
            if !has("image_id") {
                return Err(PipelineError::Input(format!(
                    "{}: needs an image_id column to match gemex_qa",
                    options.predictions.display()
                )));
            }
            (
                "SELECT image_id AS k1, question_id AS k2, \
                        concat_ws(' ', answer, reason) AS reference FROM gemex_qa"
                    .to_string(),
                "image_id",
            )
        }
        TextTargets::File(path) => {
            register_file(&ctx, "references", path).await?;
            let reference_columns =
                require_columns(&ctx, "references", path, &["question_id", "answer"]).await?;
            let both = has("study_id") && reference_columns.iter().any(|c| c == "study_id");
            let k1 = if both {
                "CAST(study_id AS VARCHAR)"
            } else {
                "''"
            };
            (
                format!(
                    "SELECT {k1} AS k1, CAST(question_id AS VARCHAR) AS k2, \
                            CAST(answer AS VARCHAR) AS reference FROM \"references\""
                ),
                if both { "study_id" } else { "" },
            )
        }
    };
    let k1 = if key.is_empty() {
        "''".to_string()
    } else {
        format!("CAST(p.{key} AS VARCHAR)")
    };
    let baseline = options.baseline.as_ref().unwrap_or(&options.predictions);
    register_file(&ctx, "baseline", baseline).await?;
    require_columns(&ctx, "baseline", baseline, &["question_id", "answer"]).await?;
    let query = format!(
        "WITH t AS ({targets_sql}), \
         p AS (SELECT {k1} AS k1, CAST(p.question_id AS VARCHAR) AS k2, \
                      CAST(p.answer AS VARCHAR) AS answer FROM predictions p), \
         b AS (SELECT {k1} AS k1, CAST(p.question_id AS VARCHAR) AS k2, \
                      CAST(p.answer AS VARCHAR) AS answer FROM baseline p) \
         SELECT t.k1, t.k2, t.reference, p.answer, b.answer FROM t \
         LEFT JOIN p ON t.k1 = p.k1 AND t.k2 = p.k2 \
         LEFT JOIN b ON t.k1 = b.k1 AND t.k2 = b.k2 \
         ORDER BY t.k1, t.k2"
    );
    let rows = strings(&collect(&ctx, STAGE, &query).await?)?;
    // Per item: the two systems' answers and the references.
    type Item = (String, String, Vec<String>);
    let mut items: BTreeMap<(String, String), Item> = BTreeMap::new();
    for row in rows {
        if let [k1, k2, reference, answer, base] = row.as_slice() {
            let entry = items
                .entry((k1.clone(), k2.clone()))
                .or_insert_with(|| (answer.clone(), base.clone(), Vec::new()));
            entry.2.push(reference.clone());
        }
    }
    if items.is_empty() {
        return Err(PipelineError::Input(
            "no reference texts: the targets table or file is empty".into(),
        ));
    }
    let missing = items.values().filter(|(a, _, _)| a.is_empty()).count();
    let references: Vec<Vec<&str>> = items
        .values()
        .map(|(_, _, r)| r.iter().map(String::as_str).collect())
        .collect();
    let n_systems = if options.baseline.is_some() { 2 } else { 1 };
    // Per system: BLEU statistics and the per-item scores of the other metrics.
    // (metric, one value per item)
    type PerItem<'a> = Vec<(&'a str, Vec<f64>)>;
    let mut systems: Vec<(Vec<BleuStats>, PerItem)> = Vec::new();
    for system in 0..n_systems {
        let candidates: Vec<&str> = items
            .values()
            .map(|(a, b, _)| if system == 0 { a.as_str() } else { b.as_str() })
            .collect();
        let bleu = metrics::bleu_stats(&candidates, &references)?;
        let mut per_item: Vec<(&str, Vec<f64>)> = vec![
            ("meteor", metrics::meteor(&candidates, &references)?.items),
            ("rouge_l", metrics::rouge_l(&candidates, &references)?.items),
            ("cider_d", metrics::cider_d(&candidates, &references)?.items),
        ];
        if let Some(embedder) = &options.embedder {
            let scores =
                metrics::bertscore_corpus(&candidates, &references, |texts: &[&str]| {
                    embedder
                        .token_embeddings(texts)
                        .map_err(PipelineError::Embed)
                })?;
            per_item.push(("bertscore_f1", scores.items.iter().map(|s| s.f1).collect()));
        }
        systems.push((bleu, per_item));
    }
    let per_item = &systems[0].1;
    let n = items.len() as u64;
    let mut defs: Vec<ScoreDef> = (1..=4)
        .map(|k| ScoreDef::new("predictions", "overall", "all", &format!("bleu_{k}"), n))
        .collect();
    defs.extend(
        per_item
            .iter()
            .map(|(m, _)| ScoreDef::new("predictions", "overall", "all", m, n)),
    );
    let mut names = vec!["predictions".to_string()];
    names.extend(options.baseline.as_deref().map(file_system_name));
    let defs = systems_defs(&defs, &names);
    let statistic = systems_statistic(n_systems, |weights: &[u32], system: usize| {
        let (bleu, per_item) = &systems[system];
        let pooled = BleuStats::pooled(bleu.iter().zip(weights.iter().copied()));
        let total: f64 = weights.iter().map(|&w| f64::from(w)).sum();
        let mut out: Vec<Option<f64>> = pooled.scores().iter().map(|&s| Some(s)).collect();
        for (_, values) in per_item {
            let sum: f64 = values
                .iter()
                .zip(weights)
                .map(|(v, &w)| v * f64::from(w))
                .sum();
            out.push((total > 0.0).then(|| sum / total));
        }
        out
    });
    let settings = json!({
        "predictions": options.predictions.display().to_string(),
        "baseline": options.baseline.as_ref().map(|p| p.display().to_string()),
        "targets": match &options.targets {
            TextTargets::Qa => "qa".to_string(),
            TextTargets::Gemex => "gemex_qa".to_string(),
            TextTargets::File(path) => path.display().to_string(),
        },
        "bertscore": options.embedder.as_ref().map(|e| cxrlake_embed::Embedder::id(e.as_ref()).to_string()),
        "options": options.eval.to_json(),
    });
    let mut evaluation =
        Evaluation::bootstrap("text", settings, options.eval, items.len(), defs, statistic);
    evaluation.notes.push(format!(
        "{} items, {missing} without a prediction (scored as empty answers)",
        items.len()
    ));
    if options.embedder.is_none() {
        evaluation.notes.push(
            "no BERTScore: give --bertscore with an ONNX embedder (cxrlake.embedder = onnx)".into(),
        );
    }
    Ok(evaluation)
}
