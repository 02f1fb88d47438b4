//! The reference-definition facts the map and graph functions look up per tag: finding
//! hierarchy and defaults, region tree and sides, modifier types, probability semantics, change
//! phrases. Built once per stage run from [`RefDefs`].

use std::collections::{HashMap, HashSet};

use cxrlake_embed::normalize_text;
use cxrlake_refdefs::{Laterality, RefDefs};

/// What a finding implies.
#[derive(Debug, Clone, Default)]
pub struct FindingInfo {
    /// Every ancestor in the finding hierarchy, nearest first.
    pub parents: Vec<String>,
    /// Main category.
    pub category: String,
    /// Subcategories.
    pub subcategories: Vec<String>,
    /// Regions assumed when none is given.
    pub default_regions: Vec<String>,
    /// Findings this finding is indicative of.
    pub indicative_of: Vec<String>,
}

/// Where a region sits.
#[derive(Debug, Clone)]
pub struct RegionInfo {
    /// Side.
    pub laterality: Laterality,
    /// Left, right and bilateral counterparts.
    pub left: Option<String>,
    /// See `left`.
    pub right: Option<String>,
    /// See `left`.
    pub bilateral: Option<String>,
    /// Every ancestor in the region tree, nearest first.
    pub ancestors: Vec<String>,
}

impl RegionInfo {
    /// The counterpart on `side`.
    pub fn side(&self, side: Laterality) -> Option<&str> {
        match side {
            Laterality::Left => self.left.as_deref(),
            Laterality::Right => self.right.as_deref(),
            Laterality::Bilateral => self.bilateral.as_deref(),
            Laterality::Unknown => None,
        }
    }
}

/// Lookups over one set of reference definitions.
#[derive(Debug, Clone)]
pub struct Reference {
    findings: HashMap<String, FindingInfo>,
    regions: HashMap<String, RegionInfo>,
    /// Modifier name → type (`severity`, …, or `probability`).
    modifier_types: HashMap<String, &'static str>,
    /// Probability name → (certainty, positiveness).
    probabilities: HashMap<String, (&'static str, &'static str)>,
    /// Normalised change names and synonyms.
    change_phrases: HashSet<String>,
    /// Longest change phrase, in words.
    change_words: usize,
}

fn names(list: &[cxrlake_refdefs::model::Name]) -> Vec<String> {
    list.iter().map(|n| n.get_ref().clone()).collect()
}

impl Reference {
    /// The lookups of `defs`.
    pub fn new(defs: &RefDefs) -> Self {
        let direct: HashMap<&str, Vec<String>> = defs
            .findings()
            .map(|f| (f.name.get_ref().as_str(), names(&f.parents)))
            .collect();
        let findings = defs
            .findings()
            .map(|f| {
                let mut parents: Vec<String> = Vec::new();
                let mut queue = names(&f.parents);
                while let Some(parent) = (!queue.is_empty()).then(|| queue.remove(0)) {
                    if parents.contains(&parent) || parent == *f.name.get_ref() {
                        continue;
                    }
                    queue.extend(direct.get(parent.as_str()).cloned().unwrap_or_default());
                    parents.push(parent);
                }
                let info = FindingInfo {
                    parents,
                    category: f.category.get_ref().clone(),
                    subcategories: names(&f.subcategories),
                    default_regions: names(&f.default_regions),
                    indicative_of: names(&f.indicative_of),
                };
                (f.name.get_ref().clone(), info)
            })
            .collect();
        let parent_of: HashMap<&str, &str> = defs
            .regions()
            .filter_map(|r| {
                Some((
                    r.name.get_ref().as_str(),
                    r.parent.as_ref()?.get_ref().as_str(),
                ))
            })
            .collect();
        let regions = defs
            .regions()
            .map(|r| {
                let mut ancestors = Vec::new();
                let mut at = r.name.get_ref().as_str();
                while let Some(&parent) = parent_of.get(at) {
                    if ancestors.iter().any(|a: &String| a == parent) {
                        break;
                    }
                    ancestors.push(parent.to_string());
                    at = parent;
                }
                let link = |l: &Option<cxrlake_refdefs::model::Name>| {
                    l.as_ref().map(|n| n.get_ref().clone())
                };
                let info = RegionInfo {
                    laterality: *r.laterality.get_ref(),
                    left: link(&r.left),
                    right: link(&r.right),
                    bilateral: link(&r.bilateral),
                    ancestors,
                };
                (r.name.get_ref().clone(), info)
            })
            .collect();
        let mut modifier_types: HashMap<String, &'static str> = defs
            .modifiers()
            .map(|m| (m.name.get_ref().clone(), m.modifier_type.get_ref().as_str()))
            .collect();
        let probabilities: HashMap<String, (&'static str, &'static str)> = defs
            .probabilities()
            .map(|p| {
                let meaning = (
                    p.certainty.get_ref().as_str(),
                    p.positiveness.get_ref().as_str(),
                );
                (p.name.get_ref().clone(), meaning)
            })
            .collect();
        for name in probabilities.keys() {
            modifier_types.insert(name.clone(), "probability");
        }
        let change_phrases: HashSet<String> = defs
            .changes()
            .flat_map(|c| std::iter::once(&c.name).chain(&c.synonyms))
            .map(|n| normalize_text(n.get_ref()))
            .filter(|n| !n.is_empty())
            .collect();
        let change_words = change_phrases
            .iter()
            .map(|p| p.split(' ').count())
            .max()
            .unwrap_or(1);
        Self {
            findings,
            regions,
            modifier_types,
            probabilities,
            change_phrases,
            change_words,
        }
    }

    /// The finding `name`.
    pub fn finding(&self, name: &str) -> Option<&FindingInfo> {
        self.findings.get(name)
    }

    /// Every finding with its facts.
    pub fn findings(&self) -> impl Iterator<Item = (&String, &FindingInfo)> {
        self.findings.iter()
    }

    /// The region `name`.
    pub fn region(&self, name: &str) -> Option<&RegionInfo> {
        self.regions.get(name)
    }

    /// The type of modifier `name` (`probability` for probability values).
    pub fn modifier_type(&self, name: &str) -> Option<&'static str> {
        self.modifier_types.get(name).copied()
    }

    /// `(certainty, positiveness)` of probability `name`.
    pub fn probability(&self, name: &str) -> Option<(&'static str, &'static str)> {
        self.probabilities.get(name).copied()
    }

    /// Whether `ancestor` is above `region` in the region tree.
    pub fn is_ancestor(&self, ancestor: &str, region: &str) -> bool {
        self.region(region)
            .is_some_and(|r| r.ancestors.iter().any(|a| a == ancestor))
    }

    /// Whether `text` mentions a change type (a change name or synonym as whole words).
    pub fn mentions_change(&self, text: &str) -> bool {
        let normalized = normalize_text(text);
        let words: Vec<&str> = normalized.split(' ').filter(|w| !w.is_empty()).collect();
        let mut phrase = String::new();
        for start in 0..words.len() {
            phrase.clear();
            for (n, word) in words[start..].iter().take(self.change_words).enumerate() {
                if n > 0 {
                    phrase.push(' ');
                }
                phrase.push_str(word);
                if self.change_phrases.contains(&phrase) {
                    return true;
                }
            }
        }
        false
    }
}
