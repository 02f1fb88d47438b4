//! GEMeX's 30 anatomical regions from Chest ImaGenome's 29 (paper 004, table 8), read from
//! `refdefs/gemex/regions.toml`: names, synonyms, the 29 → 30 transformation and the boxes of
//! the 30 regions on one image.
//!
//! ```text
//!  Chest ImaGenome region ──reserve──────► same name             (12)
//!                         ──incorporate──► the region absorbing it (13 → 6)
//!                         ──delete───────► none                  (4)
//!  two GEMeX regions ──merge──► a new region ("bilateral lung", …) (12)
//! ```
//!
//! Boxes ([`Regions::image_boxes`]): a reserved or incorporated region's box is the union of the
//! boxes of its Chest ImaGenome sources present on the image (at least one must be); a merged
//! region's box is the union of its parts' boxes and exists only when every part has one, so a
//! "bilateral" box always spans both sides. The paper does not say how it boxed merged regions;
//! its examples show one enclosing box (`[[30, 34, 185, 178]]` for the lungs).

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use serde::Deserialize;
use sha2::{Digest, Sha256};

use crate::{GemexError, Result};

/// The region table's file name in a reference definitions folder (`<refdefs>/gemex/`).
pub const FILE: &str = "regions.toml";

/// Chest ImaGenome's 29 anatomical regions with boxes (its `bbox_name`s), in the order of its
/// documentation.
pub const IMAGENOME_REGIONS: [&str; 29] = [
    "right lung",
    "right upper lung zone",
    "right mid lung zone",
    "right lower lung zone",
    "right hilar structures",
    "right apical zone",
    "right costophrenic angle",
    "right hemidiaphragm",
    "left lung",
    "left upper lung zone",
    "left mid lung zone",
    "left lower lung zone",
    "left hilar structures",
    "left apical zone",
    "left costophrenic angle",
    "left hemidiaphragm",
    "trachea",
    "spine",
    "right clavicle",
    "left clavicle",
    "aortic arch",
    "mediastinum",
    "upper mediastinum",
    "svc",
    "cardiac silhouette",
    "cavoatrial junction",
    "right atrium",
    "carina",
    "abdomen",
];

/// The repository's `refdefs/gemex/regions.toml`.
const EMBEDDED: &str = include_str!("../../../refdefs/gemex/regions.toml");

/// How a GEMeX region comes from Chest ImaGenome's (table 8's left column).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Operation {
    /// A Chest ImaGenome region kept as it is.
    Reserve,
    /// A Chest ImaGenome region that absorbs others.
    Incorporate,
    /// A new region covering two GEMeX regions.
    Merge,
}

/// One GEMeX region as the table defines it.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Region {
    /// Its name, as the prompts and records spell it (`left lower lung zone`).
    pub name: String,
    /// How it is made.
    pub operation: Operation,
    /// The Chest ImaGenome regions it is made of (reserve and incorporate).
    #[serde(default)]
    pub imagenome: Vec<String>,
    /// The GEMeX regions it merges (merge).
    #[serde(default)]
    pub parts: Vec<String>,
    /// Other names a report or an LLM may use for it.
    #[serde(default)]
    pub synonyms: Vec<String>,
}

/// The file's layout.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RegionsFile {
    version: u32,
    deleted: Vec<String>,
    region: Vec<Region>,
}

/// GEMeX's region vocabulary with its Chest ImaGenome mapping and synonyms.
#[derive(Debug, Clone)]
pub struct Regions {
    version: String,
    regions: Vec<Region>,
    deleted: Vec<String>,
    /// Name and synonym keys → region index.
    by_key: HashMap<String, usize>,
    /// Chest ImaGenome source keys → region index.
    by_imagenome: HashMap<String, usize>,
    /// Per merged region, its parts' indexes (earlier in the table); empty otherwise.
    parts: Vec<Vec<usize>>,
}

/// The comparison key of a name: lower-case letters and digits only, so case, spacing, hyphens
/// and punctuation do not matter (`Left Mid-to-Lower lung zone` = `left mid to lower lung zone`).
fn key(name: &str) -> String {
    name.chars()
        .filter(|c| c.is_alphanumeric())
        .flat_map(char::to_lowercase)
        .collect()
}

/// The union of two boxes `[x1, y1, x2, y2]`.
pub fn union_box(a: [f32; 4], b: [f32; 4]) -> [f32; 4] {
    [
        a[0].min(b[0]),
        a[1].min(b[1]),
        a[2].max(b[2]),
        a[3].max(b[3]),
    ]
}

impl Regions {
    /// The repository's table (`refdefs/gemex/regions.toml`, embedded).
    pub fn embedded() -> Result<Regions> {
        Self::parse(EMBEDDED, "embedded refdefs/gemex/regions.toml")
    }

    /// The table `regions.toml` of folder `dir` (e.g. `<refdefs>/gemex`).
    pub fn load(dir: &Path) -> Result<Regions> {
        let path = dir.join(FILE);
        let text = std::fs::read_to_string(&path).map_err(|source| GemexError::Io {
            path: path.clone(),
            source,
        })?;
        Self::parse(&text, &path.display().to_string())
    }

    /// The table in `text`; `origin` names it in errors.
    ///
    /// Fails when the TOML is malformed or the table inconsistent: a name or synonym used by two
    /// regions, a reserved region that is not its own one Chest ImaGenome region, an incorporated
    /// one without sources, a merged one whose parts are not two or more regions defined above
    /// it, a Chest ImaGenome region used twice or both used and deleted.
    pub fn parse(text: &str, origin: &str) -> Result<Regions> {
        let invalid = |reason: String| GemexError::Regions {
            origin: origin.to_string(),
            reason,
        };
        let file: RegionsFile = toml::from_str(text).map_err(|e| invalid(e.to_string()))?;
        let is_imagenome = |name: &str| {
            IMAGENOME_REGIONS
                .iter()
                .any(|known| key(known) == key(name))
        };
        if let Some(unknown) = file.deleted.iter().find(|name| !is_imagenome(name)) {
            return Err(invalid(format!(
                "deleted region '{unknown}' is not one of Chest ImaGenome's 29 regions"
            )));
        }
        let mut by_key: HashMap<String, usize> = HashMap::new();
        let mut by_imagenome: HashMap<String, usize> = HashMap::new();
        let mut parts = Vec::with_capacity(file.region.len());
        for (index, region) in file.region.iter().enumerate() {
            let name = &region.name;
            if key(name).is_empty() {
                return Err(invalid(format!("region {} has an empty name", index + 1)));
            }
            if let Some(&other) = by_key.get(&key(name)) {
                return Err(invalid(format!(
                    "'{name}' is already a name or synonym of '{}'",
                    file.region[other].name
                )));
            }
            by_key.insert(key(name), index);
            match region.operation {
                Operation::Reserve
                    if region.imagenome.len() != 1 || key(&region.imagenome[0]) != key(name) =>
                {
                    return Err(invalid(format!(
                        "reserved region '{name}' must list itself as its one Chest ImaGenome region"
                    )));
                }
                Operation::Reserve | Operation::Incorporate => {
                    if region.imagenome.is_empty() || !region.parts.is_empty() {
                        return Err(invalid(format!(
                            "'{name}' needs `imagenome` sources and no `parts`"
                        )));
                    }
                    parts.push(Vec::new());
                }
                Operation::Merge => {
                    if region.parts.len() < 2 || !region.imagenome.is_empty() {
                        return Err(invalid(format!(
                            "merged region '{name}' needs two or more `parts` and no `imagenome`"
                        )));
                    }
                    let mut indexes = Vec::new();
                    for part in &region.parts {
                        let found = file.region[..index]
                            .iter()
                            .position(|earlier| key(&earlier.name) == key(part));
                        let Some(found) = found else {
                            return Err(invalid(format!(
                                "part '{part}' of '{name}' is not a region defined above it"
                            )));
                        };
                        indexes.push(found);
                    }
                    parts.push(indexes);
                }
            }
            for source in &region.imagenome {
                if !is_imagenome(source) {
                    return Err(invalid(format!(
                        "source '{source}' of '{name}' is not one of Chest ImaGenome's 29 regions"
                    )));
                }
                if let Some(&other) = by_imagenome.get(&key(source)) {
                    return Err(invalid(format!(
                        "Chest ImaGenome region '{source}' is used by '{}' and '{name}'",
                        file.region[other].name
                    )));
                }
                if file
                    .deleted
                    .iter()
                    .any(|deleted| key(deleted) == key(source))
                {
                    return Err(invalid(format!(
                        "Chest ImaGenome region '{source}' of '{name}' is also deleted"
                    )));
                }
                by_imagenome.insert(key(source), index);
            }
        }
        for (index, region) in file.region.iter().enumerate() {
            for synonym in &region.synonyms {
                match by_key.get(&key(synonym)) {
                    Some(&other) if other != index => {
                        return Err(invalid(format!(
                            "synonym '{synonym}' of '{}' is already a name or synonym of '{}'",
                            region.name, file.region[other].name
                        )));
                    }
                    _ => {
                        by_key.insert(key(synonym), index);
                    }
                }
            }
        }
        let digest = hex::encode(Sha256::digest(text.as_bytes()));
        Ok(Regions {
            version: format!("{}+{}", file.version, &digest[..12]),
            regions: file.region,
            deleted: file.deleted,
            by_key,
            by_imagenome,
            parts,
        })
    }

    /// `"<declared version>+<first 12 hex of sha256 of the file>"`: changes with any edit.
    pub fn version(&self) -> &str {
        &self.version
    }

    /// The regions in table order.
    pub fn regions(&self) -> &[Region] {
        &self.regions
    }

    /// The region names in table order (the 30 of table 8).
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.regions.iter().map(|region| region.name.as_str())
    }

    /// The deleted Chest ImaGenome regions (carina, clavicles, aortic arch).
    pub fn deleted(&self) -> &[String] {
        &self.deleted
    }

    /// The region `name` denotes: a region name or synonym, compared without case, spacing,
    /// hyphens and punctuation (`Cardiac region` → `cardiac silhouette`).
    pub fn normalize(&self, name: &str) -> Option<&str> {
        self.by_key
            .get(&key(name))
            .map(|&index| self.regions[index].name.as_str())
    }

    /// The region `name` names or stands for, as in [`Regions::normalize`].
    pub fn region(&self, name: &str) -> Option<&Region> {
        self.by_key
            .get(&key(name))
            .map(|&index| &self.regions[index])
    }

    /// The GEMeX region a Chest ImaGenome region becomes (reserved: itself; incorporated: the
    /// region absorbing it); `None` for deleted and unknown regions.
    pub fn from_imagenome(&self, imagenome: &str) -> Option<&str> {
        self.by_imagenome
            .get(&key(imagenome))
            .map(|&index| self.regions[index].name.as_str())
    }

    /// The boxes of GEMeX's regions on one image from its Chest ImaGenome boxes
    /// (`(bbox_name, [x1, y1, x2, y2])`, any frame; names compared as in
    /// [`Regions::from_imagenome`], unknown and deleted ones ignored, a name given twice counts
    /// with the union of its boxes, boxes with non-finite coordinates are ignored).
    ///
    /// A reserved or incorporated region gets the union of its present sources' boxes; a merged
    /// region gets the union of its parts' boxes when every part has one, and no box otherwise.
    pub fn image_boxes<S: AsRef<str>>(
        &self,
        boxes: &[(S, [f32; 4])],
    ) -> BTreeMap<String, [f32; 4]> {
        let mut per_region: Vec<Option<[f32; 4]>> = vec![None; self.regions.len()];
        for (name, bbox) in boxes {
            if !bbox.iter().all(|v| v.is_finite()) {
                continue;
            }
            if let Some(&index) = self.by_imagenome.get(&key(name.as_ref())) {
                let merged = per_region[index].map_or(*bbox, |seen| union_box(seen, *bbox));
                per_region[index] = Some(merged);
            }
        }
        for (index, parts) in self.parts.iter().enumerate() {
            if parts.is_empty() {
                continue;
            }
            per_region[index] = parts
                .iter()
                .map(|&part| per_region[part])
                .reduce(|a, b| a.zip(b).map(|(a, b)| union_box(a, b)))
                .flatten();
        }
        self.regions
            .iter()
            .zip(per_region)
            .filter_map(|(region, bbox)| bbox.map(|bbox| (region.name.clone(), bbox)))
            .collect()
    }
}

/// Where a region lies, for combining and comparing regions: its family (`lung`, `hilar`,
/// `hemidiaphragm`, or its own name), its sides (bit 1 left, bit 2 right) and, for the lungs, its
/// zones (bit 1 upper, bit 2 mid, bit 4 lower).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Footprint {
    pub family: String,
    pub sides: u8,
    pub zones: u8,
}

/// Left, right, both.
pub(crate) const LEFT: u8 = 1;
pub(crate) const RIGHT: u8 = 2;
pub(crate) const BOTH: u8 = LEFT | RIGHT;
/// Upper, mid, lower lung zones.
pub(crate) const ALL_ZONES: u8 = 7;

/// The lung zone parts of region names by zone bits.
const ZONE_NAMES: [(u8, &str); 6] = [
    (1, "upper lung zone"),
    (2, "mid lung zone"),
    (4, "lower lung zone"),
    (6, "mid-to-lower lung zone"),
    (3, "mid-to-upper lung zone"),
    (ALL_ZONES, "lung"),
];

impl Footprint {
    /// The footprint of a GEMeX region name (`left mid-to-lower lung zone` → lung, left, mid and
    /// lower).
    pub fn of(name: &str) -> Footprint {
        let (sides, rest) = if let Some(rest) = name.strip_prefix("left ") {
            (LEFT, rest)
        } else if let Some(rest) = name.strip_prefix("right ") {
            (RIGHT, rest)
        } else if let Some(rest) = name.strip_prefix("bilateral ") {
            (BOTH, rest)
        } else {
            (BOTH, name)
        };
        let lung = ZONE_NAMES.iter().find(|(_, zone)| *zone == rest);
        let (family, zones) = match (lung, rest) {
            (Some((zones, _)), _) if name != rest => ("lung".to_string(), *zones),
            (_, "hilar structures") => ("hilar".to_string(), 1),
            (_, "hemidiaphragm") => ("hemidiaphragm".to_string(), 1),
            _ => (name.to_string(), 1),
        };
        Footprint {
            family,
            sides,
            zones,
        }
    }

    /// Whether two footprints share some area (same family, a common side and zone).
    pub fn overlaps(&self, other: &Footprint) -> bool {
        self.family == other.family
            && self.sides & other.sides != 0
            && self.zones & other.zones != 0
    }

    /// The region name of this footprint (upper and lower zones without the mid one read as the
    /// whole lung), `None` for an empty side or zone set.
    pub fn name(&self) -> Option<String> {
        let side = match self.sides {
            LEFT => "left",
            RIGHT => "right",
            BOTH => "bilateral",
            _ => return None,
        };
        match self.family.as_str() {
            "lung" => {
                let zones = if self.zones == 5 {
                    ALL_ZONES
                } else {
                    self.zones
                };
                let zone = ZONE_NAMES.iter().find(|(bits, _)| *bits == zones)?.1;
                Some(format!("{side} {zone}"))
            }
            "hilar" => Some(format!("{side} hilar structures")),
            "hemidiaphragm" => Some(format!("{side} hemidiaphragm")),
            other => Some(other.to_string()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn regions() -> Regions {
        Regions::embedded().expect("embedded regions")
    }

    #[test]
    fn exactly_thirty_distinct_names() {
        let regions = regions();
        let names: Vec<&str> = regions.names().collect();
        assert_eq!(names.len(), 30);
        let mut sorted = names.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(sorted.len(), 30);
        for name in &names {
            assert_eq!(regions.normalize(name), Some(*name));
        }
        let count = |operation| {
            regions
                .regions()
                .iter()
                .filter(|r| r.operation == operation)
                .count()
        };
        assert_eq!(
            (
                count(Operation::Reserve),
                count(Operation::Incorporate),
                count(Operation::Merge)
            ),
            (12, 6, 12)
        );
        let version = regions.version();
        assert!(
            version.starts_with("1+") && version.len() == 14,
            "{version}"
        );
    }

    #[test]
    fn table_8_reserve() {
        let regions = regions();
        for name in [
            "right lung",
            "right mid lung zone",
            "right hilar structures",
            "right hemidiaphragm",
            "left lung",
            "left mid lung zone",
            "left hilar structures",
            "left hemidiaphragm",
            "trachea",
            "spine",
            "abdomen",
            "svc",
        ] {
            assert_eq!(regions.from_imagenome(name), Some(name), "{name}");
            let region = regions.region(name).expect(name);
            assert_eq!(region.operation, Operation::Reserve, "{name}");
        }
    }

    #[test]
    fn table_8_incorporate() {
        let regions = regions();
        for (sources, target) in [
            (
                &["left upper lung zone", "left apical zone"][..],
                "left upper lung zone",
            ),
            (
                &["right upper lung zone", "right apical zone"],
                "right upper lung zone",
            ),
            (&["mediastinum", "upper mediastinum"], "mediastinum"),
            (
                &["right lower lung zone", "right costophrenic angle"],
                "right lower lung zone",
            ),
            (
                &["left lower lung zone", "left costophrenic angle"],
                "left lower lung zone",
            ),
            (
                &["cardiac silhouette", "cavoatrial junction", "right atrium"],
                "cardiac silhouette",
            ),
        ] {
            for source in sources {
                assert_eq!(regions.from_imagenome(source), Some(target), "{source}");
            }
            let region = regions.region(target).expect(target);
            assert_eq!(region.operation, Operation::Incorporate);
            assert_eq!(region.imagenome, *sources);
        }
    }

    #[test]
    fn table_8_delete() {
        let regions = regions();
        for name in ["carina", "right clavicle", "left clavicle", "aortic arch"] {
            assert_eq!(regions.from_imagenome(name), None, "{name}");
            assert!(regions.deleted().iter().any(|d| d == name));
            assert_eq!(regions.normalize(name), None, "{name}");
        }
        assert_eq!(regions.from_imagenome("left shoulder"), None);
        // Every one of the 29 is reserved, incorporated or deleted.
        for name in IMAGENOME_REGIONS {
            let deleted = regions.deleted().iter().any(|d| d == name);
            assert_ne!(regions.from_imagenome(name).is_some(), deleted, "{name}");
        }
        assert_eq!(regions.deleted().len(), 4);
    }

    #[test]
    fn table_8_merge() {
        let regions = regions();
        for (parts, merged) in [
            (["left lung", "right lung"], "bilateral lung"),
            (
                ["left upper lung zone", "right upper lung zone"],
                "bilateral upper lung zone",
            ),
            (
                ["left mid lung zone", "right mid lung zone"],
                "bilateral mid lung zone",
            ),
            (
                ["left lower lung zone", "right lower lung zone"],
                "bilateral lower lung zone",
            ),
            (
                ["left hilar structures", "right hilar structures"],
                "bilateral hilar structures",
            ),
            (
                ["left hemidiaphragm", "right hemidiaphragm"],
                "bilateral hemidiaphragm",
            ),
            (
                ["left mid lung zone", "left lower lung zone"],
                "left mid-to-lower lung zone",
            ),
            (
                ["right mid lung zone", "right lower lung zone"],
                "right mid-to-lower lung zone",
            ),
            (
                ["left mid lung zone", "left upper lung zone"],
                "left mid-to-upper lung zone",
            ),
            (
                ["right mid lung zone", "right upper lung zone"],
                "right mid-to-upper lung zone",
            ),
            (
                [
                    "left mid-to-lower lung zone",
                    "right mid-to-lower lung zone",
                ],
                "bilateral mid-to-lower lung zone",
            ),
            (
                [
                    "left mid-to-upper lung zone",
                    "right mid-to-upper lung zone",
                ],
                "bilateral mid-to-upper lung zone",
            ),
        ] {
            let region = regions.region(merged).expect(merged);
            assert_eq!(region.operation, Operation::Merge, "{merged}");
            assert_eq!(region.parts, parts, "{merged}");
            // A merged region is no Chest ImaGenome region.
            assert_eq!(regions.from_imagenome(merged), None, "{merged}");
        }
    }

    #[test]
    fn synonyms_are_case_and_space_insensitive() {
        let regions = regions();
        for (name, region) in [
            ("cardiac region", "cardiac silhouette"),
            ("Cardiac Region", "cardiac silhouette"),
            ("  cardiac   silhouette ", "cardiac silhouette"),
            ("Heart", "cardiac silhouette"),
            ("Left Mid-to-Lower Lung Zone", "left mid-to-lower lung zone"),
            ("left mid to lower lung zone", "left mid-to-lower lung zone"),
            ("bibasilar", "bilateral lower lung zone"),
            ("mediastinal silhouette", "mediastinum"),
            ("SVC", "svc"),
            ("superior vena cava", "svc"),
            ("left costophrenic angle", "left lower lung zone"),
            ("lungs", "bilateral lung"),
        ] {
            assert_eq!(regions.normalize(name), Some(region), "{name}");
        }
        assert_eq!(regions.normalize("left kidney"), None);
        assert_eq!(regions.normalize(""), None);
    }

    #[test]
    fn union_boxes_per_region() {
        let regions = regions();
        let boxes = [
            ("left lung", [120.0, 30.0, 200.0, 180.0]),
            ("right lung", [20.0, 34.0, 110.0, 178.0]),
            ("left lower lung zone", [126.0, 110.0, 203.0, 167.0]),
            ("left costophrenic angle", [170.0, 150.0, 210.0, 185.0]),
            ("left mid lung zone", [125.0, 70.0, 200.0, 112.0]),
            ("right mid lung zone", [22.0, 70.0, 108.0, 115.0]),
            ("cardiac silhouette", [90.0, 90.0, 160.0, 160.0]),
            ("right atrium", [85.0, 100.0, 110.0, 150.0]),
            ("carina", [100.0, 60.0, 110.0, 70.0]),
            ("Left Clavicle", [120.0, 10.0, 200.0, 30.0]),
            ("spine", [f32::NAN, 0.0, 1.0, 1.0]),
        ];
        let out = regions.image_boxes(&boxes);
        // Reserved: its own box.
        assert_eq!(out["left lung"], [120.0, 30.0, 200.0, 180.0]);
        // Incorporated: the union of the present sources.
        assert_eq!(out["left lower lung zone"], [126.0, 110.0, 210.0, 185.0]);
        assert_eq!(out["cardiac silhouette"], [85.0, 90.0, 160.0, 160.0]);
        // Merged: the union of the parts, when every part is present.
        assert_eq!(out["bilateral lung"], [20.0, 30.0, 200.0, 180.0]);
        assert_eq!(out["bilateral mid lung zone"], [22.0, 70.0, 200.0, 115.0]);
        assert_eq!(
            out["left mid-to-lower lung zone"],
            [125.0, 70.0, 210.0, 185.0]
        );
        // A missing part leaves a merged region without a box.
        assert!(!out.contains_key("right mid-to-lower lung zone"));
        assert!(!out.contains_key("bilateral mid-to-lower lung zone"));
        assert!(!out.contains_key("bilateral lower lung zone"));
        // Deleted, unknown and non-finite boxes are ignored.
        assert!(!out.contains_key("spine"));
        assert_eq!(out.len(), 9, "{out:?}");
        // Any incorporated source alone gives the region a box.
        let apex = regions.image_boxes(&[("right apical zone".to_string(), [1.0, 2.0, 3.0, 4.0])]);
        assert_eq!(apex["right upper lung zone"], [1.0, 2.0, 3.0, 4.0]);
    }

    #[test]
    fn union_box_geometry() {
        assert_eq!(
            union_box([0.0, 5.0, 10.0, 20.0], [5.0, 0.0, 8.0, 30.0]),
            [0.0, 0.0, 10.0, 30.0]
        );
        // Disjoint boxes: the enclosing box.
        assert_eq!(
            union_box([0.0, 0.0, 1.0, 1.0], [3.0, 3.0, 4.0, 4.0]),
            [0.0, 0.0, 4.0, 4.0]
        );
        // A box inside another: the outer one.
        let outer = [10.0, 10.0, 100.0, 100.0];
        assert_eq!(union_box(outer, [20.0, 20.0, 30.0, 30.0]), outer);
    }

    #[test]
    fn broken_tables_are_refused() {
        let broken = |text: &str| {
            Regions::parse(text, "test.toml")
                .expect_err("refused")
                .to_string()
        };
        let head = "version = 1\ndeleted = [\"carina\"]\n";
        let error = broken(&format!(
            "{head}[[region]]\nname = \"a\"\noperation = \"reserve\"\nimagenome = [\"b\"]\n"
        ));
        assert!(error.contains("must list itself"), "{error}");
        let error = broken(&format!(
            "{head}[[region]]\nname = \"m\"\noperation = \"merge\"\nparts = [\"x\", \"y\"]\n"
        ));
        assert!(error.contains("not a region defined above"), "{error}");
        let error = broken(&format!(
            "{head}[[region]]\nname = \"a\"\noperation = \"incorporate\"\nimagenome = [\"carina\"]\n"
        ));
        assert!(error.contains("also deleted"), "{error}");
        let error = broken(&format!(
            "{head}[[region]]\nname = \"trachea\"\noperation = \"reserve\"\nimagenome = [\"trachea\"]\n\
             synonyms = [\"Spine\"]\n[[region]]\nname = \"spine\"\noperation = \"reserve\"\n\
             imagenome = [\"spine\"]\n"
        ));
        assert!(error.contains("already a name or synonym"), "{error}");
        let error = broken(&format!(
            "{head}[[region]]\nname = \"a\"\noperation = \"incorporate\"\nimagenome = [\"left kidney\"]\n"
        ));
        assert!(error.contains("not one of Chest ImaGenome's 29"), "{error}");
        assert!(broken("version = 1\n").starts_with("GEMeX region table test.toml"));
        let error = Regions::load(Path::new("/nonexistent")).expect_err("no folder");
        assert!(error.to_string().contains("/nonexistent/regions.toml"));
    }

    #[test]
    fn the_repository_file_loads_like_the_embedded_one() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../refdefs/gemex");
        let loaded = Regions::load(&dir).expect("refdefs/gemex");
        assert_eq!(loaded.version(), regions().version());
    }
    #[test]
    fn footprints_of_every_region_name_round_trip() {
        let regions = regions();
        for name in regions.names() {
            let footprint = Footprint::of(name);
            assert_eq!(footprint.name().as_deref(), Some(name), "{footprint:?}");
        }
        let lower = Footprint::of("left lower lung zone");
        assert_eq!((lower.sides, lower.zones), (LEFT, 4));
        assert!(lower.overlaps(&Footprint::of("bilateral mid-to-lower lung zone")));
        assert!(lower.overlaps(&Footprint::of("left lung")));
        assert!(!lower.overlaps(&Footprint::of("right lower lung zone")));
        assert!(!lower.overlaps(&Footprint::of("left mid-to-upper lung zone")));
        assert!(!lower.overlaps(&Footprint::of("left hemidiaphragm")));
        assert!(Footprint::of("svc").overlaps(&Footprint::of("svc")));
        assert!(!Footprint::of("svc").overlaps(&Footprint::of("spine")));
    }
}
