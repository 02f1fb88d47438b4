//! Evaluation of the lake's `observations` against the synthetic corpus's `ground_truth.jsonl`
//! (written by `crates/synth`, see its `truth.rs`): how many of the stated findings the
//! `extract` and `map` stages recover, with which polarity, in which regions.
//!
//! ```text
//!  ground_truth.jsonl ──► truth statements per study ──────────────┐
//!  sentences          ──► studies in the lake ──── studies in both ─┼─► score ─► TruthReport
//!  observations       ──► pos/neg observations ──► normal table ────┘
//! ```
//!
//! - **Studies**: those in both the truth file and the lake's `sentences` table (the lake may
//!   hold a subset of the corpus, and a study without sentences was never extracted).
//! - **Truth pairs** per study: the distinct `(finding, positiveness)` of its statements. Truth
//!   finding and region names that are a synonym of one reference entry are first resolved to
//!   the entry's name (the generator writes the region "left pleural space", which the reference
//!   definitions list as a synonym of "left pleura").
//! - **Predicted pairs** per study: the distinct `(entity, positiveness)` of every entity in
//!   `obs_entities` of every observation whose `positiveness` is `pos` or `neg`;
//!   `comparison_only` and `recommendation` observations are ignored, and so are unmapped
//!   entities (`non_resolved_obs_entities`).
//! - **Normal statements**: the reference definitions have findings that state normality
//!   ("normal heart size"), which the synthetic truth records as the negated abnormal finding
//!   (`cardiomegaly`, neg). A positive mention of an entity of [`NORMAL_STATEMENTS`] is
//!   replaced by its findings, negated; an entry without findings ("no acute cardiopulmonary
//!   process", the normal studies' impression line) is dropped, since the truth records no
//!   statement for it. A negated normal entity is left as it is.
//! - **Parents**: a predicted pair also matches a truth pair when the truth finding is in
//!   `obs_entities_parents` of an observation carrying the predicted pair and the observation
//!   has the truth pair's positiveness ([`TruthReport::via_parents`] counts the truth pairs
//!   that were only found that way). For negations this is lenient: "no rib fracture" rightly
//!   matches (fracture, neg), but "no consolidation" also matches (lung opacity, neg).
//! - **Pairs**: micro precision (predicted pairs that match a truth pair / predicted pairs) and
//!   recall (truth pairs matched / truth pairs) over all studies.
//! - **Names**: the same with polarity ignored (distinct finding names per study).
//! - **Polarity agreement**: of the truth pairs whose finding name was found, the share found
//!   with the right positiveness.
//! - **Regions**: for every truth statement whose pair was found and which names regions, its
//!   region set against the union of `regions[].region` of the observations carrying the
//!   finding (as an entity after the normal table, or as a parent) with its positiveness.
//!   Exact: equal names. Lenient: a predicted region counts when it is equal to, an ancestor of
//!   or a descendant of a truth region in the reference region tree, and a truth region counts
//!   when such a predicted region exists.
//! - A ratio with a zero denominator is 1.0 (nothing to find, or nothing claimed).

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::fmt;
use std::io::{BufRead, BufReader};
use std::path::Path;

use cxrlake_lake::Lake;
use cxrlake_refdefs::RefDefs;
use serde::Deserialize;

use crate::error::{PipelineError, Result};
use crate::sql::collect;

use super::{STAGE, strings};

/// Reference findings that state normality, and the abnormal findings the synthetic truth
/// records as negated for the same sentences (`NORMAL_SENTENCES` and `NORMAL_IMPRESSIONS` in
/// `crates/synth/src/vocab.rs`). A positive mention of the first is scored as the second,
/// negated; an empty list means the truth records nothing, and the mention is not scored.
pub const NORMAL_STATEMENTS: &[(&str, &[&str])] = &[
    // "Heart size is normal."
    ("normal heart size", &["cardiomegaly"]),
    // "The lungs are clear.", "Lungs are well expanded and clear."
    ("clear lungs", &["lung opacity"]),
    // "No acute cardiopulmonary process." and the other normal impressions: no statement.
    ("no acute cardiopulmonary process", &[]),
    // "The cardiomediastinal silhouette is within normal limits", "Normal cardiomediastinal
    // contours": the heart and the mediastinum.
    (
        "normal cardiomediastinal silhouette",
        &["cardiomegaly", "enlarged cardiomediastinum"],
    ),
];

/// Whether a finding is stated as present or absent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Polarity {
    /// Present (`pos`).
    Pos,
    /// Absent (`neg`).
    Neg,
}

impl Polarity {
    /// The value in `ground_truth.jsonl` and in `observations.positiveness`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pos => "pos",
            Self::Neg => "neg",
        }
    }

    fn parse(text: &str) -> Option<Self> {
        match text {
            "pos" => Some(Self::Pos),
            "neg" => Some(Self::Neg),
            _ => None,
        }
    }
}

/// Matched and total counts of one comparison between a truth set and a predicted set.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Matches {
    /// Truth items.
    pub truth: usize,
    /// Truth items matched by a prediction.
    pub truth_found: usize,
    /// Predicted items.
    pub predicted: usize,
    /// Predicted items that match a truth item.
    pub predicted_correct: usize,
}

impl Matches {
    /// Predicted items that match / predicted items.
    pub fn precision(&self) -> f64 {
        ratio(self.predicted_correct, self.predicted)
    }

    /// Truth items matched / truth items.
    pub fn recall(&self) -> f64 {
        ratio(self.truth_found, self.truth)
    }

    fn add(&mut self, other: &Matches) {
        self.truth += other.truth;
        self.truth_found += other.truth_found;
        self.predicted += other.predicted;
        self.predicted_correct += other.predicted_correct;
    }
}

impl fmt::Display for Matches {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "precision {:.3} ({}/{}), recall {:.3} ({}/{})",
            self.precision(),
            self.predicted_correct,
            self.predicted,
            self.recall(),
            self.truth_found,
            self.truth,
        )
    }
}

/// The pair counts of one `(finding, positiveness)` over all evaluated studies.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FindingRow {
    /// Finding name (truth `finding`, or predicted entity after the normal table).
    pub finding: String,
    /// Positiveness.
    pub positiveness: Polarity,
    /// Studies stating / predicting the pair, and how many of them match.
    pub counts: Matches,
}

impl FindingRow {
    /// Studies whose truth states the pair and whose observations do not.
    pub fn missed(&self) -> usize {
        self.counts.truth - self.counts.truth_found
    }

    /// Studies whose observations state the pair and whose truth does not.
    pub fn false_positives(&self) -> usize {
        self.counts.predicted - self.counts.predicted_correct
    }
}

/// Observations against ground truth (see the module doc for the definitions).
#[derive(Debug, Clone, PartialEq)]
pub struct TruthReport {
    /// Studies in the truth file.
    pub truth_studies: usize,
    /// Studies in the lake's `sentences`.
    pub lake_studies: usize,
    /// Studies in both: the ones evaluated.
    pub studies: usize,
    /// `(finding, positiveness)` pairs.
    pub pairs: Matches,
    /// Truth pairs found only through `obs_entities_parents`.
    pub via_parents: usize,
    /// Finding names, polarity ignored.
    pub names: Matches,
    /// Truth pairs whose finding name was found.
    pub name_found_pairs: usize,
    /// Of those, the pairs found with the right positiveness.
    pub polarity_agreeing: usize,
    /// Found truth statements with regions whose regions were compared.
    pub region_statements: usize,
    /// Region names, exact.
    pub regions_exact: Matches,
    /// Region names, equal or ancestor or descendant.
    pub regions_lenient: Matches,
    /// Per `(finding, positiveness)`, sorted by finding then positiveness.
    pub findings: Vec<FindingRow>,
}

impl TruthReport {
    /// Share of the name-matched truth pairs found with the right positiveness.
    pub fn polarity_agreement(&self) -> f64 {
        ratio(self.polarity_agreeing, self.name_found_pairs)
    }

    /// The `n` rows with the most missed truth pairs (ties by name), none with zero.
    pub fn most_missed(&self, n: usize) -> Vec<&FindingRow> {
        top(&self.findings, n, FindingRow::missed)
    }

    /// The `n` rows with the most false-positive predicted pairs (ties by name), none with zero.
    pub fn most_false_positives(&self, n: usize) -> Vec<&FindingRow> {
        top(&self.findings, n, FindingRow::false_positives)
    }
}

impl fmt::Display for TruthReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "observations vs ground truth: {} studies ({} in the truth file, {} in the lake)",
            self.studies, self.truth_studies, self.lake_studies
        )?;
        writeln!(
            f,
            "  (finding, positiveness): {}; {} truth pairs found through parents",
            self.pairs, self.via_parents
        )?;
        writeln!(f, "  finding names: {}", self.names)?;
        writeln!(
            f,
            "  polarity agreement among name matches: {:.3} ({}/{})",
            self.polarity_agreement(),
            self.polarity_agreeing,
            self.name_found_pairs
        )?;
        writeln!(
            f,
            "  regions of {} statements: exact {}; lenient {}",
            self.region_statements, self.regions_exact, self.regions_lenient
        )?;
        let list = |rows: Vec<&FindingRow>, count: fn(&FindingRow) -> usize| {
            if rows.is_empty() {
                return "none".to_owned();
            }
            rows.iter()
                .map(|r| format!("{} ({}) {}", r.finding, r.positiveness.as_str(), count(r)))
                .collect::<Vec<_>>()
                .join(", ")
        };
        writeln!(
            f,
            "  most missed: {}",
            list(self.most_missed(10), FindingRow::missed)
        )?;
        write!(
            f,
            "  most false positives: {}",
            list(self.most_false_positives(10), FindingRow::false_positives)
        )
    }
}

/// Compares the lake's `observations` with the ground truth in `truth` (a
/// `ground_truth.jsonl`), using `defs` to resolve truth synonyms and for the region tree of the
/// lenient region match.
///
/// Fails when the truth file cannot be read or a line is not a study's JSON object (the error
/// names the file and line), or when the lake's tables cannot be queried.
pub async fn observations_vs_truth(
    lake: &Lake,
    defs: &RefDefs,
    truth: &Path,
) -> Result<TruthReport> {
    let reference = Reference::new(defs);
    let mut truth = read_truth(truth)?;
    truth
        .values_mut()
        .flatten()
        .for_each(|statement| reference.resolve(statement));
    let ctx = lake.session().await?;
    let lake_studies: HashSet<String> =
        strings(&collect(&ctx, STAGE, "SELECT DISTINCT study_id FROM sentences").await?)?
            .into_iter()
            .map(|mut row| row.swap_remove(0))
            .collect();
    let evaluated: BTreeMap<&str, &[TruthStatement]> = truth
        .iter()
        .filter(|(study, _)| lake_studies.contains(*study))
        .map(|(study, statements)| (study.as_str(), statements.as_slice()))
        .collect();
    let predicted = read_observations(
        &strings(&collect(&ctx, STAGE, OBSERVATION_TAGS_SQL).await?)?,
        &lake_studies,
    );
    let mut report = score(&evaluated, &predicted, &reference);
    report.truth_studies = truth.len();
    report.lake_studies = lake_studies.len();
    Ok(report)
}

/// One statement of `ground_truth.jsonl` (fields not scored are not read).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
struct TruthStatement {
    finding: String,
    positiveness: Polarity,
    #[serde(default)]
    regions: Vec<String>,
}

/// One line of `ground_truth.jsonl`.
#[derive(Debug, Deserialize)]
struct TruthLine {
    study_id: String,
    findings: Vec<TruthStatement>,
}

/// The statements of every study of a truth file.
fn read_truth(path: &Path) -> Result<BTreeMap<String, Vec<TruthStatement>>> {
    let unreadable = |e: std::io::Error| {
        PipelineError::Input(format!(
            "ground truth {}: {e}; pass the ground_truth.jsonl written by `cxrlake synth`",
            path.display()
        ))
    };
    let file = std::fs::File::open(path).map_err(unreadable)?;
    let mut studies: BTreeMap<String, Vec<TruthStatement>> = BTreeMap::new();
    for (index, line) in BufReader::new(file).lines().enumerate() {
        let line = line.map_err(unreadable)?;
        if line.trim().is_empty() {
            continue;
        }
        let study: TruthLine = serde_json::from_str(&line).map_err(|e| {
            PipelineError::Input(format!(
                "ground truth {}, line {}: {e}; every line must be one study's JSON object \
                 ({{\"study_id\": …, \"findings\": [{{\"finding\": …, \"positiveness\": \"pos\"|\"neg\", …}}]}})",
                path.display(),
                index + 1
            ))
        })?;
        studies
            .entry(study.study_id)
            .or_default()
            .extend(study.findings);
    }
    Ok(studies)
}

/// The scored tags of pos/neg observations, one per row: study, observation, positiveness,
/// kind (`entity`, `parent`, `region`) and value.
const OBSERVATION_TAGS_SQL: &str = "
WITH scored AS (
    SELECT study_id, obs_id, positiveness, obs_entities, obs_entities_parents, regions
    FROM observations
    WHERE positiveness IN ('pos', 'neg')
)
SELECT study_id, obs_id, positiveness, 'entity' AS kind, unnest(obs_entities) AS value FROM scored
UNION ALL
SELECT study_id, obs_id, positiveness, 'parent' AS kind, unnest(obs_entities_parents) AS value
FROM scored
UNION ALL
SELECT study_id, obs_id, positiveness, 'region' AS kind, region['region'] AS value
FROM (SELECT study_id, obs_id, positiveness, unnest(regions) AS region FROM scored)
";

/// One pos/neg observation as scored.
#[derive(Debug, Clone, Default, PartialEq)]
struct PredictedObservation {
    /// Its positiveness (the parents are stated with it).
    polarity: Option<Polarity>,
    /// Its entities after [`NORMAL_STATEMENTS`], with their positiveness.
    pairs: Vec<(String, Polarity)>,
    /// `obs_entities_parents`.
    parents: Vec<String>,
    /// `regions[].region`.
    regions: BTreeSet<String>,
}

impl PredictedObservation {
    /// Whether it states `finding` with `polarity`, as an entity or as a parent.
    fn carries(&self, finding: &str, polarity: Polarity) -> bool {
        self.pairs
            .iter()
            .any(|(e, p)| e == finding && *p == polarity)
            || (self.polarity == Some(polarity) && self.parents.iter().any(|p| p == finding))
    }
}

/// The observations of the lake studies in `rows` (from [`OBSERVATION_TAGS_SQL`]), per study,
/// with the normal table applied.
fn read_observations(
    rows: &[Vec<String>],
    studies: &HashSet<String>,
) -> HashMap<String, Vec<PredictedObservation>> {
    let mut by_id: BTreeMap<(&str, &str), PredictedObservation> = BTreeMap::new();
    for row in rows {
        let [study, obs_id, positiveness, kind, value] = row.as_slice() else {
            continue;
        };
        let Some(polarity) = Polarity::parse(positiveness) else {
            continue;
        };
        if !studies.contains(study) || value.is_empty() {
            continue;
        }
        let observation = by_id.entry((study, obs_id)).or_default();
        observation.polarity = Some(polarity);
        match kind.as_str() {
            "entity" => observation.pairs.extend(normalized(value, polarity)),
            "parent" => observation.parents.push(value.clone()),
            _ => {
                observation.regions.insert(value.clone());
            }
        }
    }
    let mut out: HashMap<String, Vec<PredictedObservation>> = HashMap::new();
    for ((study, _), observation) in by_id {
        if !observation.pairs.is_empty() {
            out.entry(study.to_owned()).or_default().push(observation);
        }
    }
    out
}

/// The pairs an entity stated with `polarity` is scored as ([`NORMAL_STATEMENTS`]).
fn normalized(entity: &str, polarity: Polarity) -> Vec<(String, Polarity)> {
    match NORMAL_STATEMENTS
        .iter()
        .find(|(normal, _)| *normal == entity)
    {
        Some((_, findings)) if polarity == Polarity::Pos => findings
            .iter()
            .map(|f| ((*f).to_owned(), Polarity::Neg))
            .collect(),
        _ => vec![(entity.to_owned(), polarity)],
    }
}

/// What the evaluation uses of the reference definitions: the region tree, and the synonyms
/// that resolve truth names onto reference names.
#[derive(Debug, Default)]
struct Reference {
    /// Region → its parent region.
    region_parent: HashMap<String, String>,
    /// Region synonym → region name (synonyms of exactly one region).
    region_synonyms: HashMap<String, String>,
    /// Finding synonym → finding name (synonyms of exactly one finding).
    finding_synonyms: HashMap<String, String>,
}

impl Reference {
    fn new(defs: &RefDefs) -> Self {
        Self {
            region_parent: defs
                .regions()
                .filter_map(|r| {
                    let parent = r.parent.as_ref()?;
                    Some((r.name.get_ref().clone(), parent.get_ref().clone()))
                })
                .collect(),
            region_synonyms: unique_synonyms(
                defs.regions()
                    .map(|r| (r.name.get_ref(), r.synonyms.iter().map(|s| s.get_ref()))),
            ),
            finding_synonyms: unique_synonyms(
                defs.findings()
                    .map(|f| (f.name.get_ref(), f.synonyms.iter().map(|s| s.get_ref()))),
            ),
        }
    }

    /// Replaces truth names that are synonyms of one reference entry by the entry's name (the
    /// generator writes "left pleural space", the reference region is "left pleura").
    fn resolve(&self, statement: &mut TruthStatement) {
        if let Some(name) = self.finding_synonyms.get(&statement.finding) {
            statement.finding = name.clone();
        }
        for region in &mut statement.regions {
            if let Some(name) = self.region_synonyms.get(region.as_str()) {
                *region = name.clone();
            }
        }
    }

    /// Whether `ancestor` is above `region` in the region tree.
    fn is_ancestor(&self, ancestor: &str, region: &str) -> bool {
        let mut current = region;
        // The tree is validated acyclic; the bound only guards against a malformed one.
        for _ in 0..=self.region_parent.len() {
            match self.region_parent.get(current) {
                Some(parent) if parent == ancestor => return true,
                Some(parent) => current = parent,
                None => return false,
            }
        }
        false
    }

    /// Equal, ancestor or descendant.
    fn related(&self, a: &str, b: &str) -> bool {
        a == b || self.is_ancestor(a, b) || self.is_ancestor(b, a)
    }
}

/// Synonym → name for the synonyms that are not a name themselves and belong to one entry.
fn unique_synonyms<'a, S>(entries: impl Iterator<Item = (&'a String, S)>) -> HashMap<String, String>
where
    S: Iterator<Item = &'a String>,
{
    let mut names: HashSet<&String> = HashSet::new();
    let mut owners: HashMap<&String, Vec<&String>> = HashMap::new();
    for (name, synonyms) in entries {
        names.insert(name);
        for synonym in synonyms {
            owners.entry(synonym).or_default().push(name);
        }
    }
    owners
        .into_iter()
        .filter(|(synonym, owners)| owners.len() == 1 && !names.contains(synonym))
        .map(|(synonym, owners)| (synonym.clone(), owners[0].clone()))
        .collect()
}

/// Scores the truth statements of the evaluated studies against their observations.
fn score(
    truth: &BTreeMap<&str, &[TruthStatement]>,
    predicted: &HashMap<String, Vec<PredictedObservation>>,
    reference: &Reference,
) -> TruthReport {
    let mut report = TruthReport {
        truth_studies: truth.len(),
        lake_studies: truth.len(),
        studies: truth.len(),
        pairs: Matches::default(),
        via_parents: 0,
        names: Matches::default(),
        name_found_pairs: 0,
        polarity_agreeing: 0,
        region_statements: 0,
        regions_exact: Matches::default(),
        regions_lenient: Matches::default(),
        findings: Vec::new(),
    };
    let mut rows: BTreeMap<(String, Polarity), Matches> = BTreeMap::new();
    for (study, statements) in truth {
        let observations = predicted.get(*study).map_or(&[][..], Vec::as_slice);
        let truth_pairs: BTreeSet<(&str, Polarity)> = statements
            .iter()
            .map(|s| (s.finding.as_str(), s.positiveness))
            .collect();
        let truth_names: BTreeSet<&str> = truth_pairs.iter().map(|(f, _)| *f).collect();
        let predicted_pairs: BTreeSet<(&str, Polarity)> = observations
            .iter()
            .flat_map(|o| o.pairs.iter().map(|(e, p)| (e.as_str(), *p)))
            .collect();
        let predicted_names: BTreeSet<&str> = predicted_pairs.iter().map(|(e, _)| *e).collect();
        let parent_pairs: BTreeSet<(&str, Polarity)> = observations
            .iter()
            .flat_map(|o| {
                o.parents
                    .iter()
                    .filter_map(|p| Some((p.as_str(), o.polarity?)))
            })
            .collect();

        for &(finding, polarity) in &truth_pairs {
            let direct = predicted_pairs.contains(&(finding, polarity));
            let found = direct || parent_pairs.contains(&(finding, polarity));
            report.via_parents += usize::from(found && !direct);
            let name_found = predicted_names.contains(finding)
                || parent_pairs.iter().any(|(p, _)| *p == finding);
            report.name_found_pairs += usize::from(name_found);
            report.polarity_agreeing += usize::from(name_found && found);
            let row = rows.entry((finding.to_owned(), polarity)).or_default();
            row.truth += 1;
            row.truth_found += usize::from(found);
            report.pairs.truth += 1;
            report.pairs.truth_found += usize::from(found);
        }
        for &(entity, polarity) in &predicted_pairs {
            let correct = truth_pairs.contains(&(entity, polarity))
                || observations.iter().any(|o| {
                    o.pairs.iter().any(|(e, p)| e == entity && *p == polarity)
                        && o.polarity.is_some_and(|own| {
                            o.parents
                                .iter()
                                .any(|parent| truth_pairs.contains(&(parent.as_str(), own)))
                        })
                });
            let row = rows.entry((entity.to_owned(), polarity)).or_default();
            row.predicted += 1;
            row.predicted_correct += usize::from(correct);
            report.pairs.predicted += 1;
            report.pairs.predicted_correct += usize::from(correct);
        }

        report.names.truth += truth_names.len();
        report.names.truth_found += truth_names
            .iter()
            .filter(|n| predicted_names.contains(*n) || parent_pairs.iter().any(|(p, _)| p == *n))
            .count();
        report.names.predicted += predicted_names.len();
        report.names.predicted_correct += predicted_names
            .iter()
            .filter(|name| {
                truth_names.contains(*name)
                    || observations.iter().any(|o| {
                        o.pairs.iter().any(|(e, _)| e == *name)
                            && o.parents.iter().any(|p| truth_names.contains(p.as_str()))
                    })
            })
            .count();

        for statement in statements.iter().filter(|s| !s.regions.is_empty()) {
            let carriers: Vec<&PredictedObservation> = observations
                .iter()
                .filter(|o| o.carries(&statement.finding, statement.positiveness))
                .collect();
            if carriers.is_empty() {
                continue;
            }
            let truth_regions: BTreeSet<&str> =
                statement.regions.iter().map(String::as_str).collect();
            let predicted_regions: BTreeSet<&str> = carriers
                .iter()
                .flat_map(|o| o.regions.iter().map(String::as_str))
                .collect();
            report.region_statements += 1;
            let exact = truth_regions.intersection(&predicted_regions).count();
            report.regions_exact.add(&Matches {
                truth: truth_regions.len(),
                truth_found: exact,
                predicted: predicted_regions.len(),
                predicted_correct: exact,
            });
            report.regions_lenient.add(&Matches {
                truth: truth_regions.len(),
                truth_found: truth_regions
                    .iter()
                    .filter(|t| predicted_regions.iter().any(|p| reference.related(p, t)))
                    .count(),
                predicted: predicted_regions.len(),
                predicted_correct: predicted_regions
                    .iter()
                    .filter(|p| truth_regions.iter().any(|t| reference.related(p, t)))
                    .count(),
            });
        }
    }
    report.findings = rows
        .into_iter()
        .map(|((finding, positiveness), counts)| FindingRow {
            finding,
            positiveness,
            counts,
        })
        .collect();
    report
}

/// `part / whole`, 1.0 when `whole` is 0.
fn ratio(part: usize, whole: usize) -> f64 {
    if whole == 0 {
        1.0
    } else {
        part as f64 / whole as f64
    }
}

/// The `n` rows with the highest non-zero `count`, ties by name.
fn top(rows: &[FindingRow], n: usize, count: fn(&FindingRow) -> usize) -> Vec<&FindingRow> {
    let mut ranked: Vec<&FindingRow> = rows.iter().filter(|r| count(r) > 0).collect();
    ranked.sort_by(|a, b| {
        count(b)
            .cmp(&count(a))
            .then_with(|| a.finding.cmp(&b.finding))
    });
    ranked.truncate(n);
    ranked
}

#[cfg(test)]
mod tests {
    use super::*;

    fn statement(finding: &str, positiveness: Polarity, regions: &[&str]) -> TruthStatement {
        TruthStatement {
            finding: finding.to_owned(),
            positiveness,
            regions: regions.iter().map(|r| (*r).to_owned()).collect(),
        }
    }

    fn observation(
        entities: &[&str],
        polarity: Polarity,
        parents: &[&str],
        regions: &[&str],
    ) -> PredictedObservation {
        PredictedObservation {
            polarity: Some(polarity),
            pairs: entities
                .iter()
                .flat_map(|e| normalized(e, polarity))
                .collect(),
            parents: parents.iter().map(|p| (*p).to_owned()).collect(),
            regions: regions.iter().map(|r| (*r).to_owned()).collect(),
        }
    }

    fn lung_tree() -> Reference {
        Reference {
            region_parent: [
                ("left lower lobe", "left lung"),
                ("left lung", "lungs"),
                ("right lung", "lungs"),
            ]
            .into_iter()
            .map(|(c, p)| (c.to_owned(), p.to_owned()))
            .collect(),
            ..Reference::default()
        }
    }

    fn score_one(
        truth: Vec<TruthStatement>,
        observations: Vec<PredictedObservation>,
    ) -> TruthReport {
        let truth = BTreeMap::from([("s1", truth.as_slice())]);
        let predicted = HashMap::from([("s1".to_owned(), observations)]);
        score(&truth, &predicted, &lung_tree())
    }

    #[test]
    fn normal_statements_score_as_negated_findings() {
        let report = score_one(
            vec![
                statement("cardiomegaly", Polarity::Neg, &["cardiac silhouette"]),
                statement("lung opacity", Polarity::Neg, &["lungs"]),
            ],
            vec![
                observation(
                    &["normal heart size"],
                    Polarity::Pos,
                    &[],
                    &["cardiac silhouette"],
                ),
                observation(&["clear lungs"], Polarity::Pos, &[], &["lungs"]),
                observation(
                    &["no acute cardiopulmonary process"],
                    Polarity::Pos,
                    &[],
                    &["chest"],
                ),
            ],
        );
        assert_eq!(
            report.pairs,
            Matches {
                truth: 2,
                truth_found: 2,
                predicted: 2,
                predicted_correct: 2
            }
        );
        assert_eq!(report.regions_exact.precision(), 1.0);
        assert_eq!(report.regions_exact.recall(), 1.0);
        assert!(report.most_false_positives(10).is_empty());
    }

    #[test]
    fn parents_match_with_the_same_positiveness() {
        let report = score_one(
            vec![statement("lung opacity", Polarity::Pos, &[])],
            vec![observation(
                &["atelectasis"],
                Polarity::Pos,
                &["lung opacity"],
                &[],
            )],
        );
        assert_eq!(report.via_parents, 1);
        assert_eq!(report.pairs.recall(), 1.0);
        assert_eq!(report.pairs.precision(), 1.0);

        let negated = score_one(
            vec![statement("lung opacity", Polarity::Pos, &[])],
            vec![observation(
                &["atelectasis"],
                Polarity::Neg,
                &["lung opacity"],
                &[],
            )],
        );
        assert_eq!(negated.via_parents, 0);
        assert_eq!(negated.pairs.truth_found, 0);
        assert_eq!(negated.names.truth_found, 1);
    }

    #[test]
    fn wrong_polarity_is_a_name_match_only() {
        let report = score_one(
            vec![statement("pleural effusion", Polarity::Neg, &[])],
            vec![observation(&["pleural effusion"], Polarity::Pos, &[], &[])],
        );
        assert_eq!(report.pairs.precision(), 0.0);
        assert_eq!(report.pairs.recall(), 0.0);
        assert_eq!(report.names.precision(), 1.0);
        assert_eq!(report.names.recall(), 1.0);
        assert_eq!((report.polarity_agreeing, report.name_found_pairs), (0, 1));
        assert_eq!(report.polarity_agreement(), 0.0);
        let missed = report.most_missed(10);
        assert_eq!(missed.len(), 1);
        assert_eq!(
            (missed[0].finding.as_str(), missed[0].positiveness),
            ("pleural effusion", Polarity::Neg)
        );
        assert_eq!(
            report.most_false_positives(10)[0].positiveness,
            Polarity::Pos
        );
    }

    #[test]
    fn lenient_regions_accept_ancestors_and_descendants() {
        let report = score_one(
            vec![statement(
                "atelectasis",
                Polarity::Pos,
                &["left lower lobe"],
            )],
            vec![
                observation(&["atelectasis"], Polarity::Pos, &[], &["left lung"]),
                observation(&["atelectasis"], Polarity::Pos, &[], &["right lung"]),
            ],
        );
        assert_eq!(report.region_statements, 1);
        assert_eq!(
            report.regions_exact,
            Matches {
                truth: 1,
                truth_found: 0,
                predicted: 2,
                predicted_correct: 0
            }
        );
        assert_eq!(
            report.regions_lenient,
            Matches {
                truth: 1,
                truth_found: 1,
                predicted: 2,
                predicted_correct: 1
            }
        );
        assert!(lung_tree().related("lungs", "left lower lobe"));
        assert!(lung_tree().related("left lung", "left lung"));
        assert!(lung_tree().related("left lower lobe", "lungs"));
        assert!(!lung_tree().related("right lung", "left lower lobe"));
    }

    #[test]
    fn truth_synonyms_resolve_to_reference_names() {
        let reference = Reference::new(&RefDefs::embedded().expect("refdefs"));
        let mut synonym = statement(
            "pleural effusion",
            Polarity::Pos,
            &["left pleural space", "lung bases"],
        );
        reference.resolve(&mut synonym);
        assert_eq!(synonym.regions, ["left pleura", "lower lung zones"]);
        assert_eq!(synonym.finding, "pleural effusion");
        assert!(reference.related("left lung", "left lower lobe"));
        assert!(reference.related("left lower lobe", "chest"));
        assert!(!reference.related("right lung", "left lower lobe"));
    }
}
