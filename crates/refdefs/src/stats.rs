//! Counts over the definitions, as shown by `cxrlake refdefs stats`, with the targets.

use std::collections::BTreeMap;
use std::fmt;

use serde::Serialize;

use crate::RefDefs;

/// Minimum number of regions the definitions must hold (paper 000: 310).
pub const MIN_REGIONS: usize = 300;
/// Minimum number of localized regions (paper 000: 257).
pub const MIN_LOCALIZED_REGIONS: usize = 250;
/// Minimum number of finding classes (paper 000: 221).
pub const MIN_FINDINGS: usize = 220;

/// Counts of entries by kind and grouping.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Stats {
    /// Fingerprint of the definitions counted.
    pub fingerprint: String,
    /// All regions.
    pub regions: usize,
    /// Regions with a recipe other than `none`.
    pub localized_regions: usize,
    /// Regions by recipe kind.
    pub regions_by_recipe: BTreeMap<String, usize>,
    /// Regions by laterality.
    pub regions_by_laterality: BTreeMap<String, usize>,
    /// All findings.
    pub findings: usize,
    /// Findings by main category.
    pub findings_by_category: BTreeMap<String, usize>,
    /// Findings by subcategory (a finding counts once per subcategory).
    pub findings_by_subcategory: BTreeMap<String, usize>,
    /// Modifier values by type.
    pub modifiers_by_type: BTreeMap<String, usize>,
    /// Probability values.
    pub probabilities: usize,
    /// Change types.
    pub changes: usize,
    /// Synonyms over all files.
    pub synonyms: usize,
    /// CXAS classes in the vocabulary.
    pub cxas_classes: usize,
    /// CXAS classes used by at least one recipe.
    pub cxas_classes_used: usize,
    /// Chest ImaGenome boxes in the vocabulary.
    pub imagenome_boxes: usize,
    /// Chest ImaGenome boxes used by at least one recipe.
    pub imagenome_boxes_used: usize,
}

impl Stats {
    /// The targets of the issue that these counts miss (empty when all are met).
    pub fn shortfalls(&self) -> Vec<String> {
        let mut out = Vec::new();
        for (what, have, need) in [
            ("regions", self.regions, MIN_REGIONS),
            (
                "localized regions",
                self.localized_regions,
                MIN_LOCALIZED_REGIONS,
            ),
            ("findings", self.findings, MIN_FINDINGS),
        ] {
            if have < need {
                out.push(format!("{what}: {have} < {need}"));
            }
        }
        out
    }
}

impl fmt::Display for Stats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let target = |have: usize, need: usize| if have >= need { "ok" } else { "BELOW TARGET" };
        writeln!(f, "fingerprint        {}", self.fingerprint)?;
        writeln!(
            f,
            "regions            {:>4}  (target >= {MIN_REGIONS}: {})",
            self.regions,
            target(self.regions, MIN_REGIONS)
        )?;
        writeln!(
            f,
            "  localized        {:>4}  (target >= {MIN_LOCALIZED_REGIONS}: {})",
            self.localized_regions,
            target(self.localized_regions, MIN_LOCALIZED_REGIONS)
        )?;
        writeln!(
            f,
            "  not localized    {:>4}",
            self.regions - self.localized_regions
        )?;
        write_groups(f, "  recipe", &self.regions_by_recipe)?;
        write_groups(f, "  laterality", &self.regions_by_laterality)?;
        writeln!(
            f,
            "findings           {:>4}  (target >= {MIN_FINDINGS}: {})",
            self.findings,
            target(self.findings, MIN_FINDINGS)
        )?;
        write_groups(f, "  category", &self.findings_by_category)?;
        write_groups(f, "  subcategory", &self.findings_by_subcategory)?;
        writeln!(
            f,
            "modifiers          {:>4}",
            self.modifiers_by_type.values().sum::<usize>()
        )?;
        write_groups(f, "  type", &self.modifiers_by_type)?;
        writeln!(f, "probabilities      {:>4}", self.probabilities)?;
        writeln!(f, "changes            {:>4}", self.changes)?;
        writeln!(f, "synonyms           {:>4}", self.synonyms)?;
        writeln!(
            f,
            "cxas classes       {:>4}  ({} used by recipes)",
            self.cxas_classes, self.cxas_classes_used
        )?;
        writeln!(
            f,
            "imagenome boxes    {:>4}  ({} used by recipes)",
            self.imagenome_boxes, self.imagenome_boxes_used
        )
    }
}

fn write_groups(
    f: &mut fmt::Formatter<'_>,
    label: &str,
    groups: &BTreeMap<String, usize>,
) -> fmt::Result {
    for (key, count) in groups {
        let label = format!("{label} {key}");
        writeln!(f, "{label:<38} {count:>4}")?;
    }
    Ok(())
}

pub(crate) fn stats(defs: &RefDefs) -> Stats {
    let regions: Vec<_> = defs.regions.regions.iter().map(|r| r.get_ref()).collect();
    let findings: Vec<_> = defs.findings.findings.iter().map(|f| f.get_ref()).collect();
    let mut regions_by_recipe = BTreeMap::new();
    let mut regions_by_laterality = BTreeMap::new();
    let mut cxas_used = std::collections::BTreeSet::new();
    let mut boxes_used = std::collections::BTreeSet::new();
    for region in &regions {
        let localization = region.localization.get_ref();
        *regions_by_recipe
            .entry(localization.kind.get_ref().as_str().to_string())
            .or_insert(0) += 1;
        *regions_by_laterality
            .entry(region.laterality.get_ref().as_str().to_string())
            .or_insert(0) += 1;
        cxas_used.extend(localization.classes.iter().map(|c| c.get_ref().clone()));
        boxes_used.extend(localization.boxes.iter().map(|b| b.get_ref().clone()));
        for operand in &localization.of {
            if let Some(class) = operand.get_ref().strip_prefix("cxas:") {
                cxas_used.insert(class.to_string());
            } else if let Some(name) = operand.get_ref().strip_prefix("imagenome:") {
                boxes_used.insert(name.to_string());
            }
        }
    }
    let mut findings_by_category = BTreeMap::new();
    let mut findings_by_subcategory = BTreeMap::new();
    for finding in &findings {
        *findings_by_category
            .entry(finding.category.get_ref().clone())
            .or_insert(0) += 1;
        for sub in &finding.subcategories {
            *findings_by_subcategory
                .entry(sub.get_ref().clone())
                .or_insert(0) += 1;
        }
    }
    let mut modifiers_by_type = BTreeMap::new();
    for modifier in &defs.modifiers.modifiers {
        *modifiers_by_type
            .entry(
                modifier
                    .get_ref()
                    .modifier_type
                    .get_ref()
                    .as_str()
                    .to_string(),
            )
            .or_insert(0) += 1;
    }
    let synonyms = regions.iter().map(|r| r.synonyms.len()).sum::<usize>()
        + findings.iter().map(|f| f.synonyms.len()).sum::<usize>()
        + defs
            .modifiers
            .modifiers
            .iter()
            .map(|m| m.get_ref().synonyms.len())
            .sum::<usize>()
        + defs
            .modifiers
            .probabilities
            .iter()
            .map(|p| p.get_ref().synonyms.len())
            .sum::<usize>()
        + defs
            .changes
            .changes
            .iter()
            .map(|c| c.get_ref().synonyms.len())
            .sum::<usize>();
    Stats {
        fingerprint: defs.fingerprint().to_string(),
        regions: regions.len(),
        localized_regions: regions.iter().filter(|r| r.is_localized()).count(),
        regions_by_recipe,
        regions_by_laterality,
        findings: findings.len(),
        findings_by_category,
        findings_by_subcategory,
        modifiers_by_type,
        probabilities: defs.modifiers.probabilities.len(),
        changes: defs.changes.changes.len(),
        synonyms,
        cxas_classes: defs.cxas.classes.len(),
        cxas_classes_used: cxas_used.len(),
        imagenome_boxes: defs.imagenome.boxes.len(),
        imagenome_boxes_used: boxes_used.len(),
    }
}
