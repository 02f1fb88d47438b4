//! Nested Arrow types shared by several tables: boxes, per-image localization, quality, observations.

use std::sync::Arc;

use arrow::datatypes::{DataType, Field, Fields};

/// A nullable UTF-8 field.
pub fn text(name: &str) -> Field {
    Field::new(name, DataType::Utf8, true)
}

/// A non-null UTF-8 field (keys).
pub fn key(name: &str) -> Field {
    Field::new(name, DataType::Utf8, false)
}

/// A `list<utf8>` field.
pub fn text_list(name: &str) -> Field {
    Field::new(name, list_of(DataType::Utf8), true)
}

/// `list<item>` of the given element type (element nullable, as pyarrow and duckdb write them).
pub fn list_of(item: DataType) -> DataType {
    DataType::List(Arc::new(Field::new("item", item, true)))
}

/// A `list<struct<fields>>` field.
pub fn struct_list(name: &str, fields: Vec<Field>) -> Field {
    Field::new(name, list_of(DataType::Struct(Fields::from(fields))), true)
}

/// A `struct<fields>` field.
pub fn structure(name: &str, fields: Vec<Field>) -> Field {
    Field::new(name, DataType::Struct(Fields::from(fields)), true)
}

/// One box `[x1, y1, x2, y2]` in original-image pixels: `fixed_size_list<f32, 4>`.
pub fn bbox_type() -> DataType {
    DataType::FixedSizeList(Arc::new(Field::new("item", DataType::Float32, true)), 4)
}

/// A field holding one box.
pub fn bbox(name: &str) -> Field {
    Field::new(name, bbox_type(), true)
}

/// A field holding a list of boxes: `list<fixed_size_list<f32, 4>>`.
pub fn bboxes(name: &str) -> Field {
    Field::new(name, list_of(bbox_type()), true)
}

/// Fields of one image's localization (paper D.1, observation node `localization` values).
///
/// `bboxes` and `localization_reference_ids` are not index-parallel: a bilateral region has one
/// reference id and two boxes (see `schemas/README.md`).
pub fn localization_fields() -> Vec<Field> {
    vec![
        key("image_id"),
        bboxes("bboxes"),
        text_list("localization_reference_ids"),
        text_list("missing_localization"),
        Field::new("is_fallback", DataType::Boolean, true),
        text("localization_quality"),
    ]
}

/// `localization`: one entry per image of the study (a JSON dict keyed by image id on export).
pub fn localization(name: &str) -> Field {
    struct_list(name, localization_fields())
}

/// The five extraction-quality aspects of table 11 (localization is per image), as level names.
pub fn extraction_quality(name: &str) -> Field {
    structure(
        name,
        vec![
            text("region_extract_quality"),
            text("entity_extract_quality"),
            text("sentence_name_quality"),
            text("change_quality"),
            text("general_issue_level"),
        ],
    )
}

/// Per-image localization quality: `list<struct<image_id, localization_quality>>`.
pub fn image_quality(name: &str) -> Field {
    struct_list(name, vec![key("image_id"), text("localization_quality")])
}

/// Scene-graph modifiers: a dict of lists with the four modifier types as keys.
pub fn modifier_dict(name: &str) -> Field {
    structure(
        name,
        vec![
            text_list("severity"),
            text_list("texture"),
            text_list("spread"),
            text_list("temporal"),
        ],
    )
}

/// `regions`: list of `{region, distances}`.
pub fn region_refs(name: &str) -> Field {
    struct_list(name, vec![key("region"), text_list("distances")])
}

/// Fields of an observation node (paper D.1) in `scene_graphs`: the mapped tags and the
/// per-image localization.
pub fn observation_fields() -> Vec<Field> {
    let mut fields = observation_tag_fields();
    fields.push(localization("localization"));
    fields
}

/// Fields of a mapped observation (paper D.1 without `localization`, which needs the images):
/// the `observations` table and the `map_observations` function.
pub fn observation_tag_fields() -> Vec<Field> {
    vec![
        key("obs_id"),
        text("summary_sentence"),
        text("name"),
        Field::new("child_level", DataType::Int32, false),
        text("child_type"),
        region_refs("regions"),
        region_refs("non_resolved_regions"),
        text("laterality"),
        text_list("default_regions"),
        text_list("obs_entities"),
        text_list("obs_entities_parents"),
        text_list("non_resolved_obs_entities"),
        text_list("obs_categories"),
        text_list("obs_subcategories"),
        text("probability"),
        text("certainty"),
        text("positiveness"),
        modifier_dict("modifiers"),
        text("change_sentence"),
        text_list("changes"),
        Field::new("from_report", DataType::Boolean, true),
        extraction_quality("obs_quality"),
    ]
}
