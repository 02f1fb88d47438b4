//! Snapshots of a lake's tables for comparing two lakes: each table's `cxrlake tables` line and
//! an order-independent digest of its rows (`cxrlake sql --format json "SELECT * FROM <t>"`, each
//! row serialized, the lines sorted and hashed), without what legitimately differs between two
//! runs of the same input (see `concurrency.rs`).

use std::collections::BTreeMap;
use std::hash::{Hash, Hasher};
use std::path::Path;
use std::process::Output;

use crate::{cxrlake, ok};

/// One table as `cxrlake tables` lists it, with a digest of its rows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TableState {
    version: String,
    rows: u64,
    stage: String,
    /// The fingerprint without its `run` key.
    fingerprint: String,
    /// Order-independent hash of the rows (sorted serialized rows), 0 for an empty table.
    content: u64,
}

/// Every table of a lake, and the number of `runs` rows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Snapshot {
    pub(crate) tables: BTreeMap<String, TableState>,
    pub(crate) runs: u64,
}

impl Snapshot {
    /// The tables of the folder lake `lake`.
    pub(crate) fn of(lake: &Path) -> Snapshot {
        Self::by(&|args| cxrlake(lake, args))
    }

    /// The tables of the lake that `run` runs `cxrlake` commands on.
    pub(crate) fn by(run: &dyn Fn(&[&str]) -> Output) -> Snapshot {
        let listing = ok(run(&["tables"]));
        let mut tables = BTreeMap::new();
        let mut runs = 0;
        for line in listing.lines().skip(1) {
            let fields: Vec<&str> = line.split_whitespace().collect();
            let [name, version, rows, stage, ..] = fields[..] else {
                panic!("a `cxrlake tables` line: {line:?}");
            };
            let rows: u64 = rows.parse().expect("row count");
            let mut fingerprint: serde_json::Value =
                serde_json::from_str(&fields[4..].join(" ")).expect("fingerprint json");
            if let Some(object) = fingerprint.as_object_mut() {
                object.remove("run");
            }
            let mut state = TableState {
                version: version.to_string(),
                rows,
                stage: stage.to_string(),
                fingerprint: fingerprint.to_string(),
                content: if rows == 0 { 0 } else { digest(run, name) },
            };
            if name == "runs" {
                // One row per successful run: counted apart, compared as distinct rows.
                runs = rows;
                state.version = String::new();
                state.rows = 0;
            }
            tables.insert(name.to_string(), state);
        }
        assert!(tables.contains_key("qa"), "{listing}");
        Snapshot { tables, runs }
    }

    pub(crate) fn rows(&self, table: &str) -> u64 {
        self.tables.get(table).map_or(0, |t| t.rows)
    }

    /// The rows alone (row counts and digests): what a further run converges to, whatever
    /// commits led there.
    pub(crate) fn content(&self) -> BTreeMap<&str, (u64, u64)> {
        self.tables
            .iter()
            .map(|(name, t)| (name.as_str(), (t.rows, t.content)))
            .collect()
    }
}

/// The order-independent digest of table `table`'s rows, without the columns that differ
/// between runs (see the module's documentation).
fn digest(run: &dyn Fn(&[&str]) -> Output, table: &str) -> u64 {
    let mut lines: Vec<String> = rows(run, table)
        .into_iter()
        .map(|mut row| {
            if table == "runs"
                && let Some(object) = row.as_object_mut()
            {
                object.remove("run_id");
                object.remove("started_at");
                if let Some(serde_json::Value::Array(settings)) = object.get_mut("settings") {
                    // Where the lake is and where queries ran do not change what is in it.
                    settings.retain(|s| {
                        !matches!(
                            s.get("key").and_then(|k| k.as_str()),
                            Some("lake" | "engine")
                        )
                    });
                    for setting in settings.iter_mut() {
                        if let Some(setting) = setting.as_object_mut() {
                            setting.remove("source");
                        }
                    }
                }
            }
            row.to_string()
        })
        .collect();
    lines.sort();
    if table == "runs" {
        lines.dedup();
    }
    hash(&lines)
}

/// Every row of `SELECT * FROM <from>` (a table, or a quoted file or URL), through `run`.
pub(crate) fn rows(run: &dyn Fn(&[&str]) -> Output, from: &str) -> Vec<serde_json::Value> {
    let json = ok(run(&[
        "sql",
        "--format",
        "json",
        &format!("SELECT * FROM {from}"),
    ]));
    serde_json::from_str(&json).expect("json rows")
}

/// The hash of `lines` (sorted by the caller when their order does not count).
pub(crate) fn hash(lines: &[String]) -> u64 {
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    lines.hash(&mut hasher);
    hasher.finish()
}
