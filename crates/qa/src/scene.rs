//! One study's scene graph as `generate_qa` reads it (a `scene_graphs` row), with the lookups
//! the strategies need: children per observation, observations per region.

use std::collections::HashMap;

use serde::Deserialize;

use cxrlake_map::{Modifiers, ObsQuality, RegionRef};

/// One image's localization of a node (D.1), read and written unchanged.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct Localization {
    /// Image.
    pub image_id: String,
    /// Boxes `[x1, y1, x2, y2]`.
    pub bboxes: Vec<Option<[f32; 4]>>,
    /// Regions the boxes come from.
    pub localization_reference_ids: Vec<String>,
    /// Regions without localization on this image.
    pub missing_localization: Vec<String>,
    /// A coarser region was used.
    pub is_fallback: Option<bool>,
    /// Table 11 level.
    pub localization_quality: Option<String>,
}

/// An observation node of the scene graph.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct Obs {
    /// `O01`, `O01.02`, `OIND`.
    pub obs_id: String,
    /// Answer text.
    pub summary_sentence: Option<String>,
    /// Short name.
    pub name: Option<String>,
    /// Regions.
    pub regions: Vec<RegionRef>,
    /// Laterality.
    pub laterality: Option<String>,
    /// Findings.
    pub obs_entities: Vec<String>,
    /// Their ancestors.
    pub obs_entities_parents: Vec<String>,
    /// Categories.
    pub obs_categories: Vec<String>,
    /// Subcategories.
    pub obs_subcategories: Vec<String>,
    /// certain, likely, ….
    pub certainty: Option<String>,
    /// pos, neg, ….
    pub positiveness: Option<String>,
    /// Modifiers by type.
    pub modifiers: Modifiers,
    /// Derived from the report.
    pub from_report: Option<bool>,
    /// Table 11 aspects.
    pub obs_quality: Option<ObsQuality>,
    /// Per image.
    pub localization: Vec<Localization>,
}

impl Obs {
    /// Positive.
    pub fn is_pos(&self) -> bool {
        self.positiveness.as_deref() == Some("pos")
    }

    /// Negative.
    pub fn is_neg(&self) -> bool {
        self.positiveness.as_deref() == Some("neg")
    }

    /// What kind of observation it is for the subsets.
    pub fn kind(&self) -> ObsKind {
        if self.obs_categories.iter().any(|c| c == "DEVICE") {
            ObsKind::Device
        } else if self.obs_categories.iter().any(|c| c == "TECHNICAL") {
            ObsKind::Acquisition
        } else {
            ObsKind::Finding
        }
    }

    /// Mentions the finding directly or through a child finding.
    pub fn mentions(&self, finding: &str) -> bool {
        self.obs_entities.iter().any(|e| e == finding)
            || self.obs_entities_parents.iter().any(|e| e == finding)
    }
}

/// Finding, device or acquisition.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ObsKind {
    /// Findings and diseases.
    Finding,
    /// Devices.
    Device,
    /// Technical (acquisition, artifacts).
    Acquisition,
}

/// A region node.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct RegionNodeIn {
    /// Name.
    pub region: String,
    /// Side.
    pub laterality: Option<String>,
    /// Per image.
    pub localization: Vec<Localization>,
}

/// The indication node.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct IndicationNode {
    /// The question of the indication strategy.
    pub indication_summary: Option<String>,
    /// The indication text.
    pub indication: Option<String>,
    /// Observations answering it.
    pub associated_obs_ids: Vec<String>,
    /// `OIND`.
    pub answer_for_indication: Option<Obs>,
}

/// `located_at_relations` entry.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct LocatedAtIn {
    /// Observation.
    pub obs_id: String,
    /// Region.
    pub region: String,
}

/// `obs_relations` entry.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct ObsRelationIn {
    /// Parent.
    pub parent_obs_id: String,
    /// Child.
    pub child_obs_id: String,
}

/// The `scene_graphs` columns `generate_qa` reads.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct SceneGraphIn {
    /// Study.
    pub study_id: String,
    /// Observation nodes in id order.
    pub observations: Vec<Obs>,
    /// Region nodes.
    pub regions: Vec<RegionNodeIn>,
    /// Indication (NULL without one).
    pub indication: Option<IndicationNode>,
    /// Relations.
    pub located_at_relations: Vec<LocatedAtIn>,
    /// Relations.
    pub obs_relations: Vec<ObsRelationIn>,
}

/// A scene graph with its lookups (observation indices everywhere).
#[derive(Debug)]
pub struct Scene {
    /// The graph.
    pub graph: SceneGraphIn,
    /// Children per observation.
    pub children: Vec<Vec<usize>>,
    /// Parent per observation.
    pub parent: Vec<Option<usize>>,
    /// Observations located at each region (any `located_at_relations` type).
    pub at_region: HashMap<String, Vec<usize>>,
}

impl Scene {
    /// Builds the lookups.
    pub fn new(graph: SceneGraphIn) -> Scene {
        let index: HashMap<&str, usize> = graph
            .observations
            .iter()
            .enumerate()
            .map(|(i, o)| (o.obs_id.as_str(), i))
            .collect();
        let n = graph.observations.len();
        let mut children = vec![Vec::new(); n];
        let mut parent = vec![None; n];
        for relation in &graph.obs_relations {
            if let (Some(&p), Some(&c)) = (
                index.get(relation.parent_obs_id.as_str()),
                index.get(relation.child_obs_id.as_str()),
            ) {
                children[p].push(c);
                parent[c] = Some(p);
            }
        }
        let mut at_region: HashMap<String, Vec<usize>> = HashMap::new();
        for relation in &graph.located_at_relations {
            if let Some(&i) = index.get(relation.obs_id.as_str()) {
                let list = at_region.entry(relation.region.clone()).or_default();
                if !list.contains(&i) {
                    list.push(i);
                }
            }
        }
        for list in at_region.values_mut() {
            list.sort_unstable();
        }
        Scene {
            graph,
            children,
            parent,
            at_region,
        }
    }

    /// The observations.
    pub fn obs(&self) -> &[Obs] {
        &self.graph.observations
    }

    /// The region node `name`.
    pub fn region_node(&self, name: &str) -> Option<&RegionNodeIn> {
        self.graph.regions.iter().find(|r| r.region == name)
    }
}
