//! `cxrlake evaluate <kind>`: the evaluations of `cxrlake_pipeline::evaluate`, each stored in
//! its `eval_<kind>` table and printed as a table (or CSV / JSON with `--format`, `--json`).

use std::io::Write;
use std::path::PathBuf;

use clap::{Args, Subcommand};
use cxrlake_lake::Lake;
use cxrlake_pipeline::evaluate::{self as eval, EvalOptions, Evaluation};

use crate::error::{CliError, Result};
use crate::output::say;
use crate::output::{Format, write_batches};

/// Options every evaluation shares.
#[derive(Debug, Clone, Args)]
pub struct EvalArgs {
    /// Bootstrap resamples of the confidence intervals (0: none)
    #[arg(long, default_value_t = 1000)]
    n_boot: usize,
    /// Seed of the bootstrap
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Confidence level of the intervals
    #[arg(long, default_value_t = 0.95)]
    level: f64,
    /// Output format of the printed scores
    #[arg(long, value_enum, default_value_t = Format::Table)]
    format: Format,
    /// Print JSON (the same as --format json)
    #[arg(long)]
    json: bool,
}

impl EvalArgs {
    fn options(&self) -> Result<EvalOptions> {
        if !(self.level > 0.0 && self.level < 1.0) {
            return Err(CliError::Usage(format!(
                "--level must be within (0, 1), got {}",
                self.level
            )));
        }
        Ok(EvalOptions {
            n_boot: self.n_boot,
            seed: self.seed,
            level: self.level,
        })
    }
}

/// Which evaluation `cxrlake evaluate` runs.
#[derive(Debug, Subcommand)]
pub enum EvaluateCommand {
    /// The lake's mapped observations against the synthetic corpus's ground_truth.jsonl:
    /// precision/recall of findings with positiveness, and regions (printed only)
    Truth {
        /// ground_truth.jsonl (one study per line)
        #[arg(value_name = "FILE")]
        truth: PathBuf,
        /// Reference definitions folder [default: the embedded definitions]
        #[arg(long, value_name = "DIR")]
        refdefs: Option<PathBuf>,
    },
    /// Scene-graph finding tags against study labels (paper 000 tables 2a, 7, 8): precision,
    /// recall, F1, MCC per class, macro over CXP-5/7/13, LT, CXR-LT and --subset, micro
    Labels {
        /// Labels CSV `study_id,class,label` (1, 0, -1, blank) [default: the lake's
        /// chexpert_labels table]
        #[arg(long, value_name = "FILE")]
        labels: Option<PathBuf>,
        /// Labeler of the chexpert_labels rows to use: chexpert or negbio
        #[arg(long, default_value = "chexpert")]
        labeler: String,
        /// Finding tag → class mapping [default: refdefs/evaluate/labels.toml, embedded]
        #[arg(long, value_name = "FILE")]
        mapping: Option<PathBuf>,
        /// More macro-average subsets, e.g. --subset "effusion+=Pleural Effusion,Pleural Other"
        #[arg(long, value_name = "NAME=CLASS,CLASS")]
        subset: Vec<String>,
        /// How uncertain (-1) labels count: ignore, positive or negative
        #[arg(long, default_value = "ignore")]
        uncertain: String,
        /// How blank labels count: negative or ignore
        #[arg(long, default_value = "negative")]
        missing: String,
        /// Another lake to compare with on the same studies (paired bootstrap differences)
        #[arg(long, value_name = "LAKE")]
        baseline: Option<String>,
        /// Reference definitions folder [default: the embedded definitions]
        #[arg(long, value_name = "DIR")]
        refdefs: Option<PathBuf>,
        #[command(flatten)]
        common: EvalArgs,
    },
    /// Finding boxes against reference boxes (paper 000 tables 2b, 9, 10): IoU, IoP, IoT per
    /// class, thresholded, macro and micro, over (image, class) pairs with both
    Boxes {
        /// Reference boxes CSV `image_id,class,x1,y1,x2,y2` in original pixels (MS-CXR,
        /// REFLACX)
        #[arg(long, value_name = "FILE")]
        reference: PathBuf,
        /// Finding tag → class mapping [default: refdefs/evaluate/labels.toml, embedded]
        #[arg(long, value_name = "FILE")]
        mapping: Option<PathBuf>,
        /// Overlap threshold of the @ scores
        #[arg(long, default_value_t = 0.3)]
        threshold: f64,
        /// Reference definitions folder [default: the embedded definitions]
        #[arg(long, value_name = "DIR")]
        refdefs: Option<PathBuf>,
        #[command(flatten)]
        common: EvalArgs,
    },
    /// RadStrucVQA (paper 000 F.2, table 18): precision, recall, F1 of the 12 sub-metrics of
    /// structured predictions against the lake's qa
    Radstruct {
        /// The model's answers: study_id, question_id, answers (answer parts shaped like
        /// qa.answers: text, positiveness, obs_entities, regions, obs_categories,
        /// obs_subcategories, localization) as .jsonl or .parquet
        #[arg(long, value_name = "FILE")]
        predictions: PathBuf,
        /// Entailment between answer parts: offline (tag, polarity and text-overlap rules) or
        /// llm (--llm-endpoint, --model; prompts/evaluate/, cached in llm_calls)
        #[arg(long, default_value = "offline")]
        entailer: String,
        /// Another model's answers (same format), scored on the same samples: paired
        /// bootstrap differences (predictions − baseline)
        #[arg(long, value_name = "FILE")]
        baseline: Option<PathBuf>,
        #[command(flatten)]
        common: EvalArgs,
    },
    /// Multiple-choice accuracy (ReXVQA): overall, per category and task type
    Choice {
        /// Questions with the correct letter(s): question_id, answer[, category][, task_type]
        /// (.csv, .jsonl or .parquet)
        #[arg(long, value_name = "FILE")]
        targets: PathBuf,
        /// The model's answers: question_id, answer
        #[arg(long, value_name = "FILE")]
        predictions: PathBuf,
        /// Another model's answers (same columns), scored on the same questions: paired
        /// bootstrap differences (predictions − baseline)
        #[arg(long, value_name = "FILE")]
        baseline: Option<PathBuf>,
        #[command(flatten)]
        common: EvalArgs,
    },
    /// GEMeX A-score (answer/choice accuracy) and V-score (mIoU, Hungarian-matched boxes) of
    /// predictions against the lake's gemex_qa
    Gemex {
        /// The model's answers: image_id, question_id, answer[, location: [[x1,y1,x2,y2], …]]
        #[arg(long, value_name = "FILE")]
        predictions: PathBuf,
        /// Another model's answers (same columns), scored on the same questions: paired
        /// bootstrap differences (predictions − baseline)
        #[arg(long, value_name = "FILE")]
        baseline: Option<PathBuf>,
        #[command(flatten)]
        common: EvalArgs,
    },
    /// Free-text metrics: BLEU-1..4, METEOR, ROUGE-L, CIDEr-D and BERTScore
    Text {
        /// The model's answers: question_id, answer (+ study_id for qa, image_id for gemex_qa)
        #[arg(long, value_name = "FILE")]
        predictions: PathBuf,
        /// References: qa (answer part texts), gemex_qa (answer and reason), or a file with
        /// question_id[, study_id], answer (several rows per question: several references)
        #[arg(long, default_value = "qa", value_name = "qa|gemex_qa|FILE")]
        targets: String,
        /// Also BERTScore, with the ONNX model of cxrlake.onnx_model / onnx_tokenizer
        #[arg(long)]
        bertscore: bool,
        /// Another model's answers (same columns), scored on the same questions: paired
        /// bootstrap differences (predictions − baseline)
        #[arg(long, value_name = "FILE")]
        baseline: Option<PathBuf>,
        #[command(flatten)]
        common: EvalArgs,
    },
    /// Agreement between raters: Cohen's kappa per pair, Fleiss' kappa, Gwet's AC1 and AC2
    Agreement {
        /// Ratings: item, rater, value (.csv, .jsonl or .parquet)
        #[arg(
            long,
            value_name = "FILE",
            required_unless_present = "rubric",
            conflicts_with = "rubric"
        )]
        ratings: Option<PathBuf>,
        /// Instead of a file: one rubric (correctness, consistency, completeness, relevance) of
        /// the MIMIC-CXR-VQA judges' verdicts and the ratings added with `cxrlake ratings add`,
        /// its levels ordered worst to best
        #[arg(long, value_name = "RUBRIC")]
        rubric: Option<String>,
        /// The values in order, e.g. "D,C,B,A,A+,A++" [default: sorted]
        #[arg(long, value_name = "A,B,…")]
        categories: Option<String>,
        /// Weights of kappa and AC2: identity, linear or quadratic
        #[arg(long, default_value = "identity")]
        weights: String,
        #[command(flatten)]
        common: EvalArgs,
    },
    /// GIV-CXR bias analysis (paper 002, tables 6 and 7): per model, scores of pairs about
    /// common against rare findings and locations: means, difference (common − rare) with its
    /// bootstrap CI, permutation-test p-value (as many permutations as --n-boot, default
    /// 10,000 here) and Cohen's d
    #[command(mut_arg("n_boot", |a| a.default_value("10000")))]
    GivcxrBias {
        /// Scores per pair: qa_id, score (e.g. G-Eval 1–5)[, model (default: the file name)]
        /// (.csv, .jsonl or .parquet), joined to givcxr_dataset [default: the judge's verdicts
        /// on givcxr_qa, score 1 − is_hallucination, model judge:<judge>]
        #[arg(long, value_name = "FILE")]
        scores: Option<PathBuf>,
        /// A finding or region is rare when its share of the scored pairs is below this
        /// (cxrlake's rule: the paper does not define rare); findings leave out `normal`
        #[arg(long, default_value_t = cxrlake_givcxr::evaluate::DEFAULT_RARE_SHARE, value_name = "SHARE")]
        rare_share: f64,
        #[command(flatten)]
        common: EvalArgs,
    },
}

impl EvaluateCommand {
    /// Runs the evaluation, stores it and prints it.
    pub async fn run(&self, lake: &Lake, out: &mut dyn Write) -> Result<()> {
        lake.require_initialized().await?;
        let (evaluation, common) = match self {
            EvaluateCommand::Truth { truth, refdefs } => {
                let defs = crate::commands::refdefs::load_defs(refdefs.as_deref())?;
                let report = eval::observations_vs_truth(lake, &defs, truth).await?;
                return say(out, format_args!("{report}"));
            }
            EvaluateCommand::Labels {
                labels,
                labeler,
                mapping,
                subset,
                uncertain,
                missing,
                baseline,
                refdefs,
                common,
            } => {
                let defs = crate::commands::refdefs::load_defs(refdefs.as_deref())?;
                let options = eval::LabelOptions {
                    source: match labels {
                        Some(path) => eval::LabelSource::Csv(path.clone()),
                        None => eval::LabelSource::Lake {
                            labeler: labeler.clone(),
                        },
                    },
                    mapping: mapping.clone(),
                    subsets: subset
                        .iter()
                        .map(|s| parse_subset(s))
                        .collect::<Result<_>>()?,
                    uncertain: match uncertain.as_str() {
                        "ignore" => eval::Uncertain::Ignore,
                        "positive" => eval::Uncertain::Positive,
                        "negative" => eval::Uncertain::Negative,
                        other => {
                            return Err(CliError::Usage(format!(
                                "--uncertain takes ignore, positive or negative, not '{other}'"
                            )));
                        }
                    },
                    missing_negative: match missing.as_str() {
                        "negative" => true,
                        "ignore" => false,
                        other => {
                            return Err(CliError::Usage(format!(
                                "--missing takes negative or ignore, not '{other}'"
                            )));
                        }
                    },
                    eval: common.options()?,
                };
                let baseline_lake = match baseline {
                    Some(root) => {
                        let other = Lake::open_url(root)?;
                        other.require_initialized().await?;
                        Some(other)
                    }
                    None => None,
                };
                let baseline = baseline.as_deref().zip(baseline_lake.as_ref());
                let evaluation =
                    eval::labels_vs_scene_graphs(lake, &defs, &options, baseline).await?;
                (evaluation, common)
            }
            EvaluateCommand::Boxes {
                reference,
                mapping,
                threshold,
                refdefs,
                common,
            } => {
                if !(0.0..=1.0).contains(threshold) {
                    return Err(CliError::Usage(format!(
                        "--threshold must be within 0..=1, got {threshold}"
                    )));
                }
                let defs = crate::commands::refdefs::load_defs(refdefs.as_deref())?;
                let options = eval::BoxOptions {
                    reference: reference.clone(),
                    mapping: mapping.clone(),
                    threshold: *threshold,
                    eval: common.options()?,
                };
                (
                    eval::boxes_vs_reference(lake, &defs, &options).await?,
                    common,
                )
            }
            EvaluateCommand::Radstruct {
                predictions,
                entailer,
                baseline,
                common,
            } => {
                let entailer = match entailer.as_str() {
                    "offline" => eval::Entailer::Offline,
                    "llm" => eval::Entailer::Llm(std::sync::Arc::new(
                        eval::LlmEntailer::open(lake, &lake.settings().cxrlake).await?,
                    )),
                    other => {
                        return Err(CliError::Usage(format!(
                            "--entailer takes offline or llm, not '{other}'"
                        )));
                    }
                };
                let options = eval::RadStructOptions {
                    predictions: predictions.clone(),
                    baseline: baseline.clone(),
                    entailer,
                    eval: common.options()?,
                };
                (eval::radstruct_scores(lake, &options).await?, common)
            }
            EvaluateCommand::Choice {
                targets,
                predictions,
                baseline,
                common,
            } => {
                let options = eval::ChoiceOptions {
                    targets: targets.clone(),
                    predictions: predictions.clone(),
                    baseline: baseline.clone(),
                    eval: common.options()?,
                };
                (eval::choice_accuracy(&options).await?, common)
            }
            EvaluateCommand::Gemex {
                predictions,
                baseline,
                common,
            } => {
                let options = cxrlake_gemex::evaluate::GemexOptions {
                    predictions: predictions.clone(),
                    baseline: baseline.clone(),
                    eval: common.options()?,
                };
                (
                    cxrlake_gemex::evaluate::gemex_scores(lake, &options).await?,
                    common,
                )
            }
            EvaluateCommand::Text {
                predictions,
                targets,
                bertscore,
                baseline,
                common,
            } => {
                let embedder = if *bertscore {
                    let settings = &lake.settings().cxrlake;
                    if settings.onnx_model.is_empty() || settings.onnx_tokenizer.is_empty() {
                        return Err(CliError::Usage(
                            "--bertscore needs an ONNX model: set cxrlake.onnx_model and \
                             cxrlake.onnx_tokenizer (and ORT_DYLIB_PATH)"
                                .into(),
                        ));
                    }
                    let embedder = cxrlake_embed::OnnxEmbedder::load(
                        std::path::Path::new(&settings.onnx_model),
                        std::path::Path::new(&settings.onnx_tokenizer),
                        256,
                    )
                    .map_err(|e| CliError::Usage(format!("--bertscore: {e}")))?;
                    Some(std::sync::Arc::new(embedder))
                } else {
                    None
                };
                let options = eval::TextOptions {
                    predictions: predictions.clone(),
                    targets: match targets.as_str() {
                        "qa" => eval::TextTargets::Qa,
                        "gemex_qa" => eval::TextTargets::Gemex,
                        file => eval::TextTargets::File(PathBuf::from(file)),
                    },
                    embedder,
                    baseline: baseline.clone(),
                    eval: common.options()?,
                };
                (eval::text_scores(lake, &options).await?, common)
            }
            EvaluateCommand::Agreement {
                ratings,
                rubric,
                categories,
                weights,
                common,
            } => {
                let options = eval::AgreementOptions {
                    ratings: match (ratings, rubric) {
                        (_, Some(rubric)) => eval::RatingsSource::Query {
                            name: format!("MIMIC-CXR-VQA {rubric} ratings"),
                            sql: cxrlake_mimic_cxr_vqa::stages::ratings::rubric_ratings_sql(
                                rubric,
                            )?,
                            categories: cxrlake_mimic_cxr_vqa::stages::ratings::rubric_levels(
                                rubric,
                            ),
                        },
                        (Some(path), None) => eval::RatingsSource::File(path.clone()),
                        (None, None) => {
                            return Err(CliError::Usage(
                                "evaluate agreement needs --ratings FILE or --rubric RUBRIC".into(),
                            ));
                        }
                    },
                    categories: categories
                        .as_ref()
                        .map(|c| c.split(',').map(|v| v.trim().to_string()).collect()),
                    weights: match weights.as_str() {
                        "identity" => cxrlake_evaluate::agreement::Weights::Identity,
                        "linear" => cxrlake_evaluate::agreement::Weights::Linear,
                        "quadratic" => cxrlake_evaluate::agreement::Weights::Quadratic,
                        other => {
                            return Err(CliError::Usage(format!(
                                "--weights takes identity, linear or quadratic, not '{other}'"
                            )));
                        }
                    },
                    eval: common.options()?,
                };
                (eval::rater_agreement(lake, &options).await?, common)
            }
            EvaluateCommand::GivcxrBias {
                scores,
                rare_share,
                common,
            } => {
                if !(*rare_share > 0.0 && *rare_share < 1.0) {
                    return Err(CliError::Usage(format!(
                        "--rare-share must be within (0, 1), got {rare_share}"
                    )));
                }
                let options = cxrlake_givcxr::evaluate::GivcxrBiasOptions {
                    scores: scores.clone(),
                    rare_share: *rare_share,
                    eval: common.options()?,
                };
                (
                    cxrlake_givcxr::evaluate::givcxr_bias(lake, &options).await?,
                    common,
                )
            }
        };
        evaluation.commit(lake).await?;
        print(&evaluation, common, out)
    }
}

/// `NAME=CLASS,CLASS,…`
fn parse_subset(text: &str) -> Result<(String, Vec<String>)> {
    let (name, classes) = text.split_once('=').ok_or_else(|| {
        CliError::Usage(format!(
            "--subset takes NAME=CLASS,CLASS (e.g. \"effusion=Pleural Effusion,Pleural Other\"), \
             not '{text}'"
        ))
    })?;
    Ok((
        name.trim().to_string(),
        classes.split(',').map(|c| c.trim().to_string()).collect(),
    ))
}

fn print(evaluation: &Evaluation, common: &EvalArgs, out: &mut dyn Write) -> Result<()> {
    let format = if common.json {
        Format::Json
    } else {
        common.format
    };
    match format {
        Format::Table => say(out, format_args!("{evaluation}")),
        Format::Parquet => Err(CliError::Usage(
            "evaluate prints table, csv or json; for Parquet, query its eval_ table: \
             cxrlake sql \"SELECT * FROM eval_labels\" --format parquet --out FILE"
                .into(),
        )),
        format => {
            let batch = evaluation.batch()?;
            write_batches(
                format,
                batch.schema(),
                &[batch],
                out,
                std::path::Path::new("stdout"),
            )
        }
    }
}
