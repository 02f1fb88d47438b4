//! Schemas of the reference-definition tables `ref_regions`, `ref_findings`, `ref_modifiers`, `ref_changes`.
//!
//! One row per entry of the refdefs files (key: `name`). List columns keep file order; `recipe`
//! is the validated localization recipe as JSON text (`{"kind": "cxas", "classes": [...]}`).
//! `entry_hash` is the sha256 of the entry's canonical JSON, `file_hash` the hash of the file it
//! came from, `refdefs_fingerprint` the hash over all files: stages record these to know when
//! their results are stale.

use std::sync::Arc;

use arrow::datatypes::{DataType, Field, Schema, SchemaRef};

use crate::types::{key, text, text_list};

fn hash_columns() -> [Field; 4] {
    [
        key("entry_hash"),
        key("file_hash"),
        key("refdefs_fingerprint"),
        key("version"),
    ]
}

/// `ref_regions`: one row per region (key: name).
pub fn ref_regions_schema() -> SchemaRef {
    let mut fields = vec![
        key("name"),
        text_list("synonyms"),
        key("laterality"),
        text("left"),
        text("right"),
        text("bilateral"),
        text("parent"),
        text_list("children"),
        text_list("fallbacks"),
        Field::new("localized", DataType::Boolean, false),
        key("recipe_kind"),
        key("recipe"),
    ];
    fields.extend(hash_columns());
    Arc::new(Schema::new(fields))
}

/// `ref_findings`: one row per finding class (key: name).
pub fn ref_findings_schema() -> SchemaRef {
    let mut fields = vec![
        key("name"),
        text_list("synonyms"),
        key("category"),
        text_list("subcategories"),
        text_list("parents"),
        text_list("default_regions"),
        text_list("indicative_of"),
    ];
    fields.extend(hash_columns());
    Arc::new(Schema::new(fields))
}

/// `ref_modifiers`: one row per modifier or probability value (key: name).
///
/// `modifier_type` is severity, texture, spread, temporal or `probability`; `certainty` and
/// `positiveness` are set for probability rows only.
pub fn ref_modifiers_schema() -> SchemaRef {
    let mut fields = vec![
        key("name"),
        key("modifier_type"),
        text_list("synonyms"),
        text("certainty"),
        text("positiveness"),
    ];
    fields.extend(hash_columns());
    Arc::new(Schema::new(fields))
}

/// `ref_changes`: one row per change type (key: name).
pub fn ref_changes_schema() -> SchemaRef {
    let mut fields = vec![key("name"), key("kind"), text_list("synonyms")];
    fields.extend(hash_columns());
    Arc::new(Schema::new(fields))
}
