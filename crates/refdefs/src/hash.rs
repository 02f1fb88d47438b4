//! Content hashes: sha256 over a canonical JSON form of each entry, per file and overall.
//!
//! Canonical JSON sorts object keys and omits empty optional fields, so reformatting a file,
//! reordering keys or adding `synonyms = []` leaves hashes unchanged, while any change of a
//! value changes the entry's hash. A file hash covers the file's header (version and, for
//! findings, the category lists) and its sorted entry hashes; the fingerprint covers all files.
//! ConText triggers are hashed like entries, by their text, into the hash of `context.toml`.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::load::FileKind;
use crate::model::{
    ChangesFile, ContextFile, CxasFile, FindingsFile, ImagenomeFile, ModifiersFile, RegionsFile,
    Spanned,
};

/// The kinds of entries, each living in one file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum EntryKind {
    /// `[[region]]`.
    Region,
    /// `[[finding]]`.
    Finding,
    /// `[[modifier]]`.
    Modifier,
    /// `[[probability]]`.
    Probability,
    /// `[[change]]`.
    Change,
    /// `[[class]]` of the CXAS vocabulary.
    CxasClass,
    /// `[[box]]` of the Chest ImaGenome vocabulary.
    ImagenomeBox,
}

impl EntryKind {
    /// All kinds, in file order.
    pub const ALL: [EntryKind; 7] = [
        Self::Region,
        Self::Finding,
        Self::Modifier,
        Self::Probability,
        Self::Change,
        Self::CxasClass,
        Self::ImagenomeBox,
    ];

    /// Plural name used in diffs and stats.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Region => "regions",
            Self::Finding => "findings",
            Self::Modifier => "modifiers",
            Self::Probability => "probabilities",
            Self::Change => "changes",
            Self::CxasClass => "cxas_classes",
            Self::ImagenomeBox => "imagenome_boxes",
        }
    }

    /// The file holding entries of this kind.
    pub fn file(self) -> FileKind {
        match self {
            Self::Region => FileKind::Regions,
            Self::Finding => FileKind::Findings,
            Self::Modifier | Self::Probability => FileKind::Modifiers,
            Self::Change => FileKind::Changes,
            Self::CxasClass => FileKind::CxasClasses,
            Self::ImagenomeBox => FileKind::ImagenomeBoxes,
        }
    }
}

/// All hashes of one set of definitions.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Hashes {
    pub(crate) entries: BTreeMap<EntryKind, BTreeMap<String, String>>,
    pub(crate) triggers: BTreeMap<String, String>,
    pub(crate) files: BTreeMap<FileKind, String>,
    pub(crate) fingerprint: String,
}

/// Lower-case hex sha256 of some bytes.
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// Writes a JSON value with object keys sorted and no whitespace.
pub fn canonical_json(value: &Value) -> String {
    let mut out = String::new();
    write_canonical(value, &mut out);
    out
}

fn write_canonical(value: &Value, out: &mut String) {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.push('{');
            for (i, key) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(key.clone()).to_string());
                out.push(':');
                write_canonical(&map[key], out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_canonical(item, out);
            }
            out.push(']');
        }
        scalar => out.push_str(&scalar.to_string()),
    }
}

/// The content hash of one entry (or any serializable value).
pub fn entry_hash<T: Serialize>(entry: &T) -> Result<String, serde_json::Error> {
    let value = serde_json::to_value(entry)?;
    Ok(sha256_hex(canonical_json(&value).as_bytes()))
}

fn file_hash(header: &Value, entry_hashes: &[&BTreeMap<String, String>]) -> String {
    let mut sorted: Vec<&str> = entry_hashes
        .iter()
        .flat_map(|m| m.values().map(String::as_str))
        .collect();
    sorted.sort_unstable();
    let mut text = canonical_json(header);
    for h in sorted {
        text.push('\n');
        text.push_str(h);
    }
    sha256_hex(text.as_bytes())
}

fn hash_entries<T: Serialize>(
    entries: &[Spanned<T>],
    name: impl Fn(&T) -> &str,
) -> Result<BTreeMap<String, String>, serde_json::Error> {
    entries
        .iter()
        .map(|e| Ok((name(e.get_ref()).to_string(), entry_hash(e.get_ref())?)))
        .collect()
}

/// The parsed files a hash set is computed from.
pub(crate) struct HashInput<'a> {
    pub(crate) regions: &'a RegionsFile,
    pub(crate) findings: &'a FindingsFile,
    pub(crate) modifiers: &'a ModifiersFile,
    pub(crate) changes: &'a ChangesFile,
    pub(crate) cxas: &'a CxasFile,
    pub(crate) imagenome: &'a ImagenomeFile,
    pub(crate) context: &'a ContextFile,
}

impl HashInput<'_> {
    pub(crate) fn hashes(&self) -> Result<Hashes, serde_json::Error> {
        let mut entries = BTreeMap::new();
        entries.insert(
            EntryKind::Region,
            hash_entries(&self.regions.regions, |r| r.name.get_ref())?,
        );
        entries.insert(
            EntryKind::Finding,
            hash_entries(&self.findings.findings, |f| f.name.get_ref())?,
        );
        entries.insert(
            EntryKind::Modifier,
            hash_entries(&self.modifiers.modifiers, |m| m.name.get_ref())?,
        );
        entries.insert(
            EntryKind::Probability,
            hash_entries(&self.modifiers.probabilities, |p| p.name.get_ref())?,
        );
        entries.insert(
            EntryKind::Change,
            hash_entries(&self.changes.changes, |c| c.name.get_ref())?,
        );
        entries.insert(
            EntryKind::CxasClass,
            hash_entries(&self.cxas.classes, |c| c.name.get_ref())?,
        );
        entries.insert(
            EntryKind::ImagenomeBox,
            hash_entries(&self.imagenome.boxes, |b| b.name.get_ref())?,
        );

        let triggers = hash_entries(&self.context.triggers, |t| t.text.get_ref())?;

        let headers = [
            (
                FileKind::Regions,
                serde_json::json!({ "version": self.regions.version }),
            ),
            (
                FileKind::Findings,
                serde_json::json!({
                    "version": self.findings.version,
                    "categories": self.findings.categories,
                    "subcategories": self.findings.subcategories,
                }),
            ),
            (
                FileKind::Modifiers,
                serde_json::json!({ "version": self.modifiers.version }),
            ),
            (
                FileKind::Changes,
                serde_json::json!({ "version": self.changes.version }),
            ),
            (
                FileKind::CxasClasses,
                serde_json::json!({ "version": self.cxas.version, "label_set": self.cxas.label_set }),
            ),
            (
                FileKind::ImagenomeBoxes,
                serde_json::json!({ "version": self.imagenome.version }),
            ),
            (
                FileKind::Context,
                serde_json::json!({ "version": self.context.version }),
            ),
        ];
        let mut files = BTreeMap::new();
        for (file, header) in headers {
            let mut of_file: Vec<&BTreeMap<String, String>> = EntryKind::ALL
                .iter()
                .filter(|k| k.file() == file)
                .filter_map(|k| entries.get(k))
                .collect();
            if file == FileKind::Context {
                of_file.push(&triggers);
            }
            files.insert(file, file_hash(&header, &of_file));
        }
        let fingerprint = sha256_hex(
            FileKind::ALL
                .iter()
                .filter_map(|f| files.get(f).map(String::as_str))
                .collect::<Vec<_>>()
                .join("\n")
                .as_bytes(),
        );
        Ok(Hashes {
            entries,
            triggers,
            files,
            fingerprint,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn canonical_json_sorts_keys_recursively() {
        let value = serde_json::json!({"b": 1, "a": {"d": [1, {"z": 0, "y": "x"}], "c": null}});
        assert_eq!(
            canonical_json(&value),
            r#"{"a":{"c":null,"d":[1,{"y":"x","z":0}]},"b":1}"#
        );
    }

    #[test]
    fn entry_hash_ignores_key_order_but_not_values() {
        let a = serde_json::json!({"name": "x", "synonyms": ["y"]});
        let b = serde_json::json!({"synonyms": ["y"], "name": "x"});
        let c = serde_json::json!({"synonyms": ["z"], "name": "x"});
        assert_eq!(entry_hash(&a).ok(), entry_hash(&b).ok());
        assert_ne!(entry_hash(&a).ok(), entry_hash(&c).ok());
    }
}
