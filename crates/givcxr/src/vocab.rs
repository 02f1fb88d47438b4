//! The vocabularies of paper 002 (`refdefs/givcxr/vocabulary.toml`): the 36 anatomical regions
//! of its table 1 with the cxrlake regions and Chest ImaGenome boxes each is built from, the 28
//! clinical findings of its table 2 (plus `normal`) with the findings each covers and the words
//! that name it in text, and the texture cues of a region context.
//!
//! ```text
//!  cxrlake region "right hilum"          ─source─►   right_hilar_structures (its box)
//!  ImaGenome box "right hilar structures" ─imagenome─► right_hilar_structures (its attributes)
//!  finding "plate-like atelectasis", parents [atelectasis, …] ─finding_for─► atelectasis
//!  "Is there a small effusion?"          ─findings_in_text─► [pleural_effusion]
//! ```

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use regex::Regex;
use serde::Deserialize;
use sha2::{Digest, Sha256};

use crate::{GivcxrError, Result};

/// The repository's vocabulary, embedded.
const EMBEDDED: &str = include_str!("../../../refdefs/givcxr/vocabulary.toml");

/// The file name of the vocabulary in a refdefs folder's `givcxr/`.
pub const FILE: &str = "vocabulary.toml";

/// The finding of a QA pair about a region without abnormal findings.
pub const NORMAL: &str = "normal";

/// One region (`[[region]]`).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Region {
    /// Snake-case id (`right_hilar_structures`).
    pub id: String,
    /// cxrlake regions; the first with a box on an image gives the region's box.
    pub sources: Vec<String>,
    /// Chest ImaGenome boxes whose attributes and phrases the region takes.
    #[serde(default)]
    pub imagenome: Vec<String>,
}

impl Region {
    /// The readable name (`right hilar structures`).
    pub fn name(&self) -> String {
        self.id.replace('_', " ")
    }
}

/// One clinical finding (`[[finding]]`).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Finding {
    /// Snake-case id (`pleural_effusion`).
    pub id: String,
    /// cxrlake findings and ImaGenome attribute values it covers.
    pub findings: Vec<String>,
    /// Phrases that name it in generated text.
    #[serde(default)]
    pub words: Vec<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    version: i64,
    #[serde(rename = "region")]
    regions: Vec<Region>,
    #[serde(rename = "finding")]
    findings: Vec<Finding>,
    #[serde(default)]
    texture: BTreeMap<String, Vec<String>>,
    #[serde(default)]
    normal: Vec<String>,
}

/// The loaded vocabularies with their lookups.
#[derive(Debug)]
pub struct Vocabulary {
    version: String,
    regions: Vec<Region>,
    findings: Vec<Finding>,
    /// cxrlake region → (region index, rank among its sources).
    sources: HashMap<String, (usize, usize)>,
    /// ImaGenome box name → region index.
    imagenome: HashMap<String, usize>,
    /// Finding or attribute value → the first finding index that lists it.
    finding_names: HashMap<String, usize>,
    /// Finding name → texture cues.
    texture: HashMap<String, Vec<String>>,
    /// One alternation of every finding's words (longest first), with the finding of each.
    words: Regex,
    word_findings: HashMap<String, usize>,
    normal: Vec<String>,
}

impl Vocabulary {
    /// The embedded vocabulary.
    pub fn embedded() -> Result<Vocabulary> {
        Vocabulary::parse(EMBEDDED, "embedded")
    }

    /// `dir/vocabulary.toml`.
    pub fn load(dir: &Path) -> Result<Vocabulary> {
        let path = dir.join(FILE);
        let text = std::fs::read_to_string(&path).map_err(|source| GivcxrError::Io {
            path: path.clone(),
            source,
        })?;
        Vocabulary::parse(&text, &path.display().to_string())
    }

    /// Parses and checks a vocabulary file (`origin` names it in errors).
    pub fn parse(text: &str, origin: &str) -> Result<Vocabulary> {
        let error = |reason: String| GivcxrError::Vocabulary {
            origin: origin.to_string(),
            reason,
        };
        let file: File = toml::from_str(text).map_err(|e| error(e.to_string()))?;
        let snake = |id: &str| {
            !id.is_empty()
                && id
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
        };
        let mut sources = HashMap::new();
        let mut imagenome = HashMap::new();
        let mut ids = std::collections::BTreeSet::new();
        for (index, region) in file.regions.iter().enumerate() {
            if !snake(&region.id) || !ids.insert(region.id.clone()) {
                return Err(error(format!(
                    "region id '{}' is not snake_case or is repeated",
                    region.id
                )));
            }
            if region.sources.is_empty() {
                return Err(error(format!("region '{}' has no sources", region.id)));
            }
            for (rank, source) in region.sources.iter().enumerate() {
                if sources.insert(source.clone(), (index, rank)).is_some() {
                    return Err(error(format!(
                        "cxrlake region '{source}' is a source of two regions"
                    )));
                }
            }
            for name in &region.imagenome {
                if imagenome.insert(name.clone(), index).is_some() {
                    return Err(error(format!(
                        "ImaGenome box '{name}' belongs to two regions"
                    )));
                }
            }
        }
        let mut finding_names = HashMap::new();
        let mut word_findings = HashMap::new();
        for (index, finding) in file.findings.iter().enumerate() {
            if !snake(&finding.id) || finding.id == NORMAL || !ids.insert(finding.id.clone()) {
                return Err(error(format!(
                    "finding id '{}' is not snake_case, is `normal` or is repeated",
                    finding.id
                )));
            }
            for name in &finding.findings {
                finding_names.entry(name.to_lowercase()).or_insert(index);
            }
            for word in &finding.words {
                word_findings.entry(word.to_lowercase()).or_insert(index);
            }
        }
        let mut texture: HashMap<String, Vec<String>> = HashMap::new();
        for (cue, names) in &file.texture {
            for name in names {
                texture
                    .entry(name.to_lowercase())
                    .or_default()
                    .push(cue.clone());
            }
        }
        let mut words: Vec<&String> = word_findings.keys().collect();
        words.sort_by(|a, b| b.len().cmp(&a.len()).then(a.cmp(b)));
        let pattern = format!(
            r"\b(?:{})\b",
            words
                .iter()
                .map(|w| regex::escape(w))
                .collect::<Vec<_>>()
                .join("|")
        );
        let words = Regex::new(&pattern).map_err(|e| error(e.to_string()))?;
        let digest = hex::encode(Sha256::digest(text.as_bytes()));
        Ok(Vocabulary {
            version: format!("{}+{}", file.version, &digest[..12]),
            regions: file.regions,
            findings: file.findings,
            sources,
            imagenome,
            finding_names,
            texture,
            words,
            word_findings,
            normal: file.normal,
        })
    }

    /// `<declared version>+<12 hex of the file's sha256>`.
    pub fn version(&self) -> &str {
        &self.version
    }

    /// The regions, in file order.
    pub fn regions(&self) -> &[Region] {
        &self.regions
    }

    /// The findings, in file order (`normal` is not among them).
    pub fn findings(&self) -> &[Finding] {
        &self.findings
    }

    /// The region a cxrlake region is a source of, with its rank among the region's sources.
    pub fn source(&self, region: &str) -> Option<(&Region, usize)> {
        self.sources
            .get(region)
            .map(|&(index, rank)| (&self.regions[index], rank))
    }

    /// The region an ImaGenome box belongs to.
    pub fn imagenome(&self, bbox_name: &str) -> Option<&Region> {
        self.imagenome.get(bbox_name).map(|&i| &self.regions[i])
    }

    /// The finding of an observation: the first of `names` (its entity, then its parents,
    /// nearest first) that a finding lists.
    pub fn finding_for<'a>(&self, names: impl IntoIterator<Item = &'a str>) -> Option<&str> {
        names
            .into_iter()
            .find_map(|name| self.finding_names.get(&name.to_lowercase()))
            .map(|&i| self.findings[i].id.as_str())
    }

    /// The texture cues of an observation (entity and parents).
    pub fn texture_for<'a>(&self, names: impl IntoIterator<Item = &'a str>) -> Vec<String> {
        let mut cues: Vec<String> = names
            .into_iter()
            .filter_map(|name| self.texture.get(&name.to_lowercase()))
            .flatten()
            .cloned()
            .collect();
        cues.sort();
        cues.dedup();
        cues
    }

    /// The findings `text` names by their words, in order of first mention, each once.
    pub fn findings_in_text(&self, text: &str) -> Vec<&str> {
        let lower = text.to_lowercase();
        let mut out: Vec<&str> = Vec::new();
        for found in self.words.find_iter(&lower) {
            if let Some(&i) = self.word_findings.get(found.as_str()) {
                let id = self.findings[i].id.as_str();
                if !out.contains(&id) {
                    out.push(id);
                }
            }
        }
        out
    }

    /// The clinical finding of a QA pair in a region context whose present findings are
    /// `findings` (ids) and that has findings present at all when `abnormal` (mapped or not):
    /// the first finding the question (then the answer) names that the context has; `normal` in
    /// a region without findings; else the first finding the question names (an absent one
    /// asked about); else the context's first; else the first the answer names; else None (the
    /// pair is about findings outside the vocabulary).
    pub fn clinical_finding<'a>(
        &'a self,
        question: &str,
        answer: &str,
        findings: &[&'a str],
        abnormal: bool,
    ) -> Option<&'a str> {
        let asked = self.findings_in_text(question);
        let answered = self.findings_in_text(answer);
        if let Some(id) = asked
            .iter()
            .chain(&answered)
            .find(|id| findings.contains(id))
        {
            return Some(id);
        }
        if !abnormal {
            return Some(NORMAL);
        }
        asked
            .first()
            .or(findings.first())
            .or(answered.first())
            .copied()
    }

    /// cxrlake findings that state normality (`clear lungs`): an observation of one is the
    /// region's `nlp|yes|normal`, not a finding.
    pub fn normal_findings(&self) -> &[String] {
        &self.normal
    }

    /// Whether `id` is a finding of the vocabulary or `normal`.
    pub fn is_finding(&self, id: &str) -> bool {
        id == NORMAL || self.findings.iter().any(|f| f.id == id)
    }
}

/// How one name reaches a GIV-CXR region (a row of `givcxr_region_map`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MapRow {
    /// The cxrlake region or ImaGenome box.
    pub name: String,
    /// `source` (listed by the region), `imagenome`, `ancestor` (through its nearest listed
    /// ancestor in the refdefs hierarchy) or `unmapped`.
    pub kind: &'static str,
    /// The GIV-CXR region (None when unmapped).
    pub region: Option<String>,
    /// Its rank among the region's sources (sources only).
    pub rank: Option<usize>,
}

/// Every cxrlake region resolved onto the vocabulary's regions.
#[derive(Debug, Default)]
pub struct RegionMap {
    resolved: HashMap<String, (String, Option<usize>)>,
    rows: Vec<MapRow>,
}

impl RegionMap {
    /// Resolves `regions` (cxrlake region name, its parent) and the vocabulary's ImaGenome boxes:
    /// a source maps to its region, any other region to the region of its nearest source
    /// ancestor, or nowhere.
    pub fn new(vocabulary: &Vocabulary, regions: &[(String, Option<String>)]) -> RegionMap {
        let parents: HashMap<&str, &str> = regions
            .iter()
            .filter_map(|(name, parent)| Some((name.as_str(), parent.as_deref()?)))
            .collect();
        let mut map = RegionMap::default();
        for region in vocabulary.regions() {
            for (rank, source) in region.sources.iter().enumerate() {
                map.add(source, "source", Some(&region.id), Some(rank));
            }
        }
        for region in vocabulary.regions() {
            for name in &region.imagenome {
                if !map.resolved.contains_key(name) {
                    map.add(name, "imagenome", Some(&region.id), None);
                }
            }
        }
        let mut names: Vec<&str> = regions.iter().map(|(n, _)| n.as_str()).collect();
        names.sort();
        for name in names {
            if map.resolved.contains_key(name) {
                continue;
            }
            let mut at = parents.get(name).copied();
            let mut seen = 0;
            let found = loop {
                match at {
                    Some(parent) if seen < 64 => match vocabulary.source(parent) {
                        Some((region, _)) => break Some(region.id.clone()),
                        None => {
                            at = parents.get(parent).copied();
                            seen += 1;
                        }
                    },
                    _ => break None,
                }
            };
            match found {
                Some(region) => map.add(name, "ancestor", Some(&region), None),
                None => map.rows.push(MapRow {
                    name: name.to_string(),
                    kind: "unmapped",
                    region: None,
                    rank: None,
                }),
            }
        }
        map
    }

    fn add(&mut self, name: &str, kind: &'static str, region: Option<&str>, rank: Option<usize>) {
        if let Some(region) = region {
            self.resolved
                .insert(name.to_string(), (region.to_string(), rank));
        }
        self.rows.push(MapRow {
            name: name.to_string(),
            kind,
            region: region.map(str::to_string),
            rank,
        });
    }

    /// The region `name` (a cxrlake region or an ImaGenome box) belongs to.
    pub fn region(&self, name: &str) -> Option<&str> {
        self.resolved.get(name).map(|(region, _)| region.as_str())
    }

    /// The rank of `name` among its region's sources, when it is one.
    pub fn source_rank(&self, name: &str) -> Option<usize> {
        self.resolved.get(name).and_then(|(_, rank)| *rank)
    }

    /// The mapping, one row per name.
    pub fn rows(&self) -> &[MapRow] {
        &self.rows
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_embedded_vocabulary_has_the_papers_36_regions_and_28_findings() {
        let v = Vocabulary::embedded().expect("embedded");
        assert_eq!(v.regions().len(), 36);
        assert_eq!(v.findings().len(), 28);
        assert!(v.version().starts_with("1+"));
        let loaded =
            Vocabulary::load(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../../refdefs/givcxr"))
                .expect("file");
        assert_eq!(loaded.version(), v.version());
    }

    #[test]
    fn sources_and_imagenome_boxes_resolve_to_regions() {
        let v = Vocabulary::embedded().expect("fixture");
        let (region, rank) = v.source("right hilum").expect("fixture");
        assert_eq!((region.id.as_str(), rank), ("right_hilar_structures", 0));
        assert_eq!(region.name(), "right hilar structures");
        assert_eq!(v.source("right perihilar region").expect("fixture").1, 1);
        assert_eq!(
            v.imagenome("right hilar structures").expect("fixture").id,
            "right_hilar_structures"
        );
        assert!(v.source("sternum").is_none());
    }

    #[test]
    fn an_observation_takes_its_entity_first_then_its_nearest_parent() {
        let v = Vocabulary::embedded().expect("fixture");
        assert_eq!(
            v.finding_for(["consolidation", "lung opacity"]),
            Some("consolidation")
        );
        assert_eq!(
            v.finding_for(["plate-like atelectasis", "atelectasis", "lung opacity"]),
            Some("atelectasis")
        );
        assert_eq!(
            v.finding_for(["Endotracheal Tube"]),
            Some("support_devices")
        );
        assert_eq!(v.finding_for(["mediastinal widening"]), None);
        assert_eq!(
            v.texture_for(["atelectasis", "lung opacity"]),
            vec!["opacity"]
        );
    }

    #[test]
    fn words_find_findings_in_text_in_order_once_each() {
        let v = Vocabulary::embedded().expect("fixture");
        assert_eq!(
            v.findings_in_text(
                "Is there a pleural effusion or pneumothorax? The effusion is small."
            ),
            vec!["pleural_effusion", "pneumothorax"]
        );
        assert!(
            v.findings_in_text("The right lung appears clear.")
                .is_empty()
        );
        assert!(v.is_finding("normal") && v.is_finding("nodule_mass") && !v.is_finding("x"));
    }

    #[test]
    fn regions_resolve_through_their_nearest_source_ancestor() {
        let v = Vocabulary::embedded().expect("fixture");
        let regions = vec![
            ("right lung".to_string(), Some("lungs".to_string())),
            (
                "superior segment of the right lower lobe".to_string(),
                Some("right lower lobe".to_string()),
            ),
            (
                "right lower lobe".to_string(),
                Some("right lung".to_string()),
            ),
            ("sternum".to_string(), Some("bony thorax".to_string())),
        ];
        let map = RegionMap::new(&v, &regions);
        assert_eq!(
            map.region("superior segment of the right lower lobe"),
            Some("right_lower_lobe")
        );
        assert_eq!(
            map.source_rank("superior segment of the right lower lobe"),
            None
        );
        assert_eq!(map.source_rank("right hemithorax"), Some(1));
        assert_eq!(
            map.region("right hilar structures"),
            Some("right_hilar_structures")
        );
        assert_eq!(map.region("sternum"), None);
        let kinds = |kind: &str| map.rows().iter().filter(|r| r.kind == kind).count();
        assert_eq!(kinds("unmapped"), 1);
        assert_eq!(kinds("ancestor"), 1);
        let covered: std::collections::BTreeSet<_> = map
            .rows()
            .iter()
            .filter_map(|r| r.region.as_deref())
            .collect();
        assert_eq!(covered.len(), 36);
    }

    #[test]
    fn every_pair_gets_one_clinical_finding_or_none() {
        let v = Vocabulary::embedded().expect("fixture");
        let f = |q: &str, a: &str, findings: &[&str], abnormal: bool| {
            v.clinical_finding(q, a, findings, abnormal)
                .map(str::to_string)
        };
        let present = ["atelectasis", "pleural_effusion"];
        assert_eq!(
            f("Is there an effusion?", "Yes.", &present, true).as_deref(),
            Some("pleural_effusion")
        );
        assert_eq!(
            f("What is seen?", "Atelectasis.", &present, true).as_deref(),
            Some("atelectasis")
        );
        assert_eq!(
            f("Is there a pneumothorax?", "No.", &[], false).as_deref(),
            Some("normal")
        );
        assert_eq!(
            f("Is there a pneumothorax?", "No.", &present, true).as_deref(),
            Some("pneumothorax")
        );
        assert_eq!(
            f("What is seen?", "Widening.", &present, true).as_deref(),
            Some("atelectasis")
        );
        assert_eq!(f("What is seen?", "Widening.", &[], true), None);
        assert_eq!(
            f(
                "How is the texture?",
                "An area of opacity.",
                &["pleural_effusion"],
                true
            )
            .as_deref(),
            Some("pleural_effusion")
        );
    }

    #[test]
    fn a_vocabulary_with_a_region_twice_is_refused() {
        let text = r#"version = 1
[[region]]
id = "a"
sources = ["x"]
[[region]]
id = "b"
sources = ["x"]
[[finding]]
id = "f"
findings = ["f"]
"#;
        let err = Vocabulary::parse(text, "test")
            .expect_err("an error")
            .to_string();
        assert!(err.contains("source of two regions"), "{err}");
    }
}
