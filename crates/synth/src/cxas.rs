//! CXAS segmentation output as COCO JSON with compressed RLE, one file per study.
//!
//! One file per study, `cxas/pXX/pXXXXXXXX/sXXXXXXXX.json` (the report tree's layout; flat
//! folders of 10^5 files are slow to create), shaped like CXAS' `mask_to_annotation` export:
//! `images` (one entry per image of the study, `id` 1.., `file_name` `<dicom_id>.jpg`),
//! `categories` (those annotated in the file, with CXAS label ids), `annotations` with
//! `category_id` = CXAS label id, `id` 1.. within the file, `segmentation` = `{size: [h, w],
//! counts}` in pycocotools' compressed form, `area` and `bbox` `[x, y, w, h]`.
//! Frontal images get masks for nearly all 159 CXAS classes the anatomy model draws (lungs,
//! zones, lobes, heart and chambers, mediastinum, vessels, trachea, vertebrae, every rib,
//! clavicles, scapulas, diaphragm, abdomen organs, breasts; a class whose structure falls outside
//! the image is left out); laterals 8.

use std::collections::{BTreeSet, HashMap};
use std::sync::LazyLock;

use serde::Serialize;

use crate::anatomy::Raster;

/// CXAS label id of a label name (the label mapping of `refdefs/sources/cxas_classes.toml`).
pub fn label_id(name: &str) -> Option<u16> {
    static IDS: LazyLock<HashMap<&'static str, u16>> = LazyLock::new(|| {
        cxrlake_refdefs::cxas_labels()
            .iter()
            .filter_map(|(id, name)| Some((name.as_str(), u16::try_from(*id).ok()?)))
            .collect()
    });
    IDS.get(name).copied()
}

#[derive(Debug, Serialize)]
struct CocoFile {
    images: Vec<CocoImage>,
    categories: Vec<Category>,
    annotations: Vec<Annotation>,
}

#[derive(Debug, Serialize)]
struct CocoImage {
    id: u32,
    file_name: String,
    width: u32,
    height: u32,
}

#[derive(Debug, Serialize)]
struct Category {
    id: u16,
    name: &'static str,
}

#[derive(Debug, Serialize)]
struct Annotation {
    id: u32,
    image_id: u32,
    category_id: u16,
    segmentation: Segmentation,
    area: u64,
    bbox: [u32; 4],
    iscrowd: u8,
}

#[derive(Debug, Serialize)]
struct Segmentation {
    size: [u32; 2],
    counts: String,
}

/// One image of a CXAS study file with its rasterised structures.
#[derive(Debug)]
pub struct CxasImage<'a> {
    /// DICOM id (the file name is `<dicom_id>.jpg`).
    pub dicom_id: &'a str,
    /// Image width.
    pub width: u32,
    /// Image height.
    pub height: u32,
    /// (structure name, raster) pairs; names that are not CXAS labels are skipped.
    pub rasters: &'a [(&'static str, Raster)],
}

/// Serialises the CXAS masks of the images of one study; returns the JSON and the mask count.
pub fn cxas_study_json(images: &[CxasImage<'_>]) -> serde_json::Result<(Vec<u8>, usize)> {
    let mut used = BTreeSet::new();
    let mut annotations = Vec::new();
    let mut coco_images = Vec::with_capacity(images.len());
    for (index, image) in images.iter().enumerate() {
        let image_id = index as u32 + 1;
        coco_images.push(CocoImage {
            id: image_id,
            file_name: format!("{}.jpg", image.dicom_id),
            width: image.width,
            height: image.height,
        });
        for (name, raster) in image.rasters {
            let Some(id) = label_id(name) else { continue };
            if raster.extent.is_none() {
                continue;
            }
            used.insert(id);
            annotations.push(Annotation {
                id: annotations.len() as u32 + 1,
                image_id,
                category_id: id,
                segmentation: Segmentation {
                    size: [image.height, image.width],
                    counts: raster.rle.to_compressed_string(),
                },
                area: raster.rle.area(),
                bbox: raster.coco_bbox(),
                iscrowd: 0,
            });
        }
    }
    let labels = cxrlake_refdefs::cxas_labels();
    let categories = used
        .into_iter()
        .map(|id| Category {
            id,
            name: labels[&u32::from(id)].as_str(),
        })
        .collect();
    let count = annotations.len();
    let file = CocoFile {
        images: coco_images,
        categories,
        annotations,
    };
    Ok((serde_json::to_vec(&file)?, count))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_are_distinct_and_anatomy_uses_them() {
        assert_eq!(cxrlake_refdefs::cxas_labels().len(), 159);
        assert_eq!(label_id("right lung"), Some(135));
        assert_eq!(label_id("tracheal bifurcation"), Some(155));
        let mut rng = <rand_chacha::ChaCha8Rng as rand::SeedableRng>::seed_from_u64(4);
        let frontal = crate::anatomy::frontal(&mut rng, 800, 900, 0);
        for s in &frontal.structures {
            assert!(
                s.name.starts_with("ig:") || label_id(s.name).is_some(),
                "{} is not a CXAS label",
                s.name
            );
        }
        let lateral = crate::anatomy::lateral(&mut rng, 800, 900, 0);
        assert!(
            lateral
                .structures
                .iter()
                .all(|s| label_id(s.name).is_some())
        );
    }
}
