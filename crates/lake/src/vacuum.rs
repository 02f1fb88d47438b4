//! Removing the files a table no longer needs: data files that earlier versions replaced or
//! deleted (tombstones), and orphans, files in the table's folder that no commit names (a
//! writer killed between writing a file and committing it leaves one). Both only once they are
//! older than the retention period, so time travel within it keeps working.
//!
//! ```text
//! table folder ── named by the current version ──► kept
//!              ├─ tombstoned, or named by no commit, newer than the retention ──► kept
//!              └─ tombstoned, or named by no commit, older than the retention ──► deleted
//! ```
//!
//! Run under the write lease (`cxrlake vacuum`), so no writer's uncommitted files are in flight.
//! Delta's vacuum lists the candidates (its dry run); cxrlake deletes them itself, because a
//! Delta vacuum also commits `VACUUM START` / `VACUUM END` versions, which would make every
//! table look rewritten to the incremental planner. Tombstones whose files are already gone are
//! not counted.

use std::time::Duration;

use deltalake::operations::vacuum::VacuumMode;
use object_store::ObjectStoreExt;

use crate::error::{LakeError, Result};
use crate::lake::Lake;

/// What vacuuming one table removed (or, in a dry run, would remove).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Vacuumed {
    /// The table.
    pub table: String,
    /// The files, relative to the table's folder.
    pub files: Vec<String>,
    /// Whether nothing was deleted (a dry run).
    pub dry_run: bool,
}

impl Lake {
    /// Removes the files of table `name` that its current version does not need and that are
    /// older than `retention` (tombstones and orphans); with `dry_run`, only lists them.
    pub async fn vacuum(&self, name: &str, retention: Duration, dry_run: bool) -> Result<Vacuumed> {
        let table = self.table(name).await?;
        let retention = chrono::Duration::from_std(retention).map_err(|e| LakeError::Delta {
            table: name.to_string(),
            source: Box::new(deltalake::DeltaTableError::Generic(format!(
                "retention period: {e}"
            ))),
        })?;
        let (_, metrics) = table
            .vacuum()
            .with_retention_period(retention)
            .with_enforce_retention_duration(false)
            .with_mode(VacuumMode::Full)
            .with_dry_run(true)
            .await
            .map_err(|e| LakeError::delta(name, e))?;
        let folder = self.table_folder(name);
        let marker = format!("/{name}/");
        let mut files = Vec::new();
        for listed in metrics.files_deleted {
            // Relative to the table's folder (Delta reports some as absolute paths).
            let relative = match listed.rfind(&marker) {
                Some(at) => listed[at + marker.len()..].to_string(),
                None => listed.trim_start_matches('/').to_string(),
            };
            let path = relative
                .split('/')
                .fold(folder.clone(), |path, part| path.join(part));
            let present = if dry_run {
                self.store().head(&path).await.map(|_| ())
            } else {
                self.store().delete(&path).await
            };
            match present {
                Ok(()) => files.push(relative),
                Err(object_store::Error::NotFound { .. }) => {}
                Err(err) => return Err(err.into()),
            }
        }
        files.sort();
        Ok(Vacuumed {
            table: name.to_string(),
            files,
            dry_run,
        })
    }
}
