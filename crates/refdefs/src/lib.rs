//! Reference definitions of cxrlake: the versioned, validated vocabularies of regions, findings,
//! modifiers, probabilities and changes that every extracted tag is mapped onto, and the ConText
//! triggers (negation, uncertainty, pseudo, terminate) the rules extractor reads reports with.
//!
//! ```text
//!  refdefs/*.toml ──read──▶ Sources ──parse──▶ typed files ──check──▶ RefDefs
//!   (curators)               (text)    (spans)                 (hashes) │
//!                                                                       ├─ stats()
//!                                                                       ├─ diff(old, new)
//!                                                                       ├─ dataset_info()
//!                                                                       └─ to_record_batches()
//! ```
//!
//! [`check()`] lists every problem as a [`Diagnostic`] with file and line; [`RefDefs::load`] fails
//! with all of them. Each entry and file carries a content hash ([`hash`]), so a later stage can
//! tell exactly which entries changed.

pub mod check;
pub mod dataset_info;
pub mod diff;
mod error;
pub mod hash;
pub mod load;
pub mod model;
pub mod stats;
pub mod tables;

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::LazyLock;

pub use check::{Code, Diagnostic, check, check_sources};
pub use diff::{KindDiff, RefdefsDiff, TriggerDiff};
pub use error::{Error, Result};
pub use hash::EntryKind;
pub use load::{FileKind, SourceFile, Sources};
pub use model::{
    Certainty, Change, ChangeKind, CxasClass, Direction, Finding, ImagenomeBox, Laterality,
    Localization, Modifier, ModifierType, Operand, Positiveness, Probability, Recipe, RecipeKind,
    Region, Space, Trigger, TriggerCategory,
};
pub use stats::Stats;

use model::{
    ChangesFile, ContextFile, CxasFile, FindingsFile, ImagenomeFile, ModifiersFile, RegionsFile,
    Spanned,
};

/// A complete, validated set of reference definitions with their content hashes.
#[derive(Debug, Clone)]
pub struct RefDefs {
    regions: RegionsFile,
    findings: FindingsFile,
    modifiers: ModifiersFile,
    changes: ChangesFile,
    cxas: CxasFile,
    imagenome: ImagenomeFile,
    context: ContextFile,
    sources: Sources,
    hashes: hash::Hashes,
}

impl RefDefs {
    /// Loads and validates the definitions in `dir` (a `refdefs/` directory).
    ///
    /// Fails with [`Error::Invalid`] listing every diagnostic when the files do not pass [`check()`].
    pub fn load(dir: &Path) -> Result<RefDefs> {
        let sources = Sources::read_dir(dir).map_err(Error::Invalid)?;
        Self::from_sources(sources)
    }

    /// The definitions embedded in this build (the repository's `refdefs/` at compile time).
    pub fn embedded() -> Result<RefDefs> {
        Self::from_sources(Sources::embedded())
    }

    /// Parses and validates already read sources.
    pub fn from_sources(sources: Sources) -> Result<RefDefs> {
        let (defs, diagnostics) = check::build(sources);
        match defs {
            Some(defs) if diagnostics.is_empty() => Ok(defs),
            _ => Err(Error::Invalid(diagnostics)),
        }
    }

    /// Regions in file order.
    pub fn regions(&self) -> impl Iterator<Item = &Region> {
        self.regions.regions.iter().map(Spanned::get_ref)
    }

    /// Findings in file order.
    pub fn findings(&self) -> impl Iterator<Item = &Finding> {
        self.findings.findings.iter().map(Spanned::get_ref)
    }

    /// Declared finding categories.
    pub fn categories(&self) -> impl Iterator<Item = &str> {
        self.findings
            .categories
            .iter()
            .map(|c| c.get_ref().as_str())
    }

    /// Declared finding subcategories.
    pub fn subcategories(&self) -> impl Iterator<Item = &str> {
        self.findings
            .subcategories
            .iter()
            .map(|c| c.get_ref().as_str())
    }

    /// Modifier values in file order.
    pub fn modifiers(&self) -> impl Iterator<Item = &Modifier> {
        self.modifiers.modifiers.iter().map(Spanned::get_ref)
    }

    /// Probability values in file order.
    pub fn probabilities(&self) -> impl Iterator<Item = &Probability> {
        self.modifiers.probabilities.iter().map(Spanned::get_ref)
    }

    /// Change types in file order.
    pub fn changes(&self) -> impl Iterator<Item = &Change> {
        self.changes.changes.iter().map(Spanned::get_ref)
    }

    /// CXAS classes of the localization vocabulary.
    pub fn cxas_classes(&self) -> impl Iterator<Item = &CxasClass> {
        self.cxas.classes.iter().map(Spanned::get_ref)
    }

    /// Chest ImaGenome boxes of the localization vocabulary.
    pub fn imagenome_boxes(&self) -> impl Iterator<Item = &ImagenomeBox> {
        self.imagenome.boxes.iter().map(Spanned::get_ref)
    }

    /// ConText triggers of the rules extractor, in file order.
    pub fn triggers(&self) -> impl Iterator<Item = &Trigger> {
        self.context.triggers.iter().map(Spanned::get_ref)
    }

    /// Content hashes of the ConText triggers, by text.
    pub fn trigger_hashes(&self) -> &BTreeMap<String, String> {
        &self.hashes.triggers
    }

    /// The texts the definitions were parsed from.
    pub fn sources(&self) -> &Sources {
        &self.sources
    }

    /// Content hash of one entry (sha256 of its canonical JSON), by kind and name.
    pub fn entry_hash(&self, kind: EntryKind, name: &str) -> Option<&str> {
        self.hashes
            .entries
            .get(&kind)?
            .get(name)
            .map(String::as_str)
    }

    /// One entry as JSON (what its content hash covers); `None` when there is no such entry.
    pub fn entry_json(&self, kind: EntryKind, name: &str) -> Option<serde_json::Value> {
        fn find<'a, T: serde::Serialize + 'a>(
            mut items: impl Iterator<Item = &'a T>,
            name_of: impl Fn(&T) -> &str,
            name: &str,
        ) -> Option<serde_json::Value> {
            items
                .find(|item| name_of(item) == name)
                .and_then(|item| serde_json::to_value(item).ok())
        }
        match kind {
            EntryKind::Region => find(self.regions(), |r| r.name.get_ref(), name),
            EntryKind::Finding => find(self.findings(), |f| f.name.get_ref(), name),
            EntryKind::Modifier => find(self.modifiers(), |m| m.name.get_ref(), name),
            EntryKind::Probability => find(self.probabilities(), |p| p.name.get_ref(), name),
            EntryKind::Change => find(self.changes(), |c| c.name.get_ref(), name),
            EntryKind::CxasClass => find(self.cxas_classes(), |c| c.name.get_ref(), name),
            EntryKind::ImagenomeBox => find(self.imagenome_boxes(), |b| b.name.get_ref(), name),
        }
    }

    /// Content hashes of all entries of one kind, by name.
    pub fn entry_hashes(&self, kind: EntryKind) -> &BTreeMap<String, String> {
        &self.hashes.entries[&kind]
    }

    /// Content hash of one file (sha256 over its header hash and its sorted entry hashes).
    pub fn file_hash(&self, file: FileKind) -> &str {
        &self.hashes.files[&file]
    }

    /// One hash over all file hashes: the identity of this set of definitions.
    pub fn fingerprint(&self) -> &str {
        &self.hashes.fingerprint
    }

    /// Version string of one file.
    pub fn version(&self, file: FileKind) -> &str {
        match file {
            FileKind::Regions => self.regions.version.get_ref(),
            FileKind::Findings => self.findings.version.get_ref(),
            FileKind::Modifiers => self.modifiers.version.get_ref(),
            FileKind::Changes => self.changes.version.get_ref(),
            FileKind::CxasClasses => self.cxas.version.get_ref(),
            FileKind::ImagenomeBoxes => self.imagenome.version.get_ref(),
            FileKind::Context => self.context.version.get_ref(),
        }
    }

    /// Looks up a region by name.
    pub fn region(&self, name: &str) -> Option<&Region> {
        self.regions().find(|r| r.name.get_ref() == name)
    }

    /// Looks up a finding by name.
    pub fn finding(&self, name: &str) -> Option<&Finding> {
        self.findings().find(|f| f.name.get_ref() == name)
    }

    /// The validated localization recipe of a region (`None` for unknown regions).
    pub fn recipe(&self, region: &str) -> Option<Recipe> {
        self.region(region)?.localization.get_ref().recipe().ok()
    }

    /// Entries added, removed and changed from `old` to `new`, per kind, by name.
    pub fn diff(old: &RefDefs, new: &RefDefs) -> RefdefsDiff {
        diff::diff(&old.hashes, &new.hashes)
    }

    /// Counts of entries per kind, category, recipe kind and so on.
    pub fn stats(&self) -> Stats {
        stats::stats(self)
    }

    /// The vocabularies as a `dataset_info.json` value.
    pub fn dataset_info(&self) -> serde_json::Value {
        dataset_info::dataset_info(self)
    }

    /// The lake tables `ref_regions`, `ref_findings`, `ref_modifiers`, `ref_changes`.
    pub fn to_record_batches(
        &self,
    ) -> Result<Vec<(&'static str, arrow::record_batch::RecordBatch)>> {
        tables::record_batches(self)
    }
}

/// CXAS class names by label id, from the embedded `sources/cxas_classes.toml` (the label mapping
/// of the CXAS package). The generator and the ingest of CXAS output share this table.
pub fn cxas_labels() -> &'static BTreeMap<u32, String> {
    static LABELS: LazyLock<BTreeMap<u32, String>> = LazyLock::new(|| {
        RefDefs::embedded()
            .expect("the embedded reference definitions are valid")
            .cxas_classes()
            .map(|class| (class.id, class.name.get_ref().clone()))
            .collect()
    });
    &LABELS
}
