//! `cxrlake evaluate radstruct`: the RadStrucVQA metric (paper 000, sec. 5 and F.2, tables
//! 16–18) of a predictions file against the lake's `qa`.
//!
//! ```text
//!  qa (targets) ─────────┐                        offline rules (tags + polarity + overlap)
//!                        ├─ answer parts per (study, question) ─► evidence ─┤
//!  predictions (answers)─┘                                                  LLM (prompts/evaluate/, llm_calls cache)
//!        │
//!        └─► per sample: precision (predictions vs targets), recall (targets vs predictions),
//!            F1, for the 12 sub-metrics ─► mean over valid samples ─► bootstrap over samples
//! ```
//!
//! - **Predictions**: JSON Lines or Parquet with `study_id`, `question_id` and `answers`, a list
//!   of answer parts shaped like `qa.answers` (`text`, `positiveness`, `obs_entities`,
//!   `regions`, `obs_categories`, `obs_subcategories`, `localization` = list of `{image_id,
//!   bboxes}`); every part is one element, hierarchy ignored (F.2). A question whose
//!   prediction is missing or has no parts is invalid: ignored in the averages and counted.
//! - **Entailment**: `offline` (the rules of `cxrlake_evaluate::radstruct::offline_evidence`)
//!   or `llm` (the RadFact-style prompt of `prompts/evaluate/`, through the LLM client with its
//!   cache; an unparseable answer makes the sample invalid, counted). The `entailer` setting
//!   names which, as every other backend records itself.
//! - **Averages**: sample-level scores averaged over the samples where the sub-metric has
//!   relevant hypotheses (F.2); F1 per sample is the harmonic mean of its precision and recall.

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;

use cxrlake_evaluate::masks::Rect;
use cxrlake_evaluate::radstruct::{self as rs, Evidence, Part, SubMetric};
use cxrlake_lake::Lake;
use datafusion::arrow::datatypes::DataType;
use datafusion::prelude::SessionContext;
use serde_json::json;

use super::scores::{EvalOptions, Evaluation, ScoreDef, file_system_name};
use super::{STAGE, register_file, require_columns, strings};
use crate::error::{PipelineError, Result};
use crate::sql::collect;

/// How entailment between answer parts is decided.
#[derive(Debug, Clone)]
pub enum Entailer {
    /// The offline rules.
    Offline,
    /// The LLM of the lake's `cxrlake.llm_*` settings with the prompts of `prompts/evaluate/`.
    Llm(std::sync::Arc<dyn LlmEntail>),
}

/// Options of `cxrlake evaluate radstruct`.
#[derive(Debug, Clone)]
pub struct RadStructOptions {
    /// The model's structured answers.
    pub predictions: PathBuf,
    /// Another model's answers, scored on the same samples with paired differences.
    pub baseline: Option<PathBuf>,
    /// How entailment is decided.
    pub entailer: Entailer,
    /// Bootstrap settings.
    pub eval: EvalOptions,
}

/// Asks an LLM for the evidence of each hypothesis in the context, for many samples at once.
#[async_trait::async_trait]
pub trait LlmEntail: std::fmt::Debug + Send + Sync {
    /// The id recorded with the scores (`llm:<model>@<prompts version>`).
    fn id(&self) -> String;
    /// For every (hypotheses, context) pair, the evidence per hypothesis, or the reason the
    /// answer could not be used.
    async fn entail(
        &self,
        pairs: &[(&[Part], &[Part])],
    ) -> Result<Vec<std::result::Result<Vec<Evidence>, String>>>;
}

/// The answer parts of every (study, question) of `table` (with `study_id`, `question_id`,
/// `answers`) in `ctx`. Part fields the table lacks count as empty; the parts are numbered once
/// (a step table), so their tags and their boxes are read by the same numbers.
async fn parts(ctx: &SessionContext, table: &str) -> Result<BTreeMap<(String, String), Vec<Part>>> {
    let schema = ctx
        .table(table)
        .await
        .map_err(|e| PipelineError::query(STAGE, e))?
        .schema()
        .inner()
        .clone();
    let fields: Vec<String> = match schema
        .field_with_name("answers")
        .map(|f| f.data_type().clone())
    {
        Ok(DataType::List(item) | DataType::LargeList(item)) => match item.data_type() {
            DataType::Struct(fields) => fields.iter().map(|f| f.name().clone()).collect(),
            _ => Vec::new(),
        },
        _ => Vec::new(),
    };
    if !fields.iter().any(|f| f == "text") {
        return Err(PipelineError::Input(format!(
            "{table}: `answers` must be a list of answer parts with at least a `text` field \
             (like qa.answers)"
        )));
    }
    let field = |name: &str, list: bool| -> String {
        match (fields.iter().any(|f| f == name), list) {
            (true, true) => format!("array_to_string(a['{name}'], '|')"),
            (true, false) => format!("CAST(a['{name}'] AS VARCHAR)"),
            (false, _) => "''".to_string(),
        }
    };
    let numbered = collect(
        ctx,
        STAGE,
        &format!(
            // k: the part's position in its list (two unnests of equal length zip), so prompts
            // number the parts the same way in every run (and the LLM cache hits).
            "SELECT CAST(study_id AS VARCHAR) AS sid, CAST(question_id AS VARCHAR) AS qid, \
                    unnest(range(1, CAST(array_length(answers) AS BIGINT) + 1)) AS k, unnest(answers) AS a \
             FROM {table} WHERE array_length(answers) > 0"
        ),
    )
    .await?;
    if numbered.iter().all(|b| b.num_rows() == 0) {
        return Ok(BTreeMap::new());
    }
    let step = format!("{table}_parts");
    let memory = datafusion::datasource::MemTable::try_new(
        numbered
            .first()
            .map(|b| b.schema())
            .unwrap_or_else(|| std::sync::Arc::new(datafusion::arrow::datatypes::Schema::empty())),
        vec![numbered],
    )
    .map_err(|e| PipelineError::query(STAGE, e))?;
    ctx.register_table(step.as_str(), std::sync::Arc::new(memory))
        .map_err(|e| PipelineError::query(STAGE, e))?;
    let part_rows = strings(
        &collect(
            ctx,
            STAGE,
            &format!(
                "SELECT sid, qid, k, {}, {}, {}, {}, {}, {} FROM {step}",
                field("text", false),
                field("positiveness", false),
                field("obs_entities", true),
                field("regions", true),
                field("obs_categories", true),
                field("obs_subcategories", true),
            ),
        )
        .await?,
    )?;
    let box_rows = if fields.iter().any(|f| f == "localization") {
        strings(
            &collect(
                ctx,
                STAGE,
                &format!(
                    "WITH l AS (SELECT sid, qid, k, unnest(a['localization']) AS l FROM {step}), \
                     b AS (SELECT sid, qid, k, l['image_id'] AS image_id, \
                                  unnest(l['bboxes']) AS b FROM l) \
                     SELECT sid, qid, k, image_id, array_element(b, 1), \
                            array_element(b, 2), array_element(b, 3), array_element(b, 4) FROM b"
                ),
            )
            .await?,
        )?
    } else {
        Vec::new()
    };
    ctx.deregister_table(step.as_str())
        .map_err(|e| PipelineError::query(STAGE, e))?;
    let list = |s: &str| -> Vec<String> {
        s.split('|')
            .filter(|t| !t.is_empty())
            .map(str::to_string)
            .collect()
    };
    // Parts with their position k, in whatever order the query returns them.
    let mut numbered: BTreeMap<(String, String), Vec<(usize, Part)>> = BTreeMap::new();
    for row in part_rows {
        let [
            study,
            question,
            k,
            text,
            positiveness,
            findings,
            regions,
            categories,
            subcategories,
        ] = row.as_slice()
        else {
            continue;
        };
        let part = Part {
            text: text.clone(),
            positive: match positiveness.as_str() {
                "pos" => Some(true),
                "neg" => Some(false),
                _ => None,
            },
            findings: list(findings),
            regions: list(regions),
            categories: list(categories),
            subcategories: list(subcategories),
            boxes: Vec::new(),
        };
        numbered
            .entry((study.clone(), question.clone()))
            .or_default()
            .push((k.parse().unwrap_or(0), part));
    }
    for row in box_rows {
        let [study, question, k, image, x1, y1, x2, y2] = row.as_slice() else {
            continue;
        };
        let c: Vec<f64> = [x1, y1, x2, y2]
            .iter()
            .filter_map(|v| v.parse().ok())
            .collect();
        let k: usize = k.parse().unwrap_or(0);
        if c.len() == 4
            && let Some(parts) = numbered.get_mut(&(study.clone(), question.clone()))
            && let Some((_, part)) = parts.iter_mut().find(|(j, _)| *j == k)
        {
            part.boxes
                .push((image.clone(), Rect::new(c[0], c[1], c[2], c[3])));
        }
    }
    let out = numbered
        .into_iter()
        .map(|(key, mut parts)| {
            parts.sort_by_key(|(k, _)| *k);
            (key, parts.into_iter().map(|(_, part)| part).collect())
        })
        .collect();
    Ok(out)
}

/// Scores every sample (target parts, predicted parts when there are any); None where the
/// prediction has no parts or the entailment answer is unusable.
async fn score_samples(
    entailer: &Entailer,
    samples: &[(&Vec<Part>, Option<&Vec<Part>>)],
) -> Result<Vec<Option<rs::SampleScores>>> {
    let mut scores = Vec::with_capacity(samples.len());
    match entailer {
        Entailer::Offline => {
            for (target, predicted) in samples {
                scores.push(predicted.map(|p| {
                    rs::score_sample(
                        p,
                        target,
                        &rs::offline_evidence(p, target),
                        &rs::offline_evidence(target, p),
                    )
                }));
            }
        }
        Entailer::Llm(llm) => {
            let mut pairs: Vec<(&[Part], &[Part])> = Vec::new();
            for (target, predicted) in samples {
                if let Some(p) = predicted {
                    pairs.push((p.as_slice(), target.as_slice()));
                    pairs.push((target.as_slice(), p.as_slice()));
                }
            }
            let mut answers = llm.entail(&pairs).await?.into_iter();
            for (target, predicted) in samples {
                let Some(p) = predicted else {
                    scores.push(None);
                    continue;
                };
                match (answers.next(), answers.next()) {
                    (Some(Ok(precision)), Some(Ok(recall))) => {
                        scores.push(Some(rs::score_sample(p, target, &precision, &recall)));
                    }
                    _ => scores.push(None),
                }
            }
        }
    }
    Ok(scores)
}

/// The RadStrucVQA scores of the predictions (and of the baseline's, on the same samples, with
/// paired differences) against the lake's `qa`.
pub async fn radstruct_scores(lake: &Lake, options: &RadStructOptions) -> Result<Evaluation> {
    let ctx = lake.session().await?;
    let mut files = vec![("predictions", &options.predictions)];
    if let Some(baseline) = &options.baseline {
        files.push(("baseline", baseline));
    }
    let targets = parts(&ctx, "qa").await?;
    let mut systems = Vec::new();
    for (name, path) in &files {
        register_file(&ctx, name, path).await?;
        require_columns(&ctx, name, path, &["study_id", "question_id", "answers"]).await?;
        let predicted = parts(&ctx, name).await?;
        if !predicted.keys().any(|k| targets.contains_key(k)) {
            return Err(PipelineError::Input(format!(
                "no prediction of {} matches a question of the lake's qa by (study_id, question_id)",
                path.display()
            )));
        }
        systems.push(predicted);
    }
    // The questions every system answered (paired samples).
    let keys: Vec<&(String, String)> = targets
        .keys()
        .filter(|k| systems.iter().all(|s| s.contains_key(*k)))
        .collect();
    let mut per_system = Vec::new();
    for predicted in &systems {
        let samples: Vec<(&Vec<Part>, Option<&Vec<Part>>)> = keys
            .iter()
            .map(|k| (&targets[*k], predicted.get(*k).filter(|p| !p.is_empty())))
            .collect();
        per_system.push(score_samples(&options.entailer, &samples).await?);
    }
    let entailer_id = match &options.entailer {
        Entailer::Offline => rs::OFFLINE_ENTAILER.to_string(),
        Entailer::Llm(llm) => llm.id(),
    };
    // A sample counts when every system's scores are valid.
    let valid: Vec<Vec<&rs::SampleScores>> = (0..keys.len())
        .filter_map(|i| {
            per_system
                .iter()
                .map(|s| s[i].as_ref())
                .collect::<Option<Vec<_>>>()
        })
        .collect();
    let invalid = keys.len() - valid.len();
    let directions = ["precision", "recall", "f1"];
    let width = SubMetric::ALL.len() * 3;
    let values = |s: &rs::SampleScores| -> Vec<Option<f64>> {
        (0..SubMetric::ALL.len())
            .flat_map(|m| [s.precision[m], s.recall[m], s.f1[m]])
            .collect()
    };
    // One value per sub-metric, direction, system and sample; samples with the same values are
    // one pattern, so a resample sums its weights per pattern first (1 M samples share a few
    // thousand patterns).
    let mut pattern_of: HashMap<Vec<Option<u64>>, usize> = HashMap::new();
    let mut patterns: Vec<Vec<Option<f64>>> = Vec::new();
    let sample_pattern: Vec<usize> = valid
        .iter()
        .map(|sample| {
            let v: Vec<Option<f64>> = sample.iter().flat_map(|s| values(s)).collect();
            let bits = v.iter().map(|x| x.map(f64::to_bits)).collect();
            *pattern_of.entry(bits).or_insert_with(|| {
                patterns.push(v);
                patterns.len() - 1
            })
        })
        .collect();
    let mut names = vec!["predictions".to_string()];
    names.extend(options.baseline.as_deref().map(file_system_name));
    if systems.len() == 2 {
        names.push("difference".into());
    }
    // Samples per pattern, then per score the samples where it is defined (for a difference:
    // where both systems' value is).
    let mut samples_of = vec![0u64; patterns.len()];
    for &p in &sample_pattern {
        samples_of[p] += 1;
    }
    let defined = |k: usize, sys: usize| -> u64 {
        patterns
            .iter()
            .zip(&samples_of)
            .filter(|(pattern, _)| match sys {
                s if s < systems.len() => pattern[s * width + k].is_some(),
                _ => pattern[k].is_some() && pattern[width + k].is_some(),
            })
            .map(|(_, n)| n)
            .sum()
    };
    let mut defs = Vec::new();
    for (sys, system) in names.iter().enumerate() {
        for (m, metric) in SubMetric::ALL.iter().enumerate() {
            for (d, direction) in directions.iter().enumerate() {
                let n = defined(m * 3 + d, sys);
                defs.push(ScoreDef::new(
                    system,
                    "sub-metric",
                    metric.name(),
                    direction,
                    n,
                ));
            }
        }
    }
    let n_systems = systems.len();
    let statistic = |weights: &[u32]| -> Vec<Option<f64>> {
        let mut per_pattern = vec![0u64; patterns.len()];
        for (&w, &p) in weights.iter().zip(&sample_pattern) {
            per_pattern[p] += u64::from(w);
        }
        let mut sum = vec![0.0f64; width * n_systems];
        let mut count = vec![0u64; width * n_systems];
        // Differences: over the samples where both systems' value is defined.
        let mut diff_sum = vec![0.0f64; width];
        let mut diff_count = vec![0u64; width];
        for (pattern, &w) in patterns.iter().zip(&per_pattern) {
            if w == 0 {
                continue;
            }
            for (k, value) in pattern.iter().enumerate() {
                if let Some(v) = value {
                    sum[k] += v * w as f64;
                    count[k] += w;
                }
            }
            if n_systems == 2 {
                for k in 0..width {
                    if let (Some(a), Some(b)) = (pattern[k], pattern[width + k]) {
                        diff_sum[k] += (a - b) * w as f64;
                        diff_count[k] += w;
                    }
                }
            }
        }
        let mean = |s: &[f64], c: &[u64]| -> Vec<Option<f64>> {
            s.iter()
                .zip(c)
                .map(|(s, &c)| (c > 0).then(|| s / c as f64))
                .collect()
        };
        let mut out = mean(&sum, &count);
        if n_systems == 2 {
            out.extend(mean(&diff_sum, &diff_count));
        }
        out
    };
    let settings = json!({
        "predictions": options.predictions.display().to_string(),
        "baseline": options.baseline.as_ref().map(|p| p.display().to_string()),
        "targets": "qa",
        "entailer": entailer_id,
        "options": options.eval.to_json(),
    });
    let mut evaluation = Evaluation::bootstrap(
        "radstruct",
        settings,
        options.eval,
        valid.len(),
        defs,
        statistic,
    );
    evaluation.notes.push(format!(
        "{} samples scored, {invalid} invalid (no parts or an unusable entailment answer) and \
         ignored; {} predictions without a target question",
        valid.len(),
        systems[0].len()
            - systems[0]
                .keys()
                .filter(|k| targets.contains_key(*k))
                .count()
    ));
    if n_systems == 2 {
        evaluation.notes.push(
            "difference = predictions − baseline, paired: the same samples and resamples".into(),
        );
    }
    Ok(evaluation)
}

/// The LLM entailer: one chat request per direction of a sample (the prompt of
/// `prompts/evaluate/`, texts only), asked for `entailment.schema.json`, answered from and
/// recorded in the lake's `llm_calls` (cache key: model, prompt and the prompt files' version).
#[derive(Debug)]
pub struct LlmEntailer {
    client: std::sync::Arc<cxrlake_llm::LlmClient>,
    id: String,
    schema: serde_json::Value,
}

impl LlmEntailer {
    /// The entailer of the LLM `settings` name (`--llm-endpoint`, `--model`; the PHI guard
    /// applies), caching in `lake`'s `llm_calls`.
    pub async fn open(lake: &Lake, settings: &cxrlake_lake::CxrlakeConfig) -> Result<Self> {
        let config = crate::settings::llm_config(settings)?.ok_or_else(|| {
            PipelineError::setting(
                "llm_endpoint",
                "--entailer llm needs an LLM: --llm-endpoint URL --model NAME".into(),
            )
        })?;
        let files = [
            rs::ENTAILMENT_SYSTEM,
            rs::ENTAILMENT_FEWSHOT,
            rs::ENTAILMENT_SCHEMA,
        ];
        let mut hasher = <sha2::Sha256 as sha2::Digest>::new();
        for file in files {
            sha2::Digest::update(&mut hasher, file.as_bytes());
        }
        let version = format!(
            "evaluate-entailment-{}",
            &hex::encode(sha2::Digest::finalize(hasher))[..12]
        );
        let model = config.model.clone();
        let cache = crate::llm_calls::LakeCache::open(
            lake,
            "evaluate radstruct",
            config.endpoint.as_str(),
            &config.model,
        )
        .await?;
        let client = cxrlake_llm::LlmClient::new(config)?
            .with_cache(cache)
            .with_prompt_version(version.clone());
        let schema = serde_json::from_str(rs::ENTAILMENT_SCHEMA)
            .map_err(|e| PipelineError::Definitions(format!("entailment.schema.json: {e}")))?;
        Ok(Self {
            client: std::sync::Arc::new(client),
            id: format!("llm:{model}@{version}"),
            schema,
        })
    }
}

#[async_trait::async_trait]
impl LlmEntail for LlmEntailer {
    fn id(&self) -> String {
        self.id.clone()
    }

    async fn entail(
        &self,
        pairs: &[(&[Part], &[Part])],
    ) -> Result<Vec<std::result::Result<Vec<Evidence>, String>>> {
        // Without context nothing is entailed: no request.
        let asked: Vec<usize> = (0..pairs.len())
            .filter(|&i| !pairs[i].1.is_empty())
            .collect();
        let requests: Vec<cxrlake_llm::LlmRequest> = asked
            .iter()
            .map(|&i| {
                let (hypotheses, context) = pairs[i];
                let prompt = rs::entailment_prompt(
                    rs::ENTAILMENT_SYSTEM,
                    rs::ENTAILMENT_FEWSHOT,
                    hypotheses,
                    context,
                );
                let mut request =
                    cxrlake_llm::LlmRequest::chat(vec![cxrlake_llm::ChatMessage::user(prompt)]);
                request.guided_json = Some(self.schema.clone());
                request
            })
            .collect();
        let answers = self.client.complete_all(&requests).await;
        let mut out: Vec<std::result::Result<Vec<Evidence>, String>> = pairs
            .iter()
            .map(|(hypotheses, _)| Ok(vec![Evidence::not_entailed(); hypotheses.len()]))
            .collect();
        for (&i, answer) in asked.iter().zip(answers) {
            let (hypotheses, context) = pairs[i];
            out[i] = match answer {
                Ok(response) => {
                    rs::parse_entailment(&response.text, hypotheses.len(), context.len())
                        .map_err(|e| e.to_string())
                }
                Err(e) => Err(e.to_string()),
            };
        }
        Ok(out)
    }
}
