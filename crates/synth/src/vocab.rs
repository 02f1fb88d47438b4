//! The generator's vocabulary: report phrases and the canonical names they stand for.
//!
//! Everything a report can say is listed here, next to the canonical name that goes into
//! `ground_truth.jsonl`, so the tables can be cross-checked against the reference definitions
//! (`crates/refdefs`) in one place:
//!
//! | table | phrase → canonical |
//! |---|---|
//! | [`FINDINGS`] | finding nouns → finding name, CheXpert column, ImaGenome attribute |
//! | [`REGIONS`] | region adjectives / locatives → region name, laterality, ImaGenome boxes |
//! | [`SEVERITIES`] | size and degree words → severity |
//! | [`HEDGES`] | hedge phrases → certainty |
//! | [`CHANGES`] | change words → change |
//! | [`DEVICES`] | device sentences (with positions) → device name, regions |
//! | [`NORMAL_SENTENCES`] | normal statements → negated findings |

use serde::Serialize;

/// Which side a finding or region is on (the patient's side).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Laterality {
    /// The patient's left (image right).
    Left,
    /// The patient's right (image left).
    Right,
    /// Both sides.
    Bilateral,
}

impl Laterality {
    /// The word used in reports.
    pub fn word(self) -> &'static str {
        match self {
            Self::Left => "left",
            Self::Right => "right",
            Self::Bilateral => "bilateral",
        }
    }
}

/// How a finding is written, which decides the sentence templates in `report.rs`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FindingStyle {
    /// Pleural process with a side: "small left pleural effusion".
    Pleural,
    /// Parenchymal process in a lobe or zone: "left lower lobe atelectasis".
    Parenchymal,
    /// Diffuse lung process: "mild pulmonary edema".
    Diffuse,
    /// Heart and mediastinum size: "moderate cardiomegaly".
    Cardiac,
    /// Bone: "left rib fractures".
    Osseous,
}

/// Which word family grades the finding.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SeverityScale {
    /// Not graded.
    None,
    /// trace / small / moderate / large.
    Size,
    /// minimal / mild / moderate / severe.
    Degree,
}

/// One finding the generator can state.
#[derive(Debug)]
pub struct FindingDef {
    /// Canonical lower-case name (ground truth `finding`).
    pub canonical: &'static str,
    /// Noun phrases used when positive; the first is also used in negations.
    pub nouns: &'static [&'static str],
    /// Plural noun for bilateral mentions, when it differs.
    pub plural: Option<&'static str>,
    /// CheXpert / NegBio column this finding feeds.
    pub chexpert: Option<&'static str>,
    /// Chest ImaGenome attribute `category|name`.
    pub imagenome: (&'static str, &'static str),
    /// Sentence family.
    pub style: FindingStyle,
    /// Severity words allowed.
    pub severity: SeverityScale,
    /// Candidate region sets (canonical names from [`REGIONS`]).
    pub regions: &'static [&'static [&'static str]],
    /// Probability of appearing in an abnormal study.
    pub prevalence: f64,
    /// Whether the finding is listed in "No X, Y or Z" sentences.
    pub negatable: bool,
}

const SIDES_PLEURAL: &[&[&str]] = &[
    &["left pleural space"],
    &["right pleural space"],
    &["right pleural space", "left pleural space"],
];
const LOBES_AND_BASES: &[&[&str]] = &[
    &["left lower lobe"],
    &["right lower lobe"],
    &["right middle lobe"],
    &["right upper lobe"],
    &["left upper lobe"],
    &["lingula"],
    &["left lung base"],
    &["right lung base"],
    &["lung bases"],
    &["retrocardiac region"],
    &["right perihilar region"],
    &["left perihilar region"],
];
const BASES: &[&[&str]] = &[
    &["lung bases"],
    &["left lung base"],
    &["right lung base"],
    &["left lower lobe"],
    &["retrocardiac region"],
    &["right middle lobe"],
    &["lingula"],
];
const UPPER: &[&[&str]] = &[
    &["right upper lobe"],
    &["left upper lobe"],
    &["right lung"],
    &["left lung"],
    &["right lower lobe"],
];
const LUNGS: &[&[&str]] = &[&["lungs"]];
const HEART: &[&[&str]] = &[&["cardiac silhouette"]];
const MEDIASTINUM: &[&[&str]] = &[&["mediastinum"]];
const PNEUMOTHORAX: &[&[&str]] = &[
    &["right apex"],
    &["left apex"],
    &["right pleural space"],
    &["left pleural space"],
];
const RIBS: &[&[&str]] = &[&["left ribs"], &["right ribs"]];

/// The findings table.
pub const FINDINGS: &[FindingDef] = &[
    FindingDef {
        canonical: "pleural effusion",
        nouns: &["pleural effusion", "effusion"],
        plural: Some("pleural effusions"),
        chexpert: Some("Pleural Effusion"),
        imagenome: ("anatomicalfinding", "pleural effusion"),
        style: FindingStyle::Pleural,
        severity: SeverityScale::Size,
        regions: SIDES_PLEURAL,
        prevalence: 0.38,
        negatable: true,
    },
    FindingDef {
        canonical: "atelectasis",
        nouns: &[
            "atelectasis",
            "subsegmental atelectasis",
            "plate-like atelectasis",
        ],
        plural: None,
        chexpert: Some("Atelectasis"),
        imagenome: ("anatomicalfinding", "atelectasis"),
        style: FindingStyle::Parenchymal,
        severity: SeverityScale::Degree,
        regions: BASES,
        prevalence: 0.36,
        negatable: false,
    },
    FindingDef {
        canonical: "pulmonary edema",
        nouns: &["pulmonary edema", "interstitial edema", "edema"],
        plural: None,
        chexpert: Some("Edema"),
        imagenome: ("anatomicalfinding", "pulmonary edema/hazy opacity"),
        style: FindingStyle::Diffuse,
        severity: SeverityScale::Degree,
        regions: LUNGS,
        prevalence: 0.22,
        negatable: true,
    },
    FindingDef {
        canonical: "cardiomegaly",
        nouns: &["cardiomegaly", "enlargement of the cardiac silhouette"],
        plural: None,
        chexpert: Some("Cardiomegaly"),
        imagenome: ("anatomicalfinding", "enlarged cardiac silhouette"),
        style: FindingStyle::Cardiac,
        severity: SeverityScale::Degree,
        regions: HEART,
        prevalence: 0.27,
        negatable: false,
    },
    FindingDef {
        canonical: "pneumonia",
        nouns: &["pneumonia", "infection"],
        plural: None,
        chexpert: Some("Pneumonia"),
        imagenome: ("disease", "pneumonia"),
        style: FindingStyle::Parenchymal,
        severity: SeverityScale::None,
        regions: LOBES_AND_BASES,
        prevalence: 0.16,
        negatable: true,
    },
    FindingDef {
        canonical: "lung opacity",
        nouns: &["opacity", "airspace opacity", "opacification"],
        plural: Some("opacities"),
        chexpert: Some("Lung Opacity"),
        imagenome: ("anatomicalfinding", "lung opacity"),
        style: FindingStyle::Parenchymal,
        severity: SeverityScale::Degree,
        regions: LOBES_AND_BASES,
        prevalence: 0.2,
        negatable: false,
    },
    FindingDef {
        canonical: "consolidation",
        nouns: &["consolidation", "airspace consolidation"],
        plural: None,
        chexpert: Some("Consolidation"),
        imagenome: ("anatomicalfinding", "consolidation"),
        style: FindingStyle::Parenchymal,
        severity: SeverityScale::None,
        regions: LOBES_AND_BASES,
        prevalence: 0.08,
        negatable: true,
    },
    FindingDef {
        canonical: "pneumothorax",
        nouns: &["pneumothorax"],
        plural: Some("pneumothoraces"),
        chexpert: Some("Pneumothorax"),
        imagenome: ("anatomicalfinding", "pneumothorax"),
        style: FindingStyle::Pleural,
        severity: SeverityScale::Size,
        regions: PNEUMOTHORAX,
        prevalence: 0.05,
        negatable: true,
    },
    FindingDef {
        canonical: "lung nodule",
        nouns: &["nodule", "nodular opacity"],
        plural: Some("nodules"),
        chexpert: Some("Lung Lesion"),
        imagenome: ("anatomicalfinding", "lung lesion"),
        style: FindingStyle::Parenchymal,
        severity: SeverityScale::None,
        regions: UPPER,
        prevalence: 0.04,
        negatable: false,
    },
    FindingDef {
        canonical: "fracture",
        nouns: &["rib fracture", "fracture"],
        plural: Some("rib fractures"),
        chexpert: Some("Fracture"),
        imagenome: ("anatomicalfinding", "rib fracture"),
        style: FindingStyle::Osseous,
        severity: SeverityScale::None,
        regions: RIBS,
        prevalence: 0.03,
        negatable: true,
    },
    FindingDef {
        canonical: "enlarged cardiomediastinum",
        nouns: &["widening of the mediastinum", "mediastinal widening"],
        plural: None,
        chexpert: Some("Enlarged Cardiomediastinum"),
        imagenome: ("anatomicalfinding", "mediastinal widening"),
        style: FindingStyle::Cardiac,
        severity: SeverityScale::None,
        regions: MEDIASTINUM,
        prevalence: 0.04,
        negatable: false,
    },
    FindingDef {
        canonical: "pleural thickening",
        nouns: &["pleural thickening"],
        plural: None,
        chexpert: Some("Pleural Other"),
        imagenome: ("anatomicalfinding", "pleural/parenchymal scarring"),
        style: FindingStyle::Pleural,
        severity: SeverityScale::None,
        regions: &[&["left apex"], &["right apex"], &["left pleural space"]],
        prevalence: 0.03,
        negatable: false,
    },
    FindingDef {
        canonical: "emphysema",
        nouns: &["emphysema", "hyperinflation"],
        plural: None,
        chexpert: None,
        imagenome: ("anatomicalfinding", "copd/emphysema"),
        style: FindingStyle::Diffuse,
        severity: SeverityScale::Degree,
        regions: LUNGS,
        prevalence: 0.05,
        negatable: false,
    },
];

/// One anatomical region a report can name.
#[derive(Debug)]
pub struct RegionDef {
    /// Canonical region name (ground truth `regions`).
    pub canonical: &'static str,
    /// Side of the region, if any.
    pub laterality: Option<Laterality>,
    /// Prefix forms: "left basilar" atelectasis.
    pub adjectives: &'static [&'static str],
    /// Locative forms: atelectasis "at the left base".
    pub locatives: &'static [&'static str],
    /// Chest ImaGenome boxes this region is drawn on.
    pub imagenome: &'static [&'static str],
}

use Laterality::{Bilateral, Left, Right};

/// The regions table.
pub const REGIONS: &[RegionDef] = &[
    RegionDef {
        canonical: "right lung",
        laterality: Some(Right),
        adjectives: &["right lung", "right-sided"],
        locatives: &["in the right lung"],
        imagenome: &["right lung"],
    },
    RegionDef {
        canonical: "left lung",
        laterality: Some(Left),
        adjectives: &["left lung", "left-sided"],
        locatives: &["in the left lung"],
        imagenome: &["left lung"],
    },
    RegionDef {
        canonical: "lungs",
        laterality: Some(Bilateral),
        adjectives: &["bilateral", "diffuse bilateral"],
        locatives: &["in both lungs", "throughout both lungs"],
        imagenome: &["right lung", "left lung"],
    },
    RegionDef {
        canonical: "right upper lobe",
        laterality: Some(Right),
        adjectives: &["right upper lobe"],
        locatives: &["in the right upper lobe"],
        imagenome: &["right upper lung zone"],
    },
    RegionDef {
        canonical: "right middle lobe",
        laterality: Some(Right),
        adjectives: &["right middle lobe"],
        locatives: &["in the right middle lobe"],
        imagenome: &["right mid lung zone"],
    },
    RegionDef {
        canonical: "right lower lobe",
        laterality: Some(Right),
        adjectives: &["right lower lobe"],
        locatives: &["in the right lower lobe"],
        imagenome: &["right lower lung zone"],
    },
    RegionDef {
        canonical: "left upper lobe",
        laterality: Some(Left),
        adjectives: &["left upper lobe"],
        locatives: &["in the left upper lobe"],
        imagenome: &["left upper lung zone"],
    },
    RegionDef {
        canonical: "lingula",
        laterality: Some(Left),
        adjectives: &["lingular"],
        locatives: &["in the lingula"],
        imagenome: &["left mid lung zone"],
    },
    RegionDef {
        canonical: "left lower lobe",
        laterality: Some(Left),
        adjectives: &["left lower lobe"],
        locatives: &["in the left lower lobe"],
        imagenome: &["left lower lung zone"],
    },
    RegionDef {
        canonical: "right lung base",
        laterality: Some(Right),
        adjectives: &["right basilar", "right basal"],
        locatives: &["at the right base", "at the right lung base"],
        imagenome: &["right lower lung zone"],
    },
    RegionDef {
        canonical: "left lung base",
        laterality: Some(Left),
        adjectives: &["left basilar", "left basal"],
        locatives: &["at the left base", "at the left lung base"],
        imagenome: &["left lower lung zone"],
    },
    RegionDef {
        canonical: "lung bases",
        laterality: Some(Bilateral),
        adjectives: &["bibasilar", "bibasal"],
        locatives: &["at both lung bases", "at the lung bases"],
        imagenome: &["right lower lung zone", "left lower lung zone"],
    },
    RegionDef {
        canonical: "retrocardiac region",
        laterality: Some(Left),
        adjectives: &["retrocardiac"],
        locatives: &["in the retrocardiac region"],
        imagenome: &["left lower lung zone"],
    },
    RegionDef {
        canonical: "right perihilar region",
        laterality: Some(Right),
        adjectives: &["right perihilar"],
        locatives: &["in the right perihilar region"],
        imagenome: &["right hilar structures"],
    },
    RegionDef {
        canonical: "left perihilar region",
        laterality: Some(Left),
        adjectives: &["left perihilar"],
        locatives: &["in the left perihilar region"],
        imagenome: &["left hilar structures"],
    },
    RegionDef {
        canonical: "right apex",
        laterality: Some(Right),
        adjectives: &["right apical"],
        locatives: &["at the right apex"],
        imagenome: &["right apical zone"],
    },
    RegionDef {
        canonical: "left apex",
        laterality: Some(Left),
        adjectives: &["left apical"],
        locatives: &["at the left apex"],
        imagenome: &["left apical zone"],
    },
    RegionDef {
        canonical: "right pleural space",
        laterality: Some(Right),
        adjectives: &["right"],
        locatives: &["on the right"],
        imagenome: &["right costophrenic angle", "right lung"],
    },
    RegionDef {
        canonical: "left pleural space",
        laterality: Some(Left),
        adjectives: &["left"],
        locatives: &["on the left"],
        imagenome: &["left costophrenic angle", "left lung"],
    },
    RegionDef {
        canonical: "cardiac silhouette",
        laterality: None,
        adjectives: &["cardiac"],
        locatives: &[],
        imagenome: &["cardiac silhouette"],
    },
    RegionDef {
        canonical: "mediastinum",
        laterality: None,
        adjectives: &["mediastinal"],
        locatives: &[],
        imagenome: &["mediastinum", "upper mediastinum"],
    },
    RegionDef {
        canonical: "trachea",
        laterality: None,
        adjectives: &["tracheal"],
        locatives: &["in the trachea"],
        imagenome: &["trachea"],
    },
    RegionDef {
        canonical: "carina",
        laterality: None,
        adjectives: &[],
        locatives: &["above the carina"],
        imagenome: &["carina"],
    },
    RegionDef {
        canonical: "svc",
        laterality: None,
        adjectives: &[],
        locatives: &["in the mid SVC", "in the lower SVC"],
        imagenome: &["svc"],
    },
    RegionDef {
        canonical: "cavoatrial junction",
        laterality: None,
        adjectives: &[],
        locatives: &["at the cavoatrial junction"],
        imagenome: &["cavoatrial junction"],
    },
    RegionDef {
        canonical: "right atrium",
        laterality: None,
        adjectives: &[],
        locatives: &["in the right atrium"],
        imagenome: &["right atrium"],
    },
    RegionDef {
        canonical: "right ventricle",
        laterality: None,
        adjectives: &[],
        locatives: &["in the right ventricle"],
        imagenome: &["cardiac silhouette"],
    },
    RegionDef {
        canonical: "stomach",
        laterality: None,
        adjectives: &[],
        locatives: &["in the stomach"],
        imagenome: &["abdomen"],
    },
    RegionDef {
        canonical: "right ribs",
        laterality: Some(Right),
        adjectives: &["right"],
        locatives: &[],
        imagenome: &["right lung"],
    },
    RegionDef {
        canonical: "left ribs",
        laterality: Some(Left),
        adjectives: &["left"],
        locatives: &[],
        imagenome: &["left lung"],
    },
];

/// Looks a region up by canonical name.
pub fn region(canonical: &str) -> Option<&'static RegionDef> {
    REGIONS.iter().find(|r| r.canonical == canonical)
}

/// Looks a finding up by canonical name.
pub fn finding(canonical: &str) -> Option<&'static FindingDef> {
    FINDINGS.iter().find(|f| f.canonical == canonical)
}

/// Severity words: (phrase, canonical severity, scale).
pub const SEVERITIES: &[(&str, &str, SeverityScale)] = &[
    ("trace", "minimal", SeverityScale::Size),
    ("small", "mild", SeverityScale::Size),
    ("moderate", "moderate", SeverityScale::Size),
    ("large", "severe", SeverityScale::Size),
    ("minimal", "minimal", SeverityScale::Degree),
    ("mild", "mild", SeverityScale::Degree),
    ("mild to moderate", "moderate", SeverityScale::Degree),
    ("moderate", "moderate", SeverityScale::Degree),
    ("severe", "severe", SeverityScale::Degree),
];

/// Certainty of a statement (ground truth `certainty`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Certainty {
    /// Stated as fact.
    Certain,
    /// Probable ("likely", "concerning for").
    Likely,
    /// Possible ("may represent", "cannot be excluded").
    Uncertain,
}

/// Where a hedge goes in the sentence.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HedgeForm {
    /// "possible left lower lobe pneumonia"
    Prefix,
    /// "left lower lobe pneumonia cannot be excluded"
    Suffix,
    /// "left lower lobe opacity may represent pneumonia" (links an opacity to a diagnosis)
    Link,
}

/// Hedges: (phrase, certainty, form).
pub const HEDGES: &[(&str, Certainty, HedgeForm)] = &[
    ("possible", Certainty::Uncertain, HedgeForm::Prefix),
    ("probable", Certainty::Likely, HedgeForm::Prefix),
    (
        "cannot be excluded",
        Certainty::Uncertain,
        HedgeForm::Suffix,
    ),
    (
        "cannot be ruled out",
        Certainty::Uncertain,
        HedgeForm::Suffix,
    ),
    ("is likely", Certainty::Likely, HedgeForm::Suffix),
    ("may represent", Certainty::Uncertain, HedgeForm::Link),
    ("could reflect", Certainty::Uncertain, HedgeForm::Link),
    ("likely", Certainty::Likely, HedgeForm::Link),
    ("concerning for", Certainty::Likely, HedgeForm::Link),
    ("suspicious for", Certainty::Likely, HedgeForm::Link),
];

/// Where a change word goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChangeForm {
    /// "new left pleural effusion"
    Prefix,
    /// "left pleural effusion is unchanged"
    Predicate,
}

/// Change words: (phrase, canonical change, form). Only used when a comparison exists.
pub const CHANGES: &[(&str, &str, ChangeForm)] = &[
    ("new", "new", ChangeForm::Prefix),
    ("increasing", "increased", ChangeForm::Prefix),
    ("decreasing", "decreased", ChangeForm::Prefix),
    ("worsening", "worsened", ChangeForm::Prefix),
    ("improving", "improved", ChangeForm::Prefix),
    ("is unchanged", "unchanged", ChangeForm::Predicate),
    ("is stable", "unchanged", ChangeForm::Predicate),
    ("has slightly increased", "increased", ChangeForm::Predicate),
    ("has increased", "increased", ChangeForm::Predicate),
    ("has slightly decreased", "decreased", ChangeForm::Predicate),
    ("has improved", "improved", ChangeForm::Predicate),
    ("has worsened", "worsened", ChangeForm::Predicate),
];

/// One support device and how its position is written.
#[derive(Debug)]
pub struct DeviceDef {
    /// Canonical device name (ground truth `finding`).
    pub canonical: &'static str,
    /// Sentence templates: `{side}` = left/right, `{cm}` = distance; and the regions each names.
    pub templates: &'static [(&'static str, &'static [&'static str])],
    /// Whether templates carry `{side}` (the device then has a laterality).
    pub sided: bool,
    /// Probability in a study with devices.
    pub prevalence: f64,
}

/// The support devices table (all feed the CheXpert column `Support Devices`).
pub const DEVICES: &[DeviceDef] = &[
    DeviceDef {
        canonical: "endotracheal tube",
        templates: &[
            (
                "ET tube terminates {cm} cm above the carina",
                &["trachea", "carina"],
            ),
            (
                "Endotracheal tube tip is {cm} cm above the carina",
                &["trachea", "carina"],
            ),
            (
                "The endotracheal tube terminates in the mid trachea, {cm} cm above the carina",
                &["trachea", "carina"],
            ),
        ],
        sided: false,
        prevalence: 0.45,
    },
    DeviceDef {
        canonical: "enteric tube",
        templates: &[
            (
                "Enteric tube courses below the diaphragm with the tip in the stomach",
                &["stomach"],
            ),
            ("Nasogastric tube tip is in the stomach", &["stomach"]),
            ("An orogastric tube extends into the stomach", &["stomach"]),
        ],
        sided: false,
        prevalence: 0.4,
    },
    DeviceDef {
        canonical: "central venous catheter",
        templates: &[
            (
                "{Side} internal jugular central venous catheter terminates in the mid SVC",
                &["svc"],
            ),
            (
                "{Side} subclavian line tip is at the cavoatrial junction",
                &["cavoatrial junction"],
            ),
            (
                "{Side} internal jugular line ends in the lower SVC",
                &["svc"],
            ),
        ],
        sided: true,
        prevalence: 0.4,
    },
    DeviceDef {
        canonical: "picc line",
        templates: &[
            ("{Side} PICC terminates in the mid SVC", &["svc"]),
            (
                "{Side}-sided PICC line tip projects over the cavoatrial junction",
                &["cavoatrial junction"],
            ),
            ("{Side} PICC tip is in the right atrium", &["right atrium"]),
        ],
        sided: true,
        prevalence: 0.3,
    },
    DeviceDef {
        canonical: "pacemaker",
        templates: &[
            (
                "{Side}-sided pacemaker with leads in the right atrium and right ventricle",
                &["right atrium", "right ventricle"],
            ),
            (
                "{Side} chest wall pacemaker device with a single lead in the right ventricle",
                &["right ventricle"],
            ),
        ],
        sided: true,
        prevalence: 0.2,
    },
    DeviceDef {
        canonical: "chest tube",
        templates: &[
            (
                "{Side} chest tube remains in place",
                &["{side} pleural space"],
            ),
            (
                "{Side} pleural drain terminates at the {side} apex",
                &["{side} pleural space", "{side} apex"],
            ),
        ],
        sided: true,
        prevalence: 0.12,
    },
];

/// Sentences that state normality: (text, negated findings, regions named).
pub const NORMAL_SENTENCES: &[(&str, &[&str], &[&str])] = &[
    ("The lungs are clear", &["lung opacity"], &["lungs"]),
    (
        "Lungs are well expanded and clear",
        &["lung opacity"],
        &["lungs"],
    ),
    (
        "Heart size is normal",
        &["cardiomegaly"],
        &["cardiac silhouette"],
    ),
    (
        "The cardiomediastinal silhouette is within normal limits",
        &["cardiomegaly", "enlarged cardiomediastinum"],
        &["cardiac silhouette", "mediastinum"],
    ),
    (
        "Normal cardiomediastinal contours",
        &["cardiomegaly", "enlarged cardiomediastinum"],
        &["cardiac silhouette", "mediastinum"],
    ),
];

/// Impression lines for normal studies (they state no finding).
pub const NORMAL_IMPRESSIONS: &[&str] = &[
    "No acute cardiopulmonary process.",
    "No acute cardiopulmonary abnormality.",
    "No acute intrathoracic process.",
    "Normal chest radiograph.",
];

/// CheXpert / NegBio columns, in file order.
pub use cxrlake_schemas::sources::CHEXPERT_CSV_COLUMNS;

/// Indications: (text, finding the indication asks about).
pub const INDICATIONS: &[(&str, Option<&str>)] = &[
    (
        "___ year old man with cough and fever, evaluate for pneumonia.",
        Some("pneumonia"),
    ),
    (
        "___F with shortness of breath, assess for pulmonary edema.",
        Some("pulmonary edema"),
    ),
    (
        "___M s/p fall, evaluate for rib fracture.",
        Some("fracture"),
    ),
    (
        "Intubated patient, assess ET tube position.",
        Some("endotracheal tube"),
    ),
    ("___ year old woman with chest pain.", None),
    ("Pre-operative evaluation.", None),
    ("___M with hypoxia, ? effusion.", Some("pleural effusion")),
    (
        "s/p chest tube removal, evaluate for pneumothorax.",
        Some("pneumothorax"),
    ),
    (
        "___F with new line placement, check position.",
        Some("picc line"),
    ),
    (
        "History of CHF, now with worsening dyspnea.",
        Some("pulmonary edema"),
    ),
];

/// Section headers and their variants: (canonical, variants).
pub const SECTION_NAMES: &[(&str, &[&str])] = &[
    ("EXAMINATION", &["EXAMINATION", "EXAM"]),
    (
        "INDICATION",
        &[
            "INDICATION",
            "HISTORY",
            "REASON FOR EXAM",
            "CLINICAL HISTORY",
        ],
    ),
    ("TECHNIQUE", &["TECHNIQUE"]),
    ("COMPARISON", &["COMPARISON", "COMPARISONS"]),
    ("FINDINGS", &["FINDINGS", "FINDING"]),
    ("IMPRESSION", &["IMPRESSION", "CONCLUSION", "IMPRESSIONS"]),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_reference_known_names() {
        for f in FINDINGS {
            for set in f.regions {
                for r in *set {
                    assert!(
                        region(r).is_some(),
                        "{} names unknown region {r}",
                        f.canonical
                    );
                }
            }
            if let Some(col) = f.chexpert {
                assert!(CHEXPERT_CSV_COLUMNS.contains(&col));
            }
        }
        for d in DEVICES {
            for (_, regions) in d.templates {
                for r in *regions {
                    let r = r.replace("{side}", "left");
                    assert!(
                        region(&r).is_some(),
                        "{} names unknown region {r}",
                        d.canonical
                    );
                }
            }
        }
        for (_, negs, regions) in NORMAL_SENTENCES {
            assert!(negs.iter().all(|n| finding(n).is_some()));
            assert!(regions.iter().all(|r| region(r).is_some()));
        }
        for r in REGIONS {
            for b in r.imagenome {
                assert!(
                    crate::imagenome::BBOX_NAMES.contains(b),
                    "{b} is not an ImaGenome box"
                );
            }
        }
    }
}
