//! The release layouts as data: every JSON object of a scene graph (D.1) and of a QA file (D.2),
//! its keys, and the shape of each value. One description drives both the exports (Arrow row →
//! JSON object) and the validators, so they cannot drift apart; tests pin it to [`crate::d1`]
//! and [`crate::d2`]. Quality levels and ratings take their release encodings from
//! [`cxrlake_schemas::quality`] and [`cxrlake_schemas::Rating`].

use cxrlake_schemas::quality::{self, Aspect};

use crate::{d1, d2};

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
    /// An answer part's id. Lake: 0-based within its question. JSON: 1-based, as the public
    /// preview of the release's files shows (`1`, `2`, …).
    AnswerId,
    /// A boolean or null.
    Bool,
    /// One of these strings, or null.
    OneOf(&'static [&'static str]),
    /// One of these strings, never null.
    Enum(&'static [&'static str]),
    /// One of `allowed` or null, some lake values written differently.
    Respelled(&'static Respelling),
    /// A quality level of this aspect. Lake: its name (`NO_ISSUES`). JSON: its value, an
    /// integer (tables 11 and 12's "Value" column; `quality_mappings.csv` maps it back); null
    /// stays null.
    Level(&'static Aspect),
    /// A rating. Lake: `A+` … `not rated`. JSON: the release code `<rank>_<grade>` (`5_A+`,
    /// `0_not rated`); null (not judged) stays null.
    Rating,
}

/// Values the lake spells differently from the release.
#[derive(Debug)]
pub(crate) struct Respelling {
    /// The JSON values (besides null).
    pub allowed: &'static [&'static str],
    /// Lake value → JSON value (`None`: null).
    pub from_lake: &'static [(&'static str, Option<&'static str>)],
}

impl Respelling {
    /// The JSON form of a lake value, if it is respelled.
    pub fn respell(&self, lake: &str) -> Option<Option<&'static str>> {
        self.from_lake
            .iter()
            .find(|(from, _)| *from == lake)
            .map(|(_, to)| *to)
    }
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
    /// Lake: a list of `{name, value_json}`. JSON: `{name: value}` with each value parsed; null
    /// becomes `{}`.
    Variables,
    /// Lake: a list of two-field structs (fields named here). JSON: a list of `[first, second]`
    /// pairs; null becomes `[]`.
    Pairs([(&'static str, Scalar); 2]),
    /// Lake: the five extraction levels ([`QUALITY`]). JSON: [`EXTRACTION_QUALITY`], whose
    /// `localization_quality` is the worst `localization_quality` of the items of the sibling
    /// list named here (null when it has none).
    QualityWithLocalization(&'static str),
    /// Lake: a flat list of parts with `answer_id` and `parent_answer_id`. JSON: the top-level
    /// parts (no parent) in `answer_id` order, each with its children under its
    /// [`Shape::Children`] key, recursively; null becomes `[]`.
    Tree(&'static Node),
    /// JSON only: the children of a [`Shape::Tree`] part, a list of the same objects.
    Children(&'static Node),
}

/// One kind of JSON object.
#[derive(Debug)]
pub(crate) struct Node {
    /// Name used in messages.
    pub name: &'static str,
    /// Keys in release order with the shapes of their values.
    pub fields: &'static [(&'static str, Shape)],
}

const LOCALIZATION_LEVEL: Scalar = Scalar::Level(&quality::LOCALIZATION);

const fn quality_levels(aspect: usize) -> Shape {
    Shape::Scalar(Scalar::Level(quality::EXTRACTION[aspect]))
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

// D.2: QA files.

static LATERALITY: Respelling = Respelling {
    allowed: d2::LATERALITY,
    from_lake: &[("likely bilateral", Some("likely_bilateral"))],
};

const fn text_quality(aspect: &'static Aspect) -> Shape {
    Shape::Scalar(Scalar::Level(aspect))
}

/// One image's localization of an answer part; the lake's `image_id` keys the dict.
pub(crate) static QA_LOCALIZATION: Node = Node {
    name: "answer localization",
    fields: &[
        ("bboxes", Shape::Boxes),
        ("localization_reference_ids", Shape::List(Scalar::Key)),
        ("missing_localization", Shape::List(Scalar::Key)),
        ("is_fallback", Shape::Scalar(Scalar::Bool)),
        ("localization_quality", Shape::Scalar(LOCALIZATION_LEVEL)),
    ],
};

/// `extraction_quality` as written ([`QUALITY`] and the worst localization level).
pub(crate) static EXTRACTION_QUALITY: Node = Node {
    name: "extraction quality",
    fields: &[
        ("region_extract_quality", quality_levels(0)),
        ("entity_extract_quality", quality_levels(1)),
        ("sentence_name_quality", quality_levels(2)),
        ("change_quality", quality_levels(3)),
        ("general_issue_level", quality_levels(4)),
        ("localization_quality", Shape::Scalar(LOCALIZATION_LEVEL)),
    ],
};

pub(crate) static QUESTION_QUALITY: Node = Node {
    name: "question quality",
    fields: &[
        ("question_clarity", text_quality(&quality::QUESTION_CLARITY)),
        ("completeness", text_quality(&quality::COMPLETENESS)),
        ("rating", Shape::Scalar(Scalar::Rating)),
    ],
};

pub(crate) static ANSWER_QUALITY: Node = Node {
    name: "answer quality",
    fields: &[
        ("entailment", text_quality(&quality::ENTAILMENT)),
        ("relevance", text_quality(&quality::RELEVANCE)),
        ("answer_clarity", text_quality(&quality::ANSWER_CLARITY)),
        ("rating", Shape::Scalar(Scalar::Rating)),
    ],
};

pub(crate) static ANSWER: Node = Node {
    name: "answer part",
    fields: &[
        ("answer_id", Shape::Scalar(Scalar::AnswerId)),
        ("answer_type", Shape::Scalar(Scalar::Enum(d2::ANSWER_TYPES))),
        ("answer_level", Shape::Scalar(Scalar::Int)),
        ("text", Shape::Scalar(Scalar::Text)),
        ("name_tag", Shape::Scalar(Scalar::Text)),
        ("laterality", Shape::Scalar(Scalar::Respelled(&LATERALITY))),
        ("regions", Shape::List(Scalar::Key)),
        ("obs_entities", Shape::List(Scalar::Key)),
        ("obs_entities_parents", Shape::List(Scalar::Key)),
        ("obs_categories", Shape::List(Scalar::Key)),
        ("obs_subcategories", Shape::List(Scalar::Key)),
        ("certainty", Shape::Scalar(Scalar::OneOf(d2::CERTAINTY))),
        (
            "positiveness",
            Shape::Scalar(Scalar::OneOf(d2::POSITIVENESS)),
        ),
        (
            "modifiers",
            Shape::Pairs([
                ("modifier_type", Scalar::Enum(d2::MODIFIER_TYPES)),
                ("value", Scalar::Key),
            ]),
        ),
        ("localization", Shape::Dict(&QA_LOCALIZATION, "image_id")),
        ("from_report", Shape::Scalar(Scalar::Bool)),
        ("obs_ids", Shape::List(Scalar::ObsId)),
        (
            "extraction_quality",
            Shape::QualityWithLocalization("localization"),
        ),
        ("answer_quality", Shape::Fixed(&ANSWER_QUALITY)),
        ("sub_answers", Shape::Children(&ANSWER)),
    ],
};

/// A question (QA pair): D.2's keys in release order, then cxrlake's provenance.
pub(crate) static QUESTION: Node = Node {
    name: "question",
    fields: &[
        ("question_id", Shape::Scalar(Scalar::Key)),
        ("question_type", Shape::Scalar(Scalar::Key)),
        (
            "question_strategy",
            Shape::Scalar(Scalar::Enum(d2::STRATEGIES)),
        ),
        ("variables", Shape::Variables),
        ("obs_ids", Shape::List(Scalar::ObsId)),
        ("contains_report_answers", Shape::Scalar(Scalar::Bool)),
        ("contains_template_answers", Shape::Scalar(Scalar::Bool)),
        (
            "extraction_quality",
            Shape::QualityWithLocalization("question_img_localization_quality"),
        ),
        ("question_img_localization_quality", Shape::LevelDict),
        ("question", Shape::Scalar(Scalar::Key)),
        ("answers", Shape::Tree(&ANSWER)),
        ("question_quality", Shape::Fixed(&QUESTION_QUALITY)),
        ("extractor", Shape::Scalar(Scalar::Text)),
        ("embedder", Shape::Scalar(Scalar::Text)),
    ],
};

/// A `*.qa.json` file.
pub(crate) static QA_FILE: Node = Node {
    name: "qa file",
    fields: &[
        ("patient_id", Shape::Scalar(Scalar::PatientId)),
        ("study_id", Shape::Scalar(Scalar::StudyId)),
        ("questions", Shape::Objects(&QUESTION)),
    ],
};

impl Node {
    /// The node's keys in order.
    pub fn keys(&self) -> impl Iterator<Item = &'static str> + '_ {
        self.fields.iter().map(|(key, _)| *key)
    }

    /// Keys that may be absent: cxrlake's provenance, which files of the original release lack.
    pub fn optional_keys(&self) -> &'static [&'static str] {
        if std::ptr::eq(self, &ROOT) {
            d1::CXRLAKE_ROOT
        } else if std::ptr::eq(self, &QUESTION) {
            d2::CXRLAKE_QUESTION
        } else {
            &[]
        }
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
                Shape::Scalar(_)
                | Shape::List(_)
                | Shape::Boxes
                | Shape::Variables
                | Shape::Pairs(_)
                | Shape::QualityWithLocalization(_)
                | Shape::Tree(_)
                | Shape::Children(_) => {}
            }
        }
    }

    #[test]
    fn the_layout_reads_every_scene_graphs_column() {
        let schema = cxrlake_schemas::pipeline::scene_graphs();
        assert_matches(&ROOT, schema.fields());
    }

    #[test]
    fn the_qa_layout_has_exactly_the_d2_keys() {
        let question: Vec<_> = d2::QUESTION
            .iter()
            .chain(d2::CXRLAKE_QUESTION)
            .copied()
            .collect();
        assert_eq!(keys(&QUESTION), question);
        assert_eq!(keys(&QA_FILE), d2::FILE);
        assert_eq!(keys(&ANSWER), d2::ANSWER);
        assert_eq!(keys(&QA_LOCALIZATION), d2::LOCALIZATION);
        assert_eq!(keys(&EXTRACTION_QUALITY), d2::EXTRACTION_QUALITY);
        assert_eq!(keys(&QUESTION_QUALITY), d2::QUESTION_QUALITY);
        assert_eq!(keys(&ANSWER_QUALITY), d2::ANSWER_QUALITY);
        assert_eq!(keys(&QUALITY), d2::EXTRACTION_QUALITY[..5]);
    }

    fn names(fields: &Fields) -> Vec<&str> {
        let mut names: Vec<_> = fields.iter().map(|f| f.name().as_str()).collect();
        names.sort_unstable();
        names
    }

    fn sorted(keys: impl IntoIterator<Item = &'static str>) -> Vec<&'static str> {
        let mut keys: Vec<_> = keys.into_iter().collect();
        keys.sort_unstable();
        keys
    }

    /// The QA layout reads `qa` columns of the same names; what it leaves out is deliberate:
    /// the file root's ids, the judge's columns folded into `question_quality`, the flat
    /// hierarchy, and the image id that keys each localization.
    #[test]
    fn the_qa_layout_reads_every_qa_column() {
        let schema = cxrlake_schemas::pipeline::qa();
        let mut lake = names(schema.fields());
        lake.retain(|name| {
            !["patient_id", "study_id", "rating", "rating_rank", "judge"].contains(name)
        });
        assert_eq!(lake, sorted(QUESTION.keys()));

        let (_, answers) = schema.fields().find("answers").expect("answers");
        let answer = struct_fields("answers", answers.data_type());
        let mut lake = names(&answer);
        lake.retain(|name| *name != "parent_answer_id");
        let written = ANSWER.keys().filter(|key| *key != "sub_answers");
        assert_eq!(lake, sorted(written));

        let (_, localization) = answer.find("localization").expect("localization");
        let localization = struct_fields("localization", localization.data_type());
        let mut lake = names(&localization);
        lake.retain(|name| *name != "image_id");
        assert_eq!(lake, sorted(QA_LOCALIZATION.keys()));

        let (_, quality) = answer.find("answer_quality").expect("answer_quality");
        assert_matches(
            &ANSWER_QUALITY,
            &struct_fields("answer_quality", quality.data_type()),
        );
        let (_, quality) = schema
            .fields()
            .find("question_quality")
            .expect("question_quality");
        let quality = struct_fields("question_quality", quality.data_type());
        assert_matches(&QUESTION_QUALITY, &quality);
        for node in [&QUESTION, &ANSWER] {
            let (_, shape) = node
                .fields
                .iter()
                .find(|(key, _)| *key == "extraction_quality")
                .expect("extraction_quality");
            assert!(matches!(shape, Shape::QualityWithLocalization(_)));
        }
        let (_, quality) = answer
            .find("extraction_quality")
            .expect("extraction_quality");
        assert_matches(
            &QUALITY,
            &struct_fields("extraction_quality", quality.data_type()),
        );
    }
}
