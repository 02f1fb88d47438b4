//! RadStrucVQA (paper 000, sec. 5 and F.2, eqs. 1–6, table 18): structured answers scored part
//! by part. Every answer part is one element, hierarchy and order ignored; for precision the
//! predicted parts are the hypotheses and the target parts the context, for recall the other
//! way round.
//!
//! ```text
//!  hypotheses H, context C ──entailment (offline rules | LLM, texts only)──► per h: Evidence
//!                                                                            (entailed?, C[h] ⊆ C)
//!  per sub-metric: s(H, C) = |{h relevant ∧ entailed_sub(h, C[h])}| / |{h relevant}|   (eq. 3)
//!  sample: p = s(Ŷ, Y), r = s(Y, Ŷ), F1 = 2pr / (p + r)                              (eqs. 1, 2)
//!  corpus: Aggregate = mean over the samples where the value is defined, invalid ones counted
//! ```
//!
//! Table 18, with `same(C[h])` the evidence parts whose positiveness equals h's:
//!
//! | sub-metric | entailed | relevant |
//! |---|---|---|
//! | logical | `C[h]` not empty | always |
//! | grounding | logical ∧ `IoH(h, C[h])` ≥ 0.5 | h has boxes ∧ logical |
//! | spatial | grounding | h has boxes |
//! | finding | logical ∧ every finding tag of h in `same(C[h])` | h has finding tags |
//! | finding-pos | finding | relevant(finding) ∧ h positive |
//! | region, region-pos | as finding, region tags | |
//! | main-category(-pos) | as finding, main-category tags | |
//! | sub-category(-pos) | as finding, sub-category tags | |
//! | bbox-pos-entity | finding ∧ grounding | relevant(finding-pos) ∧ relevant(spatial) |
//!
//! Where the paper is silent this module decides:
//! - **Boxes are per image.** A part's boxes carry the id of their image; IoH sums, over the
//!   images of h, the area of h's mask inside the evidence's mask on the same image, and divides
//!   by the summed area of h's masks. Boxes on different images never overlap. "Has boxes" means
//!   a box with positive area.
//! - **Tags** are compared trimmed and case-insensitively; a part without positiveness (`NULL`)
//!   has the same positiveness as another such part.
//! - **Evidence** entries past the context are dropped; a hypothesis without an [`Evidence`]
//!   entry is not entailed; `ENTAILED` with no evidence counts as not entailed (`C[h] = {}`).
//! - **F1** of a sample is defined only where both precision and recall are (0 when both are 0);
//!   its mean runs over those samples.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::masks::{Rect, overlap};
use crate::{EvaluateError, Result};

/// The id the offline entailment rules record (changes when the rules do).
pub const OFFLINE_ENTAILER: &str = "radstruct-offline-1";

/// The system prompt of the LLM entailer (`prompts/evaluate/entailment.md`, `<FEWSHOT>` where
/// the examples go).
pub const ENTAILMENT_SYSTEM: &str = include_str!("../../../prompts/evaluate/entailment.md");

/// The worked examples of the LLM entailer (`prompts/evaluate/entailment.fewshot.md`).
pub const ENTAILMENT_FEWSHOT: &str =
    include_str!("../../../prompts/evaluate/entailment.fewshot.md");

/// The JSON schema of an entailment answer, for the request's `response_format`
/// (`prompts/evaluate/entailment.schema.json`).
pub const ENTAILMENT_SCHEMA: &str =
    include_str!("../../../prompts/evaluate/entailment.schema.json");

/// The IoH a hypothesis' boxes need inside its evidence's boxes to be grounded (table 18).
pub const GROUNDING_THRESHOLD: f64 = 0.5;

/// One answer part (`answer_part_fields`): its text, polarity, tags and boxes.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Part {
    /// The part's sentence (`text`).
    pub text: String,
    /// `positiveness`: `pos` → Some(true), `neg` → Some(false), NULL → None.
    pub positive: Option<bool>,
    /// Finding tags (`obs_entities`).
    pub findings: Vec<String>,
    /// Region tags (`regions`).
    pub regions: Vec<String>,
    /// Finding main-category tags (`obs_categories`).
    pub categories: Vec<String>,
    /// Finding sub-category tags (`obs_subcategories`).
    pub subcategories: Vec<String>,
    /// Every box of `localization`, with the id of the image it is on (pixel coordinates of
    /// that image).
    pub boxes: Vec<(String, Rect)>,
}

impl Part {
    /// Whether the part has a box with positive area.
    fn has_boxes(&self) -> bool {
        self.boxes.iter().any(|(_, rect)| rect.area() > 0.0)
    }
}

/// Whether a hypothesis is logically entailed by the context, and which context parts support
/// it (eq. 4; empty when not entailed).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Evidence {
    /// ENTAILED (true) or NOT_ENTAILED (neutral or contradicting).
    pub entailed: bool,
    /// Indices (0-based) into the context of the supporting parts.
    pub evidence: Vec<usize>,
}

impl Evidence {
    /// NOT_ENTAILED, no evidence.
    pub fn not_entailed() -> Self {
        Self {
            entailed: false,
            evidence: Vec::new(),
        }
    }
}

/// The sub-metrics of table 18, in its order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum SubMetric {
    /// Entailment of the text.
    Logical,
    /// Entailed with boxes inside the evidence's (IoH ≥ 0.5), over entailed parts with boxes.
    Grounding,
    /// Grounding over every part with boxes.
    Spatial,
    /// Entailed with every finding tag in the evidence of the same positiveness.
    Finding,
    /// Finding, positive parts only.
    FindingPos,
    /// Entailed with every region tag in the evidence of the same positiveness.
    Region,
    /// Region, positive parts only.
    RegionPos,
    /// Entailed with every main-category tag in the evidence of the same positiveness.
    MainCategory,
    /// Main category, positive parts only.
    MainCategoryPos,
    /// Entailed with every sub-category tag in the evidence of the same positiveness.
    SubCategory,
    /// Sub-category, positive parts only.
    SubCategoryPos,
    /// Finding and grounding, over positive parts with finding tags and boxes.
    BboxPosEntity,
}

impl SubMetric {
    /// Every sub-metric, in table 18's order (the order of the score arrays).
    pub const ALL: [SubMetric; 12] = [
        SubMetric::Logical,
        SubMetric::Grounding,
        SubMetric::Spatial,
        SubMetric::Finding,
        SubMetric::FindingPos,
        SubMetric::Region,
        SubMetric::RegionPos,
        SubMetric::MainCategory,
        SubMetric::MainCategoryPos,
        SubMetric::SubCategory,
        SubMetric::SubCategoryPos,
        SubMetric::BboxPosEntity,
    ];

    /// The paper's name.
    pub fn name(self) -> &'static str {
        match self {
            SubMetric::Logical => "logical",
            SubMetric::Grounding => "grounding",
            SubMetric::Spatial => "spatial",
            SubMetric::Finding => "finding",
            SubMetric::FindingPos => "finding-pos",
            SubMetric::Region => "region",
            SubMetric::RegionPos => "region-pos",
            SubMetric::MainCategory => "main-category",
            SubMetric::MainCategoryPos => "main-category-pos",
            SubMetric::SubCategory => "sub-category",
            SubMetric::SubCategoryPos => "sub-category-pos",
            SubMetric::BboxPosEntity => "bbox-pos-entity",
        }
    }

    /// The position in [`SubMetric::ALL`] and in the score arrays.
    pub fn index(self) -> usize {
        self as usize
    }
}

/// RadStrucVQA's IoH (table 18): the area of h's box masks inside the masks of its evidence's
/// boxes on the same images, over the area of h's masks, summed over h's images (0 when h has
/// no box area).
pub fn ioh(h: &Part, evidence: &[&Part]) -> f64 {
    let mut images: BTreeMap<&str, (Vec<Rect>, Vec<Rect>)> = BTreeMap::new();
    for (image, rect) in &h.boxes {
        images.entry(image).or_default().0.push(*rect);
    }
    for part in evidence {
        for (image, rect) in &part.boxes {
            if let Some((_, others)) = images.get_mut(image.as_str()) {
                others.push(*rect);
            }
        }
    }
    let (mut inside, mut area) = (0.0, 0.0);
    for (own, others) in images.values() {
        let o = overlap(own, others);
        inside += o.intersection;
        area += o.predicted;
    }
    if area > 0.0 { inside / area } else { 0.0 }
}

/// A tag as compared: trimmed, lower case.
fn tag_key(tag: &str) -> String {
    tag.trim().to_lowercase()
}

/// The tags of one family (findings, regions, main or sub-categories) of a part.
type Tags = fn(&Part) -> &[String];

/// Whether every tag of `tags(h)` is a tag of an evidence part with h's positiveness.
fn tags_supported(h: &Part, evidence: &[&Part], tags: Tags) -> bool {
    let present: BTreeSet<String> = evidence
        .iter()
        .filter(|c| c.positive == h.positive)
        .flat_map(|c| tags(c).iter().map(|t| tag_key(t)))
        .collect();
    tags(h).iter().all(|t| present.contains(&tag_key(t)))
}

/// `(entailed, relevant)` of every sub-metric for one hypothesis, in [`SubMetric::ALL`] order.
fn judge(h: &Part, context: &[Part], evidence: Option<&Evidence>) -> [(bool, bool); 12] {
    let support: Vec<&Part> = match evidence {
        Some(e) if e.entailed => e.evidence.iter().filter_map(|&i| context.get(i)).collect(),
        _ => Vec::new(),
    };
    let logical = !support.is_empty();
    let has_boxes = h.has_boxes();
    let positive = h.positive == Some(true);
    let grounding = logical && has_boxes && ioh(h, &support) >= GROUNDING_THRESHOLD;
    let tagged = |tags: Tags| -> (bool, bool) {
        (
            logical && tags_supported(h, &support, tags),
            !tags(h).is_empty(),
        )
    };
    let finding = tagged(|p| &p.findings);
    let region = tagged(|p| &p.regions);
    let main = tagged(|p| &p.categories);
    let sub = tagged(|p| &p.subcategories);
    let pos = |(entailed, relevant): (bool, bool)| (entailed, relevant && positive);
    [
        (logical, true),
        (grounding, has_boxes && logical),
        (grounding, has_boxes),
        finding,
        pos(finding),
        region,
        pos(region),
        main,
        pos(main),
        sub,
        pos(sub),
        (finding.0 && grounding, finding.1 && positive && has_boxes),
    ]
}

/// s_sub(H, C) of eq. 3 for every sub-metric (in [`SubMetric::ALL`] order): the share of the
/// relevant hypotheses that are entailed; None when no hypothesis is relevant. `evidence[i]` is
/// the entailment of `hypotheses[i]` in `context`; a hypothesis without an entry is not
/// entailed.
pub fn directional(
    hypotheses: &[Part],
    context: &[Part],
    evidence: &[Evidence],
) -> [Option<f64>; 12] {
    let mut hits = [0usize; 12];
    let mut relevant = [0usize; 12];
    for (i, h) in hypotheses.iter().enumerate() {
        for (k, (entailed, is_relevant)) in
            judge(h, context, evidence.get(i)).into_iter().enumerate()
        {
            if is_relevant {
                relevant[k] += 1;
                hits[k] += usize::from(entailed);
            }
        }
    }
    std::array::from_fn(|k| (relevant[k] > 0).then(|| hits[k] as f64 / relevant[k] as f64))
}

/// Precision, recall or F1.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Direction {
    /// s(predicted, target), eq. 1.
    Precision,
    /// s(target, predicted), eq. 2.
    Recall,
    /// The per-sample harmonic mean of the two.
    F1,
}

impl Direction {
    /// All three, in this order.
    pub const ALL: [Direction; 3] = [Direction::Precision, Direction::Recall, Direction::F1];

    /// `precision`, `recall` or `f1`.
    pub fn name(self) -> &'static str {
        match self {
            Direction::Precision => "precision",
            Direction::Recall => "recall",
            Direction::F1 => "f1",
        }
    }
}

/// One sample's precision, recall and F1 per sub-metric (arrays in [`SubMetric::ALL`] order;
/// None where the sub-metric has no relevant hypothesis).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SampleScores {
    /// s(predicted, target).
    pub precision: [Option<f64>; 12],
    /// s(target, predicted).
    pub recall: [Option<f64>; 12],
    /// 2pr / (p + r) where both are defined, 0 when both are 0; None when either is None.
    pub f1: [Option<f64>; 12],
}

impl SampleScores {
    /// The scores of one direction.
    pub fn get(&self, direction: Direction) -> &[Option<f64>; 12] {
        match direction {
            Direction::Precision => &self.precision,
            Direction::Recall => &self.recall,
            Direction::F1 => &self.f1,
        }
    }

    /// One score.
    pub fn value(&self, direction: Direction, metric: SubMetric) -> Option<f64> {
        self.get(direction)[metric.index()]
    }
}

/// The scores of one sample from the evidence of each direction (`precision_evidence`: one per
/// predicted part in the targets; `recall_evidence`: one per target part in the predictions).
pub fn score_sample(
    predicted: &[Part],
    target: &[Part],
    precision_evidence: &[Evidence],
    recall_evidence: &[Evidence],
) -> SampleScores {
    let precision = directional(predicted, target, precision_evidence);
    let recall = directional(target, predicted, recall_evidence);
    let f1 = std::array::from_fn(|k| match (precision[k], recall[k]) {
        (Some(p), Some(r)) if p + r > 0.0 => Some(2.0 * p * r / (p + r)),
        (Some(_), Some(_)) => Some(0.0),
        _ => None,
    });
    SampleScores {
        precision,
        recall,
        f1,
    }
}

/// Corpus-level scores: per sub-metric and direction the mean of the sample-level scores that
/// are defined (F.2: invalid answers, entailment parse errors and samples without relevant
/// hypotheses are ignored), with counts of what was ignored.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Aggregate {
    sums: [[f64; 12]; 3],
    counts: [[usize; 12]; 3],
    samples: usize,
    invalid: usize,
}

impl Aggregate {
    /// No samples yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a scored sample.
    pub fn push(&mut self, scores: &SampleScores) {
        self.samples += 1;
        for (d, direction) in Direction::ALL.iter().enumerate() {
            for (k, value) in scores.get(*direction).iter().enumerate() {
                if let Some(v) = value {
                    self.sums[d][k] += v;
                    self.counts[d][k] += 1;
                }
            }
        }
    }

    /// Counts a sample that could not be scored (invalid answer, entailment parse error).
    pub fn push_invalid(&mut self) {
        self.invalid += 1;
    }

    /// The mean over the samples where the score is defined; None when it is nowhere.
    pub fn mean(&self, direction: Direction, metric: SubMetric) -> Option<f64> {
        let (d, k) = (direction as usize, metric.index());
        let n = self.counts[d][k];
        (n > 0).then(|| self.sums[d][k] / n as f64)
    }

    /// How many samples the mean runs over.
    pub fn count(&self, direction: Direction, metric: SubMetric) -> usize {
        self.counts[direction as usize][metric.index()]
    }

    /// How many scored samples were ignored for lack of a relevant hypothesis (F1: of a
    /// relevant hypothesis in either direction).
    pub fn without_relevant(&self, direction: Direction, metric: SubMetric) -> usize {
        self.samples - self.count(direction, metric)
    }

    /// How many samples were scored.
    pub fn samples(&self) -> usize {
        self.samples
    }

    /// How many samples were invalid and ignored everywhere.
    pub fn invalid(&self) -> usize {
        self.invalid
    }
}

/// Words that carry no content for the offline rules' text overlap (negations included: the
/// polarity is compared on its own).
const STOP_WORDS: &[&str] = &[
    "a",
    "an",
    "the",
    "is",
    "are",
    "was",
    "were",
    "be",
    "been",
    "being",
    "of",
    "in",
    "on",
    "at",
    "to",
    "and",
    "or",
    "with",
    "there",
    "this",
    "that",
    "these",
    "it",
    "its",
    "as",
    "by",
    "for",
    "from",
    "seen",
    "noted",
    "present",
    "visible",
    "identified",
    "image",
    "images",
    "shows",
    "show",
    "shown",
    "yes",
    "evidence",
    "indication",
    "sign",
    "signs",
    "any",
    "no",
    "not",
    "without",
    "none",
    "nor",
    "neither",
    "absent",
    "absence",
    "negative",
    "free",
];

/// Lower-case alphanumeric words of `text`.
fn words(text: &str) -> impl Iterator<Item = String> + '_ {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
}

fn content_words(text: &str) -> BTreeSet<String> {
    words(text)
        .filter(|w| !STOP_WORDS.contains(&w.as_str()))
        .collect()
}

/// The Jaccard index of two word sets (0 when both are empty).
fn jaccard(a: &BTreeSet<String>, b: &BTreeSet<String>) -> f64 {
    let union = a.union(b).count();
    if union == 0 {
        0.0
    } else {
        a.intersection(b).count() as f64 / union as f64
    }
}

/// A part as the offline rules see it.
struct Statement {
    positive: Option<bool>,
    normalised: Vec<String>,
    content: BTreeSet<String>,
    findings: BTreeSet<String>,
    regions: BTreeSet<String>,
}

impl Statement {
    fn new(part: &Part) -> Self {
        Self {
            positive: part.positive,
            normalised: words(&part.text).collect(),
            content: content_words(&part.text),
            findings: part.findings.iter().map(|t| tag_key(t)).collect(),
            regions: part.regions.iter().map(|t| tag_key(t)).collect(),
        }
    }

    /// The same statement: same positiveness and the same words.
    fn identical(&self, other: &Statement) -> bool {
        self.positive == other.positive && self.normalised == other.normalised
    }

    /// Whether `self` (context) supports `h`.
    fn supports(&self, h: &Statement) -> bool {
        if self.positive != h.positive {
            return false;
        }
        let shared_finding = !self.findings.is_disjoint(&h.findings);
        let different_findings =
            !self.findings.is_empty() && !h.findings.is_empty() && !shared_finding;
        let untagged_same_region = self.findings.is_empty()
            && h.findings.is_empty()
            && !self.regions.is_disjoint(&h.regions);
        self.identical(h)
            || shared_finding
            || untagged_same_region
            || (!different_findings && jaccard(&self.content, &h.content) >= 0.5)
    }

    /// Whether `self` (context) contradicts `h`: opposite positiveness on a shared finding
    /// where the regions overlap (or either names none).
    fn contradicts(&self, h: &Statement) -> bool {
        let opposite = matches!(
            (self.positive, h.positive),
            (Some(true), Some(false)) | (Some(false), Some(true))
        );
        let same_place = self.regions.is_empty()
            || h.regions.is_empty()
            || !self.regions.is_disjoint(&h.regions);
        opposite && !self.findings.is_disjoint(&h.findings) && same_place
    }
}

/// The offline entailment rules ([`OFFLINE_ENTAILER`]), a stand-in for the LLM that reads tags
/// as well as texts. A context part c **supports** a hypothesis h when both have the same
/// positiveness and
/// - they state the same (the same words, case and punctuation aside), or
/// - they share a finding tag, or
/// - neither has finding tags and they share a region tag, or
/// - their content words (stop words and negation words removed, as polarity is compared on its
///   own) have a Jaccard index ≥ 0.5, unless both have finding tags and share none.
///
/// h is **entailed** when some context part supports it and none **contradicts** it — a part of
/// the opposite positiveness (`pos` against `neg`) sharing a finding tag, with a shared region
/// tag or without region tags on either side — unless the context states h itself. The
/// evidence is every supporting part. Boxes are not read (F.2: entailment is purely logical),
/// and answer parts scored against themselves are entailed with themselves as evidence, which
/// gives 1.0 on every sub-metric with relevant hypotheses.
pub fn offline_evidence(hypotheses: &[Part], context: &[Part]) -> Vec<Evidence> {
    let context: Vec<Statement> = context.iter().map(Statement::new).collect();
    hypotheses
        .iter()
        .map(|h| {
            let h = Statement::new(h);
            let evidence: Vec<usize> = context
                .iter()
                .enumerate()
                .filter(|(_, c)| c.supports(&h))
                .map(|(i, _)| i)
                .collect();
            let stated = context.iter().any(|c| c.identical(&h));
            let contradicted = context.iter().any(|c| c.contradicts(&h));
            if evidence.is_empty() || (contradicted && !stated) {
                Evidence::not_entailed()
            } else {
                Evidence {
                    entailed: true,
                    evidence,
                }
            }
        })
        .collect()
}

/// The placeholder of [`ENTAILMENT_SYSTEM`] where the worked examples go.
const FEWSHOT_PLACEHOLDER: &str = "<FEWSHOT>";

/// The numbered phrases of one sample, as the prompt and the worked examples show them:
/// `Reference phrases:` (the context) and `Hypothesis phrases:`, numbered from 1, one per line,
/// texts only (F.2: no tags, no boxes), then `Answer:`.
pub fn entailment_task(hypotheses: &[Part], context: &[Part]) -> String {
    let mut task = String::from("Reference phrases:\n");
    let numbered = |task: &mut String, parts: &[Part]| {
        if parts.is_empty() {
            task.push_str("(none)\n");
        }
        for (i, part) in parts.iter().enumerate() {
            let text = part.text.split_whitespace().collect::<Vec<_>>().join(" ");
            task.push_str(&format!("{}. {text}\n", i + 1));
        }
    };
    numbered(&mut task, context);
    task.push_str("\nHypothesis phrases:\n");
    numbered(&mut task, hypotheses);
    task.push_str("\nAnswer:\n");
    task
}

/// The whole entailment prompt of one direction of one sample: `system` with `fewshot` at its
/// `<FEWSHOT>` placeholder (appended when it has none; substituted once, never searched again),
/// then [`entailment_task`]. Ask for [`ENTAILMENT_SCHEMA`] and read the answer with
/// [`parse_entailment`]. Without context every hypothesis is NOT_ENTAILED; callers need not ask.
pub fn entailment_prompt(
    system: &str,
    fewshot: &str,
    hypotheses: &[Part],
    context: &[Part],
) -> String {
    let (system, fewshot) = (system.trim_end(), fewshot.trim_end());
    let mut prompt = match system.split_once(FEWSHOT_PLACEHOLDER) {
        Some((before, after)) => format!("{before}{fewshot}{after}"),
        None if fewshot.is_empty() => system.to_string(),
        None => format!("{system}\n\n{fewshot}"),
    };
    prompt.push_str("\n\n");
    prompt.push_str(&entailment_task(hypotheses, context));
    prompt
}

/// The JSON object of an answer: from its first `{` to its last `}` (code fences and text
/// around it are dropped).
fn json_object(answer: &str) -> Result<Value> {
    let object = match (answer.find('{'), answer.rfind('}')) {
        (Some(start), Some(end)) if start < end => &answer[start..=end],
        _ => return Err(input("the answer holds no JSON object")),
    };
    serde_json::from_str(object)
        .map_err(|e| input(format!("the answer's JSON object does not parse: {e}")))
}

fn input(message: impl Into<String>) -> EvaluateError {
    EvaluateError::Input(message.into())
}

/// A phrase number (an integer, or a string holding one) checked against `1..=n`; 0-based.
fn number(value: &Value, n: usize, what: &str) -> Result<usize> {
    let parsed = match value {
        Value::Number(number) => number.as_u64(),
        Value::String(text) => text.trim().parse().ok(),
        _ => None,
    };
    parsed
        .and_then(|k| usize::try_from(k).ok())
        .filter(|k| (1..=n).contains(k))
        .map(|k| k - 1)
        .ok_or_else(|| input(format!("{what} number {value} out of range 1..={n}")))
}

/// The evidence of an entailment answer shaped like [`ENTAILMENT_SCHEMA`]:
/// `{"phrases": [{"index": i, "status": "ENTAILED" | "NOT_ENTAILED", "evidence": [j, …]}]}`
/// with the 1-based numbers of the prompt, returned 0-based in hypothesis order. Tolerated:
/// code fences and text around the object, numbers as strings, status in any case with spaces
/// or hyphens for `_`, a missing `evidence`. An error (the caller ignores the sample and counts
/// it) when there is no such object, not exactly one entry per hypothesis, a number out of range
/// or an unknown status. NOT_ENTAILED drops any evidence listed.
pub fn parse_entailment(
    answer: &str,
    n_hypotheses: usize,
    n_context: usize,
) -> Result<Vec<Evidence>> {
    let object = json_object(answer)?;
    let phrases = object
        .get("phrases")
        .and_then(Value::as_array)
        .ok_or_else(|| input("the answer has no \"phrases\" list"))?;
    if phrases.len() != n_hypotheses {
        return Err(input(format!(
            "{} phrases judged for {n_hypotheses} hypotheses",
            phrases.len()
        )));
    }
    let mut out: Vec<Option<Evidence>> = vec![None; n_hypotheses];
    for phrase in phrases {
        let index = phrase
            .get("index")
            .ok_or_else(|| input(format!("a phrase without \"index\": {phrase}")))?;
        let slot = number(index, n_hypotheses, "hypothesis")?;
        let status = phrase
            .get("status")
            .and_then(Value::as_str)
            .ok_or_else(|| input(format!("a phrase without a \"status\" string: {phrase}")))?;
        let entailed = match status
            .trim()
            .to_uppercase()
            .replace([' ', '-'], "_")
            .as_str()
        {
            "ENTAILED" => true,
            "NOT_ENTAILED" => false,
            _ => return Err(input(format!("unknown status {status:?}"))),
        };
        let listed = match phrase.get("evidence") {
            None | Some(Value::Null) => &[][..],
            Some(Value::Array(items)) => items.as_slice(),
            Some(other) => return Err(input(format!("\"evidence\" is not a list: {other}"))),
        };
        let mut evidence = listed
            .iter()
            .map(|j| number(j, n_context, "reference"))
            .collect::<Result<Vec<usize>>>()?;
        if entailed {
            evidence.sort_unstable();
            evidence.dedup();
        } else {
            evidence.clear();
        }
        if out[slot].replace(Evidence { entailed, evidence }).is_some() {
            return Err(input(format!(
                "hypothesis number {} judged twice",
                slot + 1
            )));
        }
    }
    // Exactly n entries with n distinct in-range numbers: every slot is filled.
    Ok(out.into_iter().flatten().collect())
}
