//! The offline MCQ generator: up to five deterministic questions per study from its scene-graph
//! facts and the reference definitions, one per task type, with distractors from clinically
//! plausible siblings and explanations from the report's own statements.
//!
//! ```text
//!  task                    difficulty  correct option            distractors
//!  presence                easy        a positive finding        findings of the same refdefs
//!                                      (normal study: "None …")    subcategory, else category,
//!                                                                  not positive in the study
//!  location                medium      the finding's region      its other-side counterpart,
//!                                                                  regions of the same parent
//!  negation                medium      the finding the report    the study's positive findings,
//!                                      excludes                    else "seen on the left/right/…"
//!  differential_diagnosis  hard        a disease the finding     diseases no positive finding
//!                                      is indicative of            points to
//!  geometric               hard        the finding's side        left / right / both / neither
//! ```
//!
//! The correct option is written first; option-position balancing ([`crate::balance`]) places
//! it afterwards, as for an LLM's MCQs. Which candidates become distractors comes from a hash of
//! (study, candidate), so distractors vary over studies but not over reruns.

use std::collections::{BTreeMap, BTreeSet};

use cxrlake_generate::nullable;
use serde::Deserialize;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::taxonomy::{Normalized, Taxonomy};
use crate::text::{ANATOMY_NOUNS, BOTH_SIDES, capitalize, contains_phrase, sentence, words};

/// A finding of the reference definitions.
#[derive(Debug, Clone, Default)]
pub struct CatalogFinding {
    /// Its category (`ANATOMICAL_FINDING`, `DISEASE`, `DEVICE`, `TECHNICAL`).
    pub category: String,
    /// Its subcategories (`PLEURA`, …).
    pub subcategories: Vec<String>,
    /// More general findings.
    pub parents: Vec<String>,
    /// Findings it points to.
    pub indicative_of: Vec<String>,
}

/// A region of the reference definitions.
#[derive(Debug, Clone, Default)]
pub struct CatalogRegion {
    /// `left`, `right`, `bilateral` or `unknown`.
    pub laterality: String,
    /// The other side's region.
    pub counterpart: Option<String>,
    /// Its parent region.
    pub parent: Option<String>,
}

/// The reference definitions the generator draws options from.
#[derive(Debug, Clone, Default)]
pub struct Catalog {
    /// Findings by name.
    pub findings: BTreeMap<String, CatalogFinding>,
    /// Regions by name.
    pub regions: BTreeMap<String, CatalogRegion>,
}

/// A region of a fact: its name, or the scene graph's `{region, distances}`.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum RegionRef {
    /// The name.
    Name(String),
    /// A scene-graph region reference.
    Ref {
        /// The name.
        region: String,
    },
}

impl RegionRef {
    fn name(&self) -> &str {
        match self {
            Self::Name(name) | Self::Ref { region: name } => name,
        }
    }
}

/// One top-level observation of the study's scene graph.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct Fact {
    /// Its finding tag.
    #[serde(default, deserialize_with = "nullable")]
    pub finding: String,
    /// Its subcategories.
    #[serde(default, deserialize_with = "nullable")]
    pub subcategories: Vec<String>,
    /// `pos` or `neg`.
    #[serde(default, deserialize_with = "nullable")]
    pub positiveness: String,
    /// `certain`, `likely`, `uncertain`, …
    #[serde(default, deserialize_with = "nullable")]
    pub certainty: String,
    /// Its regions.
    #[serde(default, deserialize_with = "nullable")]
    pub regions: Vec<RegionRef>,
    /// `left`, `right`, `bilateral` or empty.
    #[serde(default, deserialize_with = "nullable")]
    pub laterality: String,
    /// The scene graph's summary sentence.
    #[serde(default, deserialize_with = "nullable")]
    pub statement: String,
}

impl Fact {
    fn is_positive(&self) -> bool {
        self.positiveness == "pos" && !matches!(self.certainty.as_str(), "uncertain" | "unlikely")
    }

    fn is_negative(&self) -> bool {
        self.positiveness == "neg"
    }
}

/// One bullet of the study's bullet list.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct Bullet {
    /// `findings`, `impression`, …
    #[serde(default, deserialize_with = "nullable")]
    pub section: String,
    /// The statement.
    #[serde(default, deserialize_with = "nullable")]
    pub text: String,
    /// Its depth in the list (0: top level).
    #[serde(default, deserialize_with = "nullable")]
    pub level: i64,
}

/// Whether a bullet names the fact's finding.
fn stated(fact: &Fact, bullets: &[Bullet]) -> bool {
    bullets
        .iter()
        .any(|b| contains_phrase(&words(&b.text), &fact.finding))
}

/// The words that name a region: its name without the anatomy nouns.
fn naming_words(region: &str) -> Vec<String> {
    words(region)
        .into_iter()
        .filter(|w| !ANATOMY_NOUNS.contains(&w.as_str()))
        .collect()
}

/// The generator over the reference definitions and the taxonomy.
#[derive(Debug)]
pub struct Generator<'a> {
    catalog: &'a Catalog,
    taxonomy: &'a Taxonomy,
}

/// An MCQ in the shape the LLM writes (correct option first).
fn mcq(
    question: String,
    options: Vec<String>,
    explanation: String,
    difficulty: &str,
    normalized: &Normalized,
    task_type: &str,
) -> Value {
    json!({
        "question": question,
        "options": options,
        "answer_index": 0,
        "explanation": explanation,
        "difficulty": difficulty,
        "category": normalized.category,
        "subcategory": normalized.subcategory,
        "task_type": task_type,
    })
}

/// `a`, `a and b`, `a, b and c`.
fn join(items: &[String]) -> String {
    match items {
        [] => String::new(),
        [one] => one.clone(),
        [init @ .., last] => format!("{} and {last}", init.join(", ")),
    }
}

/// The candidates in the order a hash of (study, candidate) gives them.
fn shuffled(study: &str, candidates: impl IntoIterator<Item = String>) -> Vec<String> {
    let mut keyed: Vec<(String, String)> = candidates
        .into_iter()
        .map(|c| {
            let digest = hex::encode(Sha256::digest(format!("{study}/{c}").as_bytes()));
            (digest, c)
        })
        .collect();
    keyed.sort();
    keyed.dedup_by(|a, b| a.1 == b.1);
    keyed.into_iter().map(|(_, c)| c).collect()
}

impl<'a> Generator<'a> {
    /// A generator drawing from `catalog`, categorising with `taxonomy`.
    pub fn new(catalog: &'a Catalog, taxonomy: &'a Taxonomy) -> Self {
        Self { catalog, taxonomy }
    }

    /// The MCQs of one study (`study` seeds the distractor choice).
    pub fn generate(&self, study: &str, facts: &[Fact], bullets: &[Bullet]) -> Vec<Value> {
        let positives: Vec<&Fact> = facts
            .iter()
            .filter(|f| {
                f.is_positive()
                    && self.catalog.findings.contains_key(&f.finding)
                    && stated(f, bullets)
            })
            .collect();
        let present: BTreeSet<&str> = positives.iter().map(|f| f.finding.as_str()).collect();
        let mut out = Vec::new();
        out.extend(self.presence(study, &positives, &present, facts, bullets));
        out.extend(self.location(study, &positives, bullets));
        out.extend(self.negation(study, &positives, facts, bullets));
        out.extend(self.differential(study, &positives, &present, bullets));
        out.extend(self.geometric(&positives, bullets));
        out
    }

    fn category(&self, fact: &Fact) -> Normalized {
        self.taxonomy
            .for_finding(&fact.finding, &fact.subcategories)
    }

    /// The report's statement of a fact: the first bullet naming its finding (bullets without
    /// a de-identification marker first), else the scene graph's summary sentence.
    fn statement(&self, fact: &Fact, bullets: &[Bullet]) -> String {
        let finding = fact.finding.as_str();
        let naming = |b: &&Bullet| contains_phrase(&words(&b.text), finding);
        bullets
            .iter()
            .filter(|b| !b.text.contains("___"))
            .find(naming)
            .or_else(|| bullets.iter().find(naming))
            .map(|b| sentence(&b.text))
            .filter(|s| s.len() > 1)
            .unwrap_or_else(|| {
                if fact.statement.trim().is_empty() {
                    sentence(&format!("{finding} is seen"))
                } else {
                    sentence(&fact.statement)
                }
            })
    }

    /// Distractor findings for `finding`: findings of the same refdefs category sharing a
    /// subcategory first, then of the same category; never a finding present in the study, one
    /// of its parents or children.
    fn sibling_findings(
        &self,
        study: &str,
        finding: &str,
        present: &BTreeSet<&str>,
        count: usize,
    ) -> Vec<String> {
        let Some(entry) = self.catalog.findings.get(finding) else {
            return Vec::new();
        };
        let related = |name: &str, other: &CatalogFinding| {
            name == finding
                || present.contains(name)
                || entry.parents.iter().any(|p| p == name)
                || other
                    .parents
                    .iter()
                    .any(|p| p == finding || present.contains(p.as_str()))
        };
        let same_category = self
            .catalog
            .findings
            .iter()
            .filter(|(name, other)| other.category == entry.category && !related(name, other));
        let (close, far): (Vec<_>, Vec<_>) = same_category.partition(|(_, other)| {
            other
                .subcategories
                .iter()
                .any(|s| entry.subcategories.contains(s))
        });
        let mut picked = shuffled(study, close.into_iter().map(|(n, _)| n.clone()));
        picked.extend(shuffled(study, far.into_iter().map(|(n, _)| n.clone())));
        picked.truncate(count);
        picked
    }

    fn presence(
        &self,
        study: &str,
        positives: &[&Fact],
        present: &BTreeSet<&str>,
        facts: &[Fact],
        bullets: &[Bullet],
    ) -> Option<Value> {
        let Some(fact) = positives.iter().find(|f| {
            self.catalog
                .findings
                .get(&f.finding)
                .is_some_and(|e| e.category != "TECHNICAL")
        }) else {
            return self.normal_presence(study, facts, bullets);
        };
        let distractors = self.sibling_findings(study, &fact.finding, present, 3);
        if distractors.len() < 3 {
            return None;
        }
        let device = self
            .catalog
            .findings
            .get(&fact.finding)
            .is_some_and(|e| e.category == "DEVICE");
        let question = if device {
            "Which of the following devices is seen on this chest radiograph?"
        } else {
            "Which of the following findings is present on this chest radiograph?"
        };
        let mut options = vec![capitalize(&fact.finding)];
        options.extend(distractors.iter().map(|d| capitalize(d)));
        let explanation = format!(
            "{} This describes {}, whereas {} are not described.",
            self.statement(fact, bullets),
            fact.finding,
            join(&distractors),
        );
        Some(mcq(
            question.into(),
            options,
            explanation,
            "easy",
            &self.category(fact),
            "presence",
        ))
    }

    /// A normal study's presence question: none of three common abnormal findings is seen.
    fn normal_presence(&self, study: &str, facts: &[Fact], bullets: &[Bullet]) -> Option<Value> {
        const COMMON: [&str; 6] = [
            "pleural effusion",
            "pneumothorax",
            "consolidation",
            "pulmonary edema",
            "cardiomegaly",
            "atelectasis",
        ];
        let negated: Vec<String> = facts
            .iter()
            .filter(|f| {
                f.is_negative()
                    && self.catalog.findings.contains_key(&f.finding)
                    && stated(f, bullets)
            })
            .map(|f| f.finding.clone())
            .collect();
        let mut distractors = negated.clone();
        distractors.extend(shuffled(
            study,
            COMMON
                .iter()
                .filter(|c| self.catalog.findings.contains_key(**c))
                .map(|c| c.to_string()),
        ));
        let mut seen = BTreeSet::new();
        distractors.retain(|d| seen.insert(d.clone()));
        distractors.truncate(3);
        if distractors.len() < 3 {
            return None;
        }
        let normal: Vec<String> = bullets
            .iter()
            .filter(|b| !b.text.contains("___") && !b.text.trim().is_empty())
            .take(2)
            .map(|b| sentence(&b.text))
            .collect();
        if normal.is_empty() {
            return None;
        }
        let mut options = vec!["None of these findings".to_string()];
        options.extend(distractors.iter().map(|d| capitalize(d)));
        let explanation = format!(
            "{} No {} is seen on this radiograph.",
            normal.join(" "),
            join(&distractors).replace(" and ", " or ")
        );
        Some(mcq(
            "Which of the following findings is present on this chest radiograph?".into(),
            options,
            explanation,
            "easy",
            &self.taxonomy.normalize("negation", "absence of disease"),
            "presence",
        ))
    }

    fn location(&self, study: &str, positives: &[&Fact], bullets: &[Bullet]) -> Option<Value> {
        positives.iter().find_map(|fact| {
            let statement = words(&self.statement(fact, bullets));
            let finding = words(&fact.finding);
            let region = fact.regions.iter().map(RegionRef::name).find(|r| {
                let named = naming_words(r);
                self.catalog.regions.contains_key(*r)
                    && !named.is_empty()
                    && named.iter().all(|w| statement.contains(w))
                    && !named.iter().all(|w| finding.contains(w))
            })?;
            let entry = &self.catalog.regions[region];
            let own: BTreeSet<&str> = fact.regions.iter().map(RegionRef::name).collect();
            let mut candidates: Vec<String> = entry.counterpart.iter().cloned().collect();
            let siblings = self.catalog.regions.iter().filter(|(name, other)| {
                other.parent.is_some()
                    && other.parent == entry.parent
                    && !own.contains(name.as_str())
            });
            candidates.extend(shuffled(study, siblings.map(|(n, _)| n.clone())));
            let mut seen = BTreeSet::new();
            candidates.retain(|c| !own.contains(c.as_str()) && seen.insert(c.clone()));
            candidates.truncate(3);
            if candidates.len() < 3 {
                return None;
            }
            let mut options = vec![capitalize(region)];
            options.extend(candidates.iter().map(|c| capitalize(c)));
            Some(mcq(
                format!("Where is the {} located on this radiograph?", fact.finding),
                options,
                format!(
                    "{} The {} is therefore located in the {region}.",
                    self.statement(fact, bullets),
                    fact.finding
                ),
                "medium",
                &self.category(fact),
                "location",
            ))
        })
    }

    fn negation(
        &self,
        study: &str,
        positives: &[&Fact],
        facts: &[Fact],
        bullets: &[Bullet],
    ) -> Option<Value> {
        let negated = facts.iter().find(|f| {
            f.is_negative()
                && self.catalog.findings.contains_key(&f.finding)
                && stated(f, bullets)
                && !positives.iter().any(|p| p.finding == f.finding)
        })?;
        let statement = self.statement(negated, bullets);
        let negation = self.taxonomy.normalize("negation", "absence of disease");
        let present = shuffled(study, positives.iter().map(|p| p.finding.clone()));
        if let Some(present) = present.get(..3) {
            let mut options = vec![capitalize(&negated.finding)];
            options.extend(present.iter().map(|p| capitalize(p)));
            return Some(mcq(
                "Which of the following findings is absent on this chest radiograph?".into(),
                options,
                format!(
                    "{statement} {} is absent, whereas {} are seen.",
                    capitalize(&negated.finding),
                    join(present),
                ),
                "medium",
                &negation,
                "negation",
            ));
        }
        let finding = &negated.finding;
        Some(mcq(
            format!("Which statement about {finding} is correct for this radiograph?"),
            vec![
                format!("No {finding} is seen"),
                format!("{} is seen on the left only", capitalize(finding)),
                format!("{} is seen on the right only", capitalize(finding)),
                format!("{} is seen on both sides", capitalize(finding)),
            ],
            format!("{statement} The radiograph therefore shows no {finding} on either side."),
            "medium",
            &negation,
            "negation",
        ))
    }

    fn differential(
        &self,
        study: &str,
        positives: &[&Fact],
        present: &BTreeSet<&str>,
        bullets: &[Bullet],
    ) -> Option<Value> {
        let indicated: BTreeSet<&str> = positives
            .iter()
            .filter_map(|f| self.catalog.findings.get(&f.finding))
            .flat_map(|e| e.indicative_of.iter().map(String::as_str))
            .collect();
        positives.iter().find_map(|fact| {
            let entry = self.catalog.findings.get(&fact.finding)?;
            let disease = entry.indicative_of.iter().find(|d| {
                self.catalog.findings.contains_key(*d) && !present.contains(d.as_str())
            })?;
            let diseases = self.catalog.findings.iter().filter(|(name, other)| {
                other.category == "DISEASE"
                    && !indicated.contains(name.as_str())
                    && !present.contains(name.as_str())
                    && !other.parents.iter().any(|p| p == disease)
                    && !self.catalog.findings[disease].parents.contains(name)
            });
            let mut distractors = shuffled(study, diseases.map(|(n, _)| n.clone()));
            distractors.truncate(3);
            if distractors.len() < 3 {
                return None;
            }
            let mut options = vec![capitalize(disease)];
            options.extend(distractors.iter().map(|d| capitalize(d)));
            Some(mcq(
                format!(
                    "Which diagnosis is most consistent with the {} seen on this radiograph?",
                    fact.finding
                ),
                options,
                format!(
                    "{} {} is a typical sign of {disease}; nothing on the radiograph points to {}.",
                    self.statement(fact, bullets),
                    capitalize(&fact.finding),
                    join(&distractors).replace(" and ", " or ")
                ),
                "hard",
                &self
                    .taxonomy
                    .for_finding(disease, &self.catalog.findings[disease].subcategories),
                "differential_diagnosis",
            ))
        })
    }

    fn geometric(&self, positives: &[&Fact], bullets: &[Bullet]) -> Option<Value> {
        positives.iter().find_map(|fact| {
            let side = match fact.laterality.as_str() {
                side @ ("left" | "right" | "bilateral") => side,
                _ => fact
                    .regions
                    .iter()
                    .filter_map(|r| self.catalog.regions.get(r.name()))
                    .map(|r| r.laterality.as_str())
                    .find(|l| matches!(*l, "left" | "right" | "bilateral"))?,
            };
            let statement = words(&self.statement(fact, bullets));
            let said = match side {
                "bilateral" => statement.iter().any(|w| BOTH_SIDES.contains(&w.as_str())),
                side => statement.iter().any(|w| w == side),
            };
            if !said {
                return None;
            }
            let correct = match side {
                "left" => "Left",
                "right" => "Right",
                _ => "Both sides",
            };
            let mut options = vec![correct.to_string()];
            options.extend(
                ["Left", "Right", "Both sides", "Neither side"]
                    .iter()
                    .filter(|o| **o != correct)
                    .take(3)
                    .map(|o| o.to_string()),
            );
            let where_ = match side {
                "bilateral" => "on both sides".to_string(),
                side => format!("on the {side} side"),
            };
            Some(mcq(
                format!("On which side of the chest is the {} seen?", fact.finding),
                options,
                format!(
                    "{} The {} is therefore {where_}.",
                    self.statement(fact, bullets),
                    fact.finding
                ),
                "hard",
                &self.category(fact),
                "geometric",
            ))
        })
    }
}
