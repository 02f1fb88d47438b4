//! Scene-graph assembly of one study (paper 000, E.1.3 "Graph Construction", D.1).
//!
//! ```text
//!  observations ──► region nodes: their regions + bilateral versions + all ancestors + key regions
//!       │           region_region_relations from the reference tree (sub_region, left, right,
//!       │           bilateral)
//!       ├────────► located_at_relations: direct (with distances), sub_region (ancestors),
//!       │           bilateral (the bilateral version of a one-sided region)
//!       ├────────► obs_relations (children), obs_sent_relations (sent_ids)
//!       ├────────► per-image localization from region_boxes: boxes of every region, missing
//!       │           regions, fallback flag, quality = worst of table 11's localization levels
//!       └────────► indication: associated_obs_ids (sentence overlap) and the OIND node
//!  study_quality: worst level per aspect over all observation nodes; study_img_localization_
//!  quality: worst localization per image over the observations that have regions.
//! ```

use std::collections::{BTreeSet, HashMap};

use cxrlake_refdefs::Laterality;
use serde::{Deserialize, Serialize};

use cxrlake_map::{ObsQuality, Observation, Reference};

/// Regions that every scene graph has a node for (when the reference defines them).
pub const KEY_REGIONS: [&str; 5] = ["lungs", "left lung", "right lung", "heart", "mediastinum"];

/// Table 11's localization levels, worst first.
pub const LOCALIZATION_LEVELS: [&str; 5] = [
    "NO_LOCALIZATION",
    "FALLBACK_LOCALIZATION",
    "INCOMPLETE_LOCALIZATION",
    "BOX_LOCALIZATION",
    "BOX_AND_MASK_LOCALIZATION",
];

/// Table 11's levels per extraction aspect, worst first.
const REGION_LEVELS: [&str; 5] = [
    "NO_REGIONS",
    "DEFAULT_REGIONS_ONLY",
    "CONTAINS_DEFAULT_REGIONS",
    "CONTAINS_NON_RESOLVED_REGIONS",
    "RESOLVED_REGIONS_ONLY",
];
const ENTITY_LEVELS: [&str; 3] = [
    "NO_ENTITIES",
    "CONTAINS_NON_RESOLVED_ENTITIES",
    "RESOLVED_ENTITIES_ONLY",
];
const SENTENCE_LEVELS: [&str; 3] = [
    "CHANGE_IN_SENTENCE_OR_NAME",
    "UNDERSCORES_IN_SENTENCE_OR_NAME",
    "NO_ISSUES",
];
const CHANGE_LEVELS: [&str; 4] = [
    "CHANGE_SENTENCE_REMOVED",
    "UNDERSCORES_IN_CHANGE_SENTENCE",
    "CONTAINS_NON_RESOLVED_CHANGES",
    "NO_ISSUES",
];
const ISSUE_LEVELS: [&str; 6] = [
    "DISCARDED",
    "NON_INTERPRETABLE",
    "MOSTLY_INTERPRETABLE",
    "IGNORABLE",
    "FIXABLE",
    "NO_ISSUES",
];

/// The worse of two levels of one aspect (`levels` worst first); unknown levels count as worst.
fn worse<'a>(levels: &[&str], a: &'a str, b: &'a str) -> &'a str {
    let rank = |l: &str| levels.iter().position(|x| *x == l).unwrap_or(0);
    if rank(b) < rank(a) { b } else { a }
}

/// The worst quality per aspect.
pub fn worst_quality<'a>(
    qualities: impl IntoIterator<Item = &'a ObsQuality>,
) -> Option<ObsQuality> {
    let mut out: Option<ObsQuality> = None;
    for q in qualities {
        out = Some(match out {
            None => q.clone(),
            Some(o) => ObsQuality {
                region_extract_quality: worse(
                    &REGION_LEVELS,
                    &o.region_extract_quality,
                    &q.region_extract_quality,
                )
                .to_string(),
                entity_extract_quality: worse(
                    &ENTITY_LEVELS,
                    &o.entity_extract_quality,
                    &q.entity_extract_quality,
                )
                .to_string(),
                sentence_name_quality: worse(
                    &SENTENCE_LEVELS,
                    &o.sentence_name_quality,
                    &q.sentence_name_quality,
                )
                .to_string(),
                change_quality: worse(&CHANGE_LEVELS, &o.change_quality, &q.change_quality)
                    .to_string(),
                general_issue_level: worse(
                    &ISSUE_LEVELS,
                    &o.general_issue_level,
                    &q.general_issue_level,
                )
                .to_string(),
            },
        });
    }
    out
}

/// One `region_boxes` row of the study.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct RegionBox {
    /// Image.
    pub image_id: String,
    /// Region.
    pub region: String,
    /// Boxes.
    pub bboxes: Vec<Option<[f32; 4]>>,
    /// Regions the boxes come from.
    pub localization_reference_ids: Vec<String>,
    /// Regions without localization.
    pub missing_localization: Vec<String>,
    /// A coarser region was used.
    pub is_fallback: bool,
    /// Table 11 level.
    pub localization_quality: Option<String>,
}

/// The study's indication row.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct IndicationIn {
    /// Sentences of FINDINGS/IMPRESSION that answer it.
    pub associated_sentence_ids: Vec<String>,
    /// The answer text.
    pub answer_for_indication: Option<String>,
    /// What is to be evaluated.
    pub evaluation: Option<String>,
}

/// One image's localization of a node.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ImageLocalization {
    /// Image.
    pub image_id: String,
    /// Boxes `[x1, y1, x2, y2]`.
    pub bboxes: Vec<[f32; 4]>,
    /// Regions the boxes come from.
    pub localization_reference_ids: Vec<String>,
    /// Regions without localization on this image.
    pub missing_localization: Vec<String>,
    /// A coarser region was used.
    pub is_fallback: bool,
    /// Table 11 level.
    pub localization_quality: String,
}

/// An observation node with its localization.
#[derive(Debug, Clone, Serialize)]
pub struct ObservationNode {
    /// The mapped observation.
    #[serde(flatten)]
    pub observation: Observation,
    /// Per image.
    pub localization: Vec<ImageLocalization>,
}

/// A region node.
#[derive(Debug, Clone, Serialize)]
pub struct RegionNode {
    /// Name.
    pub region: String,
    /// left, right, bilateral, unknown.
    pub laterality: &'static str,
    /// Per image.
    pub localization: Vec<ImageLocalization>,
    /// Worst level over the images.
    pub region_localization_quality: String,
}

/// `located_at_relations` entry.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LocatedAt {
    /// Observation.
    pub obs_id: String,
    /// Region.
    pub region: String,
    /// Distances (direct relations only).
    pub distances: Vec<String>,
    /// direct, sub_region, bilateral.
    pub where_specified: &'static str,
}

/// `obs_relations` entry.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ObsRelation {
    /// Parent.
    pub parent_obs_id: String,
    /// Child.
    pub child_obs_id: String,
    /// Relation type.
    pub child_type: Option<String>,
}

/// `obs_sent_relations` entry.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ObsSent {
    /// Observation.
    pub obs_id: String,
    /// Sentence.
    pub sent_id: String,
}

/// `region_region_relations` entry.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RegionRelation {
    /// Region.
    pub region: String,
    /// The related region.
    pub related_region: String,
    /// sub_region, bilateral, left, right.
    pub relation_type: &'static str,
}

/// `{image_id, localization_quality}`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ImageQuality {
    /// Image.
    pub image_id: String,
    /// Worst level.
    pub localization_quality: String,
}

/// Everything `build_scene_graph` computes for one study.
#[derive(Debug, Clone, Serialize)]
pub struct Assembled {
    /// Observation nodes in id order.
    pub observations: Vec<ObservationNode>,
    /// Top-level ids.
    pub top_level_obs_ids: Vec<String>,
    /// Region nodes in name order.
    pub regions: Vec<RegionNode>,
    /// Observations answering the indication.
    pub associated_obs_ids: Vec<String>,
    /// The OIND node (studies with an indication).
    pub answer_for_indication: Option<ObservationNode>,
    /// Relations.
    pub located_at_relations: Vec<LocatedAt>,
    /// Relations.
    pub obs_relations: Vec<ObsRelation>,
    /// Relations.
    pub obs_sent_relations: Vec<ObsSent>,
    /// Relations.
    pub region_region_relations: Vec<RegionRelation>,
    /// Worst per aspect over all observation nodes (NULL without observations).
    pub study_quality: Option<ObsQuality>,
    /// Worst localization per image.
    pub study_img_localization_quality: Vec<ImageQuality>,
}

/// The region nodes of a study with these observations (see the module docs), sorted.
pub fn graph_regions<'a>(
    observations: impl IntoIterator<Item = &'a Observation>,
    reference: &Reference,
) -> BTreeSet<String> {
    let mut seeds: Vec<&str> = KEY_REGIONS.to_vec();
    for observation in observations {
        seeds.extend(observation.regions.iter().map(|r| r.region.as_str()));
    }
    let mut set = BTreeSet::new();
    for seed in seeds {
        let Some(info) = reference.region(seed) else {
            continue;
        };
        set.insert(seed.to_string());
        set.extend(info.ancestors.iter().cloned());
        if let Some(bilateral) = info
            .bilateral
            .as_deref()
            .and_then(|b| Some((b, reference.region(b)?)))
        {
            set.insert(bilateral.0.to_string());
            set.extend(bilateral.1.ancestors.iter().cloned());
        }
    }
    set
}

type BoxIndex<'a> = HashMap<(&'a str, &'a str), &'a RegionBox>;

/// The `region_boxes` row of `region` on `image` with boxes, else of its nearest ancestor with
/// boxes (regions without a recipe have no rows); `true` when an ancestor's was used.
fn boxes_of<'a>(
    image: &'a str,
    region: &'a str,
    boxes: &BoxIndex<'a>,
    reference: &'a Reference,
) -> Option<(&'a RegionBox, bool)> {
    let has_boxes = |r: &str| {
        boxes
            .get(&(image, r))
            .copied()
            .filter(|b| b.bboxes.iter().any(Option::is_some))
    };
    if let Some(found) = has_boxes(region) {
        return Some((found, false));
    }
    reference
        .region(region)?
        .ancestors
        .iter()
        .find_map(|a| has_boxes(a))
        .map(|found| (found, true))
}

/// The localization of a node at `regions` on every image.
fn localize(
    regions: &[&str],
    images: &[String],
    boxes: &BoxIndex<'_>,
    reference: &Reference,
) -> Vec<ImageLocalization> {
    images
        .iter()
        .map(|image| {
            let mut loc = ImageLocalization {
                image_id: image.clone(),
                bboxes: Vec::new(),
                localization_reference_ids: Vec::new(),
                missing_localization: Vec::new(),
                is_fallback: false,
                localization_quality: LOCALIZATION_LEVELS[0].to_string(),
            };
            let mut level: Option<&str> = None;
            for &region in regions {
                match boxes_of(image, region, boxes, reference) {
                    Some((b, via_ancestor)) => {
                        loc.bboxes.extend(b.bboxes.iter().flatten().copied());
                        for r in &b.localization_reference_ids {
                            if !loc.localization_reference_ids.contains(r) {
                                loc.localization_reference_ids.push(r.clone());
                            }
                        }
                        let fallback = via_ancestor || b.is_fallback;
                        loc.is_fallback |= fallback;
                        if via_ancestor {
                            loc.missing_localization.push(region.to_string());
                        }
                        let this = if via_ancestor {
                            LOCALIZATION_LEVELS[1]
                        } else {
                            b.localization_quality
                                .as_deref()
                                .unwrap_or(LOCALIZATION_LEVELS[3])
                        };
                        level = Some(level.map_or(this, |l| worse(&LOCALIZATION_LEVELS, l, this)));
                    }
                    None => loc.missing_localization.push(region.to_string()),
                }
            }
            if let Some(level) = level {
                let level = if loc.missing_localization.is_empty() {
                    level
                } else {
                    worse(&LOCALIZATION_LEVELS, level, "INCOMPLETE_LOCALIZATION")
                };
                loc.localization_quality = level.to_string();
            }
            loc
        })
        .collect()
}

/// The OIND node: the answer text with the tags of the observations it draws on.
fn indication_node(indication: &IndicationIn, associated: &[&Observation]) -> Option<Observation> {
    let answer = indication.answer_for_indication.as_deref()?.trim();
    if answer.is_empty() {
        return None;
    }
    let mut node = Observation {
        obs_id: "OIND".to_string(),
        summary_sentence: Some(answer.to_string()),
        name: Some(
            indication
                .evaluation
                .as_deref()
                .map(str::trim)
                .filter(|e| !e.is_empty())
                .unwrap_or_else(|| answer.split(':').next().unwrap_or(answer))
                .trim_end_matches('.')
                .to_string(),
        ),
        child_level: 0,
        from_report: true,
        ..Observation::default()
    };
    let mut sides = BTreeSet::new();
    for o in associated {
        for r in &o.regions {
            if !node.regions.iter().any(|x| x.region == r.region) {
                node.regions.push(r.clone());
            }
        }
        let lists: [(&mut Vec<String>, &Vec<String>); 7] = [
            (&mut node.default_regions, &o.default_regions),
            (&mut node.obs_entities, &o.obs_entities),
            (&mut node.obs_entities_parents, &o.obs_entities_parents),
            (
                &mut node.non_resolved_obs_entities,
                &o.non_resolved_obs_entities,
            ),
            (&mut node.obs_categories, &o.obs_categories),
            (&mut node.obs_subcategories, &o.obs_subcategories),
            (&mut node.changes, &o.changes),
        ];
        for (to, from) in lists {
            for v in from {
                if !to.contains(v) {
                    to.push(v.clone());
                }
            }
        }
        node.modifiers.extend(&o.modifiers);
        if o.laterality != "unknown" {
            sides.insert(o.laterality.clone());
        }
        for s in &o.sent_ids {
            if !node.sent_ids.contains(s) {
                node.sent_ids.push(s.clone());
            }
        }
    }
    let positive = associated.iter().any(|o| o.positiveness == "pos");
    let (probability, certainty, positiveness) = if associated.is_empty() {
        (None, "certain", "neg")
    } else if positive {
        (Some("positive"), "certain", "pos")
    } else {
        (Some("negative"), "certain", "neg")
    };
    node.probability = probability.map(str::to_string);
    node.certainty = certainty.to_string();
    node.positiveness = positiveness.to_string();
    node.laterality = match sides.len() {
        0 => "unknown".to_string(),
        1 => sides.into_iter().next().unwrap_or_default(),
        _ => "bilateral".to_string(),
    };
    node.obs_quality =
        worst_quality(associated.iter().map(|o| &o.obs_quality)).unwrap_or(ObsQuality {
            region_extract_quality: REGION_LEVELS[0].to_string(),
            entity_extract_quality: ENTITY_LEVELS[0].to_string(),
            sentence_name_quality: "NO_ISSUES".to_string(),
            change_quality: "NO_ISSUES".to_string(),
            general_issue_level: "NO_ISSUES".to_string(),
        });
    Some(node)
}

/// Assembles one study's graph from its mapped observations (in id order), indication,
/// `region_boxes` rows and image ids.
pub fn assemble(
    observations: Vec<Observation>,
    indication: Option<&IndicationIn>,
    boxes: &[RegionBox],
    images: &[String],
    reference: &Reference,
) -> Assembled {
    let index: BoxIndex<'_> = boxes
        .iter()
        .map(|b| ((b.image_id.as_str(), b.region.as_str()), b))
        .collect();
    let region_names = graph_regions(&observations, reference);

    let associated: Vec<&Observation> = match indication {
        Some(ind) => observations
            .iter()
            .filter(|o| o.child_level == 0)
            .filter(|o| {
                o.sent_ids
                    .iter()
                    .any(|s| ind.associated_sentence_ids.contains(s))
            })
            .collect(),
        None => Vec::new(),
    };
    let associated_obs_ids: Vec<String> = associated.iter().map(|o| o.obs_id.clone()).collect();
    let oind = indication.and_then(|ind| indication_node(ind, &associated));

    let mut located_at = Vec::new();
    let mut obs_relations = Vec::new();
    let mut obs_sent = Vec::new();
    for o in &observations {
        let mut seen: BTreeSet<&str> = BTreeSet::new();
        for r in &o.regions {
            if seen.insert(&r.region) {
                located_at.push(LocatedAt {
                    obs_id: o.obs_id.clone(),
                    region: r.region.clone(),
                    distances: r.distances.clone(),
                    where_specified: "direct",
                });
            }
        }
        for r in &o.regions {
            let Some(info) = reference.region(&r.region) else {
                continue;
            };
            if let Some(bilateral) = info.bilateral.as_deref()
                && seen.insert(bilateral)
            {
                located_at.push(LocatedAt {
                    obs_id: o.obs_id.clone(),
                    region: bilateral.to_string(),
                    distances: Vec::new(),
                    where_specified: "bilateral",
                });
            }
            for ancestor in &info.ancestors {
                if seen.insert(ancestor) {
                    located_at.push(LocatedAt {
                        obs_id: o.obs_id.clone(),
                        region: ancestor.clone(),
                        distances: Vec::new(),
                        where_specified: "sub_region",
                    });
                }
            }
        }
        if let Some((parent, _)) = o.obs_id.rsplit_once('.') {
            obs_relations.push(ObsRelation {
                parent_obs_id: parent.to_string(),
                child_obs_id: o.obs_id.clone(),
                child_type: o.child_type.clone(),
            });
        }
        for s in &o.sent_ids {
            obs_sent.push(ObsSent {
                obs_id: o.obs_id.clone(),
                sent_id: s.clone(),
            });
        }
    }

    let node = |o: Observation| {
        let regions: Vec<&str> = o.regions.iter().map(|r| r.region.as_str()).collect();
        let localization = localize(&regions, images, &index, reference);
        ObservationNode {
            observation: o,
            localization,
        }
    };
    let top_level_obs_ids = observations
        .iter()
        .filter(|o| o.child_level == 0)
        .map(|o| o.obs_id.clone())
        .collect();
    let study_quality = worst_quality(
        observations
            .iter()
            .chain(oind.as_ref())
            .map(|o| &o.obs_quality),
    );
    let nodes: Vec<ObservationNode> = observations.into_iter().map(node).collect();
    let answer_for_indication = oind.map(node);

    let study_img_localization_quality = images
        .iter()
        .enumerate()
        .map(|(i, image)| {
            let level = nodes
                .iter()
                .chain(answer_for_indication.as_ref())
                .filter(|n| !n.observation.regions.is_empty())
                .map(|n| n.localization[i].localization_quality.as_str())
                .reduce(|a, b| worse(&LOCALIZATION_LEVELS, a, b))
                .unwrap_or(LOCALIZATION_LEVELS[0]);
            ImageQuality {
                image_id: image.clone(),
                localization_quality: level.to_string(),
            }
        })
        .collect();

    let mut regions = Vec::with_capacity(region_names.len());
    let mut region_relations = Vec::new();
    for name in &region_names {
        let Some(info) = reference.region(name) else {
            continue;
        };
        let localization = localize(&[name.as_str()], images, &index, reference);
        let region_localization_quality = localization
            .iter()
            .map(|l| l.localization_quality.as_str())
            .reduce(|a, b| worse(&LOCALIZATION_LEVELS, a, b))
            .unwrap_or(LOCALIZATION_LEVELS[0])
            .to_string();
        if let Some(parent) = info.ancestors.first().filter(|p| region_names.contains(*p)) {
            region_relations.push(RegionRelation {
                region: name.clone(),
                related_region: parent.clone(),
                relation_type: "sub_region",
            });
        }
        for (side, relation) in [
            (Laterality::Bilateral, "bilateral"),
            (Laterality::Left, "left"),
            (Laterality::Right, "right"),
        ] {
            if let Some(other) = info.side(side).filter(|o| region_names.contains(*o)) {
                region_relations.push(RegionRelation {
                    region: name.clone(),
                    related_region: other.to_string(),
                    relation_type: relation,
                });
            }
        }
        regions.push(RegionNode {
            region: name.clone(),
            laterality: info.laterality.as_str(),
            localization,
            region_localization_quality,
        });
    }

    Assembled {
        observations: nodes,
        top_level_obs_ids,
        regions,
        associated_obs_ids,
        answer_for_indication,
        located_at_relations: located_at,
        obs_relations,
        obs_sent_relations: obs_sent,
        region_region_relations: region_relations,
        study_quality,
        study_img_localization_quality,
    }
}
