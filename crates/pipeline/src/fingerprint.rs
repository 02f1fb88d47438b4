//! What a stage commit records of how its rows were computed ([`Fingerprint`]) and what the
//! commit did ([`CommitMetrics`]), both typed and versioned. Every commit of a stage run carries
//! both in its Delta commit metadata (`cxrlake_lake::StageCommit`); the incremental planner
//! reads them back to decide what is stale.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use crate::scope::Scope;

/// The fingerprint format this cxrlake writes; a commit with another format (or none, as
/// cxrlake before the stage model wrote) is stale.
pub const FINGERPRINT_FORMAT: u32 = 2;

/// The cxrlake version recorded as `code` (a new version recomputes everything).
pub const CODE_VERSION: &str = env!("CARGO_PKG_VERSION");

/// How a stage's rows were computed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Fingerprint {
    /// [`FINGERPRINT_FORMAT`].
    pub format: u32,
    /// The stage.
    pub stage: String,
    /// The run that wrote the commit: all output tables of one stage run carry the same id.
    pub run: String,
    /// cxrlake's version ([`CODE_VERSION`]).
    pub code: String,
    /// Hash of the stage SQL's code (comments and layout ignored).
    pub sql: String,
    /// Version of every input table read.
    pub inputs: BTreeMap<String, u64>,
    /// Everything else the rows depend on, by `cxrlake.*` key or definition name: settings
    /// (`min_area = 16`), the identities of definitions (`refdefs` = their fingerprint,
    /// `templates` = their version) and backends (`extractor = rules-1`).
    pub definitions: BTreeMap<String, String>,
}

impl Fingerprint {
    /// The fingerprint of a commit's metadata, `None` when it has another format.
    pub fn from_json(value: &serde_json::Value) -> Option<Fingerprint> {
        serde_json::from_value::<Fingerprint>(value.clone())
            .ok()
            .filter(|f| f.format == FINGERPRINT_FORMAT)
    }

    /// As commit metadata.
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::to_value(self).unwrap_or_default()
    }

    /// The keys of [`Fingerprint::definitions`] whose values differ from `now`'s, with the old
    /// and new value (`None` where absent).
    pub fn changed_definitions<'a>(
        &'a self,
        now: &'a BTreeMap<String, String>,
    ) -> Vec<(&'a str, Option<&'a str>, Option<&'a str>)> {
        let keys: BTreeSet<&String> = self.definitions.keys().chain(now.keys()).collect();
        keys.into_iter()
            .filter_map(|key| {
                let (old, new) = (self.definitions.get(key), now.get(key));
                (old != new).then(|| {
                    (
                        key.as_str(),
                        old.map(String::as_str),
                        new.map(String::as_str),
                    )
                })
            })
            .collect()
    }
}

/// What the studies of a commit are, for the stages that read its table later.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Changed {
    /// Every study (a full run that does not detect changes).
    All,
    /// An earlier chunk of a full run that detects changes: its last chunk names them.
    Pending,
    /// These studies.
    Studies(Vec<String>),
}

impl Changed {
    /// As a scope; `None` for [`Changed::Pending`].
    pub fn scope(&self) -> Option<Scope> {
        match self {
            Changed::All => Some(Scope::All),
            Changed::Pending => None,
            Changed::Studies(ids) => Some(Scope::Studies(ids.iter().cloned().collect())),
        }
    }
}

/// What one commit of a stage run wrote.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CommitMetrics {
    /// Rows written by this commit.
    pub rows: usize,
    /// This commit's chunk (1-based) …
    pub chunk: usize,
    /// … of this many.
    pub chunks: usize,
    /// The studies whose rows changed.
    pub changed: Changed,
    /// Studies of this commit's chunk whose rows are incomplete (an LLM answer the stage could
    /// not use): the next run recomputes them.
    #[serde(default, skip_serializing_if = "BTreeSet::is_empty")]
    pub unfinished: BTreeSet<String>,
}

impl CommitMetrics {
    /// The metrics of a commit's metadata, `None` when it has another shape.
    pub fn from_json(value: &serde_json::Value) -> Option<CommitMetrics> {
        serde_json::from_value(value.clone()).ok()
    }

    /// As commit metadata.
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::to_value(self).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fingerprint() -> Fingerprint {
        Fingerprint {
            format: FINGERPRINT_FORMAT,
            stage: "localize".into(),
            run: "r1".into(),
            code: CODE_VERSION.into(),
            sql: "abc".into(),
            inputs: BTreeMap::from([("images".into(), 3)]),
            definitions: BTreeMap::from([
                ("min_area".into(), "16".into()),
                ("refdefs".into(), "f00".into()),
            ]),
        }
    }

    #[test]
    fn round_trips_and_refuses_other_formats() {
        let fp = fingerprint();
        assert_eq!(Fingerprint::from_json(&fp.to_json()), Some(fp.clone()));
        let mut old = fp.to_json();
        old["format"] = serde_json::json!(1);
        assert_eq!(Fingerprint::from_json(&old), None);
        // What cxrlake wrote before the stage model: untyped, no format.
        let legacy =
            serde_json::json!({"inputs": {"images": 3}, "min_area": 16.0, "code": "0.1.0"});
        assert_eq!(Fingerprint::from_json(&legacy), None);
    }

    #[test]
    fn changed_definitions_name_old_and_new_values() {
        let fp = fingerprint();
        let now = BTreeMap::from([
            ("min_area".to_string(), "32".to_string()),
            ("refdefs".to_string(), "f00".to_string()),
            ("templates".to_string(), "t1".to_string()),
        ]);
        assert_eq!(
            fp.changed_definitions(&now),
            vec![
                ("min_area", Some("16"), Some("32")),
                ("templates", None, Some("t1"))
            ]
        );
    }

    #[test]
    fn metrics_round_trip() {
        let metrics = CommitMetrics {
            rows: 5,
            chunk: 1,
            chunks: 2,
            changed: Changed::Studies(vec!["s1".into()]),
            unfinished: BTreeSet::from(["s2".to_string()]),
        };
        assert_eq!(
            CommitMetrics::from_json(&metrics.to_json()),
            Some(metrics.clone())
        );
        // Commits written before `unfinished` read as having none.
        let mut older = metrics.to_json();
        older.as_object_mut().expect("object").remove("unfinished");
        let older = CommitMetrics::from_json(&older).expect("older metrics");
        assert!(older.unfinished.is_empty());
        assert_eq!(Changed::Pending.scope(), None);
        assert_eq!(Changed::All.scope(), Some(Scope::All));
    }
}
