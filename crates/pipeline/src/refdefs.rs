//! The reference definitions in the lake: their `ref_*` tables, the sources of every version a
//! run used (kept by fingerprint, so a later edit can be diffed against them), and how two
//! versions differ as the stages see it ([`RefdefsChange`]).

use std::collections::BTreeSet;

use cxrlake_lake::{Lake, StageCommit};
use cxrlake_refdefs::{EntryKind, RefDefs, Sources};
use serde_json::{Value, json};

use crate::error::{PipelineError, Result};

/// Where the lake keeps the sources of the definitions `fingerprint`.
fn refdefs_meta(fingerprint: &str) -> String {
    format!("refdefs/{fingerprint}.json")
}

/// Keeps `defs`' sources in the lake, so that a later edit can be diffed against them.
pub async fn remember_refdefs(lake: &Lake, defs: &RefDefs) -> Result<()> {
    let name = refdefs_meta(defs.fingerprint());
    if lake.get_meta(&name).await?.is_none() {
        let texts = serde_json::to_vec(&defs.sources().texts())
            .map_err(|e| PipelineError::Definitions(format!("storing the definitions: {e}")))?;
        lake.put_meta(&name, texts).await?;
    }
    Ok(())
}

/// The definitions `fingerprint` as kept by [`remember_refdefs`].
pub(crate) async fn stored_refdefs(lake: &Lake, fingerprint: &str) -> Result<Option<RefDefs>> {
    let Some(bytes) = lake.get_meta(&refdefs_meta(fingerprint)).await? else {
        return Ok(None);
    };
    let texts: Vec<(String, String)> = serde_json::from_slice(&bytes)
        .map_err(|e| PipelineError::Definitions(format!("reading stored definitions: {e}")))?;
    Ok(Sources::from_texts(&texts).and_then(|s| RefDefs::from_sources(s).ok()))
}

/// Writes the definitions into the `ref_*` tables unless the lake already has this fingerprint;
/// returns whether it wrote. Keeps their sources too ([`remember_refdefs`]).
pub async fn load_reference_tables(lake: &Lake, defs: &RefDefs) -> Result<bool> {
    remember_refdefs(lake, defs).await?;
    let fingerprint = json!({ "refdefs": defs.fingerprint() });
    let mut wrote = false;
    for (table, batch) in defs
        .to_record_batches()
        .map_err(|e| PipelineError::Definitions(format!("reference tables: {e}")))?
    {
        let current = lake
            .history(table, Some(1))
            .await
            .ok()
            .and_then(|h| h.into_iter().next());
        if current
            .and_then(|c| c.stage)
            .is_some_and(|s| s.fingerprint == fingerprint)
        {
            continue;
        }
        let rows = batch.num_rows();
        lake.write(table)
            .overwrite()
            .commit(
                StageCommit::new("refdefs")
                    .with_fingerprint(fingerprint.clone())
                    .with_metrics(json!({ "rows": rows })),
            )
            .execute(vec![batch])
            .await?;
        wrote = true;
    }
    Ok(wrote)
}

/// How two sets of definitions differ, as the stages see it.
#[derive(Debug, Clone)]
pub(crate) struct RefdefsChange {
    /// The old definitions.
    pub old: RefDefs,
    /// `kind: name` of every added, removed or changed entry.
    pub touched: Vec<String>,
    /// Whether anything besides synonyms changed (names, hierarchy, categories, recipes, …).
    pub structural: bool,
    /// Lower-case names and synonyms of the touched entries, old and new.
    pub terms: BTreeSet<String>,
}

impl RefdefsChange {
    /// The change from the definitions `old_fingerprint` (as the lake kept them) to `new`;
    /// `Err` with the reason when the old ones are not in the lake.
    pub async fn since(
        lake: &Lake,
        old_fingerprint: &str,
        new: &RefDefs,
    ) -> Result<std::result::Result<RefdefsChange, String>> {
        Ok(match stored_refdefs(lake, old_fingerprint).await? {
            Some(old) => Ok(RefdefsChange::between(old, new)),
            None => Err(format!(
                "refdefs {old_fingerprint} → {} (the old definitions are not in the lake)",
                new.fingerprint()
            )),
        })
    }

    fn between(old: RefDefs, new: &RefDefs) -> Self {
        let (mut touched, mut structural, mut terms) = (Vec::new(), false, BTreeSet::new());
        let strip = |v: &Option<Value>| {
            v.clone().map(|mut v| {
                if let Some(object) = v.as_object_mut() {
                    object.remove("synonyms");
                }
                v
            })
        };
        for (kind, name) in RefDefs::diff(&old, new).touched() {
            touched.push(format!("{} {name}", kind_name(kind)));
            let (before, after) = (old.entry_json(kind, name), new.entry_json(kind, name));
            if before.is_none() || after.is_none() || strip(&before) != strip(&after) {
                structural = true;
            }
            for entry in [before, after].into_iter().flatten() {
                terms.extend(terms_of(&entry));
            }
        }
        RefdefsChange {
            old,
            touched,
            structural,
            terms,
        }
    }

    /// One line: what changed.
    pub fn describe(&self) -> String {
        let kind = if self.structural {
            "entries"
        } else {
            "synonyms only"
        };
        format!("refdefs edited ({kind}): {}", self.touched.join(", "))
    }
}

fn kind_name(kind: EntryKind) -> &'static str {
    match kind {
        EntryKind::Region => "region",
        EntryKind::Finding => "finding",
        EntryKind::Modifier => "modifier",
        EntryKind::Probability => "probability",
        EntryKind::Change => "change",
        EntryKind::CxasClass => "cxas class",
        EntryKind::ImagenomeBox => "imagenome box",
    }
}

/// An entry's name and synonyms, lower case.
fn terms_of(entry: &Value) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(name) = entry.get("name").and_then(Value::as_str) {
        out.push(name.to_lowercase());
    }
    if let Some(synonyms) = entry.get("synonyms").and_then(Value::as_array) {
        out.extend(
            synonyms
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_lowercase),
        );
    }
    out
}

/// Whether `text` (lower case) mentions `term` with any separators between its words.
pub(crate) fn mentions(text: &str, term: &str) -> bool {
    let words: Vec<&str> = term
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect();
    let Some(first) = words.first() else {
        return false;
    };
    text.match_indices(first).any(|(at, _)| {
        let mut rest = &text[at + first.len()..];
        for word in &words[1..] {
            let trimmed = rest.trim_start_matches(|c: char| !c.is_alphanumeric());
            match trimmed.strip_prefix(word) {
                Some(after) => rest = after,
                None => return false,
            }
        }
        true
    })
}

#[cfg(test)]
mod tests {
    use super::mentions;

    #[test]
    fn mentions_terms_across_separators() {
        assert!(mentions(
            "small left pleural\n effusion.",
            "pleural effusion"
        ));
        assert!(mentions("pleural-effusions", "pleural effusion"));
        assert!(!mentions(
            "pleural thickening; effusion",
            "pleural effusion"
        ));
        assert!(!mentions("anything", ""));
    }
}
