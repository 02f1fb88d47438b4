//! Entry-level differences between two sets of definitions, by kind and name (and the ConText
//! triggers by text), from content hashes.

use std::collections::BTreeMap;
use std::fmt;

use crate::hash::{EntryKind, Hashes};

/// Added, removed and changed entries of one kind, each list sorted by name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KindDiff {
    /// The kind of entry.
    pub kind: EntryKind,
    /// Names only in the new definitions.
    pub added: Vec<String>,
    /// Names only in the old definitions.
    pub removed: Vec<String>,
    /// Names in both whose content hash differs.
    pub changed: Vec<String>,
}

impl KindDiff {
    /// Whether nothing changed for this kind.
    pub fn is_empty(&self) -> bool {
        self.added.is_empty() && self.removed.is_empty() && self.changed.is_empty()
    }
}

/// Added, removed and changed ConText triggers (context.toml), by text, each list sorted.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TriggerDiff {
    /// Texts only in the new definitions.
    pub added: Vec<String>,
    /// Texts only in the old definitions.
    pub removed: Vec<String>,
    /// Texts in both whose content hash differs.
    pub changed: Vec<String>,
}

impl TriggerDiff {
    /// Whether no trigger changed.
    pub fn is_empty(&self) -> bool {
        self.added.is_empty() && self.removed.is_empty() && self.changed.is_empty()
    }
}

/// Differences for every entry kind (kinds without changes included, empty) and the triggers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RefdefsDiff {
    /// One entry per [`EntryKind`], in [`EntryKind::ALL`] order.
    pub kinds: Vec<KindDiff>,
    /// The ConText triggers.
    pub triggers: TriggerDiff,
}

impl RefdefsDiff {
    /// Whether the two definition sets have identical entries and triggers.
    pub fn is_empty(&self) -> bool {
        self.kinds.iter().all(KindDiff::is_empty) && self.triggers.is_empty()
    }

    /// The differences of one kind.
    pub fn kind(&self, kind: EntryKind) -> Option<&KindDiff> {
        self.kinds.iter().find(|k| k.kind == kind)
    }

    /// All `(kind, name)` pairs that were added, removed or changed.
    pub fn touched(&self) -> Vec<(EntryKind, &str)> {
        self.kinds
            .iter()
            .flat_map(|k| {
                k.added
                    .iter()
                    .chain(&k.removed)
                    .chain(&k.changed)
                    .map(move |n| (k.kind, n.as_str()))
            })
            .collect()
    }
}

impl fmt::Display for RefdefsDiff {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_empty() {
            return writeln!(f, "no differences");
        }
        for k in self.kinds.iter().filter(|k| !k.is_empty()) {
            writeln!(
                f,
                "{}: {} added, {} removed, {} changed",
                k.kind.as_str(),
                k.added.len(),
                k.removed.len(),
                k.changed.len()
            )?;
            for (mark, names) in [("+", &k.added), ("-", &k.removed), ("~", &k.changed)] {
                for name in names {
                    writeln!(f, "  {mark} {name}")?;
                }
            }
        }
        let t = &self.triggers;
        if !t.is_empty() {
            writeln!(
                f,
                "triggers: {} added, {} removed, {} changed",
                t.added.len(),
                t.removed.len(),
                t.changed.len()
            )?;
            for (mark, texts) in [("+", &t.added), ("-", &t.removed), ("~", &t.changed)] {
                for text in texts {
                    writeln!(f, "  {mark} {text}")?;
                }
            }
        }
        Ok(())
    }
}

/// `(added, removed, changed)` names between two name → hash maps.
fn compare(
    old: &BTreeMap<String, String>,
    new: &BTreeMap<String, String>,
) -> (Vec<String>, Vec<String>, Vec<String>) {
    (
        new.keys()
            .filter(|n| !old.contains_key(*n))
            .cloned()
            .collect(),
        old.keys()
            .filter(|n| !new.contains_key(*n))
            .cloned()
            .collect(),
        new.iter()
            .filter(|(n, h)| old.get(*n).is_some_and(|o| o != *h))
            .map(|(n, _)| n.clone())
            .collect(),
    )
}

pub(crate) fn diff(old: &Hashes, new: &Hashes) -> RefdefsDiff {
    let empty = Default::default();
    let kinds = EntryKind::ALL
        .into_iter()
        .map(|kind| {
            let (added, removed, changed) = compare(
                old.entries.get(&kind).unwrap_or(&empty),
                new.entries.get(&kind).unwrap_or(&empty),
            );
            KindDiff {
                kind,
                added,
                removed,
                changed,
            }
        })
        .collect();
    let (added, removed, changed) = compare(&old.triggers, &new.triggers);
    RefdefsDiff {
        kinds,
        triggers: TriggerDiff {
            added,
            removed,
            changed,
        },
    }
}
