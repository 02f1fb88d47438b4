//! Region localization recipes compiled from the reference definitions, and their evaluation on
//! one image's CXAS masks and Chest ImaGenome boxes (paper 000, E.1.1).
//!
//! ```text
//! region ──recipe──▶ cxas masks ─┐                       ┌─▶ boxes, reference ids, quality
//!                    imagenome ──┼─▶ (union/intersection)─┤
//!                    children ───┘   bilateral: 2 boxes   └─▶ unavailable → fallbacks → NO_LOCALIZATION
//! ```
//!
//! Quality per table 11: a CXAS mask gives BOX_AND_MASK_LOCALIZATION, an ImaGenome box
//! BOX_LOCALIZATION; a composite missing some parts INCOMPLETE_LOCALIZATION; a coarser region's
//! boxes FALLBACK_LOCALIZATION; nothing NO_LOCALIZATION.
//!
//! A mask is decoded only when a mask-space union or intersection needs its pixels: a region
//! whose recipe is one CXAS class takes the mask's box, which the lake stores (`cxas_masks.bbox`,
//! computed at ingest) or one pass over the compressed counts gives ([`CxasMask`]).

use std::borrow::Cow;
use std::cell::OnceCell;
use std::collections::HashMap;
use std::rc::Rc;

use cxrlake_masks::{BBox, Rle, box_area, box_clamp, box_intersection, box_union, summarize};
use cxrlake_refdefs::{Operand, Recipe, RefDefs, Space};

/// Localization quality levels of table 11, worst first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Quality {
    /// No boxes at all.
    NoLocalization,
    /// Boxes of a coarser region.
    FallbackLocalization,
    /// Some parts of the recipe were unavailable.
    IncompleteLocalization,
    /// From boxes.
    BoxLocalization,
    /// From segmentation masks.
    BoxAndMaskLocalization,
}

impl Quality {
    /// The level name used in the tables.
    pub fn as_str(self) -> &'static str {
        match self {
            Quality::NoLocalization => "NO_LOCALIZATION",
            Quality::FallbackLocalization => "FALLBACK_LOCALIZATION",
            Quality::IncompleteLocalization => "INCOMPLETE_LOCALIZATION",
            Quality::BoxLocalization => "BOX_LOCALIZATION",
            Quality::BoxAndMaskLocalization => "BOX_AND_MASK_LOCALIZATION",
        }
    }
}

/// One localized region of the plan.
#[derive(Debug, Clone, PartialEq)]
struct PlannedRegion {
    name: String,
    recipe: Recipe,
    fallbacks: Vec<String>,
}

/// Every localized region with its recipe and fallbacks, in a fixed order.
#[derive(Debug, Clone, PartialEq)]
pub struct RegionPlan {
    regions: Vec<PlannedRegion>,
    index: HashMap<String, usize>,
    min_area: f64,
}

/// What one image offers: its size, CXAS masks by class and ImaGenome boxes by name.
#[derive(Debug, Default)]
pub struct ImageInputs<'a> {
    /// Image width in pixels.
    pub width: u32,
    /// Image height in pixels.
    pub height: u32,
    /// CXAS masks by class name.
    pub masks: HashMap<&'a str, CxasMask<'a>>,
    /// ImaGenome boxes by box name, in original pixels.
    pub boxes: HashMap<String, BBox>,
}

/// One CXAS mask of an image: its COCO compressed counts, decoded at most once and only when
/// its pixels are needed, and its box, given (the lake's `cxas_masks.bbox`) or computed by one
/// pass over the counts. A mask whose counts do not fit the image has neither box nor pixels,
/// so it counts as missing (ingest quarantines such masks, so a lake has none).
#[derive(Debug)]
pub struct CxasMask<'a> {
    counts: &'a str,
    height: u32,
    width: u32,
    bbox: OnceCell<Option<BBox>>,
    rle: OnceCell<Option<Rle>>,
}

impl<'a> CxasMask<'a> {
    /// A mask of a `height` x `width` image from its compressed counts.
    pub fn compressed(counts: &'a str, height: u32, width: u32) -> Self {
        Self {
            counts,
            height,
            width,
            bbox: OnceCell::new(),
            rle: OnceCell::new(),
        }
    }

    /// The same mask with its box known (`None`: the mask is empty), as ingest stored it.
    pub fn with_bbox(self, bbox: Option<BBox>) -> Self {
        Self {
            bbox: OnceCell::from(bbox),
            ..self
        }
    }

    /// The mask's tight box, `None` when it is empty or its counts are invalid.
    pub fn bbox(&self) -> Option<BBox> {
        *self.bbox.get_or_init(|| {
            summarize(self.counts, self.height, self.width)
                .ok()
                .and_then(|summary| summary.bbox)
        })
    }

    /// The mask's runs, `None` when its counts are invalid.
    pub fn rle(&self) -> Option<&Rle> {
        self.rle
            .get_or_init(|| Rle::from_compressed_string(self.counts, self.height, self.width).ok())
            .as_ref()
    }
}

impl CxasMask<'static> {
    /// A mask already decoded.
    pub fn decoded(rle: Rle) -> Self {
        Self {
            counts: "",
            height: rle.height(),
            width: rle.width(),
            bbox: OnceCell::from(rle.bbox()),
            rle: OnceCell::from(Some(rle)),
        }
    }
}

/// The localization of one region on one image (a row of `region_boxes`).
#[derive(Debug, Clone, PartialEq)]
pub struct RegionLocalization {
    /// Region name.
    pub region: String,
    /// Boxes `[x1, y1, x2, y2]`, clamped to the image; two for a bilateral region.
    pub bboxes: Vec<BBox>,
    /// Regions the boxes come from (the region itself, or its fallback).
    pub localization_reference_ids: Vec<String>,
    /// Whether a coarser region stands in.
    pub is_fallback: bool,
    /// Regions (this one or its parts) with no localization on this image.
    pub missing_localization: Vec<String>,
    /// Quality level.
    pub quality: Quality,
    /// Recipe kind used (`cxas`, `bilateral`, … or `fallback:<kind>`).
    pub recipe: String,
}

/// A partial result while evaluating recipes.
#[derive(Debug, Clone)]
struct Loc<'m> {
    boxes: Vec<BBox>,
    mask: Option<LocMask<'m>>,
    quality: Quality,
    missing: Vec<String>,
}

/// The pixels behind a partial result: one image mask (decoded on demand) or a computed one.
#[derive(Debug, Clone)]
enum LocMask<'m> {
    Cxas(&'m CxasMask<'m>),
    Computed(Rc<Rle>),
}

impl LocMask<'_> {
    fn rle(&self) -> Option<&Rle> {
        match self {
            LocMask::Cxas(mask) => mask.rle(),
            LocMask::Computed(rle) => Some(rle),
        }
    }
}

/// The memo of evaluated regions, by plan index.
type Memo<'m> = Vec<Option<Option<Loc<'m>>>>;

impl RegionPlan {
    /// Compiles the localized regions of `defs`; boxes smaller than `min_area` px² are dropped.
    pub fn new(defs: &RefDefs, min_area: f64) -> Self {
        let regions: Vec<PlannedRegion> = defs
            .regions()
            .filter_map(|region| {
                let recipe = defs.recipe(region.name.get_ref())?;
                (!matches!(recipe, Recipe::None)).then(|| PlannedRegion {
                    name: region.name.get_ref().clone(),
                    recipe,
                    fallbacks: region
                        .fallbacks
                        .iter()
                        .map(|f| f.get_ref().clone())
                        .collect(),
                })
            })
            .collect();
        let index = regions
            .iter()
            .enumerate()
            .map(|(i, r)| (r.name.clone(), i))
            .collect();
        Self {
            regions,
            index,
            min_area,
        }
    }

    /// Number of localized regions.
    pub fn len(&self) -> usize {
        self.regions.len()
    }

    /// Whether the plan has no regions.
    pub fn is_empty(&self) -> bool {
        self.regions.is_empty()
    }

    /// Localizes every region of the plan on one image, in plan order.
    pub fn localize(&self, image: &ImageInputs<'_>) -> Vec<RegionLocalization> {
        let mut memo: Memo<'_> = vec![None; self.regions.len()];
        let mut out = Vec::with_capacity(self.regions.len());
        for i in 0..self.regions.len() {
            let region = &self.regions[i];
            let kind = region.recipe.kind().as_str().to_string();
            let own = self.eval_region(i, image, &mut memo, &mut Vec::new());
            let row = match own {
                Some(loc) => RegionLocalization {
                    region: region.name.clone(),
                    bboxes: loc.boxes,
                    localization_reference_ids: vec![region.name.clone()],
                    is_fallback: false,
                    missing_localization: loc.missing,
                    quality: loc.quality,
                    recipe: kind,
                },
                None => self
                    .fallback(i, image, &mut memo)
                    .unwrap_or_else(|| RegionLocalization {
                        region: region.name.clone(),
                        bboxes: Vec::new(),
                        localization_reference_ids: Vec::new(),
                        is_fallback: false,
                        missing_localization: vec![region.name.clone()],
                        quality: Quality::NoLocalization,
                        recipe: kind,
                    }),
            };
            out.push(row);
        }
        out
    }

    fn fallback<'m>(
        &self,
        i: usize,
        image: &'m ImageInputs<'m>,
        memo: &mut Memo<'m>,
    ) -> Option<RegionLocalization> {
        let region = &self.regions[i];
        region.fallbacks.iter().find_map(|name| {
            let j = *self.index.get(name)?;
            let loc = self.eval_region(j, image, memo, &mut Vec::new())?;
            Some(RegionLocalization {
                region: region.name.clone(),
                bboxes: loc.boxes,
                localization_reference_ids: vec![name.clone()],
                is_fallback: true,
                missing_localization: vec![region.name.clone()],
                quality: Quality::FallbackLocalization,
                recipe: format!("fallback:{}", self.regions[j].recipe.kind().as_str()),
            })
        })
    }

    fn eval_region<'m>(
        &self,
        i: usize,
        image: &'m ImageInputs<'m>,
        memo: &mut Memo<'m>,
        visiting: &mut Vec<usize>,
    ) -> Option<Loc<'m>> {
        if let Some(done) = &memo[i] {
            return done.clone();
        }
        if visiting.contains(&i) {
            return None; // a recipe cycle: treat as unavailable rather than recurse forever
        }
        visiting.push(i);
        let loc = self
            .eval_recipe(&self.regions[i].recipe, image, memo, visiting)
            .and_then(|loc| self.finish(loc, image));
        visiting.pop();
        memo[i] = Some(loc.clone());
        loc
    }

    /// Clamps boxes to the image and drops those under the minimum area.
    fn finish<'m>(&self, mut loc: Loc<'m>, image: &ImageInputs<'_>) -> Option<Loc<'m>> {
        loc.boxes = loc
            .boxes
            .into_iter()
            .map(|b| box_clamp(b, image.width, image.height).0)
            .filter(|b| box_area(*b) >= self.min_area)
            .collect();
        (!loc.boxes.is_empty()).then_some(loc)
    }

    fn region_loc<'m>(
        &self,
        name: &str,
        image: &'m ImageInputs<'m>,
        memo: &mut Memo<'m>,
        visiting: &mut Vec<usize>,
    ) -> Option<Loc<'m>> {
        let j = *self.index.get(name)?;
        self.eval_region(j, image, memo, visiting)
    }

    fn eval_recipe<'m>(
        &self,
        recipe: &Recipe,
        image: &'m ImageInputs<'m>,
        memo: &mut Memo<'m>,
        visiting: &mut Vec<usize>,
    ) -> Option<Loc<'m>> {
        match recipe {
            Recipe::Cxas { classes } => {
                let present: Vec<&'m CxasMask<'m>> = classes
                    .iter()
                    .filter_map(|c| image.masks.get(c.as_str()))
                    .collect();
                let missing: Vec<String> = classes
                    .iter()
                    .filter(|c| !image.masks.contains_key(c.as_str()))
                    .cloned()
                    .collect();
                // One class: the mask's box, no pixels; several: the union of their pixels.
                let (bbox, mask) = match present.as_slice() {
                    [one] => (one.bbox()?, LocMask::Cxas(one)),
                    several => {
                        let union = union_masks(several.iter().filter_map(|m| m.rle()))?;
                        (union.bbox()?, LocMask::Computed(Rc::new(union)))
                    }
                };
                Some(Loc {
                    boxes: vec![bbox],
                    quality: if missing.is_empty() {
                        Quality::BoxAndMaskLocalization
                    } else {
                        Quality::IncompleteLocalization
                    },
                    mask: Some(mask),
                    missing,
                })
            }
            Recipe::Imagenome { boxes } => {
                let present: Vec<BBox> = boxes
                    .iter()
                    .filter_map(|b| image.boxes.get(b).copied())
                    .collect();
                let missing: Vec<String> = boxes
                    .iter()
                    .filter(|b| !image.boxes.contains_key(*b))
                    .cloned()
                    .collect();
                Some(Loc {
                    boxes: vec![box_union(present)?],
                    mask: None,
                    quality: if missing.is_empty() {
                        Quality::BoxLocalization
                    } else {
                        Quality::IncompleteLocalization
                    },
                    missing,
                })
            }
            Recipe::Bilateral { left, right } => {
                let parts =
                    [left, right].map(|side| (side, self.region_loc(side, image, memo, visiting)));
                combine(
                    parts.into_iter().map(|(name, loc)| (name.as_str(), loc)),
                    |locs| {
                        Some(
                            locs.iter()
                                .flat_map(|l| box_union(l.boxes.iter().copied()))
                                .collect(),
                        )
                    },
                )
            }
            Recipe::SuperBox { children } => {
                let parts: Vec<_> = children
                    .iter()
                    .map(|c| (c.as_str(), self.region_loc(c, image, memo, visiting)))
                    .collect();
                combine(parts.into_iter(), |locs| {
                    let all: Vec<BBox> =
                        locs.iter().flat_map(|l| l.boxes.iter().copied()).collect();
                    Some(vec![box_union(all)?])
                })
            }
            Recipe::Intersection { space, of } | Recipe::Union { space, of } => {
                let intersect = matches!(recipe, Recipe::Intersection { .. });
                self.eval_set_op(*space, of, intersect, image, memo, visiting)
            }
            Recipe::None => None,
        }
    }

    fn eval_set_op<'m>(
        &self,
        space: Space,
        of: &[Operand],
        intersect: bool,
        image: &'m ImageInputs<'m>,
        memo: &mut Memo<'m>,
        visiting: &mut Vec<usize>,
    ) -> Option<Loc<'m>> {
        let mut operands = Vec::with_capacity(of.len());
        let mut missing = Vec::new();
        for operand in of {
            let (name, loc) = match operand {
                Operand::Cxas(class) => (
                    class.clone(),
                    image.masks.get(class.as_str()).and_then(|m| {
                        Some(Loc {
                            boxes: vec![m.bbox()?],
                            mask: Some(LocMask::Cxas(m)),
                            quality: Quality::BoxAndMaskLocalization,
                            missing: vec![],
                        })
                    }),
                ),
                Operand::Imagenome(name) => (
                    name.clone(),
                    image.boxes.get(name).map(|b| Loc {
                        boxes: vec![*b],
                        mask: None,
                        quality: Quality::BoxLocalization,
                        missing: vec![],
                    }),
                ),
                Operand::Region(name) => {
                    (name.clone(), self.region_loc(name, image, memo, visiting))
                }
            };
            match loc {
                Some(loc) => operands.push(loc),
                None => missing.push(name),
            }
        }
        // An intersection needs every operand; a union makes do with those present.
        if operands.is_empty() || (intersect && !missing.is_empty()) {
            return None;
        }
        let quality = operands.iter().map(|l| l.quality).min()?;
        let quality = if missing.is_empty() {
            quality
        } else {
            Quality::IncompleteLocalization
        };
        let (boxes, mask) = match space {
            Space::Mask => {
                let masks: Vec<Cow<'_, Rle>> = operands
                    .iter()
                    .map(|l| match &l.mask {
                        Some(mask) => mask.rle().map(Cow::Borrowed),
                        None => Rle::from_box(
                            box_union(l.boxes.iter().copied())?,
                            image.height,
                            image.width,
                        )
                        .ok()
                        .map(Cow::Owned),
                    })
                    .collect::<Option<_>>()?;
                let mut iter = masks.into_iter();
                let first = iter.next()?.into_owned();
                let combined = iter.try_fold(first, |acc, m| {
                    if intersect {
                        acc.intersection(&m).ok()
                    } else {
                        acc.union(&m).ok()
                    }
                })?;
                (
                    vec![combined.bbox()?],
                    Some(LocMask::Computed(Rc::new(combined))),
                )
            }
            Space::Box => {
                let supers: Vec<BBox> = operands
                    .iter()
                    .map(|l| box_union(l.boxes.iter().copied()))
                    .collect::<Option<_>>()?;
                let combined = if intersect {
                    supers
                        .iter()
                        .skip(1)
                        .try_fold(supers[0], |acc, b| box_intersection(acc, *b))?
                } else {
                    box_union(supers)?
                };
                (vec![combined], None)
            }
        };
        Some(Loc {
            boxes,
            mask,
            quality,
            missing,
        })
    }
}

fn union_masks<'r>(mut masks: impl Iterator<Item = &'r Rle>) -> Option<Rle> {
    let first = masks.next()?.clone();
    masks.try_fold(first, |acc, m| acc.union(m).ok())
}

/// Combines the parts of a composite recipe: available parts give the boxes, missing parts make
/// the result incomplete, no parts make it unavailable.
fn combine<'a, 'm>(
    parts: impl Iterator<Item = (&'a str, Option<Loc<'m>>)>,
    boxes: impl FnOnce(&[Loc<'m>]) -> Option<Vec<BBox>>,
) -> Option<Loc<'m>> {
    let mut present = Vec::new();
    let mut missing = Vec::new();
    for (name, loc) in parts {
        match loc {
            Some(loc) => {
                missing.extend(loc.missing.iter().cloned());
                present.push(loc);
            }
            None => missing.push(name.to_string()),
        }
    }
    let quality = present.iter().map(|l| l.quality).min()?;
    let complete = present.iter().all(|l| l.missing.is_empty()) && missing.is_empty();
    Some(Loc {
        boxes: boxes(&present)?,
        mask: None,
        quality: if complete {
            quality
        } else {
            Quality::IncompleteLocalization
        },
        missing,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lung_masks(height: u32, width: u32) -> HashMap<&'static str, CxasMask<'static>> {
        let mut masks = HashMap::new();
        for (class, bbox) in [
            ("right lung", [100.0, 200.0, 400.0, 800.0]),
            ("left lung", [600.0, 220.0, 900.0, 820.0]),
        ] {
            masks.insert(
                class,
                CxasMask::decoded(Rle::from_box(bbox, height, width).expect("mask")),
            );
        }
        masks
    }

    fn find<'a>(rows: &'a [RegionLocalization], region: &str) -> &'a RegionLocalization {
        rows.iter()
            .find(|r| r.region == region)
            .unwrap_or_else(|| panic!("no row for {region}"))
    }

    #[test]
    fn masks_boxes_bilateral_pairs_and_fallbacks() {
        let defs = RefDefs::embedded().expect("embedded refdefs");
        let plan = RegionPlan::new(&defs, 16.0);
        assert!(plan.len() >= 250, "{} localized regions", plan.len());
        let image = ImageInputs {
            width: 1000,
            height: 1000,
            masks: lung_masks(1000, 1000),
            boxes: HashMap::from([(
                "cardiac silhouette".to_string(),
                [380.0, 450.0, 720.0, 800.0],
            )]),
        };
        let rows = plan.localize(&image);
        assert_eq!(rows.len(), plan.len(), "one row per localized region");

        let right = find(&rows, "right lung");
        assert_eq!(right.bboxes, vec![[100.0, 200.0, 400.0, 800.0]]);
        assert_eq!(right.quality, Quality::BoxAndMaskLocalization);

        let lungs = find(&rows, "lungs");
        assert_eq!(
            lungs.bboxes.len(),
            2,
            "bilateral regions keep two unfused boxes"
        );
        assert_eq!(lungs.localization_reference_ids, vec!["lungs".to_string()]);

        let heart = find(&rows, "heart");
        assert!(
            heart.is_fallback,
            "no heart mask: falls back to the cardiac silhouette box"
        );
        assert_eq!(heart.quality, Quality::FallbackLocalization);
        assert_eq!(
            heart.localization_reference_ids,
            vec!["cardiac silhouette".to_string()]
        );
        assert_eq!(heart.missing_localization, vec!["heart".to_string()]);

        let zone = find(&rows, "right upper lung zone");
        assert!(zone.is_fallback && zone.bboxes == vec![[100.0, 200.0, 400.0, 800.0]]);
    }

    #[test]
    fn nothing_available_is_no_localization_and_tiny_boxes_are_dropped() {
        let defs = RefDefs::embedded().expect("embedded refdefs");
        let plan = RegionPlan::new(&defs, 16.0);
        let empty = plan.localize(&ImageInputs {
            width: 100,
            height: 100,
            ..Default::default()
        });
        assert!(
            empty
                .iter()
                .all(|r| r.quality == Quality::NoLocalization && r.bboxes.is_empty())
        );

        let tiny = ImageInputs {
            width: 100,
            height: 100,
            masks: HashMap::from([(
                "right lung",
                CxasMask::decoded(Rle::from_box([1.0, 1.0, 4.0, 4.0], 100, 100).expect("mask")),
            )]),
            boxes: HashMap::new(),
        };
        let rows = plan.localize(&tiny);
        assert_eq!(
            find(&rows, "right lung").quality,
            Quality::NoLocalization,
            "9 px² < 16 px²"
        );
    }

    /// Every CXAS class the plan reads, as an ellipse-ish mask (so unions and intersections
    /// differ from their boxes): compressed counts with the stored box, compressed counts alone
    /// (the box from one pass over them) and decoded masks give the same rows; empty masks count
    /// as missing in all three, and counts that do not fit the image like a mask left out.
    #[test]
    fn compressed_masks_localize_like_decoded_ones() {
        let defs = RefDefs::embedded().expect("embedded refdefs");
        let plan = RegionPlan::new(&defs, 16.0);
        let mut classes: Vec<String> = Vec::new();
        for region in &plan.regions {
            match &region.recipe {
                Recipe::Cxas { classes: of } => classes.extend(of.iter().cloned()),
                Recipe::Intersection { of, .. } | Recipe::Union { of, .. } => {
                    classes.extend(of.iter().filter_map(|o| match o {
                        Operand::Cxas(class) => Some(class.clone()),
                        _ => None,
                    }));
                }
                _ => {}
            }
        }
        classes.sort();
        classes.dedup();
        assert!(classes.len() > 100, "{} classes", classes.len());
        let (height, width) = (300u32, 260u32);
        let rles: Vec<(String, Rle)> = classes
            .iter()
            .enumerate()
            .map(|(i, class)| {
                let (cx, cy) = (40 + (i * 37) % 180, 50 + (i * 53) % 200);
                let (rx, ry) = (10 + (i * 7) % 50, 12 + (i * 11) % 60);
                let mut dense = vec![0u8; (height * width) as usize];
                for y in 0..height as usize {
                    for x in 0..width as usize {
                        let (dx, dy) = (
                            x.abs_diff(cx) as f64 / rx as f64,
                            y.abs_diff(cy) as f64 / ry as f64,
                        );
                        if dx * dx + dy * dy <= 1.0 && i % 17 != 5 {
                            dense[y * width as usize + x] = 1;
                        }
                    }
                }
                (
                    class.clone(),
                    Rle::from_dense(&dense, height, width).expect("mask"),
                )
            })
            .collect();
        // Class 3's counts do not fit the image: decoding it failed, so it is left out there.
        let bad = cxrlake_masks::encode_counts(&[5, 10]);
        let counts: Vec<String> = rles
            .iter()
            .enumerate()
            .map(|(i, (_, r))| {
                if i == 3 {
                    bad.clone()
                } else {
                    r.to_compressed_string()
                }
            })
            .collect();
        let boxes = HashMap::from([("cardiac silhouette".to_string(), [80.0, 90.0, 200.0, 210.0])]);
        fn inputs<'a>(
            rles: &'a [(String, Rle)],
            boxes: &HashMap<String, BBox>,
            mask: impl Fn(usize) -> Option<CxasMask<'a>>,
        ) -> ImageInputs<'a> {
            ImageInputs {
                width: 260,
                height: 300,
                masks: rles
                    .iter()
                    .enumerate()
                    .filter_map(|(i, (class, _))| Some((class.as_str(), mask(i)?)))
                    .collect(),
                boxes: boxes.clone(),
            }
        }
        let decoded = plan.localize(&inputs(&rles, &boxes, |i| {
            (i != 3).then(|| CxasMask::decoded(rles[i].1.clone()))
        }));
        let stored = plan.localize(&inputs(&rles, &boxes, |i| {
            let mask = CxasMask::compressed(&counts[i], height, width);
            Some(if i == 3 {
                mask
            } else {
                mask.with_bbox(rles[i].1.bbox())
            })
        }));
        let summarized = plan.localize(&inputs(&rles, &boxes, |i| {
            Some(CxasMask::compressed(&counts[i], height, width))
        }));
        assert_eq!(decoded, stored);
        assert_eq!(decoded, summarized);
        let recipes: std::collections::HashSet<&str> =
            decoded.iter().map(|r| r.recipe.as_str()).collect();
        assert!(
            recipes.contains("intersection") && recipes.contains("union"),
            "{recipes:?}"
        );
        assert!(
            decoded.iter().any(|r| r.is_fallback),
            "an empty mask falls back"
        );
    }

    #[test]
    fn boxes_past_the_border_are_clamped() {
        let defs = RefDefs::embedded().expect("embedded refdefs");
        let plan = RegionPlan::new(&defs, 16.0);
        let image = ImageInputs {
            width: 500,
            height: 400,
            masks: HashMap::new(),
            boxes: HashMap::from([(
                "cardiac silhouette".to_string(),
                [300.0, 100.0, 700.0, 450.0],
            )]),
        };
        let rows = plan.localize(&image);
        assert_eq!(
            find(&rows, "cardiac silhouette").bboxes,
            vec![[300.0, 100.0, 500.0, 400.0]]
        );
    }
}
