//! `cxrlake evaluate labels`: the scene graphs' finding tags against study-level labels (paper
//! 000, sec. 4.1 and C.2, tables 2a, 7 and 8): precision, recall, F1 and Matthews correlation
//! per class, macro-averaged over class subsets (CXP-5, CXP-7, CXP-13, LT, CXR-LT and the
//! user's own) and micro-averaged, with bootstrap intervals over studies.
//!
//! ```text
//!  scene_graphs ──► positive observations' finding + parent tags ──mapping──► predicted classes ─┐
//!  chexpert_labels (labeler) | CSV study_id,class,label ──► 1 / 0 / -1 / blank per class ───────┼─► codes
//!                                                                                                │
//!  studies in both ──► per study and class: tp | fp | fn | tn | left out ──► bootstrap ──► scores
//! ```
//!
//! - **Mapping** (`refdefs/evaluate/labels.toml`, or `--mapping FILE`): a class is predicted for
//!   a study when an observation with positiveness `pos` carries one of the class's findings in
//!   `obs_entities` or `obs_entities_parents`.
//! - **Labels**: `1` positive, `0` negative, `-1` uncertain (by default left out of that class's
//!   scores, as uncertain reference labels cannot be scored; `--uncertain positive|negative`
//!   counts them), blank not mentioned (negative, as CheXpert's convention; `--missing ignore`
//!   leaves them out). A class with no label at all in the source is not scored (a note says so).
//! - **Studies**: those with a scene graph and at least one label row.
//! - **Averages**: macro = unweighted mean of the per-class scores of a subset; micro = the
//!   scores of the summed confusion counts of every scored class.
//! - **Baseline** (`--baseline LAKE`): the other lake's scene graphs on the studies all three
//!   share, scored on the same resamples, and `difference` rows (system − baseline).

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};

use cxrlake_evaluate::classify::{Counts, Scores, macro_average, micro_average};
use cxrlake_lake::Lake;
use cxrlake_refdefs::RefDefs;
use serde::Deserialize;
use serde_json::json;

use super::scores::{EvalOptions, Evaluation, ScoreDef};
use super::{STAGE, strings};
use crate::error::{PipelineError, Result};
use crate::sql::collect;

/// The embedded mapping of finding tags to CheXpert and CXR-LT classes.
pub const DEFAULT_MAPPING: &str = include_str!("../../../../refdefs/evaluate/labels.toml");

/// Where the reference labels come from.
#[derive(Debug, Clone, PartialEq)]
pub enum LabelSource {
    /// The lake's `chexpert_labels` table, rows of one labeler (`chexpert` or `negbio`).
    Lake {
        /// The `labeler` column's value.
        labeler: String,
    },
    /// A CSV `study_id,class,label` (header required; `label` 1, 0, -1 or blank).
    Csv(PathBuf),
}

/// How uncertain (`-1`) reference labels count.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Uncertain {
    /// Left out of that class's scores.
    Ignore,
    /// As positive (CheXpert's U-Ones).
    Positive,
    /// As negative (U-Zeros).
    Negative,
}

/// Options of `cxrlake evaluate labels`.
#[derive(Debug, Clone)]
pub struct LabelOptions {
    /// The reference labels.
    pub source: LabelSource,
    /// A mapping file instead of the embedded one.
    pub mapping: Option<PathBuf>,
    /// More subsets: name and class names.
    pub subsets: Vec<(String, Vec<String>)>,
    /// Uncertain labels.
    pub uncertain: Uncertain,
    /// Whether blank labels count as negative (else they are left out).
    pub missing_negative: bool,
    /// Bootstrap settings.
    pub eval: EvalOptions,
}

/// One class of the mapping file.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ClassDef {
    pub name: String,
    pub label: String,
    pub findings: Vec<String>,
    #[serde(default)]
    pub subsets: Vec<String>,
}

/// The finding tag → class mapping (`refdefs/evaluate/labels.toml`).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Mapping {
    pub version: String,
    #[serde(rename = "class")]
    pub classes: Vec<ClassDef>,
}

/// The mapping of `path` (or the embedded one) with its name, checked against `defs`.
pub(crate) fn load_mapping(path: Option<&Path>, defs: &RefDefs) -> Result<(Mapping, String)> {
    let (text, name) = match path {
        Some(path) => (read_text(path)?, path.display().to_string()),
        None => (
            DEFAULT_MAPPING.to_string(),
            "refdefs/evaluate/labels.toml".into(),
        ),
    };
    let mapping: Mapping = toml::from_str(&text)
        .map_err(|e| PipelineError::Input(format!("label mapping {name}: {e}")))?;
    check_mapping(&mapping, defs, &name)?;
    Ok((mapping, name))
}

/// A class's outcome in one study.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
enum Code {
    Tp,
    Fp,
    Fn,
    Tn,
    Out,
}

/// Scores the lake's scene graphs (and the baseline's) against the reference labels.
pub async fn labels_vs_scene_graphs(
    lake: &Lake,
    defs: &RefDefs,
    options: &LabelOptions,
    baseline: Option<(&str, &Lake)>,
) -> Result<Evaluation> {
    let (mapping, mapping_name) = load_mapping(options.mapping.as_deref(), defs)?;
    let labels = match &options.source {
        LabelSource::Lake { labeler } => lake_labels(lake, labeler).await?,
        LabelSource::Csv(path) => csv_labels(path)?,
    };
    let mut systems = vec![("lake".to_string(), predicted_classes(lake, &mapping).await?)];
    if let Some((name, other)) = baseline {
        systems.push((name.to_string(), predicted_classes(other, &mapping).await?));
    }
    let mut notes = Vec::new();
    // Classes the labels know; the others are not scored.
    let labelled: HashSet<&str> = labels
        .values()
        .flat_map(|m| m.keys().map(String::as_str))
        .collect();
    let classes: Vec<&ClassDef> = mapping
        .classes
        .iter()
        .filter(|c| labelled.contains(c.label.as_str()))
        .collect();
    let unlabelled: Vec<&str> = mapping
        .classes
        .iter()
        .filter(|c| !labelled.contains(c.label.as_str()))
        .map(|c| c.name.as_str())
        .collect();
    if !unlabelled.is_empty() {
        notes.push(format!(
            "{} class(es) have no labels in the source and are not scored: {}",
            unlabelled.len(),
            unlabelled.join(", ")
        ));
    }
    if classes.is_empty() {
        return Err(PipelineError::Input(format!(
            "no class of {mapping_name} has labels in the source; the labels name: {}",
            labelled.into_iter().collect::<Vec<_>>().join(", ")
        )));
    }
    let studies: Vec<&String> = labels
        .keys()
        .filter(|s| {
            systems
                .iter()
                .all(|(_, predicted)| predicted.contains_key(*s))
        })
        .collect();
    if studies.is_empty() {
        return Err(PipelineError::Input(
            "no study has both a scene graph and labels: check that the labels' study ids \
             (without the 's' prefix or with it, as in the lake) match the lake's"
                .into(),
        ));
    }
    notes.push(format!(
        "{} studies with labels, {} of them with a scene graph in every system",
        labels.len(),
        studies.len()
    ));
    // codes[study][system * classes + class]
    let width = classes.len() * systems.len();
    let mut codes: Vec<Vec<Code>> = Vec::with_capacity(studies.len());
    for study in &studies {
        let truth = &labels[*study];
        let mut row = Vec::with_capacity(width);
        for (_, predicted) in &systems {
            let predicted = &predicted[*study];
            for class in &classes {
                let actual = match truth.get(&class.label).copied().flatten() {
                    Some(1) => Some(true),
                    Some(0) => Some(false),
                    Some(_) => match options.uncertain {
                        Uncertain::Ignore => None,
                        Uncertain::Positive => Some(true),
                        Uncertain::Negative => Some(false),
                    },
                    None => options.missing_negative.then_some(false),
                };
                let hit = predicted.contains(class.name.as_str());
                row.push(match actual {
                    None => Code::Out,
                    Some(true) if hit => Code::Tp,
                    Some(false) if hit => Code::Fp,
                    Some(true) => Code::Fn,
                    Some(false) => Code::Tn,
                });
            }
        }
        codes.push(row);
    }
    // Studies with identical codes are one pattern: a resample sums weights per pattern, then
    // counts per class from the patterns (most studies share a handful of patterns).
    let mut pattern_of: HashMap<&[Code], u32> = HashMap::new();
    let mut patterns: Vec<&[Code]> = Vec::new();
    let study_pattern: Vec<u32> = codes
        .iter()
        .map(|row| {
            *pattern_of.entry(row.as_slice()).or_insert_with(|| {
                patterns.push(row.as_slice());
                (patterns.len() - 1) as u32
            })
        })
        .collect();
    let mut subsets: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    for (i, class) in classes.iter().enumerate() {
        for subset in &class.subsets {
            subsets.entry(subset.clone()).or_default().push(i);
        }
    }
    for (name, members) in &options.subsets {
        let mut indices = Vec::new();
        for member in members {
            let index = classes
                .iter()
                .position(|c| &c.name == member)
                .ok_or_else(|| {
                    PipelineError::Input(format!(
                        "--subset {name}: no scored class '{member}'; the scored classes are: {}",
                        classes
                            .iter()
                            .map(|c| c.name.as_str())
                            .collect::<Vec<_>>()
                            .join(", ")
                    ))
                })?;
            indices.push(index);
        }
        subsets.insert(name.clone(), indices);
    }
    let n_classes = classes.len();
    let support: Vec<u64> = (0..width)
        .map(|k| codes.iter().filter(|row| row[k] != Code::Out).count() as u64)
        .collect();
    let metrics = ["precision", "recall", "f1", "mcc"];
    let pick = |s: &Scores, m: usize| [s.precision, s.recall, s.f1, s.mcc][m];
    let mut names: Vec<String> = systems.iter().map(|(n, _)| n.clone()).collect();
    if systems.len() == 2 {
        names.push("difference".into());
    }
    let mut defs_out = Vec::new();
    for (sys, system) in names.iter().enumerate() {
        let base = sys.min(systems.len() - 1) * n_classes;
        for (i, class) in classes.iter().enumerate() {
            for metric in metrics {
                defs_out.push(ScoreDef::new(
                    system,
                    "class",
                    &class.name,
                    metric,
                    support[base + i],
                ));
            }
        }
        for (subset, members) in &subsets {
            let n = members
                .iter()
                .map(|&i| support[base + i])
                .max()
                .unwrap_or(0);
            for metric in metrics {
                defs_out.push(ScoreDef::new(system, "macro", subset, metric, n));
            }
        }
        let n = (0..n_classes).map(|i| support[base + i]).max().unwrap_or(0);
        for metric in metrics {
            defs_out.push(ScoreDef::new(system, "micro", "all classes", metric, n));
        }
    }
    let n_systems = systems.len();
    let statistic = |weights: &[u32]| -> Vec<Option<f64>> {
        let mut per_pattern = vec![0u64; patterns.len()];
        for (&w, &p) in weights.iter().zip(&study_pattern) {
            per_pattern[p as usize] += u64::from(w);
        }
        let mut values: Vec<Vec<Option<f64>>> = Vec::with_capacity(n_systems);
        for sys in 0..n_systems {
            let counts: Vec<Counts> = (0..n_classes)
                .map(|i| {
                    let mut c = Counts::default();
                    for (pattern, &w) in patterns.iter().zip(&per_pattern) {
                        match pattern[sys * n_classes + i] {
                            Code::Tp => c.tp += w,
                            Code::Fp => c.fp += w,
                            Code::Fn => c.fn_ += w,
                            Code::Tn => c.tn += w,
                            Code::Out => {}
                        }
                    }
                    c
                })
                .collect();
            let mut out = Vec::new();
            for c in &counts {
                let s = c.scores();
                out.extend((0..4).map(|m| Some(pick(&s, m))));
            }
            for members in subsets.values() {
                let chosen: Vec<Counts> = members.iter().map(|&i| counts[i]).collect();
                let s = macro_average(&chosen);
                out.extend((0..4).map(|m| Some(pick(&s, m))));
            }
            let s = micro_average(&counts);
            out.extend((0..4).map(|m| Some(pick(&s, m))));
            values.push(out);
        }
        if n_systems == 2 {
            let diff = values[0]
                .iter()
                .zip(&values[1])
                .map(|(a, b)| Some((*a)? - (*b)?))
                .collect();
            values.push(diff);
        }
        values.concat()
    };
    let settings = json!({
        "mapping": {"file": mapping_name, "version": mapping.version},
        "labels": match &options.source {
            LabelSource::Lake { labeler } => json!({"table": "chexpert_labels", "labeler": labeler}),
            LabelSource::Csv(path) => json!({"file": path.display().to_string()}),
        },
        "uncertain": format!("{:?}", options.uncertain).to_lowercase(),
        "missing": if options.missing_negative { "negative" } else { "ignore" },
        "baseline": baseline.map(|(name, _)| name),
        "options": options.eval.to_json(),
    });
    let mut evaluation = Evaluation::bootstrap(
        "labels",
        settings,
        options.eval,
        studies.len(),
        defs_out,
        statistic,
    );
    evaluation.notes = notes;
    Ok(evaluation)
}

fn read_text(path: &Path) -> Result<String> {
    std::fs::read_to_string(path)
        .map_err(|e| PipelineError::Input(format!("cannot read {}: {e}", path.display())))
}

/// Every finding the mapping names must be a reference finding, and class names unique.
fn check_mapping(mapping: &Mapping, defs: &RefDefs, file: &str) -> Result<()> {
    let mut seen = HashSet::new();
    for class in &mapping.classes {
        if !seen.insert(class.name.as_str()) {
            return Err(PipelineError::Input(format!(
                "{file}: class '{}' is listed twice",
                class.name
            )));
        }
        if let Some(unknown) = class.findings.iter().find(|f| defs.finding(f).is_none()) {
            return Err(PipelineError::Input(format!(
                "{file}: class '{}' names the finding '{unknown}', which the reference \
                 definitions do not have (see refdefs/findings.toml)",
                class.name
            )));
        }
    }
    Ok(())
}

/// Per study of the lake's scene graphs: the classes of `mapping` it is predicted positive for.
async fn predicted_classes(
    lake: &Lake,
    mapping: &Mapping,
) -> Result<HashMap<String, HashSet<String>>> {
    let ctx = lake.session().await?;
    let mut by_finding: HashMap<&str, Vec<&str>> = HashMap::new();
    for class in &mapping.classes {
        for finding in &class.findings {
            by_finding.entry(finding).or_default().push(&class.name);
        }
    }
    let mut predicted: HashMap<String, HashSet<String>> =
        strings(&collect(&ctx, STAGE, "SELECT DISTINCT study_id FROM scene_graphs").await?)?
            .into_iter()
            .map(|mut row| (row.swap_remove(0), HashSet::new()))
            .collect();
    let rows = strings(&collect(&ctx, STAGE, POSITIVE_TAGS_SQL).await?)?;
    for row in rows {
        if let [study, tag] = row.as_slice()
            && let Some(classes) = by_finding.get(tag.as_str())
        {
            let entry = predicted.entry(study.clone()).or_default();
            entry.extend(classes.iter().map(|c| c.to_string()));
        }
    }
    Ok(predicted)
}

/// The distinct finding and parent tags of each study's positive observations.
const POSITIVE_TAGS_SQL: &str = "
WITH obs AS (SELECT study_id, unnest(observations) AS o FROM scene_graphs),
tags AS (
  SELECT study_id,
         unnest(array_concat(o['obs_entities'], o['obs_entities_parents'])) AS tag
  FROM obs WHERE o['positiveness'] = 'pos'
)
SELECT DISTINCT study_id, tag FROM tags";

/// Labels per study: label name → 1, 0, -1, or None (blank).
type Labels = BTreeMap<String, BTreeMap<String, Option<i8>>>;

async fn lake_labels(lake: &Lake, labeler: &str) -> Result<Labels> {
    let ctx = lake.session().await?;
    let columns = cxrlake_schemas::sources::CHEXPERT_LABELS;
    let query = format!(
        "SELECT study_id, {} FROM chexpert_labels WHERE labeler = '{}'",
        columns.join(", "),
        labeler.replace('\'', "''")
    );
    let rows = strings(&collect(&ctx, STAGE, &query).await?)?;
    if rows.is_empty() {
        return Err(PipelineError::Input(format!(
            "the lake's chexpert_labels has no rows of labeler '{labeler}': ingest \
             mimic-cxr-2.0.0-chexpert.csv.gz / -negbio.csv.gz, or pass --labels FILE.csv"
        )));
    }
    let mut labels = Labels::new();
    for row in rows {
        let study = row[0].clone();
        let entry = labels.entry(study.clone()).or_default();
        for (name, value) in columns.iter().zip(&row[1..]) {
            let value = parse_label(value).ok_or_else(|| {
                PipelineError::Input(format!(
                    "chexpert_labels, study {study}, {name}: '{value}' is not 1, 0, -1 or blank"
                ))
            })?;
            entry.insert(name.to_string(), value);
        }
    }
    Ok(labels)
}

/// `1`, `1.0`, `0`, `-1`, … → Some(Some(v)); blank → Some(None); anything else → None.
fn parse_label(value: &str) -> Option<Option<i8>> {
    let value = value.trim();
    if value.is_empty() {
        return Some(None);
    }
    let number = value.parse::<f64>().ok()?;
    [1i8, 0, -1]
        .into_iter()
        .find(|&v| f64::from(v) == number)
        .map(Some)
}

fn csv_labels(path: &Path) -> Result<Labels> {
    let file = |e: &dyn std::fmt::Display| {
        PipelineError::Input(format!("labels file {}: {e}", path.display()))
    };
    let mut reader = csv::ReaderBuilder::new()
        .trim(csv::Trim::All)
        .from_path(path)
        .map_err(|e| file(&e))?;
    let headers = reader.headers().map_err(|e| file(&e))?.clone();
    let column = |name: &str| {
        headers.iter().position(|h| h == name).ok_or_else(|| {
            file(&format!(
                "no column '{name}'; the file needs a header study_id,class,label"
            ))
        })
    };
    let (study, class, label) = (column("study_id")?, column("class")?, column("label")?);
    let mut labels = Labels::new();
    for (i, record) in reader.records().enumerate() {
        let line = i + 2;
        let record = record.map_err(|e| file(&format!("line {line}: {e}")))?;
        let value = record.get(label).unwrap_or_default();
        let parsed = parse_label(value).ok_or_else(|| {
            file(&format!(
                "line {line}: label '{value}' is not 1, 0, -1 or blank"
            ))
        })?;
        let study = record.get(study).unwrap_or_default();
        let study = if study.starts_with('s') {
            study.to_string()
        } else {
            format!("s{study}")
        };
        labels
            .entry(study)
            .or_default()
            .insert(record.get(class).unwrap_or_default().to_string(), parsed);
    }
    if labels.is_empty() {
        return Err(file(&"no label rows"));
    }
    Ok(labels)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_embedded_mapping_names_reference_findings() {
        let defs = RefDefs::embedded().expect("embedded definitions");
        let mapping: Mapping = toml::from_str(DEFAULT_MAPPING).expect("mapping parses");
        check_mapping(&mapping, &defs, "labels.toml").expect("every finding exists");
        assert_eq!(
            mapping.classes.len(),
            25,
            "13 CheXpert + 12 long-tail classes"
        );
    }

    #[test]
    fn labels_parse_in_every_spelling() {
        assert_eq!(parse_label("1.0"), Some(Some(1)));
        assert_eq!(parse_label(" -1 "), Some(Some(-1)));
        assert_eq!(parse_label(""), Some(None));
        assert_eq!(parse_label("0"), Some(Some(0)));
        assert_eq!(parse_label("yes"), None);
        assert_eq!(parse_label("2"), None);
    }
}
