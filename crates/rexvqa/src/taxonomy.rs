//! The two-level condition taxonomy of paper 003 table A2 (`refdefs/rexvqa/taxonomy.toml`): 9
//! main categories and their subcategories, the normaliser that maps the free-text categories a
//! generator writes onto them, and the links from cxrlake's findings to a subcategory.
//!
//! ```text
//!  "Bony structures" ─normalise─► miscellaneous_diagnosis / —
//!  "CHF"             ─normalise─► cardiac_disease / congestive_heart_failure
//!  finding "consolidation" ─for_finding─► infectious_disease / pneumonia
//! ```

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::{Result, RexvqaError};

/// The repository's taxonomy, embedded.
const EMBEDDED: &str = include_str!("../../../refdefs/rexvqa/taxonomy.toml");

/// The file name of the taxonomy in a refdefs folder's `rexvqa/`.
pub const FILE: &str = "taxonomy.toml";

/// One subcategory (`[[category.subcategory]]`).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Subcategory {
    /// Snake-case id.
    pub id: String,
    /// The paper's name.
    pub name: String,
    /// Other names.
    #[serde(default)]
    pub synonyms: Vec<String>,
    /// cxrlake findings that belong here.
    #[serde(default)]
    pub findings: Vec<String>,
    /// cxrlake finding subcategories whose findings belong here by default.
    #[serde(default)]
    pub finding_subcategories: Vec<String>,
}

/// One main category (`[[category]]`).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Category {
    /// Snake-case id.
    pub id: String,
    /// The paper's name.
    pub name: String,
    /// Other names.
    #[serde(default)]
    pub synonyms: Vec<String>,
    /// Its subcategories.
    #[serde(default, rename = "subcategory")]
    pub subcategories: Vec<Subcategory>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    version: String,
    #[serde(rename = "category")]
    categories: Vec<Category>,
}

/// A category and subcategory, as ids (either may be unknown).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Normalized {
    /// The main category's id.
    pub category: Option<String>,
    /// The subcategory's id.
    pub subcategory: Option<String>,
}

/// One row of the `rexvqa_taxonomy` table.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TaxonomyRow {
    /// `category` or `subcategory`.
    pub level: String,
    /// The entry's id.
    pub id: String,
    /// The paper's name.
    pub name: String,
    /// The main category of a subcategory.
    pub parent: Option<String>,
    /// Its synonyms.
    pub synonyms: Vec<String>,
    /// The cxrlake findings linked to it.
    pub findings: Vec<String>,
}

/// The taxonomy with its lookup tables.
#[derive(Debug, Clone)]
pub struct Taxonomy {
    categories: Vec<Category>,
    version: String,
    /// Normalised term → (category index, subcategory index when the term names one).
    terms: BTreeMap<String, (usize, Option<usize>)>,
    /// cxrlake finding → (category, subcategory).
    findings: BTreeMap<String, (usize, usize)>,
    /// cxrlake finding subcategory → (category, subcategory).
    finding_subcategories: BTreeMap<String, (usize, usize)>,
}

/// Lower-case words without punctuation, a plural `s` dropped from each word of four or more
/// letters (not `ss`): `"Bony Structures"` → `"bony structure"`.
pub fn normalize_term(text: &str) -> String {
    text.to_lowercase()
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(|w| match w.strip_suffix('s') {
            Some(stem) if w.len() >= 4 && !stem.ends_with('s') => stem,
            _ => w,
        })
        .collect::<Vec<_>>()
        .join(" ")
}

impl Taxonomy {
    /// The repository's taxonomy.
    pub fn embedded() -> Result<Taxonomy> {
        Self::parse(EMBEDDED, "embedded")
    }

    /// The taxonomy of `dir/taxonomy.toml`.
    pub fn load(dir: &Path) -> Result<Taxonomy> {
        let path = dir.join(FILE);
        let text = std::fs::read_to_string(&path).map_err(|source| RexvqaError::Io {
            path: path.clone(),
            source,
        })?;
        Self::parse(&text, &path.display().to_string())
    }

    /// The taxonomy of a file's text; `origin` names it in errors.
    pub fn parse(text: &str, origin: &str) -> Result<Taxonomy> {
        let error = |reason: String| RexvqaError::Taxonomy {
            origin: origin.to_string(),
            reason,
        };
        let file: File = toml::from_str(text).map_err(|e| error(e.to_string()))?;
        let mut taxonomy = Taxonomy {
            version: format!(
                "{}+{}",
                file.version,
                &hex::encode(Sha256::digest(text.as_bytes()))[..12]
            ),
            categories: file.categories,
            terms: BTreeMap::new(),
            findings: BTreeMap::new(),
            finding_subcategories: BTreeMap::new(),
        };
        let mut ids = std::collections::BTreeSet::new();
        for (c, category) in taxonomy.categories.iter().enumerate() {
            let names = std::iter::once(&category.name)
                .chain(&category.synonyms)
                .chain(std::iter::once(&category.id));
            for name in names {
                add_term(&mut taxonomy.terms, name, (c, None)).map_err(&error)?;
            }
            if !ids.insert(category.id.clone()) {
                return Err(error(format!("id '{}' is used twice", category.id)));
            }
            for (s, sub) in category.subcategories.iter().enumerate() {
                if !ids.insert(sub.id.clone()) {
                    return Err(error(format!("id '{}' is used twice", sub.id)));
                }
                let names = std::iter::once(&sub.name)
                    .chain(&sub.synonyms)
                    .chain(std::iter::once(&sub.id));
                for name in names {
                    add_term(&mut taxonomy.terms, name, (c, Some(s))).map_err(&error)?;
                }
                for finding in &sub.findings {
                    if taxonomy.findings.insert(finding.clone(), (c, s)).is_some() {
                        return Err(error(format!(
                            "finding '{finding}' is linked to two subcategories"
                        )));
                    }
                }
                for name in &sub.finding_subcategories {
                    if taxonomy
                        .finding_subcategories
                        .insert(name.clone(), (c, s))
                        .is_some()
                    {
                        return Err(error(format!(
                            "finding subcategory '{name}' is linked to two subcategories"
                        )));
                    }
                }
            }
        }
        if taxonomy.categories.is_empty() {
            return Err(error("the file has no [[category]]".into()));
        }
        Ok(taxonomy)
    }

    /// `<file version>+<12 hex of its sha256>`.
    pub fn version(&self) -> &str {
        &self.version
    }

    /// The main categories, in file order.
    pub fn categories(&self) -> &[Category] {
        &self.categories
    }

    /// The ids of a category and a subcategory index pair.
    fn ids(&self, (c, s): (usize, Option<usize>)) -> Normalized {
        let category = &self.categories[c];
        Normalized {
            category: Some(category.id.clone()),
            subcategory: s.map(|s| category.subcategories[s].id.clone()),
        }
    }

    /// The category and subcategory a generator's free-text `category` and `subcategory` name:
    /// a subcategory found in either gives its main category; a main category found alone gives
    /// no subcategory; text that matches nothing gives nothing (the raw text stays in the row).
    pub fn normalize(&self, category: &str, subcategory: &str) -> Normalized {
        let find = |text: &str| self.terms.get(&normalize_term(text)).copied();
        let (by_category, by_subcategory) = (find(category), find(subcategory));
        match (by_category, by_subcategory) {
            (_, Some((c, Some(s)))) => self.ids((c, Some(s))),
            (Some((c, Some(s))), _) => self.ids((c, Some(s))),
            (Some((c, None)), _) | (None, Some((c, None))) => self.ids((c, None)),
            (None, None) => Normalized::default(),
        }
    }

    /// The category and subcategory of a cxrlake finding: the subcategory that lists it, else
    /// the one that lists one of its cxrlake subcategories, else Miscellaneous Diagnosis /
    /// Miscellaneous Disease.
    pub fn for_finding(&self, finding: &str, finding_subcategories: &[String]) -> Normalized {
        let found = self.findings.get(finding).copied().or_else(|| {
            finding_subcategories
                .iter()
                .find_map(|s| self.finding_subcategories.get(s).copied())
        });
        match found {
            Some((c, s)) => self.ids((c, Some(s))),
            None => self.normalize("miscellaneous diagnosis", "miscellaneous disease"),
        }
    }

    /// The rows of the `rexvqa_taxonomy` table: each category, then its subcategories.
    pub fn rows(&self) -> Vec<TaxonomyRow> {
        let mut rows = Vec::new();
        for category in &self.categories {
            rows.push(TaxonomyRow {
                level: "category".into(),
                id: category.id.clone(),
                name: category.name.clone(),
                parent: None,
                synonyms: category.synonyms.clone(),
                findings: Vec::new(),
            });
            for sub in &category.subcategories {
                rows.push(TaxonomyRow {
                    level: "subcategory".into(),
                    id: sub.id.clone(),
                    name: sub.name.clone(),
                    parent: Some(category.id.clone()),
                    synonyms: sub.synonyms.clone(),
                    findings: sub.findings.clone(),
                });
            }
        }
        rows
    }
}

/// Adds `name` (normalised) as a term of `target`; the same term for two entries is an error.
fn add_term(
    terms: &mut BTreeMap<String, (usize, Option<usize>)>,
    name: &str,
    target: (usize, Option<usize>),
) -> std::result::Result<(), String> {
    let term = normalize_term(name);
    if term.is_empty() {
        return Err(format!("an empty name or synonym ('{name}')"));
    }
    match terms.insert(term.clone(), target) {
        Some(previous) if previous != target => {
            Err(format!("'{name}' (normalised '{term}') names two entries"))
        }
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn taxonomy() -> Taxonomy {
        Taxonomy::embedded().expect("embedded taxonomy")
    }

    fn ids(n: &Normalized) -> (Option<&str>, Option<&str>) {
        (n.category.as_deref(), n.subcategory.as_deref())
    }

    #[test]
    fn table_a2_has_nine_categories_and_their_subcategories() {
        let t = taxonomy();
        let counts: Vec<(&str, usize)> = t
            .categories()
            .iter()
            .map(|c| (c.name.as_str(), c.subcategories.len()))
            .collect();
        assert_eq!(
            counts,
            [
                ("Congenital Disease", 3),
                ("Infectious Disease", 3),
                ("Pulmonary Neoplasm", 3),
                ("Lymphoproliferative Disease", 2),
                ("Other Pulmonary Diagnosis", 13),
                ("Cardiac Disease", 5),
                ("Aortic Disease", 3),
                ("Miscellaneous Diagnosis", 3),
                ("Negation", 1),
            ]
        );
        assert_eq!(t.rows().len(), 9 + 36);
        assert!(t.version().starts_with("1+"));
    }

    #[test]
    fn synonyms_are_normalised_onto_canonical_ids() {
        let t = taxonomy();
        for text in [
            "Bone",
            "Bones",
            "Bony Structures",
            "Skeletal System",
            "osseous structures",
        ] {
            assert_eq!(
                ids(&t.normalize(text, "")),
                (Some("miscellaneous_diagnosis"), None),
                "{text}"
            );
        }
        assert_eq!(
            ids(&t.normalize("Cardiac", "CHF")),
            (Some("cardiac_disease"), Some("congestive_heart_failure"))
        );
        // The subcategory decides the main category when the two disagree.
        assert_eq!(
            ids(&t.normalize("Cardiac Disease", "Pulmonary Edema")),
            (Some("other_pulmonary_diagnosis"), Some("pulmonary_edema"))
        );
        assert_eq!(
            ids(&t.normalize("Tubes and Lines", "")),
            (
                Some("miscellaneous_diagnosis"),
                Some("post_treatment_change")
            )
        );
        assert_eq!(
            ids(&t.normalize("PULMONARY-EDEMA", "")),
            (Some("other_pulmonary_diagnosis"), Some("pulmonary_edema"))
        );
        assert_eq!(ids(&t.normalize("Astrology", "Horoscope")), (None, None));
    }

    #[test]
    fn findings_link_to_subcategories() {
        let t = taxonomy();
        let none: Vec<String> = Vec::new();
        assert_eq!(
            ids(&t.for_finding("consolidation", &none)),
            (Some("infectious_disease"), Some("pneumonia"))
        );
        assert_eq!(
            ids(&t.for_finding("endotracheal tube", &["TUBES_LINES".to_string()])),
            (
                Some("miscellaneous_diagnosis"),
                Some("post_treatment_change")
            )
        );
        assert_eq!(
            ids(&t.for_finding("unheard of", &none)),
            (
                Some("miscellaneous_diagnosis"),
                Some("miscellaneous_disease")
            )
        );
    }

    #[test]
    fn a_term_naming_two_entries_is_refused() {
        let text = r#"
version = "x"
[[category]]
id = "a"
name = "A"
synonyms = ["heart"]
[[category]]
id = "b"
name = "B"
synonyms = ["Hearts"]
"#;
        let error = Taxonomy::parse(text, "t.toml")
            .expect_err("clash")
            .to_string();
        assert!(
            error.contains("'Hearts' (normalised 'heart') names two entries"),
            "{error}"
        );
        assert!(normalize_term("glass").ends_with("glass"));
    }
}
