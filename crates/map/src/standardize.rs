//! Mapping and standardisation of one study's raw observations (paper 000, E.1.3).
//!
//! Per observation: regions (with distances) and finding entities are matched onto the
//! reference definitions (findings also through (region, entity) pairs, the name and the summary
//! sentence); modifiers against all modifier types, the matched probability deciding certainty
//! and positiveness; changes matched, unmatched dropped; laterality from keywords; parents,
//! categories, subcategories and default regions from the matched findings.
//!
//! Per study: children that each carry one of a multi-finding parent's findings are lifted to
//! the top level (the parent is discarded), duplicates are merged, default regions replace
//! missing or coarser ones, regions contradicting the laterality are dropped and one-sided
//! versions of a bilateral region are split or merged. Observations are then numbered again
//! (`O01`, `O01.01`) in their original order. Every fix is visible in `obs_quality`.

use serde::{Deserialize, Serialize};

use cxrlake_embed::{EmbedError, normalize_text};
use cxrlake_refdefs::Laterality;

use crate::concepts::{ConceptIndex, ConceptKind};
use crate::reference::Reference;
use crate::texts::Queries;

/// One row of `observations_raw`, as `map_observations` receives it.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct RawObservation {
    /// `O01`, `O01.02`.
    pub obs_id: String,
    /// Child type of a child row.
    #[serde(default)]
    pub child_type: Option<String>,
    /// Short name.
    #[serde(default)]
    pub name: Option<String>,
    /// Finding entity as extracted.
    #[serde(default)]
    pub entity: Option<String>,
    /// Probability as extracted.
    #[serde(default)]
    pub probability: Option<String>,
    /// Change as extracted.
    #[serde(default)]
    pub change: Option<String>,
    /// Summary sentence.
    #[serde(default)]
    pub summary_sentence: Option<String>,
    /// Change sentence.
    #[serde(default)]
    pub change_sentence: Option<String>,
    /// Region tags as extracted (may carry a distance, "2 cm above the carina").
    #[serde(default)]
    pub regions: Vec<Option<String>>,
    /// Modifier tags as extracted.
    #[serde(default)]
    pub modifiers: Vec<Option<String>>,
    /// Sentences it was extracted from.
    #[serde(default)]
    pub sent_ids: Vec<Option<String>>,
}

/// `{region, distances}`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct RegionRef {
    /// Region name (reference name, or the raw text when unresolved).
    pub region: String,
    /// Distance annotations, e.g. "2 cm above".
    pub distances: Vec<String>,
}

/// Modifiers by type (paper D.1: a dict of lists).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Modifiers {
    /// Severity values.
    pub severity: Vec<String>,
    /// Texture values.
    pub texture: Vec<String>,
    /// Spread values.
    pub spread: Vec<String>,
    /// Temporal values.
    pub temporal: Vec<String>,
}

impl Modifiers {
    /// Adds `value` to the list of modifier type `kind` (unknown types are ignored).
    pub fn push(&mut self, kind: &str, value: &str) {
        let list = match kind {
            "severity" => &mut self.severity,
            "texture" => &mut self.texture,
            "spread" => &mut self.spread,
            "temporal" => &mut self.temporal,
            _ => return,
        };
        push_unique(list, value);
    }

    /// Adds every value of `other`.
    pub fn extend(&mut self, other: &Modifiers) {
        for (kind, values) in [
            ("severity", &other.severity),
            ("texture", &other.texture),
            ("spread", &other.spread),
            ("temporal", &other.temporal),
        ] {
            for value in values {
                self.push(kind, value);
            }
        }
    }
}

/// The five extraction-quality aspects of table 11 (level names).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ObsQuality {
    /// Region extraction.
    pub region_extract_quality: String,
    /// Finding extraction.
    pub entity_extract_quality: String,
    /// Description extraction.
    pub sentence_name_quality: String,
    /// Change extraction.
    pub change_quality: String,
    /// Extraction issues.
    pub general_issue_level: String,
}

/// A mapped observation node (paper D.1, without localization) with its sentences.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Observation {
    /// `O01`, `O01.02`.
    pub obs_id: String,
    /// Summary sentence.
    pub summary_sentence: Option<String>,
    /// Short name.
    pub name: Option<String>,
    /// 0 for top level.
    pub child_level: i32,
    /// Relation to the parent.
    pub child_type: Option<String>,
    /// Matched regions.
    pub regions: Vec<RegionRef>,
    /// Regions that matched nothing.
    pub non_resolved_regions: Vec<RegionRef>,
    /// left, right, likely bilateral, bilateral, unknown.
    pub laterality: String,
    /// Defaults of the matched findings (lateralised).
    pub default_regions: Vec<String>,
    /// Matched findings.
    pub obs_entities: Vec<String>,
    /// Their ancestors.
    pub obs_entities_parents: Vec<String>,
    /// Findings that matched nothing.
    pub non_resolved_obs_entities: Vec<String>,
    /// Categories of the findings.
    pub obs_categories: Vec<String>,
    /// Subcategories of the findings.
    pub obs_subcategories: Vec<String>,
    /// Matched probability.
    pub probability: Option<String>,
    /// From the probability.
    pub certainty: String,
    /// From the probability.
    pub positiveness: String,
    /// Matched modifiers by type.
    pub modifiers: Modifiers,
    /// Change sentence (removed when it mentions no change).
    pub change_sentence: Option<String>,
    /// Matched changes.
    pub changes: Vec<String>,
    /// Mentioned in the report.
    pub from_report: bool,
    /// Table 11 aspects.
    pub obs_quality: ObsQuality,
    /// Sentences it was derived from.
    pub sent_ids: Vec<String>,
}

fn push_unique(list: &mut Vec<String>, value: &str) {
    if !list.iter().any(|v| v == value) {
        list.push(value.to_string());
    }
}

pub(crate) fn strs(list: &[Option<String>]) -> impl Iterator<Item = &str> {
    list.iter()
        .flatten()
        .map(|s| s.trim())
        .filter(|s| !s.is_empty())
}

/// Extraction issues found while mapping (table 11, "extraction issues"): the worst wins.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Issue {
    NoIssues,
    Fixable,
    Ignorable,
}

impl Issue {
    fn level(self) -> &'static str {
        match self {
            Issue::NoIssues => "NO_ISSUES",
            Issue::Fixable => "FIXABLE",
            Issue::Ignorable => "IGNORABLE",
        }
    }
}

/// Splits "2 cm above the carina" into ("carina", ["2 cm above"]); other text is kept whole.
pub fn split_distance(text: &str) -> (String, Vec<String>) {
    const RELATIONS: [&str; 10] = [
        "above",
        "below",
        "beyond",
        "from",
        "proximal to",
        "distal to",
        "into",
        "within",
        "past",
        "short of",
    ];
    let lower = text.trim().to_lowercase();
    let mut words = lower.split_whitespace().peekable();
    let Some(number) = words.peek().copied() else {
        return (text.trim().to_string(), Vec::new());
    };
    let numeric = number.chars().next().is_some_and(|c| c.is_ascii_digit());
    if !numeric {
        return (text.trim().to_string(), Vec::new());
    }
    let rest: Vec<&str> = lower.split_whitespace().collect();
    // "<n> cm|mm <relation> [the] <region>" or "<n>cm <relation> …"
    let (unit_end, unit_ok) = match rest.get(1) {
        Some(&u) if u == "cm" || u == "mm" => (2, true),
        _ => (1, number.ends_with("cm") || number.ends_with("mm")),
    };
    if !unit_ok {
        return (text.trim().to_string(), Vec::new());
    }
    let tail = rest[unit_end..].join(" ");
    for relation in RELATIONS {
        if let Some(region) = tail.strip_prefix(relation) {
            let region = region.trim();
            let region = region.strip_prefix("the ").unwrap_or(region).trim();
            if region.is_empty() {
                break;
            }
            let distance = format!("{} {relation}", rest[..unit_end].join(" "));
            return (region.to_string(), vec![distance]);
        }
    }
    (text.trim().to_string(), Vec::new())
}

/// Whether a region tag names only a side ("left", "right side", "both sides", "bilateral").
pub(crate) fn is_side_only(text: &str) -> bool {
    let normalized = normalize_text(text);
    normalized.split(' ').all(|w| {
        matches!(
            w,
            "left" | "right" | "bilateral" | "bilaterally" | "both" | "side" | "sided" | "the"
        )
    })
}

/// Laterality keywords in `texts`: `Some(Left | Right | Bilateral)` or `None`.
fn keyword_laterality<'a>(texts: impl IntoIterator<Item = &'a str>) -> Option<Laterality> {
    let (mut left, mut right, mut both) = (false, false, false);
    for text in texts {
        for word in normalize_text(text).split(' ') {
            match word {
                "left" | "lt" => left = true,
                "right" | "rt" => right = true,
                "bilateral" | "bilaterally" | "both" | "bibasilar" | "bibasal" | "biapical"
                | "bihilar" | "bibasally" => both = true,
                _ => {}
            }
        }
    }
    match (left, right, both) {
        (_, _, true) | (true, true, _) => Some(Laterality::Bilateral),
        (true, false, false) => Some(Laterality::Left),
        (false, true, false) => Some(Laterality::Right),
        _ => None,
    }
}

/// Maps one study's observations (see the module docs). Raw observations are in `obs_id` order.
pub fn map_study(
    raw: &[RawObservation],
    concepts: &ConceptIndex,
    reference: &Reference,
) -> Result<Vec<Observation>, EmbedError> {
    let mut mapped = Vec::with_capacity(raw.len());
    for observation in raw {
        mapped.push(map_one(observation, concepts, reference)?);
    }
    let mut tree = into_tree(mapped);
    lift_children(&mut tree);
    merge_duplicates(&mut tree);
    Ok(renumber(tree))
}

/// A top-level observation with its children.
type Node = (Observation, Vec<Observation>);

fn into_tree(observations: Vec<Observation>) -> Vec<Node> {
    let mut tree: Vec<Node> = Vec::new();
    for observation in observations {
        match observation.obs_id.split_once('.') {
            Some((parent, _)) => {
                if let Some((_, children)) = tree.iter_mut().rev().find(|(p, _)| p.obs_id == parent)
                {
                    children.push(observation);
                } else {
                    // An orphan child (its parent failed): keep it as a top-level observation.
                    let mut orphan = observation;
                    orphan.child_type = None;
                    tree.push((orphan, Vec::new()));
                }
            }
            None => tree.push((observation, Vec::new())),
        }
    }
    tree
}

fn mark_fixed(observation: &mut Observation) {
    if observation.obs_quality.general_issue_level == Issue::NoIssues.level() {
        observation.obs_quality.general_issue_level = Issue::Fixable.level().to_string();
    }
}

/// A parent naming several findings whose children each carry exactly one of them, all
/// different, is replaced by its children.
fn lift_children(tree: &mut Vec<Node>) {
    let mut out = Vec::with_capacity(tree.len());
    for (parent, children) in tree.drain(..) {
        let liftable = parent.obs_entities.len() >= 2
            && children.len() >= 2
            && children.iter().all(|c| c.obs_entities.len() == 1)
            && {
                let mut seen: Vec<&str> = children
                    .iter()
                    .map(|c| c.obs_entities[0].as_str())
                    .collect();
                seen.sort_unstable();
                seen.dedup();
                seen.len() == children.len()
                    && seen
                        .iter()
                        .all(|e| parent.obs_entities.iter().any(|p| p == e))
            };
        if liftable {
            for mut child in children {
                child.child_type = None;
                mark_fixed(&mut child);
                out.push((child, Vec::new()));
            }
        } else {
            out.push((parent, children));
        }
    }
    *tree = out;
}

/// Childless top-level observations with the same findings, polarity, certainty, laterality
/// and regions are merged into the first.
fn merge_duplicates(tree: &mut Vec<Node>) {
    let key = |o: &Observation| {
        let mut entities = o.obs_entities.clone();
        entities.sort_unstable();
        let regions: Vec<&str> = o.regions.iter().map(|r| r.region.as_str()).collect();
        format!(
            "{entities:?}|{}|{}|{}|{regions:?}",
            o.positiveness, o.certainty, o.laterality
        )
    };
    let mut out: Vec<Node> = Vec::with_capacity(tree.len());
    for (observation, children) in tree.drain(..) {
        let duplicate = children.is_empty() && !observation.obs_entities.is_empty() && {
            let k = key(&observation);
            out.iter().position(|(o, c)| c.is_empty() && key(o) == k)
        }
        .is_some();
        if duplicate {
            let k = key(&observation);
            if let Some((first, _)) = out.iter_mut().find(|(o, c)| c.is_empty() && key(o) == k) {
                for sent in &observation.sent_ids {
                    push_unique(&mut first.sent_ids, sent);
                }
                for change in &observation.changes {
                    push_unique(&mut first.changes, change);
                }
                first.modifiers.extend(&observation.modifiers);
                mark_fixed(first);
            }
        } else {
            out.push((observation, children));
        }
    }
    *tree = out;
}

fn renumber(tree: Vec<Node>) -> Vec<Observation> {
    let mut out = Vec::new();
    for (i, (mut parent, children)) in tree.into_iter().enumerate() {
        let id = format!("O{:02}", i + 1);
        parent.obs_id = id.clone();
        parent.child_level = 0;
        out.push(parent);
        for (c, mut child) in children.into_iter().enumerate() {
            child.obs_id = format!("{id}.{:02}", c + 1);
            child.child_level = 1;
            out.push(child);
        }
    }
    out
}

fn map_one(
    raw: &RawObservation,
    concepts: &ConceptIndex,
    reference: &Reference,
) -> Result<Observation, EmbedError> {
    let mut issue = Issue::NoIssues;
    let summary = raw
        .summary_sentence
        .as_deref()
        .map(str::trim)
        .filter(|s| !s.is_empty());
    let name = raw.name.as_deref().map(str::trim).filter(|s| !s.is_empty());

    // Every text looked up below comes from one rule (`texts.rs`), which the incremental
    // planner asks too.
    let queries = Queries::of(raw);

    // Regions, with distances split off; a bare side ("left", "bilateral") is no region, it
    // only sets the laterality (below).
    let mut regions: Vec<RegionRef> = Vec::new();
    let mut non_resolved_regions = Vec::new();
    for (text, distances) in &queries.regions {
        match concepts.best(ConceptKind::Region, text)? {
            Some(hit) => {
                if let Some(existing) = regions.iter_mut().find(|r| r.region == hit.tag) {
                    for d in distances {
                        push_unique(&mut existing.distances, d);
                    }
                } else {
                    regions.push(RegionRef {
                        region: hit.tag.to_string(),
                        distances: distances.clone(),
                    });
                }
            }
            None => non_resolved_regions.push(RegionRef {
                region: text.clone(),
                distances: distances.clone(),
            }),
        }
    }

    // Findings: each entity part alone, with each region, and the name; the summary sentence
    // when none of those matches.
    let entity = raw.entity.as_deref().unwrap_or("").trim();
    let mut obs_entities: Vec<String> = Vec::new();
    let mut non_resolved_obs_entities = Vec::new();
    for finding in &queries.findings {
        let mut best: Option<(&str, f32)> = None;
        for candidate in &finding.candidates {
            if let Some(hit) = concepts.best(ConceptKind::Finding, candidate)?
                && best.is_none_or(|(_, s)| hit.score > s)
            {
                best = Some((hit.tag, hit.score));
            }
        }
        if best.is_none()
            && let Some(summary) = summary
        {
            best = concepts
                .best(ConceptKind::Finding, summary)?
                .map(|h| (h.tag, h.score));
        }
        match best {
            Some((tag, _)) => push_unique(&mut obs_entities, tag),
            None => push_unique(&mut non_resolved_obs_entities, &finding.part),
        }
    }

    // Parents, categories, subcategories, default regions.
    let (mut parents, mut categories, mut subcategories, mut defaults) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for entity in &obs_entities {
        if let Some(info) = reference.finding(entity) {
            info.parents
                .iter()
                .for_each(|p| push_unique(&mut parents, p));
            push_unique(&mut categories, &info.category);
            info.subcategories
                .iter()
                .for_each(|s| push_unique(&mut subcategories, s));
            info.default_regions
                .iter()
                .for_each(|d| push_unique(&mut defaults, d));
        }
    }

    // Probability and modifiers, all matched against every modifier type.
    let mut probability: Option<String> = None;
    let mut modifiers = Modifiers::default();
    let raw_probability = raw
        .probability
        .as_deref()
        .map(str::trim)
        .filter(|p| !p.is_empty());
    for text in &queries.modifiers {
        let Some(hit) = concepts.best(ConceptKind::Modifier, text)? else {
            continue;
        };
        match reference.modifier_type(hit.tag) {
            Some("probability") => {
                probability.get_or_insert_with(|| hit.tag.to_string());
            }
            Some(kind) => modifiers.push(kind, hit.tag),
            None => {}
        }
    }
    let child_type = raw.child_type.as_deref().filter(|c| !c.is_empty());
    let (certainty, positiveness) = match probability
        .as_deref()
        .and_then(|p| reference.probability(p))
    {
        Some(meaning) => meaning,
        None => {
            if raw_probability.is_some() {
                issue = issue.max(Issue::Ignorable);
            }
            match child_type {
                Some("comparison_only") => ("comparison_only", "comparison_only"),
                Some("recommendation") => ("recommendation", "recommendation"),
                _ => ("certain", "pos"),
            }
        }
    };

    // Changes: matched, unmatched dropped.
    let mut changes = Vec::new();
    let mut unresolved_change = false;
    for part in &queries.changes {
        match concepts.best(ConceptKind::Change, part)? {
            Some(hit) => push_unique(&mut changes, hit.tag),
            None => unresolved_change = true,
        }
    }

    // Laterality: keywords in the raw entity, regions and summary; else the regions' sides.
    let keyword_texts = std::iter::once(entity)
        .chain(strs(&raw.regions))
        .chain(summary);
    let from_regions = || {
        let sides: Vec<Laterality> = regions
            .iter()
            .filter_map(|r| reference.region(&r.region).map(|i| i.laterality))
            .filter(|l| *l != Laterality::Unknown)
            .collect();
        match (
            sides.contains(&Laterality::Left),
            sides.contains(&Laterality::Right),
            sides.contains(&Laterality::Bilateral),
        ) {
            (true, false, false) => Some(Laterality::Left),
            (false, true, false) => Some(Laterality::Right),
            (false, false, false) => None,
            _ => Some(Laterality::Bilateral),
        }
    };
    let side = keyword_laterality(keyword_texts).or_else(from_regions);

    // Default regions on the observation's side.
    let default_regions: Vec<String> = defaults
        .iter()
        .map(|d| lateralize(reference, d, side))
        .fold(Vec::new(), |mut acc, d| {
            push_unique(&mut acc, &d);
            acc
        });

    // Regions: defaults when none, defaults that are more precise than an extracted region.
    let mut contains_default = false;
    let mut default_only = false;
    if regions.is_empty() && non_resolved_regions.is_empty() {
        regions = default_regions
            .iter()
            .map(|d| RegionRef {
                region: d.clone(),
                distances: Vec::new(),
            })
            .collect();
        default_only = !regions.is_empty();
    } else {
        for default in &default_regions {
            if let Some(coarser) = regions
                .iter_mut()
                .find(|r| reference.is_ancestor(&r.region, default))
            {
                coarser.region = default.clone();
                contains_default = true;
            }
        }
    }
    // Drop regions on the other side; split a bilateral region to the observation's side.
    if let Some(side @ (Laterality::Left | Laterality::Right)) = side {
        let before = regions.len();
        let other = if side == Laterality::Left {
            Laterality::Right
        } else {
            Laterality::Left
        };
        regions.retain(|r| {
            reference
                .region(&r.region)
                .is_none_or(|i| i.laterality != other)
        });
        let mut fixed = regions.len() != before;
        for r in &mut regions {
            if let Some(one_side) = reference
                .region(&r.region)
                .filter(|i| i.laterality == Laterality::Bilateral)
                .and_then(|i| i.side(side))
            {
                r.region = one_side.to_string();
                fixed = true;
            }
        }
        if fixed {
            issue = issue.max(Issue::Fixable);
        }
    }
    // Merge left and right versions of the same region into the bilateral one.
    let mut merged: Vec<RegionRef> = Vec::new();
    for r in regions {
        let pair = reference.region(&r.region).and_then(|info| {
            let other = match info.laterality {
                Laterality::Left => info.right.as_deref(),
                Laterality::Right => info.left.as_deref(),
                _ => None,
            }?;
            Some((other.to_string(), info.bilateral.clone()?))
        });
        if let Some((other, bilateral)) = pair
            && let Some(existing) = merged.iter_mut().find(|m| m.region == other)
        {
            existing.region = bilateral;
            for d in r.distances {
                push_unique(&mut existing.distances, &d);
            }
            issue = issue.max(Issue::Fixable);
            continue;
        }
        match merged.iter_mut().find(|m| m.region == r.region) {
            Some(existing) => r
                .distances
                .iter()
                .for_each(|d| push_unique(&mut existing.distances, d)),
            None => merged.push(r),
        }
    }
    let regions = merged;

    let laterality = match side {
        Some(l) => l.as_str(),
        None if default_only
            && regions.iter().any(|r| {
                reference
                    .region(&r.region)
                    .is_some_and(|i| i.laterality == Laterality::Bilateral)
            }) =>
        {
            "likely bilateral"
        }
        None => "unknown",
    };

    // Quality aspects (table 11).
    let region_extract_quality = if regions.is_empty() && non_resolved_regions.is_empty() {
        "NO_REGIONS"
    } else if default_only {
        "DEFAULT_REGIONS_ONLY"
    } else if contains_default {
        "CONTAINS_DEFAULT_REGIONS"
    } else if !non_resolved_regions.is_empty() {
        "CONTAINS_NON_RESOLVED_REGIONS"
    } else {
        "RESOLVED_REGIONS_ONLY"
    };
    let entity_extract_quality = if obs_entities.is_empty() && non_resolved_obs_entities.is_empty()
    {
        "NO_ENTITIES"
    } else if !non_resolved_obs_entities.is_empty() {
        "CONTAINS_NON_RESOLVED_ENTITIES"
    } else {
        "RESOLVED_ENTITIES_ONLY"
    };
    let described = summary.into_iter().chain(name);
    let sentence_name_quality = if described.clone().any(|t| reference.mentions_change(t)) {
        "CHANGE_IN_SENTENCE_OR_NAME"
    } else if described.clone().any(|t| t.contains('_')) {
        "UNDERSCORES_IN_SENTENCE_OR_NAME"
    } else {
        "NO_ISSUES"
    };
    let mut change_sentence = raw
        .change_sentence
        .as_deref()
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string);
    let change_quality = match &change_sentence {
        Some(sentence) if changes.is_empty() && !reference.mentions_change(sentence) => {
            change_sentence = None;
            "CHANGE_SENTENCE_REMOVED"
        }
        Some(sentence) if sentence.contains('_') => "UNDERSCORES_IN_CHANGE_SENTENCE",
        _ if unresolved_change => "CONTAINS_NON_RESOLVED_CHANGES",
        _ => "NO_ISSUES",
    };

    Ok(Observation {
        obs_id: raw.obs_id.clone(),
        summary_sentence: summary.map(str::to_string),
        name: name.map(str::to_string),
        child_level: raw.obs_id.matches('.').count() as i32,
        child_type: child_type.map(str::to_string),
        regions,
        non_resolved_regions,
        laterality: laterality.to_string(),
        default_regions,
        obs_entities,
        obs_entities_parents: parents,
        non_resolved_obs_entities,
        obs_categories: categories,
        obs_subcategories: subcategories,
        probability,
        certainty: certainty.to_string(),
        positiveness: positiveness.to_string(),
        modifiers,
        change_sentence,
        changes,
        from_report: true,
        obs_quality: ObsQuality {
            region_extract_quality: region_extract_quality.to_string(),
            entity_extract_quality: entity_extract_quality.to_string(),
            sentence_name_quality: sentence_name_quality.to_string(),
            change_quality: change_quality.to_string(),
            general_issue_level: issue.level().to_string(),
        },
        sent_ids: strs(&raw.sent_ids).map(str::to_string).collect(),
    })
}

/// `region` on `side`: a bilateral region's left or right version when the observation is
/// one-sided.
fn lateralize(reference: &Reference, region: &str, side: Option<Laterality>) -> String {
    match side {
        Some(side @ (Laterality::Left | Laterality::Right)) => reference
            .region(region)
            .filter(|i| i.laterality == Laterality::Bilateral)
            .and_then(|i| i.side(side))
            .unwrap_or(region)
            .to_string(),
        _ => region.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distances_are_split_off() {
        assert_eq!(
            split_distance("2 cm above the carina"),
            ("carina".to_string(), vec!["2 cm above".to_string()])
        );
        assert_eq!(
            split_distance("3cm below carina"),
            ("carina".to_string(), vec!["3cm below".to_string()])
        );
        assert_eq!(split_distance("left lower lobe").0, "left lower lobe");
        assert!(split_distance("4th rib").1.is_empty());
    }

    #[test]
    fn laterality_keywords() {
        assert_eq!(
            keyword_laterality(["left effusion"]),
            Some(Laterality::Left)
        );
        assert_eq!(
            keyword_laterality(["bibasilar opacities"]),
            Some(Laterality::Bilateral)
        );
        assert_eq!(
            keyword_laterality(["left and right"]),
            Some(Laterality::Bilateral)
        );
        assert_eq!(keyword_laterality(["cardiomegaly"]), None);
    }

    #[test]
    fn bare_sides_are_not_regions() {
        assert!(is_side_only("left"));
        assert!(is_side_only("Both sides"));
        assert!(is_side_only("bilateral"));
        assert!(!is_side_only("left lung"));
    }
}
