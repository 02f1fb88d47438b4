//! Nested row shapes are declared once, in `cxrlake-schemas`; the Rust structs the functions
//! exchange through JSON (`rows.rs`) must have exactly the declared fields, so that a field
//! added to one side and not the other fails here rather than as a NULL column.

use std::collections::BTreeSet;

use cxrlake_graph::{ImageLocalization, LocatedAt, ObsRelation, ObsSent, RegionRelation};
use cxrlake_map::{Modifiers, ObsQuality, Observation, RegionRef};
use cxrlake_schemas::pipeline::scene_graphs;
use cxrlake_schemas::types::{
    extraction_quality, localization_fields, modifier_dict, observation_tag_fields, region_refs,
};
use datafusion::arrow::datatypes::{DataType, Field, Fields};
use serde::Serialize;

/// The JSON keys of `value`.
fn keys(value: impl Serialize) -> BTreeSet<String> {
    match serde_json::to_value(value).expect("json") {
        serde_json::Value::Object(map) => map.keys().cloned().collect(),
        other => panic!("not an object: {other}"),
    }
}

fn names(fields: &[Field]) -> BTreeSet<String> {
    fields.iter().map(|f| f.name().clone()).collect()
}

/// The fields of a struct field, or of the struct items of a list field.
fn struct_fields(field: &Field) -> Fields {
    match field.data_type() {
        DataType::Struct(fields) => fields.clone(),
        DataType::List(item) => match item.data_type() {
            DataType::Struct(fields) => fields.clone(),
            other => panic!("{}: list of {other}", field.name()),
        },
        other => panic!("{}: {other}", field.name()),
    }
}

fn field_names(field: &Field) -> BTreeSet<String> {
    struct_fields(field)
        .iter()
        .map(|f| f.name().clone())
        .collect()
}

fn scene_graph_field(name: &str) -> Field {
    scene_graphs()
        .field_with_name(name)
        .unwrap_or_else(|_| panic!("scene_graphs.{name}"))
        .clone()
}

#[test]
fn the_mapped_observation_has_the_declared_fields() {
    let mut expected = names(&observation_tag_fields());
    expected.insert("sent_ids".into());
    assert_eq!(keys(Observation::default()), expected);
    assert_eq!(
        keys(ObsQuality::default()),
        field_names(&extraction_quality("q"))
    );
    assert_eq!(keys(RegionRef::default()), field_names(&region_refs("r")));
    assert_eq!(keys(Modifiers::default()), field_names(&modifier_dict("m")));
}

#[test]
fn scene_graph_nodes_and_relations_have_the_declared_fields() {
    let localization = ImageLocalization {
        image_id: String::new(),
        bboxes: Vec::new(),
        localization_reference_ids: Vec::new(),
        missing_localization: Vec::new(),
        is_fallback: false,
        localization_quality: String::new(),
    };
    assert_eq!(keys(&localization), names(&localization_fields()));
    let relations: [(&str, BTreeSet<String>); 4] = [
        (
            "located_at_relations",
            keys(LocatedAt {
                obs_id: String::new(),
                region: String::new(),
                distances: Vec::new(),
                where_specified: "direct",
            }),
        ),
        (
            "obs_relations",
            keys(ObsRelation {
                parent_obs_id: String::new(),
                child_obs_id: String::new(),
                child_type: None,
            }),
        ),
        (
            "obs_sent_relations",
            keys(ObsSent {
                obs_id: String::new(),
                sent_id: String::new(),
            }),
        ),
        (
            "region_region_relations",
            keys(RegionRelation {
                region: String::new(),
                related_region: String::new(),
                relation_type: "sub_region",
            }),
        ),
    ];
    for (name, actual) in relations {
        assert_eq!(actual, field_names(&scene_graph_field(name)), "{name}");
    }
    // An observation node of a scene graph: the mapped observation without its sentences,
    // with its localization.
    let mut node = keys(Observation::default());
    node.remove("sent_ids");
    node.insert("localization".into());
    assert_eq!(node, field_names(&scene_graph_field("observations")));
}
