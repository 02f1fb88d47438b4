//! What an ingest run did, per target table, printed as a table at the end of the run.

use std::fmt;
use std::time::Duration;

/// Counts of one target table.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TableCounts {
    /// Input files read for this table.
    pub files: u64,
    /// Rows parsed (new, already present, or identical duplicates).
    pub rows_read: u64,
    /// Rows committed by this run.
    pub rows_new: u64,
    /// Rows skipped because the lake (or an identical input earlier in the run) had them.
    pub rows_present: u64,
    /// Inputs sent to `quarantine`.
    pub quarantined: u64,
    /// Delta commits made.
    pub commits: u64,
}

impl TableCounts {
    fn add(&mut self, other: &Self) {
        self.files += other.files;
        self.rows_read += other.rows_read;
        self.rows_new += other.rows_new;
        self.rows_present += other.rows_present;
        self.quarantined += other.quarantined;
        self.commits += other.commits;
    }
}

/// The result of [`crate::ingest`].
#[derive(Debug, Clone, Default, PartialEq)]
pub struct IngestSummary {
    /// Per target (table name, or `archives` for unreadable zip archives), in pipeline order.
    pub tables: Vec<(String, TableCounts)>,
    /// Files under the inputs that are of no known kind.
    pub files_skipped: u64,
    /// Distinct studies seen in report inputs (new or already present).
    pub studies: u64,
    /// Quarantine rows committed by this run (re-ingested bad inputs are recorded once).
    pub quarantine_rows_new: u64,
    /// Wall time of the run.
    pub elapsed: Duration,
    /// Whether the run was strict (quarantined inputs fail it).
    pub strict: bool,
}

impl IngestSummary {
    /// Inputs quarantined in this run (the CLI fails on any with `--strict`).
    pub fn quarantined(&self) -> u64 {
        self.tables.iter().map(|(_, c)| c.quarantined).sum()
    }

    /// Whether a strict run quarantined inputs (the CLI then exits non-zero).
    pub fn failed(&self) -> bool {
        self.strict && self.quarantined() > 0
    }

    /// Counts of one target table.
    pub fn table(&self, name: &str) -> Option<&TableCounts> {
        self.tables.iter().find(|(n, _)| n == name).map(|(_, c)| c)
    }

    /// Sum over all tables.
    pub fn totals(&self) -> TableCounts {
        let mut total = TableCounts::default();
        for (_, counts) in &self.tables {
            total.add(counts);
        }
        total
    }

    /// Rows committed in this run, over all tables (quarantine excluded).
    pub fn rows_new(&self) -> u64 {
        self.totals().rows_new
    }

    /// Studies per second of wall time.
    pub fn studies_per_second(&self) -> f64 {
        let secs = self.elapsed.as_secs_f64();
        if secs > 0.0 {
            self.studies as f64 / secs
        } else {
            0.0
        }
    }
}

impl fmt::Display for IngestSummary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "{:<16} {:>8} {:>11} {:>11} {:>11} {:>11} {:>8}",
            "table", "files", "rows read", "new", "present", "quarantined", "commits"
        )?;
        let line = |f: &mut fmt::Formatter<'_>, name: &str, c: &TableCounts| {
            writeln!(
                f,
                "{:<16} {:>8} {:>11} {:>11} {:>11} {:>11} {:>8}",
                name, c.files, c.rows_read, c.rows_new, c.rows_present, c.quarantined, c.commits
            )
        };
        for (name, counts) in &self.tables {
            line(f, name, counts)?;
        }
        line(f, "total", &self.totals())?;
        writeln!(
            f,
            "{} files skipped (unknown kind); {} new quarantine rows",
            self.files_skipped, self.quarantine_rows_new
        )?;
        write!(
            f,
            "{} studies in {:.1} s ({:.0} studies/s)",
            self.studies,
            self.elapsed.as_secs_f64(),
            self.studies_per_second()
        )
    }
}
