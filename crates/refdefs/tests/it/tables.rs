//! The lake tables carry one row per entry, the schemas of cxrlake-schemas and the hashes.

use arrow::array::{Array, AsArray};
use cxrlake_refdefs::{EntryKind, FileKind, RefDefs};
use cxrlake_schemas::reference::{
    ref_changes_schema, ref_findings_schema, ref_modifiers_schema, ref_regions_schema,
};

#[test]
fn tables_have_rows_schemas_and_hashes() {
    let defs = RefDefs::embedded().expect("embedded");
    let stats = defs.stats();
    let batches = defs.to_record_batches().expect("batches");
    let names: Vec<&str> = batches.iter().map(|(n, _)| *n).collect();
    assert_eq!(names, cxrlake_refdefs::tables::TABLE_NAMES);
    let expected = [
        (ref_regions_schema(), stats.regions, FileKind::Regions),
        (ref_findings_schema(), stats.findings, FileKind::Findings),
        (
            ref_modifiers_schema(),
            stats.modifiers_by_type.values().sum::<usize>() + stats.probabilities,
            FileKind::Modifiers,
        ),
        (ref_changes_schema(), stats.changes, FileKind::Changes),
    ];
    for ((name, batch), (schema, rows, file)) in batches.iter().zip(expected) {
        assert_eq!(batch.schema(), schema, "{name}");
        assert_eq!(batch.num_rows(), rows, "{name}");
        let file_hash = batch
            .column_by_name("file_hash")
            .expect("file_hash")
            .as_string::<i32>();
        assert!(
            file_hash.iter().all(|h| h == Some(defs.file_hash(file))),
            "{name}"
        );
        let entry_hash = batch
            .column_by_name("entry_hash")
            .expect("entry_hash")
            .as_string::<i32>();
        assert_eq!(entry_hash.null_count(), 0, "{name}");
    }
    let regions = &batches[0].1;
    let name = regions
        .column_by_name("name")
        .expect("name")
        .as_string::<i32>();
    let entry_hash = regions
        .column_by_name("entry_hash")
        .expect("entry_hash")
        .as_string::<i32>();
    let recipe = regions
        .column_by_name("recipe")
        .expect("recipe")
        .as_string::<i32>();
    let row = (0..name.len())
        .find(|i| name.value(*i) == "lungs")
        .expect("lungs row");
    assert_eq!(
        Some(entry_hash.value(row)),
        defs.entry_hash(EntryKind::Region, "lungs")
    );
    let recipe: serde_json::Value = serde_json::from_str(recipe.value(row)).expect("json");
    assert_eq!(
        recipe,
        serde_json::json!({"kind": "bilateral", "left": "left lung", "right": "right lung"})
    );
    let modifiers = &batches[2].1;
    let modifier_type = modifiers
        .column_by_name("modifier_type")
        .expect("type")
        .as_string::<i32>();
    let certainty = modifiers
        .column_by_name("certainty")
        .expect("certainty")
        .as_string::<i32>();
    for i in 0..modifiers.num_rows() {
        assert_eq!(
            modifier_type.value(i) == "probability",
            certainty.is_valid(i)
        );
    }
}
