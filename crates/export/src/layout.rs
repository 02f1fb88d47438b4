//! The D.1 layout as data: every JSON object of a scene graph, its keys, and the shape of each
//! value. One description drives both the export (Arrow row → D.1 object) and
//! `validate_scene_graph`, so the two cannot drift apart; a test pins it to [`crate::d1`].

use crate::d1;

/// What a JSON scalar may hold.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Scalar {
    /// A string or null.
    Text,
    /// A non-empty string (names and ids that key something).
    Key,
    /// An observation id (`O01`, `O01.02`, `OIND`).
    ObsId,
    /// `p` followed by digits.
    PatientId,
    /// `s` followed by digits.
    StudyId,
    /// An integer.
    Int,
    /// A boolean or null.
    Bool,
    /// One of these strings, or null.
    OneOf(&'static [&'static str]),
}

/// The shape of one value, and what a null in the lake becomes.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Shape {
    /// A scalar; null stays null.
    Scalar(Scalar),
    /// A list of scalars; null becomes `[]`.
    List(Scalar),
    /// A list of `[x1, y1, x2, y2]` boxes; null becomes `[]`.
    Boxes,
    /// A list of objects; null becomes `[]`.
    Objects(&'static Node),
    /// Lake: a list of objects. JSON: a dict of them keyed by their `key` field; null becomes `{}`.
    Dict(&'static Node, &'static str),
    /// Lake: a list of `{image_id, localization_quality}`. JSON: `{image_id: level}`; null
    /// becomes `{}`.
    LevelDict,
    /// An optional object; null stays null.
    Optional(&'static Node),
    /// An object with fixed keys, always present; null becomes the object with every key empty.
    Fixed(&'static Node),
}

/// One kind of JSON object.
#[derive(Debug)]
pub(crate) struct Node {
    /// Name used in messages.
    pub name: &'static str,
    /// Keys in D.1 order with the shapes of their values.
    pub fields: &'static [(&'static str, Shape)],
}

const LOCALIZATION_LEVEL: Scalar = Scalar::OneOf(d1::LOCALIZATION_QUALITY_LEVELS);

const fn quality_levels(aspect: usize) -> Shape {
    Shape::Scalar(Scalar::OneOf(d1::QUALITY_LEVELS[aspect].1))
}

pub(crate) static QUALITY: Node = Node {
    name: "quality",
    fields: &[
        ("region_extract_quality", quality_levels(0)),
        ("entity_extract_quality", quality_levels(1)),
        ("sentence_name_quality", quality_levels(2)),
        ("change_quality", quality_levels(3)),
        ("general_issue_level", quality_levels(4)),
    ],
};

pub(crate) static MODIFIERS: Node = Node {
    name: "modifiers",
    fields: &[
        ("severity", Shape::List(Scalar::Key)),
        ("texture", Shape::List(Scalar::Key)),
        ("spread", Shape::List(Scalar::Key)),
        ("temporal", Shape::List(Scalar::Key)),
    ],
};

pub(crate) static LOCALIZATION: Node = Node {
    name: "localization",
    fields: &[
        ("image_id", Shape::Scalar(Scalar::Key)),
        ("bboxes", Shape::Boxes),
        ("localization_reference_ids", Shape::List(Scalar::Key)),
        ("missing_localization", Shape::List(Scalar::Key)),
        ("is_fallback", Shape::Scalar(Scalar::Bool)),
        ("localization_quality", Shape::Scalar(LOCALIZATION_LEVEL)),
    ],
};

pub(crate) static REGION_REF: Node = Node {
    name: "region reference",
    fields: &[
        ("region", Shape::Scalar(Scalar::Key)),
        ("distances", Shape::List(Scalar::Key)),
    ],
};

pub(crate) static SENTENCE: Node = Node {
    name: "sentence",
    fields: &[
        ("sent_id", Shape::Scalar(Scalar::Key)),
        ("section", Shape::Scalar(Scalar::Text)),
        (
            "section_type",
            Shape::Scalar(Scalar::OneOf(d1::SECTION_TYPE)),
        ),
        ("sentence", Shape::Scalar(Scalar::Text)),
    ],
};

pub(crate) static OBSERVATION: Node = Node {
    name: "observation",
    fields: &[
        ("obs_id", Shape::Scalar(Scalar::ObsId)),
        ("summary_sentence", Shape::Scalar(Scalar::Text)),
        ("name", Shape::Scalar(Scalar::Text)),
        ("child_level", Shape::Scalar(Scalar::Int)),
        ("child_type", Shape::Scalar(Scalar::OneOf(d1::CHILD_TYPE))),
        ("regions", Shape::Objects(&REGION_REF)),
        ("non_resolved_regions", Shape::Objects(&REGION_REF)),
        (
            "laterality",
            Shape::Scalar(Scalar::OneOf(d1::OBSERVATION_LATERALITY)),
        ),
        ("default_regions", Shape::List(Scalar::Key)),
        ("obs_entities", Shape::List(Scalar::Key)),
        ("obs_entities_parents", Shape::List(Scalar::Key)),
        ("non_resolved_obs_entities", Shape::List(Scalar::Key)),
        ("obs_categories", Shape::List(Scalar::Key)),
        ("obs_subcategories", Shape::List(Scalar::Key)),
        ("probability", Shape::Scalar(Scalar::Text)),
        ("certainty", Shape::Scalar(Scalar::OneOf(d1::CERTAINTY))),
        (
            "positiveness",
            Shape::Scalar(Scalar::OneOf(d1::POSITIVENESS)),
        ),
        ("modifiers", Shape::Fixed(&MODIFIERS)),
        ("change_sentence", Shape::Scalar(Scalar::Text)),
        ("changes", Shape::List(Scalar::Key)),
        ("from_report", Shape::Scalar(Scalar::Bool)),
        ("obs_quality", Shape::Fixed(&QUALITY)),
        ("localization", Shape::Dict(&LOCALIZATION, "image_id")),
    ],
};

pub(crate) static REGION: Node = Node {
    name: "region",
    fields: &[
        ("region", Shape::Scalar(Scalar::Key)),
        (
            "laterality",
            Shape::Scalar(Scalar::OneOf(d1::REGION_LATERALITY)),
        ),
        ("localization", Shape::Dict(&LOCALIZATION, "image_id")),
        (
            "region_localization_quality",
            Shape::Scalar(LOCALIZATION_LEVEL),
        ),
    ],
};

pub(crate) static INDICATION: Node = Node {
    name: "indication",
    fields: &[
        ("indication_summary", Shape::Scalar(Scalar::Text)),
        ("patient_info", Shape::Scalar(Scalar::Text)),
        ("indication", Shape::Scalar(Scalar::Text)),
        ("evaluation", Shape::Scalar(Scalar::Text)),
        ("associated_sentence_ids", Shape::List(Scalar::Key)),
        ("associated_obs_ids", Shape::List(Scalar::ObsId)),
        ("answer_for_indication", Shape::Optional(&OBSERVATION)),
    ],
};

pub(crate) static LOCATED_AT: Node = Node {
    name: "located_at relation",
    fields: &[
        ("obs_id", Shape::Scalar(Scalar::ObsId)),
        ("region", Shape::Scalar(Scalar::Key)),
        ("distances", Shape::List(Scalar::Key)),
        (
            "where_specified",
            Shape::Scalar(Scalar::OneOf(d1::WHERE_SPECIFIED)),
        ),
    ],
};

pub(crate) static OBS_RELATION: Node = Node {
    name: "obs relation",
    fields: &[
        ("parent_obs_id", Shape::Scalar(Scalar::ObsId)),
        ("child_obs_id", Shape::Scalar(Scalar::ObsId)),
        ("child_type", Shape::Scalar(Scalar::OneOf(d1::CHILD_TYPE))),
    ],
};

pub(crate) static OBS_SENT: Node = Node {
    name: "obs-sentence relation",
    fields: &[
        ("obs_id", Shape::Scalar(Scalar::ObsId)),
        ("sent_id", Shape::Scalar(Scalar::Key)),
    ],
};

pub(crate) static REGION_REGION: Node = Node {
    name: "region-region relation",
    fields: &[
        ("region", Shape::Scalar(Scalar::Key)),
        ("related_region", Shape::Scalar(Scalar::Key)),
        (
            "relation_type",
            Shape::Scalar(Scalar::OneOf(d1::RELATION_TYPE)),
        ),
    ],
};

/// The root node: D.1's keys, then cxrlake's provenance.
pub(crate) static ROOT: Node = Node {
    name: "scene graph",
    fields: &[
        ("patient_id", Shape::Scalar(Scalar::PatientId)),
        ("study_id", Shape::Scalar(Scalar::StudyId)),
        ("study_quality", Shape::Fixed(&QUALITY)),
        ("study_img_localization_quality", Shape::LevelDict),
        ("sentences", Shape::Objects(&SENTENCE)),
        ("observations", Shape::Dict(&OBSERVATION, "obs_id")),
        ("top_level_obs_ids", Shape::List(Scalar::ObsId)),
        ("regions", Shape::Dict(&REGION, "region")),
        ("indication", Shape::Optional(&INDICATION)),
        ("located_at_relations", Shape::Objects(&LOCATED_AT)),
        ("obs_relations", Shape::Objects(&OBS_RELATION)),
        ("obs_sent_relations", Shape::Objects(&OBS_SENT)),
        ("region_region_relations", Shape::Objects(&REGION_REGION)),
        ("extractor", Shape::Scalar(Scalar::Text)),
        ("embedder", Shape::Scalar(Scalar::Text)),
    ],
};

impl Node {
    /// The node's keys in order.
    pub fn keys(&self) -> impl Iterator<Item = &'static str> + '_ {
        self.fields.iter().map(|(key, _)| *key)
    }
}

#[cfg(test)]
mod tests {
    use arrow::datatypes::{DataType, Fields};

    use super::*;

    fn keys(node: &Node) -> Vec<&'static str> {
        node.keys().collect()
    }

    #[test]
    fn the_layout_has_exactly_the_d1_keys() {
        let root: Vec<_> = d1::ROOT.iter().chain(d1::CXRLAKE_ROOT).copied().collect();
        assert_eq!(keys(&ROOT), root);
        assert_eq!(keys(&SENTENCE), d1::SENTENCE);
        assert_eq!(keys(&OBSERVATION), d1::OBSERVATION);
        assert_eq!(keys(&REGION_REF), d1::REGION_REF);
        assert_eq!(keys(&REGION), d1::REGION);
        assert_eq!(keys(&INDICATION), d1::INDICATION);
        assert_eq!(keys(&LOCALIZATION), d1::LOCALIZATION);
        assert_eq!(keys(&LOCATED_AT), d1::LOCATED_AT);
        assert_eq!(keys(&OBS_RELATION), d1::OBS_RELATION);
        assert_eq!(keys(&OBS_SENT), d1::OBS_SENT);
        assert_eq!(keys(&REGION_REGION), d1::REGION_REGION);
        assert_eq!(keys(&QUALITY), d1::QUALITY);
        assert_eq!(keys(&MODIFIERS), d1::MODIFIER_TYPES);
    }

    /// The fields of a struct or list-of-struct type.
    fn struct_fields(key: &str, data_type: &DataType) -> Fields {
        match data_type {
            DataType::Struct(fields) => fields.clone(),
            DataType::List(item) => match item.data_type() {
                DataType::Struct(fields) => fields.clone(),
                other => panic!("{key}: list of {other}"),
            },
            other => panic!("{key}: not a struct: {other}"),
        }
    }

    /// Every key of the layout is read from a lake column (or struct field) of the same name, and
    /// the lake has nothing the layout would drop.
    fn assert_matches(node: &Node, lake: &Fields) {
        let mut layout: Vec<&str> = node.keys().collect();
        let mut names: Vec<&str> = lake.iter().map(|f| f.name().as_str()).collect();
        layout.sort_unstable();
        names.sort_unstable();
        assert_eq!(layout, names, "{}", node.name);
        for (key, shape) in node.fields {
            let (_, field) = lake.find(key).expect("same names");
            match shape {
                Shape::Objects(inner)
                | Shape::Dict(inner, _)
                | Shape::Optional(inner)
                | Shape::Fixed(inner) => {
                    assert_matches(inner, &struct_fields(key, field.data_type()));
                }
                Shape::LevelDict => {
                    let fields = struct_fields(key, field.data_type());
                    let names: Vec<_> = fields.iter().map(|f| f.name().as_str()).collect();
                    assert_eq!(names, ["image_id", "localization_quality"]);
                }
                Shape::Scalar(_) | Shape::List(_) | Shape::Boxes => {}
            }
        }
    }

    #[test]
    fn the_layout_reads_every_scene_graphs_column() {
        let schema = cxrlake_schemas::pipeline::scene_graphs();
        assert_matches(&ROOT, schema.fields());
    }
}
