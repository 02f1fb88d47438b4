//! `cxrlake evaluate boxes`: the scene graphs' finding boxes against reference boxes (paper 000,
//! sec. C.3, tables 2b, 9 and 10; MS-CXR and REFLACX style).
//!
//! ```text
//!  scene_graphs ──► boxes of positive observations per image, tagged ──mapping──► class masks ─┐
//!  reference CSV image_id,class,x1,y1,x2,y2 ──► class masks per image ────────────────────────┼─► pairs
//!                                                                                              │
//!  (image, class) with both a prediction and a target ──► IoU, IoP, IoT ──► @30 shares ──► bootstrap
//! ```
//!
//! - **Masks**: per image and class, the union of the boxes of every observation with
//!   positiveness `pos` that carries one of the class's findings (as a finding or parent tag; the
//!   mapping of `cxrlake evaluate labels`, `refdefs/evaluate/labels.toml`), against the union of
//!   the reference boxes of that class. Areas are exact areas of box unions in original pixels.
//! - **Pairs**: only (image, class) pairs with both a predicted and a reference mask are scored,
//!   as the paper does; pairs with only one of them are counted in the notes.
//! - **Scores** per class, macro (mean over classes) and micro (all pairs): the share of pairs
//!   with IoU, IoP, IoT ≥ `--threshold` (default 0.3: `iou@30`, …), and their means
//!   (`iou`, `iop`, `iot`). Intervals resample images.
//! - Reference classes match a mapping class by name or label, case-insensitively; reference
//!   classes without a mapping class are not scored (a note lists them).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};

use cxrlake_evaluate::masks::{ClassOverlaps, Overlap, Ratios, Rect, overlap};
use cxrlake_lake::Lake;
use serde_json::json;

use super::labels::{Mapping, load_mapping};
use super::scores::{EvalOptions, Evaluation, ScoreDef};
use super::{STAGE, strings};
use crate::error::{PipelineError, Result};
use crate::sql::collect;
use cxrlake_refdefs::RefDefs;

/// Options of `cxrlake evaluate boxes`.
#[derive(Debug, Clone)]
pub struct BoxOptions {
    /// The reference boxes: CSV `image_id,class,x1,y1,x2,y2`, original pixels.
    pub reference: PathBuf,
    /// A mapping file instead of the embedded one.
    pub mapping: Option<PathBuf>,
    /// The overlap threshold of the `@` scores (paper: 0.3).
    pub threshold: f64,
    /// Bootstrap settings.
    pub eval: EvalOptions,
}

/// One scored pair: its image's index, class index, and the three ratios.
#[derive(Debug, Clone, Copy)]
struct Pair {
    image: usize,
    class: usize,
    overlap: Overlap,
}

/// Scores the lake's finding boxes against the reference boxes.
pub async fn boxes_vs_reference(
    lake: &Lake,
    defs: &RefDefs,
    options: &BoxOptions,
) -> Result<Evaluation> {
    let (mapping, mapping_name) = load_mapping(options.mapping.as_deref(), defs)?;
    let reference = read_reference(&options.reference)?;
    // Reference class → mapping class index.
    let mut class_of: HashMap<String, usize> = HashMap::new();
    for (i, class) in mapping.classes.iter().enumerate() {
        class_of.insert(class.name.to_lowercase(), i);
        class_of.insert(class.label.to_lowercase(), i);
    }
    let mut targets: BTreeMap<(String, usize), Vec<Rect>> = BTreeMap::new();
    let mut unknown: BTreeSet<String> = BTreeSet::new();
    for (image, class, rect) in reference {
        match class_of.get(&class.to_lowercase()) {
            Some(&i) => targets.entry((image, i)).or_default().push(rect),
            None => {
                unknown.insert(class);
            }
        }
    }
    let predicted = predicted_masks(lake, &mapping).await?;
    let mut notes = Vec::new();
    if !unknown.is_empty() {
        notes.push(format!(
            "reference classes without a mapping class, not scored: {}",
            unknown.into_iter().collect::<Vec<_>>().join(", ")
        ));
    }
    let mut images: Vec<&str> = Vec::new();
    let mut image_index: HashMap<&str, usize> = HashMap::new();
    let mut pairs = Vec::new();
    let (mut target_only, mut prediction_only) = (0usize, 0usize);
    for ((image, class), target) in &targets {
        let Some(prediction) = predicted.get(&(image.clone(), *class)) else {
            target_only += 1;
            continue;
        };
        let o = overlap(prediction, target);
        if o.predicted <= 0.0 || o.target <= 0.0 {
            // Boxes without area: not a positive prediction or target (C.3).
            target_only += usize::from(o.predicted <= 0.0);
            prediction_only += usize::from(o.target <= 0.0);
            continue;
        }
        let index = *image_index.entry(image.as_str()).or_insert_with(|| {
            images.push(image.as_str());
            images.len() - 1
        });
        pairs.push(Pair {
            image: index,
            class: *class,
            overlap: o,
        });
    }
    let reference_images: BTreeSet<&str> = targets.keys().map(|(i, _)| i.as_str()).collect();
    for (image, class) in predicted.keys() {
        if reference_images.contains(image.as_str())
            && !targets.contains_key(&(image.clone(), *class))
        {
            prediction_only += 1;
        }
    }
    notes.push(format!(
        "{} (image, class) pairs with both a prediction and a target over {} images; {} with a \
         target only, {} with a prediction only (on the reference images), not scored",
        pairs.len(),
        images.len(),
        target_only,
        prediction_only
    ));
    if pairs.is_empty() {
        return Err(PipelineError::Input(format!(
            "no image of {} has a predicted box of a reference class: check that its image ids \
             are the lake's (images.image_id) and its classes those of {mapping_name}",
            options.reference.display()
        )));
    }
    let classes: Vec<usize> = pairs
        .iter()
        .map(|p| p.class)
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let threshold_name = format!("{:.0}", options.threshold * 100.0);
    let metrics: Vec<String> = ["iou", "iop", "iot"]
        .iter()
        .map(|m| format!("{m}@{threshold_name}"))
        .chain(["iou", "iop", "iot"].iter().map(|m| m.to_string()))
        .collect();
    let mut defs_out = Vec::new();
    for &class in &classes {
        let n = pairs.iter().filter(|p| p.class == class).count() as u64;
        for metric in &metrics {
            defs_out.push(ScoreDef::new(
                "lake",
                "class",
                &mapping.classes[class].name,
                metric,
                n,
            ));
        }
    }
    for metric in &metrics {
        defs_out.push(ScoreDef::new(
            "lake",
            "macro",
            "classes",
            metric,
            pairs.len() as u64,
        ));
    }
    for metric in &metrics {
        defs_out.push(ScoreDef::new(
            "lake",
            "micro",
            "pairs",
            metric,
            pairs.len() as u64,
        ));
    }
    let threshold = options.threshold;
    let names: Vec<&str> = classes
        .iter()
        .map(|&c| mapping.classes[c].name.as_str())
        .collect();
    let statistic = |weights: &[u32]| -> Vec<Option<f64>> {
        // The resample's pairs, each as often as its image was drawn.
        let mut drawn = ClassOverlaps::new();
        for pair in &pairs {
            for _ in 0..weights[pair.image] {
                drawn.push(&mapping.classes[pair.class].name, pair.overlap);
            }
        }
        let six = |share: Option<Ratios>, mean: Option<Ratios>| -> [Option<f64>; 6] {
            let r = |x: Option<Ratios>, f: fn(&Ratios) -> f64| x.as_ref().map(f);
            [
                r(share, |x| x.iou),
                r(share, |x| x.iop),
                r(share, |x| x.iot),
                r(mean, |x| x.iou),
                r(mean, |x| x.iop),
                r(mean, |x| x.iot),
            ]
        };
        let mut out = Vec::new();
        let mut per_class = Vec::new();
        for name in &names {
            let summary = drawn.classes().get(*name);
            let values = six(
                summary.and_then(|s| s.share_at(threshold)),
                summary.and_then(|s| s.mean()),
            );
            out.extend(values);
            per_class.push(values);
        }
        // Macro: the mean over classes with drawn pairs (the shares as the paper's Macro row).
        let macro_values = six(drawn.macro_share_at(threshold), None);
        for (k, value) in macro_values.iter().enumerate() {
            out.push(if k < 3 {
                *value
            } else {
                let present: Vec<f64> = per_class.iter().filter_map(|v| v[k]).collect();
                (!present.is_empty()).then(|| present.iter().sum::<f64>() / present.len() as f64)
            });
        }
        let micro = drawn.micro();
        out.extend(six(micro.share_at(threshold), micro.mean()));
        out
    };
    let settings = json!({
        "reference": options.reference.display().to_string(),
        "mapping": {"file": mapping_name, "version": mapping.version},
        "threshold": options.threshold,
        "options": options.eval.to_json(),
    });
    let mut evaluation = Evaluation::bootstrap(
        "boxes",
        settings,
        options.eval,
        images.len(),
        defs_out,
        statistic,
    );
    evaluation.notes = notes;
    Ok(evaluation)
}

/// Per (image, class): the boxes of the positive observations carrying one of its findings.
async fn predicted_masks(
    lake: &Lake,
    mapping: &Mapping,
) -> Result<HashMap<(String, usize), Vec<Rect>>> {
    let ctx = lake.session().await?;
    let mut by_finding: HashMap<&str, Vec<usize>> = HashMap::new();
    for (i, class) in mapping.classes.iter().enumerate() {
        for finding in &class.findings {
            by_finding.entry(finding).or_default().push(i);
        }
    }
    let mut masks: HashMap<(String, usize), Vec<Rect>> = HashMap::new();
    for row in strings(&collect(&ctx, STAGE, POSITIVE_BOXES_SQL).await?)? {
        let [image, tags, x1, y1, x2, y2] = row.as_slice() else {
            continue;
        };
        let coordinate = |v: &str| v.parse::<f64>().ok();
        let (Some(x1), Some(y1), Some(x2), Some(y2)) = (
            coordinate(x1),
            coordinate(y1),
            coordinate(x2),
            coordinate(y2),
        ) else {
            continue;
        };
        let rect = Rect::new(x1, y1, x2, y2);
        let classes: BTreeSet<usize> = tags
            .split('|')
            .filter_map(|t| by_finding.get(t))
            .flatten()
            .copied()
            .collect();
        for class in classes {
            masks.entry((image.clone(), class)).or_default().push(rect);
        }
    }
    Ok(masks)
}

/// Every box of every positive observation, with the image and the observation's tags.
const POSITIVE_BOXES_SQL: &str = "
WITH obs AS (SELECT study_id, unnest(observations) AS o FROM scene_graphs),
pos AS (
  SELECT array_concat(o['obs_entities'], o['obs_entities_parents']) AS tags,
         unnest(o['localization']) AS loc
  FROM obs WHERE o['positiveness'] = 'pos'
),
boxes AS (SELECT tags, loc['image_id'] AS image_id, unnest(loc['bboxes']) AS b FROM pos)
SELECT image_id, array_to_string(tags, '|') AS tags,
       array_element(b, 1) AS x1, array_element(b, 2) AS y1,
       array_element(b, 3) AS x2, array_element(b, 4) AS y2
FROM boxes";

/// The reference boxes of a CSV `image_id,class,x1,y1,x2,y2` (header required).
fn read_reference(path: &Path) -> Result<Vec<(String, String, Rect)>> {
    let error = |e: &dyn std::fmt::Display| {
        PipelineError::Input(format!("reference boxes {}: {e}", path.display()))
    };
    let mut reader = csv::ReaderBuilder::new()
        .trim(csv::Trim::All)
        .from_path(path)
        .map_err(|e| error(&e))?;
    let headers = reader.headers().map_err(|e| error(&e))?.clone();
    let names = ["image_id", "class", "x1", "y1", "x2", "y2"];
    let mut index = [0usize; 6];
    for (slot, name) in index.iter_mut().zip(names) {
        *slot = headers.iter().position(|h| h == name).ok_or_else(|| {
            error(&format!(
                "no column '{name}'; the file needs a header image_id,class,x1,y1,x2,y2"
            ))
        })?;
    }
    let mut boxes = Vec::new();
    for (i, record) in reader.records().enumerate() {
        let line = i + 2;
        let record = record.map_err(|e| error(&format!("line {line}: {e}")))?;
        let field = |k: usize| record.get(index[k]).unwrap_or_default();
        let mut c = [0.0f64; 4];
        for (k, value) in c.iter_mut().enumerate() {
            *value = field(2 + k)
                .parse()
                .ok()
                .filter(|v: &f64| v.is_finite())
                .ok_or_else(|| {
                    error(&format!(
                        "line {line}: {} '{}' is not a number",
                        names[2 + k],
                        field(2 + k)
                    ))
                })?;
        }
        boxes.push((
            field(0).to_string(),
            field(1).to_string(),
            Rect::new(c[0], c[1], c[2], c[3]),
        ));
    }
    if boxes.is_empty() {
        return Err(error(&"no boxes"));
    }
    Ok(boxes)
}
