//! Entry-level differences between two sets of definitions, by kind and name, from content hashes.

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

/// Differences for every entry kind (kinds without changes included, empty).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RefdefsDiff {
    /// One entry per [`EntryKind`], in [`EntryKind::ALL`] order.
    pub kinds: Vec<KindDiff>,
}

impl RefdefsDiff {
    /// Whether the two definition sets have identical entries.
    pub fn is_empty(&self) -> bool {
        self.kinds.iter().all(KindDiff::is_empty)
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
        Ok(())
    }
}

pub(crate) fn diff(old: &Hashes, new: &Hashes) -> RefdefsDiff {
    let empty = Default::default();
    let kinds = EntryKind::ALL
        .into_iter()
        .map(|kind| {
            let old = old.entries.get(&kind).unwrap_or(&empty);
            let new = new.entries.get(&kind).unwrap_or(&empty);
            KindDiff {
                kind,
                added: new
                    .keys()
                    .filter(|n| !old.contains_key(*n))
                    .cloned()
                    .collect(),
                removed: old
                    .keys()
                    .filter(|n| !new.contains_key(*n))
                    .cloned()
                    .collect(),
                changed: new
                    .iter()
                    .filter(|(n, h)| old.get(*n).is_some_and(|o| o != *h))
                    .map(|(n, _)| n.clone())
                    .collect(),
            }
        })
        .collect();
    RefdefsDiff { kinds }
}
