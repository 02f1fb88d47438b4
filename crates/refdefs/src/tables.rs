//! The lake tables `ref_regions`, `ref_findings`, `ref_modifiers` and `ref_changes` as Arrow batches.

use std::collections::BTreeMap;
use std::sync::Arc;

use arrow::array::{ArrayRef, BooleanArray, ListBuilder, StringArray, StringBuilder};
use arrow::record_batch::RecordBatch;
use cxrlake_schemas::reference::{
    ref_changes_schema, ref_findings_schema, ref_modifiers_schema, ref_regions_schema,
};

use crate::hash::EntryKind;
use crate::model::Name;
use crate::{Error, RefDefs, Result};

/// Table names, in the order [`RefDefs::to_record_batches`] returns them.
pub const TABLE_NAMES: [&str; 4] = [
    "ref_regions",
    "ref_findings",
    "ref_modifiers",
    "ref_changes",
];

fn strings<S: AsRef<str>>(values: impl IntoIterator<Item = S>) -> ArrayRef {
    Arc::new(
        values
            .into_iter()
            .map(|v| Some(v.as_ref().to_string()))
            .collect::<StringArray>(),
    )
}

fn optional_strings<S: AsRef<str>>(values: impl IntoIterator<Item = Option<S>>) -> ArrayRef {
    Arc::new(
        values
            .into_iter()
            .map(|v| v.map(|s| s.as_ref().to_string()))
            .collect::<StringArray>(),
    )
}

fn lists<'a>(rows: impl IntoIterator<Item = Vec<&'a str>>) -> ArrayRef {
    let mut builder = ListBuilder::new(StringBuilder::new());
    for row in rows {
        for value in row {
            builder.values().append_value(value);
        }
        builder.append(true);
    }
    Arc::new(builder.finish())
}

fn names(list: &[Name]) -> Vec<&str> {
    list.iter().map(|n| n.get_ref().as_str()).collect()
}

/// Appends `entry_hash`, `file_hash`, `refdefs_fingerprint` and `version` for the given rows.
fn hash_columns(defs: &RefDefs, kinds_and_names: &[(EntryKind, &str)]) -> Result<Vec<ArrayRef>> {
    let mut entry_hashes = Vec::with_capacity(kinds_and_names.len());
    for (kind, name) in kinds_and_names {
        let hash = defs
            .entry_hash(*kind, name)
            .ok_or_else(|| Error::Internal(format!("no hash for {} '{name}'", kind.as_str())))?;
        entry_hashes.push(hash);
    }
    let file_hashes = kinds_and_names
        .iter()
        .map(|(k, _)| defs.file_hash(k.file()));
    let versions = kinds_and_names.iter().map(|(k, _)| defs.version(k.file()));
    Ok(vec![
        strings(entry_hashes),
        strings(file_hashes),
        strings(kinds_and_names.iter().map(|_| defs.fingerprint())),
        strings(versions),
    ])
}

pub(crate) fn record_batches(defs: &RefDefs) -> Result<Vec<(&'static str, RecordBatch)>> {
    Ok(vec![
        ("ref_regions", regions(defs)?),
        ("ref_findings", findings(defs)?),
        ("ref_modifiers", modifiers(defs)?),
        ("ref_changes", changes(defs)?),
    ])
}

fn regions(defs: &RefDefs) -> Result<RecordBatch> {
    let regions: Vec<_> = defs.regions.regions.iter().map(|r| r.get_ref()).collect();
    let mut children: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for region in &regions {
        if let Some(parent) = &region.parent {
            children
                .entry(parent.get_ref())
                .or_default()
                .push(region.name.get_ref());
        }
    }
    let mut recipes = Vec::with_capacity(regions.len());
    for region in &regions {
        let recipe = region.localization.get_ref().recipe().map_err(|problem| {
            Error::Internal(format!(
                "region '{}' has an invalid recipe: {}",
                region.name.get_ref(),
                problem.message
            ))
        })?;
        recipes.push(serde_json::to_string(&recipe)?);
    }
    let link = |f: fn(&crate::Region) -> Option<&Name>| {
        optional_strings(regions.iter().map(|r| f(r).map(|n| n.get_ref().as_str())))
    };
    let keys: Vec<(EntryKind, &str)> = regions
        .iter()
        .map(|r| (EntryKind::Region, r.name.get_ref().as_str()))
        .collect();
    let mut columns = vec![
        strings(regions.iter().map(|r| r.name.get_ref())),
        lists(regions.iter().map(|r| names(&r.synonyms))),
        strings(regions.iter().map(|r| r.laterality.get_ref().as_str())),
        link(|r| r.left.as_ref()),
        link(|r| r.right.as_ref()),
        link(|r| r.bilateral.as_ref()),
        link(|r| r.parent.as_ref()),
        lists(regions.iter().map(|r| {
            children
                .get(r.name.get_ref().as_str())
                .cloned()
                .unwrap_or_default()
        })),
        lists(regions.iter().map(|r| names(&r.fallbacks))),
        Arc::new(
            regions
                .iter()
                .map(|r| Some(r.is_localized()))
                .collect::<BooleanArray>(),
        ),
        strings(
            regions
                .iter()
                .map(|r| r.localization.get_ref().kind.get_ref().as_str()),
        ),
        strings(recipes),
    ];
    columns.extend(hash_columns(defs, &keys)?);
    Ok(RecordBatch::try_new(ref_regions_schema(), columns)?)
}

fn findings(defs: &RefDefs) -> Result<RecordBatch> {
    let findings: Vec<_> = defs.findings.findings.iter().map(|f| f.get_ref()).collect();
    let keys: Vec<(EntryKind, &str)> = findings
        .iter()
        .map(|f| (EntryKind::Finding, f.name.get_ref().as_str()))
        .collect();
    let mut columns = vec![
        strings(findings.iter().map(|f| f.name.get_ref())),
        lists(findings.iter().map(|f| names(&f.synonyms))),
        strings(findings.iter().map(|f| f.category.get_ref())),
        lists(findings.iter().map(|f| names(&f.subcategories))),
        lists(findings.iter().map(|f| names(&f.parents))),
        lists(findings.iter().map(|f| names(&f.default_regions))),
        lists(findings.iter().map(|f| names(&f.indicative_of))),
    ];
    columns.extend(hash_columns(defs, &keys)?);
    Ok(RecordBatch::try_new(ref_findings_schema(), columns)?)
}

fn modifiers(defs: &RefDefs) -> Result<RecordBatch> {
    struct Row<'a> {
        kind: EntryKind,
        name: &'a str,
        modifier_type: &'a str,
        synonyms: Vec<&'a str>,
        certainty: Option<&'a str>,
        positiveness: Option<&'a str>,
    }
    let rows: Vec<Row<'_>> = defs
        .modifiers
        .modifiers
        .iter()
        .map(|m| {
            let m = m.get_ref();
            Row {
                kind: EntryKind::Modifier,
                name: m.name.get_ref(),
                modifier_type: m.modifier_type.get_ref().as_str(),
                synonyms: names(&m.synonyms),
                certainty: None,
                positiveness: None,
            }
        })
        .chain(defs.modifiers.probabilities.iter().map(|p| {
            let p = p.get_ref();
            Row {
                kind: EntryKind::Probability,
                name: p.name.get_ref(),
                modifier_type: "probability",
                synonyms: names(&p.synonyms),
                certainty: Some(p.certainty.get_ref().as_str()),
                positiveness: Some(p.positiveness.get_ref().as_str()),
            }
        }))
        .collect();
    let keys: Vec<(EntryKind, &str)> = rows.iter().map(|r| (r.kind, r.name)).collect();
    let mut columns = vec![
        strings(rows.iter().map(|r| r.name)),
        strings(rows.iter().map(|r| r.modifier_type)),
        lists(rows.iter().map(|r| r.synonyms.clone())),
        optional_strings(rows.iter().map(|r| r.certainty)),
        optional_strings(rows.iter().map(|r| r.positiveness)),
    ];
    columns.extend(hash_columns(defs, &keys)?);
    Ok(RecordBatch::try_new(ref_modifiers_schema(), columns)?)
}

fn changes(defs: &RefDefs) -> Result<RecordBatch> {
    let changes: Vec<_> = defs.changes.changes.iter().map(|c| c.get_ref()).collect();
    let keys: Vec<(EntryKind, &str)> = changes
        .iter()
        .map(|c| (EntryKind::Change, c.name.get_ref().as_str()))
        .collect();
    let mut columns = vec![
        strings(changes.iter().map(|c| c.name.get_ref())),
        strings(changes.iter().map(|c| c.kind.get_ref().as_str())),
        lists(changes.iter().map(|c| names(&c.synonyms))),
    ];
    columns.extend(hash_columns(defs, &keys)?);
    Ok(RecordBatch::try_new(ref_changes_schema(), columns)?)
}
