//! What the mapping of one raw observation matches, as one rule: [`Queries`] splits the tags of
//! a raw observation into the texts `map_study` looks up (regions with their distances split
//! off, each finding entity part alone, with each region and as the name, the summary sentence,
//! probability and modifiers, change parts). The incremental planner asks the same rule, through
//! the SQL function `map_texts`, which texts a study maps: a definition edit then recomputes
//! exactly the studies with a text whose match changed.

use std::collections::BTreeSet;

use crate::concepts::ConceptKind;
use crate::standardize::{RawObservation, is_side_only, split_distance, strs};

/// One finding entity part and the texts tried for it, best match wins.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FindingQuery {
    /// The part (kept as a non-resolved entity when nothing matches).
    pub part: String,
    /// The part alone, each "region part" pair, and the observation's name.
    pub candidates: Vec<String>,
}

/// The texts of one raw observation that the mapping looks up.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Queries {
    /// Region texts with the distances split off ("2 cm above the carina" → "carina"); bare
    /// sides are no region.
    pub regions: Vec<(String, Vec<String>)>,
    /// Finding entity parts (split at `,` `;` `/` and " and "; the name when there is no
    /// entity).
    pub findings: Vec<FindingQuery>,
    /// The summary sentence, tried as a finding when no candidate of a part matches.
    pub summary: Option<String>,
    /// The probability and the modifiers, each matched against every modifier type.
    pub modifiers: Vec<String>,
    /// Change parts (split at `,` `;` and " and ").
    pub changes: Vec<String>,
}

/// `text` split at `separators` and " and ", trimmed, without empty parts.
fn parts<'a>(text: &'a str, separators: &'a [char]) -> impl Iterator<Item = &'a str> {
    text.split(separators)
        .flat_map(|p| p.split(" and "))
        .map(str::trim)
        .filter(|p| !p.is_empty())
}

impl Queries {
    /// The queries of `raw`.
    pub fn of(raw: &RawObservation) -> Queries {
        let trimmed = |v: &Option<String>| {
            v.as_deref()
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(str::to_string)
        };
        let name = trimmed(&raw.name);
        let regions: Vec<(String, Vec<String>)> = strs(&raw.regions)
            .filter(|r| !is_side_only(r))
            .map(split_distance)
            .collect();
        let entity = raw.entity.as_deref().unwrap_or("").trim();
        let mut entity_parts: Vec<String> = parts(entity, &[',', ';', '/'])
            .map(str::to_string)
            .collect();
        if entity_parts.is_empty() {
            entity_parts.extend(name.clone());
        }
        let findings = entity_parts
            .into_iter()
            .map(|part| {
                let mut candidates = vec![part.clone()];
                candidates.extend(regions.iter().map(|(r, _)| format!("{r} {part}")));
                candidates.extend(name.clone());
                FindingQuery { part, candidates }
            })
            .collect();
        let modifiers = trimmed(&raw.probability)
            .into_iter()
            .chain(strs(&raw.modifiers).map(str::to_string))
            .collect();
        let changes = parts(raw.change.as_deref().unwrap_or(""), &[',', ';'])
            .map(str::to_string)
            .collect();
        Queries {
            regions,
            findings,
            summary: trimmed(&raw.summary_sentence),
            modifiers,
            changes,
        }
    }

    /// Every text the mapping may look up, with the kind it is matched as.
    pub fn texts(&self) -> Vec<(ConceptKind, &str)> {
        let mut out: Vec<(ConceptKind, &str)> = Vec::new();
        out.extend(
            self.regions
                .iter()
                .map(|(r, _)| (ConceptKind::Region, r.as_str())),
        );
        for finding in &self.findings {
            out.extend(
                finding
                    .candidates
                    .iter()
                    .map(|c| (ConceptKind::Finding, c.as_str())),
            );
        }
        if !self.findings.is_empty() {
            out.extend(
                self.summary
                    .iter()
                    .map(|s| (ConceptKind::Finding, s.as_str())),
            );
        }
        out.extend(
            self.modifiers
                .iter()
                .map(|m| (ConceptKind::Modifier, m.as_str())),
        );
        out.extend(
            self.changes
                .iter()
                .map(|c| (ConceptKind::Change, c.as_str())),
        );
        out
    }
}

/// The distinct `(kind, text)` pairs the mapping of a study's raw observations may look up.
pub fn study_texts(raw: &[RawObservation]) -> Vec<(ConceptKind, String)> {
    let mut seen = BTreeSet::new();
    for observation in raw {
        for (kind, text) in Queries::of(observation).texts() {
            seen.insert((kind, text.to_string()));
        }
    }
    seen.into_iter().collect()
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;
    use std::sync::Arc;

    use cxrlake_embed::LexicalEmbedder;
    use cxrlake_refdefs::RefDefs;

    use super::*;
    use crate::{ConceptIndex, Reference, map_study};

    fn raw(
        entity: Option<&str>,
        name: Option<&str>,
        regions: &[&str],
        change: Option<&str>,
    ) -> RawObservation {
        RawObservation {
            obs_id: "O01".into(),
            name: name.map(str::to_string),
            entity: entity.map(str::to_string),
            probability: Some("likely".into()),
            change: change.map(str::to_string),
            summary_sentence: Some("Small left effusion is seen.".into()),
            regions: regions.iter().map(|r| Some(r.to_string())).collect(),
            modifiers: vec![Some("small".into()), Some(" mild ".into()), None],
            ..RawObservation::default()
        }
    }

    /// Every region kind (plain, with a distance in both spellings, a bare side, blank), entity
    /// parts split every way, the name alone, an unmatched entity (the summary is tried), and
    /// changes split every way: the texts `map_study` looks up are exactly the rule's, except
    /// the summary, which it tries only when no candidate of a part matches.
    #[test]
    fn the_mapping_looks_up_exactly_the_texts_of_the_rule() {
        let defs = RefDefs::embedded().expect("refdefs");
        let reference = Reference::new(&defs);
        let fixtures = [
            raw(
                Some("effusion and atelectasis; consolidation/opacity, edema"),
                Some("effusion"),
                &[
                    "left lower lobe",
                    "2 cm above the carina",
                    "3cm below carina",
                    "5 mm into the right atrium",
                    "left",
                    "both sides",
                    "  ",
                ],
                Some("new, worsening and improved; stable"),
            ),
            raw(None, Some("pneumothorax"), &[], None),
            raw(Some("qwxzv"), None, &["right lung base"], Some("unchanged")),
            raw(Some("  "), None, &["bilateral"], None),
        ];
        for (i, observation) in fixtures.iter().enumerate() {
            let concepts = ConceptIndex::new(
                &defs,
                Arc::new(LexicalEmbedder::new()),
                0.5,
                Default::default(),
            )
            .expect("index");
            map_study(std::slice::from_ref(observation), &concepts, &reference).expect("map");
            let queried: BTreeSet<(ConceptKind, String)> = concepts
                .queried
                .lock()
                .expect("lock")
                .iter()
                .cloned()
                .collect();
            let rule: BTreeSet<(ConceptKind, String)> =
                study_texts(std::slice::from_ref(observation))
                    .into_iter()
                    .collect();
            let summary = observation.summary_sentence.clone().expect("summary");
            let unqueried: Vec<_> = rule.difference(&queried).collect();
            assert!(
                queried.is_subset(&rule),
                "fixture {i}: looked up outside the rule: {:?}",
                queried.difference(&rule).collect::<Vec<_>>()
            );
            assert!(
                unqueried
                    .iter()
                    .all(|(kind, text)| *kind == ConceptKind::Finding && *text == summary),
                "fixture {i}: in the rule but not looked up: {unqueried:?}"
            );
        }
        // Distances are split off before matching, in both spellings.
        let queries = Queries::of(&fixtures[0]);
        let regions: Vec<&str> = queries.regions.iter().map(|(r, _)| r.as_str()).collect();
        assert_eq!(
            regions,
            ["left lower lobe", "carina", "carina", "right atrium"]
        );
        assert_eq!(queries.regions[1].1, ["2 cm above"]);
        assert_eq!(queries.regions[3].1, ["5 mm into"]);
        assert!(
            queries.findings[0]
                .candidates
                .contains(&"carina effusion".to_string())
        );
        let parts: Vec<&str> = queries.findings.iter().map(|f| f.part.as_str()).collect();
        assert_eq!(
            parts,
            [
                "effusion",
                "atelectasis",
                "consolidation",
                "opacity",
                "edema"
            ]
        );
        assert_eq!(queries.changes, ["new", "worsening", "improved", "stable"]);
        assert_eq!(queries.modifiers, ["likely", "small", "mild"]);
        // The unmatched entity: its summary is looked up.
        assert!(study_texts(std::slice::from_ref(&fixtures[2])).contains(&(
            ConceptKind::Finding,
            "Small left effusion is seen.".to_string()
        )));
    }
}
