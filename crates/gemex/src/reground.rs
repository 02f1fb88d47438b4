//! Stage I of GEMeX (paper 004, section 3.1, table 9): every report sentence re-grounded onto
//! exactly one of the 30 regions, split or rewritten where it covers several, left out where it
//! has none. The clinical rules of table 9 serve both as the offline re-grounder's overrides and
//! as post-checks of the LLM's answers.
//!
//! ```text
//!  sentence ─┬─ "cardiomediastinal" ─► "cardiac …": cardiac silhouette,
//!            │                          "mediastinal …": mediastinum
//!            ├─ clinical rule ────────► its region (effusion size, pulmonary venous,
//!            │                          atrium/ventricle, global statement)
//!            └─ Chest ImaGenome links ─► 29 → 30 (reserve, incorporate, delete)
//!                                     ─► most specific zone per side, sides and zones merged
//!                                     ─► one region (the one the sentence names first) or none
//! ```

use std::sync::Arc;

use cxrlake_generate::{GenerationTask, PromptSet, TaskPrompt};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::regions::{BOTH, Footprint, LEFT, RIGHT, Regions};
use crate::{Result, capitalize, find_phrase, nullable, words};

/// The SQL function name of the re-grounding task.
pub const TASK_NAME: &str = "gemex_reground";

/// The offline re-grounder's id (bump it when its output changes).
pub const OFFLINE_ID: &str = "offline-gemex-reground-1";

/// The rule name of the cardiomediastinal split (table 9 rule 3's example).
pub const CARDIOMEDIASTINAL_SPLIT: &str = "cardiomediastinal-split";

/// One re-grounded sentence: the record of `gemex_reground` (`schemas::gemex::grounded_fields`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Grounded {
    /// The sentence (the source sentence, or a rewritten part of it).
    pub sentence: String,
    /// Its one region of the 30.
    pub region: String,
    /// The rule that chose the region (offline), or the clinical rule that disagrees with the
    /// LLM's region (`effusion-size: expected left lower lung zone`).
    pub rule: Option<String>,
}

/// Effusion size, from the words near "effusion".
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Size {
    Small,
    Moderate,
    Large,
}

/// Regions of a pleural effusion by side (left, right, bilateral) and size (small, moderate,
/// large or not given): table 9 rule 4.
const EFFUSION_REGIONS: [[&str; 3]; 3] = [
    [
        "left lower lung zone",
        "left mid-to-lower lung zone",
        "left lung",
    ],
    [
        "right lower lung zone",
        "right mid-to-lower lung zone",
        "right lung",
    ],
    [
        "bilateral lower lung zone",
        "bilateral mid-to-lower lung zone",
        "bilateral lung",
    ],
];

const SMALL: &[&str] = &[
    "small", "tiny", "trace", "minimal", "trivial", "minute", "smaller",
];
const MODERATE: &[&str] = &["moderate", "moderately", "medium"];
const LARGE: &[&str] = &[
    "large",
    "larger",
    "substantial",
    "massive",
    "huge",
    "big",
    "sizable",
    "sizeable",
    "extensive",
];
const BILATERAL: &[&str] = &[
    "bilateral",
    "bilaterally",
    "both",
    "bibasilar",
    "bibasal",
    "bibasally",
];
const NEGATIONS: &[&str] = &["no", "without", "not", "negative", "free", "absent", "nor"];
/// Words that end a clause (besides `, ; :`).
const CLAUSE_BREAKS: &[&str] = &["but", "however", "although", "though", "whereas", "while"];
/// Words that end the phrase before "effusion".
const PHRASE_BREAKS: &[&str] = &["and", "with", "or", "plus"];
const COPULAS: &[&str] = &[
    "is", "are", "appears", "appear", "remains", "remain", "measures",
];

/// Words that name a place on the image: a sentence with none of them is about the chest as a
/// whole (table 9 rule 2).
const ANATOMY: &[&str] = &[
    "left",
    "right",
    "bilateral",
    "bilaterally",
    "bibasilar",
    "bibasal",
    "basilar",
    "basal",
    "base",
    "bases",
    "apex",
    "apices",
    "apical",
    "upper",
    "mid",
    "middle",
    "lower",
    "lobe",
    "lobes",
    "lingula",
    "lingular",
    "hilar",
    "hilum",
    "hila",
    "perihilar",
    "heart",
    "cardiac",
    "cardiomegaly",
    "cardiomediastinal",
    "mediastinum",
    "mediastinal",
    "aorta",
    "aortic",
    "diaphragm",
    "hemidiaphragm",
    "hemidiaphragms",
    "trachea",
    "tracheal",
    "spine",
    "spinal",
    "vertebral",
    "abdomen",
    "abdominal",
    "stomach",
    "svc",
    "cavoatrial",
    "costophrenic",
    "retrocardiac",
    "clavicle",
    "rib",
    "ribs",
    "shoulder",
    "sternotomy",
    "atrium",
    "ventricle",
];

/// Words of normal findings.
const NORMAL: &[&str] = &["clear", "normal", "unremarkable", "expanded", "aerated"];

/// Words of statements about the lungs as a whole ("lungs are clear", "no focal
/// consolidation", "no acute cardiopulmonary process").
const GLOBAL: &[&str] = &[
    "lung",
    "lungs",
    "pulmonary",
    "cardiopulmonary",
    "consolidation",
    "consolidations",
    "pneumothorax",
    "effusion",
    "effusions",
    "edema",
    "pneumonia",
    "opacity",
    "opacities",
    "infiltrate",
    "infiltrates",
    "airspace",
    "atelectasis",
    "nodule",
    "nodules",
];

/// The clinical rule of table 9 that places `sentence`, as `(rule name, region)`:
///
/// - `effusion-size` (rule 4): a pleural effusion (or pleural fluid) with a side — small, tiny or
///   trace: the lower lung zone; moderate: the mid-to-lower lung zone; large or substantial: the
///   lung; no size (or negated): the lung; `bilateral`, `both`, `bibasilar`, both sides named, or
///   plural `effusions` without a side: the bilateral region. The largest size word of the
///   phrase wins (`small to moderate` → moderate). A singular effusion without a side has no
///   rule.
/// - `pulmonary-venous` (rule 5): pulmonary venous congestion or hypertension → bilateral hilar
///   structures.
/// - `atrium-ventricle` (rule 6): atrium, atrial, ventricle, ventricular → cardiac silhouette.
/// - `global-statement` (rule 2): a negated or normal statement about the lungs (lungs,
///   consolidation, pneumothorax, effusion, edema, opacity, …) that names no place → bilateral
///   lung ("The lungs are clear.", "No focal consolidation, effusion or pneumothorax."); a
///   positive finding without a place ("Patchy opacity.") has no rule.
pub fn clinical_rule(sentence: &str) -> Option<(&'static str, &'static str)> {
    let clauses = clauses(sentence);
    if let Some(region) = effusion_region(&clauses) {
        return Some(("effusion-size", region));
    }
    let all: Vec<String> = clauses.concat();
    let has = |list: &[&str]| all.iter().any(|word| list.contains(&word.as_str()));
    let venous = all.iter().enumerate().any(|(i, word)| {
        word == "venous"
            && (i > 0 && all[i - 1] == "pulmonary"
                || all.get(i + 1).is_some_and(|next| {
                    [
                        "congestion",
                        "hypertension",
                        "engorgement",
                        "distension",
                        "distention",
                    ]
                    .contains(&next.as_str())
                }))
    });
    if venous {
        return Some(("pulmonary-venous", "bilateral hilar structures"));
    }
    if has(&[
        "atrium",
        "atria",
        "atrial",
        "ventricle",
        "ventricles",
        "ventricular",
        "biventricular",
    ]) {
        return Some(("atrium-ventricle", "cardiac silhouette"));
    }
    let about_the_whole = has(NEGATIONS) || has(&["lungs"]) || has(NORMAL);
    if has(GLOBAL) && !has(ANATOMY) && about_the_whole {
        return Some(("global-statement", "bilateral lung"));
    }
    None
}

/// The lower-case words of each clause of `sentence` (split at `, ; :` and at "but",
/// "however", …).
fn clauses(sentence: &str) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    for piece in sentence.split([',', ';', ':']) {
        let mut clause = Vec::new();
        for word in words(piece) {
            if CLAUSE_BREAKS.contains(&word.as_str()) {
                out.push(std::mem::take(&mut clause));
            } else {
                clause.push(word);
            }
        }
        out.push(clause);
    }
    out.retain(|clause| !clause.is_empty());
    out
}

/// Left, right or both, from side words.
fn side_of(words: &[String]) -> Option<u8> {
    let has = |word: &str| words.iter().any(|w| w == word);
    if words.iter().any(|w| BILATERAL.contains(&w.as_str())) || has("left") && has("right") {
        Some(BOTH)
    } else if has("left") {
        Some(LEFT)
    } else if has("right") {
        Some(RIGHT)
    } else {
        None
    }
}

/// The largest size word among `words`.
fn size_of(words: &[String]) -> Option<Size> {
    words
        .iter()
        .filter_map(|word| {
            let word = word.as_str();
            if LARGE.contains(&word) {
                Some(Size::Large)
            } else if MODERATE.contains(&word) {
                Some(Size::Moderate)
            } else if SMALL.contains(&word) {
                Some(Size::Small)
            } else {
                None
            }
        })
        .max()
}

/// Table 9 rule 4 on the first effusion mention with a side.
fn effusion_region(clauses: &[Vec<String>]) -> Option<&'static str> {
    for clause in clauses {
        for (i, word) in clause.iter().enumerate() {
            let plural = word == "effusions";
            let is_effusion = word == "effusion"
                || plural
                || word == "fluid" && i > 0 && clause[i - 1] == "pleural";
            if !is_effusion {
                continue;
            }
            let mut start = i;
            while start > 0 && i - start < 5 && !PHRASE_BREAKS.contains(&clause[start - 1].as_str())
            {
                start -= 1;
            }
            let before = &clause[start..i];
            let after = &clause[i + 1..clause.len().min(i + 5)];
            let side = if plural && side_of(clause) == Some(BOTH) {
                Some(BOTH)
            } else {
                side_of(before)
                    .or_else(|| side_of(after))
                    .or_else(|| side_of(clause))
            }
            .or(plural.then_some(BOTH));
            let Some(side) = side else {
                continue;
            };
            let negated = before.iter().any(|w| NEGATIONS.contains(&w.as_str()));
            let size = if negated {
                None
            } else {
                size_of(before).or_else(|| {
                    after
                        .first()
                        .filter(|w| COPULAS.contains(&w.as_str()))
                        .and_then(|_| size_of(&after[1..after.len().min(3)]))
                })
            };
            let row = match side {
                LEFT => 0,
                RIGHT => 1,
                _ => 2,
            };
            let column = match size {
                Some(Size::Small) => 0,
                Some(Size::Moderate) => 1,
                Some(Size::Large) | None => 2,
            };
            return Some(EFFUSION_REGIONS[row][column]);
        }
    }
    None
}

/// `sentence` with every "cardiomediastinal" (any case) replaced by `with` (capitalised where
/// the original was).
fn replace_cardiomediastinal(sentence: &str, with: &str) -> String {
    const WORD: &str = "cardiomediastinal";
    let mut out = String::with_capacity(sentence.len());
    let mut rest = sentence;
    while let Some(at) = rest.to_ascii_lowercase().find(WORD) {
        out.push_str(&rest[..at]);
        let original = &rest[at..at + WORD.len()];
        if original.starts_with(|c: char| c.is_uppercase()) {
            out.push_str(&capitalize(with));
        } else {
            out.push_str(with);
        }
        rest = &rest[at + WORD.len()..];
    }
    out.push_str(rest);
    out
}

/// The offline re-grounding of one sentence from its Chest ImaGenome regions (table 8 and
/// table 9's rules), each output sentence on exactly one region of `regions`:
///
/// 1. "cardiomediastinal" splits the sentence into a "cardiac" one (cardiac silhouette) and a
///    "mediastinal" one (mediastinum), rule `cardiomediastinal-split`.
/// 2. A [`clinical_rule`] decides the region (rule recorded).
/// 3. Otherwise the links: each Chest ImaGenome region becomes its GEMeX region (deleted ones
///    are dropped); per side the most specific lung regions are kept (zones over the whole
///    lung); mid + lower zones become mid-to-lower, mid + upper mid-to-upper, upper + lower the
///    lung; the two sides merge into the bilateral region of their combined zones, left and
///    right hila or hemidiaphragms into the bilateral ones. When regions of several kinds remain
///    (a lung zone and the heart, say) the one the sentence names first wins, else the lung
///    region, else the first in table order.
/// 4. No region: the sentence is left out (no output).
pub fn offline_reground(
    sentence: &str,
    imagenome_regions: &[String],
    regions: &Regions,
) -> Vec<Grounded> {
    let sentence = sentence.trim();
    if sentence.is_empty() {
        return Vec::new();
    }
    if sentence.to_ascii_lowercase().contains("cardiomediastinal") {
        return [
            ("cardiac", "cardiac silhouette"),
            ("mediastinal", "mediastinum"),
        ]
        .iter()
        .filter_map(|(word, region)| {
            Some(Grounded {
                sentence: replace_cardiomediastinal(sentence, word),
                region: regions.normalize(region)?.to_string(),
                rule: Some(CARDIOMEDIASTINAL_SPLIT.to_string()),
            })
        })
        .collect();
    }
    if let Some((rule, region)) = clinical_rule(sentence)
        && let Some(region) = regions.normalize(region)
    {
        return vec![Grounded {
            sentence: sentence.to_string(),
            region: region.to_string(),
            rule: Some(rule.to_string()),
        }];
    }
    let mapped: Vec<&str> = imagenome_regions
        .iter()
        .filter_map(|name| regions.from_imagenome(name))
        .collect();
    combine(sentence, &mapped, regions)
        .map(|region| Grounded {
            sentence: sentence.to_string(),
            region,
            rule: None,
        })
        .into_iter()
        .collect()
}

/// One region for a sentence linked to `mapped` GEMeX regions (step 3 of
/// [`offline_reground`]).
fn combine(sentence: &str, mapped: &[&str], regions: &Regions) -> Option<String> {
    // Per side (left, right): zones named, and whether the whole lung is.
    let mut zones = [0u8; 2];
    let mut whole = [false; 2];
    let mut paired: Vec<Footprint> = Vec::new();
    let mut others: Vec<String> = Vec::new();
    for name in mapped {
        let footprint = Footprint::of(name);
        match footprint.family.as_str() {
            "lung" => {
                for (side, bit) in [LEFT, RIGHT].into_iter().enumerate() {
                    if footprint.sides & bit != 0 {
                        if footprint.zones == crate::regions::ALL_ZONES {
                            whole[side] = true;
                        } else {
                            zones[side] |= footprint.zones;
                        }
                    }
                }
            }
            "hilar" | "hemidiaphragm" => {
                match paired.iter_mut().find(|p| p.family == footprint.family) {
                    Some(seen) => seen.sides |= footprint.sides,
                    None => paired.push(footprint),
                }
            }
            _ => {
                if !others.iter().any(|other| other == name) {
                    others.push(name.to_string());
                }
            }
        }
    }
    let side_zones: Vec<u8> = (0..2)
        .map(|side| match (zones[side], whole[side]) {
            (0, true) => crate::regions::ALL_ZONES,
            (zones, _) => zones,
        })
        .collect();
    let lung = Footprint {
        family: "lung".into(),
        sides: (if side_zones[0] != 0 { LEFT } else { 0 })
            | (if side_zones[1] != 0 { RIGHT } else { 0 }),
        zones: side_zones[0] | side_zones[1],
    };
    let mut candidates: Vec<String> = Vec::new();
    candidates.extend(lung.name());
    candidates.extend(paired.iter().filter_map(Footprint::name));
    candidates.extend(others);
    let candidates: Vec<&str> = candidates
        .iter()
        .filter_map(|name| regions.normalize(name))
        .collect();
    if candidates.len() <= 1 {
        return candidates.first().map(|name| name.to_string());
    }
    let sentence_words = words(sentence);
    let first_mention = |name: &str| {
        let region = regions.region(name)?;
        std::iter::once(&region.name)
            .chain(&region.synonyms)
            .filter_map(|phrase| find_phrase(&sentence_words, &words(phrase).join(" ")))
            .min()
    };
    let named = candidates
        .iter()
        .filter_map(|name| first_mention(name).map(|at| (at, *name)))
        .min();
    let chosen = match named {
        Some((_, name)) => name,
        None => candidates
            .iter()
            .copied()
            .find(|name| Footprint::of(name).family == "lung")
            .or_else(|| regions.names().find(|name| candidates.contains(name)))?,
    };
    Some(chosen.to_string())
}

/// A re-grounding input row: one distinct report sentence of a study with the Chest ImaGenome
/// regions linked to it.
#[derive(Debug, Deserialize)]
struct RegroundInput {
    #[serde(default, deserialize_with = "nullable")]
    sentence: String,
    #[serde(default, deserialize_with = "nullable")]
    imagenome_regions: Vec<String>,
}

impl RegroundInput {
    fn parse(input: &Value) -> std::result::Result<RegroundInput, String> {
        let row: RegroundInput = serde_json::from_value(input.clone())
            .map_err(|e| format!("invalid re-grounding input row: {e}"))?;
        if row.sentence.trim().is_empty() {
            return Err("the input row has no sentence".into());
        }
        Ok(row)
    }
}

/// Words that carry no content, for the check that an answer's sentences come from the input.
const STOPWORDS: &[&str] = &[
    "the", "and", "are", "there", "with", "for", "this", "that", "seen", "has", "have", "was",
    "were", "from", "which", "its", "also",
];

/// The content words (three letters or more, not stop words) of `text`.
fn content_words(text: &str) -> Vec<String> {
    words(text)
        .into_iter()
        .filter(|word| word.chars().count() >= 3 && !STOPWORDS.contains(&word.as_str()))
        .collect()
}

/// The re-grounding task (`gemex_reground`): the prompt of table 9, the checks of an LLM answer
/// `{sentence: region}`, and the offline re-grounder.
#[derive(Debug)]
pub struct RegroundTask {
    prompts: Arc<PromptSet>,
    prompt: TaskPrompt,
    regions: Arc<Regions>,
    /// The 30 names joined by ", " (placeholder REGIONS).
    region_list: String,
}

impl RegroundTask {
    /// The task over these prompts (task `reground`) and regions.
    pub fn new(prompts: Arc<PromptSet>, regions: Arc<Regions>) -> Result<RegroundTask> {
        let prompt = prompts.require("reground")?.clone();
        let region_list = regions.names().collect::<Vec<_>>().join(", ");
        Ok(RegroundTask {
            prompts,
            prompt,
            regions,
            region_list,
        })
    }
}

impl GenerationTask for RegroundTask {
    fn name(&self) -> &str {
        TASK_NAME
    }

    fn prompt(&self) -> &TaskPrompt {
        &self.prompt
    }

    fn prompt_version(&self) -> &str {
        self.prompts.version()
    }

    /// `SENTENCE` (the sentence) and `REGIONS` (the 30 names joined by ", ").
    fn placeholders(
        &self,
        input: &Value,
    ) -> std::result::Result<Vec<(&'static str, String)>, String> {
        let row = RegroundInput::parse(input)?;
        Ok(vec![
            ("SENTENCE", row.sentence.trim().to_string()),
            ("REGIONS", self.region_list.clone()),
        ])
    }

    /// An answer `{sentence: region}`: every region a name or synonym of the 30 (normalised),
    /// every sentence non-empty and sharing a content word with the input sentence (so an echo
    /// of the demonstrations is refused); `{}` leaves the sentence out. Each record's `rule` is
    /// the clinical rule that expects another region, if any (`effusion-size: expected left
    /// lower lung zone`).
    fn check(&self, input: &Value, answer: &Value) -> std::result::Result<Vec<Value>, String> {
        let row = RegroundInput::parse(input)?;
        let Some(answer) = answer.as_object() else {
            return Err("the answer is not a JSON object {sentence: region}".into());
        };
        let source = content_words(&row.sentence);
        let mut records = Vec::with_capacity(answer.len());
        let mut problems = Vec::new();
        for (sentence, region) in answer {
            let sentence = sentence.trim();
            let Some(region) = region.as_str() else {
                problems.push(format!("the region of \"{sentence}\" is not a string"));
                continue;
            };
            if sentence.is_empty() {
                problems.push("an empty sentence".to_string());
                continue;
            }
            if !content_words(sentence)
                .iter()
                .any(|word| source.contains(word))
            {
                problems.push(format!(
                    "\"{sentence}\" is not a sentence of the input or a rewrite of it"
                ));
                continue;
            }
            let Some(region) = self.regions.normalize(region) else {
                problems.push(format!(
                    "\"{region}\" (for \"{sentence}\") is not one of the regions of the list"
                ));
                continue;
            };
            let rule = clinical_rule(sentence)
                .filter(|(_, expected)| self.regions.normalize(expected) != Some(region))
                .map(|(rule, expected)| format!("{rule}: expected {expected}"));
            records.push(Grounded {
                sentence: sentence.to_string(),
                region: region.to_string(),
                rule,
            });
        }
        if !problems.is_empty() {
            return Err(problems.join("; "));
        }
        records
            .iter()
            .map(|record| serde_json::to_value(record).map_err(|e| e.to_string()))
            .collect()
    }

    /// [`offline_reground`] of the row's sentence and Chest ImaGenome regions.
    fn offline(&self, input: &Value) -> std::result::Result<Vec<Value>, String> {
        let row = RegroundInput::parse(input)?;
        offline_reground(&row.sentence, &row.imagenome_regions, &self.regions)
            .iter()
            .map(|record| serde_json::to_value(record).map_err(|e| e.to_string()))
            .collect()
    }

    fn offline_id(&self) -> &str {
        OFFLINE_ID
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn regions() -> Arc<Regions> {
        Arc::new(Regions::embedded().expect("embedded regions"))
    }

    fn task() -> RegroundTask {
        let prompts = Arc::new(crate::prompts().expect("embedded prompts"));
        RegroundTask::new(prompts, regions()).expect("task")
    }

    fn strings(names: &[&str]) -> Vec<String> {
        names.iter().map(|name| name.to_string()).collect()
    }

    #[test]
    fn clinical_rules_by_case() {
        for (sentence, rule, region) in [
            (
                "Small left pleural effusion.",
                "effusion-size",
                "left lower lung zone",
            ),
            (
                "Tiny right effusion is present.",
                "effusion-size",
                "right lower lung zone",
            ),
            (
                "Trace left pleural fluid.",
                "effusion-size",
                "left lower lung zone",
            ),
            (
                "Moderate bilateral effusions",
                "effusion-size",
                "bilateral mid-to-lower lung zone",
            ),
            (
                "Small to moderate left pleural effusion.",
                "effusion-size",
                "left mid-to-lower lung zone",
            ),
            ("Large right effusion", "effusion-size", "right lung"),
            (
                "Substantial left pleural effusion.",
                "effusion-size",
                "left lung",
            ),
            ("Left effusion", "effusion-size", "left lung"),
            (
                "There is a pleural effusion on the right.",
                "effusion-size",
                "right lung",
            ),
            (
                "The left effusion is small.",
                "effusion-size",
                "left lower lung zone",
            ),
            (
                "Small bilateral pleural effusions.",
                "effusion-size",
                "bilateral lower lung zone",
            ),
            (
                "Small pleural effusions.",
                "effusion-size",
                "bilateral lower lung zone",
            ),
            (
                "Large effusions on both sides.",
                "effusion-size",
                "bilateral lung",
            ),
            (
                "Moderate cardiomegaly with a small left pleural effusion.",
                "effusion-size",
                "left lower lung zone",
            ),
            (
                "No pneumothorax, but a small right effusion.",
                "effusion-size",
                "right lower lung zone",
            ),
            ("No right pleural effusion.", "effusion-size", "right lung"),
            (
                "pulmonary venous congestion",
                "pulmonary-venous",
                "bilateral hilar structures",
            ),
            (
                "There is mild pulmonary venous hypertension.",
                "pulmonary-venous",
                "bilateral hilar structures",
            ),
            (
                "Mild venous congestion.",
                "pulmonary-venous",
                "bilateral hilar structures",
            ),
            (
                "The right atrium is enlarged",
                "atrium-ventricle",
                "cardiac silhouette",
            ),
            (
                "Pacer lead terminates in the right ventricle.",
                "atrium-ventricle",
                "cardiac silhouette",
            ),
            (
                "No focal consolidation, effusion or pneumothorax.",
                "global-statement",
                "bilateral lung",
            ),
            ("The lungs are clear.", "global-statement", "bilateral lung"),
            (
                "No acute cardiopulmonary process.",
                "global-statement",
                "bilateral lung",
            ),
        ] {
            assert_eq!(clinical_rule(sentence), Some((rule, region)), "{sentence}");
        }
        for sentence in [
            "Small pleural effusion.",
            "Heart size is normal.",
            "A right-sided central venous catheter ends in the SVC.",
            "Left lower lobe opacity.",
            "Patchy opacity.",
            "Median sternotomy wires are intact.",
            "",
        ] {
            assert_eq!(clinical_rule(sentence), None, "{sentence}");
        }
    }

    #[test]
    fn offline_transforms_the_links() {
        let regions = regions();
        let one = |sentence: &str, links: &[&str]| -> Option<String> {
            let out = offline_reground(sentence, &strings(links), &regions);
            assert!(out.len() <= 1, "{out:?}");
            out.into_iter().next().map(|g| g.region)
        };
        // Incorporated (table 8): the costophrenic angle becomes the lower lung zone.
        assert_eq!(
            one(
                "Blunting of the costophrenic angle.",
                &["left costophrenic angle"]
            )
            .as_deref(),
            Some("left lower lung zone")
        );
        // The most specific of a lung and its zones (the paper's example).
        assert_eq!(
            one(
                "There is blunting of the right costophrenic angle which may be due to overlying \
                 soft tissue.",
                &["right lung", "right lower lung zone"]
            )
            .as_deref(),
            Some("right lower lung zone")
        );
        // Left + right → bilateral; mid + lower → mid-to-lower.
        assert_eq!(
            one(
                "Bibasilar atelectasis.",
                &["left lower lung zone", "right lower lung zone"]
            )
            .as_deref(),
            Some("bilateral lower lung zone")
        );
        assert_eq!(
            one(
                "Patchy opacity.",
                &["left mid lung zone", "left lower lung zone"]
            )
            .as_deref(),
            Some("left mid-to-lower lung zone")
        );
        assert_eq!(
            one(
                "Streaky opacities.",
                &[
                    "left mid lung zone",
                    "left lower lung zone",
                    "right mid lung zone",
                    "right costophrenic angle"
                ]
            )
            .as_deref(),
            Some("bilateral mid-to-lower lung zone")
        );
        assert_eq!(
            one(
                "Apical scarring.",
                &[
                    "left apical zone",
                    "right upper lung zone",
                    "right mid lung zone"
                ]
            )
            .as_deref(),
            Some("bilateral mid-to-upper lung zone")
        );
        assert_eq!(
            one(
                "Hilar fullness.",
                &["left hilar structures", "right hilar structures"]
            )
            .as_deref(),
            Some("bilateral hilar structures")
        );
        // Deleted regions alone: left out.
        assert_eq!(one("Old clavicle fracture.", &["left clavicle"]), None);
        assert_eq!(one("Something unlinked.", &[]), None);
        // Regions of several kinds: the one named first.
        assert_eq!(
            one(
                "The heart is enlarged and there is left base atelectasis.",
                &["cardiac silhouette", "left lower lung zone"]
            )
            .as_deref(),
            Some("cardiac silhouette")
        );
        assert_eq!(
            one(
                "ET tube terminates above the carina.",
                &["trachea", "carina"]
            )
            .as_deref(),
            Some("trachea")
        );
    }

    #[test]
    fn offline_rules_override_and_cardiomediastinal_splits() {
        let regions = regions();
        let out = offline_reground(
            "Small left pleural effusion.",
            &strings(&["left lung", "left costophrenic angle", "right lung"]),
            &regions,
        );
        assert_eq!(
            out,
            [Grounded {
                sentence: "Small left pleural effusion.".into(),
                region: "left lower lung zone".into(),
                rule: Some("effusion-size".into()),
            }]
        );
        let out = offline_reground(
            "The cardiomediastinal silhouette is normal.",
            &strings(&["cardiac silhouette", "mediastinum"]),
            &regions,
        );
        assert_eq!(
            out,
            [
                Grounded {
                    sentence: "The cardiac silhouette is normal.".into(),
                    region: "cardiac silhouette".into(),
                    rule: Some(CARDIOMEDIASTINAL_SPLIT.into()),
                },
                Grounded {
                    sentence: "The mediastinal silhouette is normal.".into(),
                    region: "mediastinum".into(),
                    rule: Some(CARDIOMEDIASTINAL_SPLIT.into()),
                },
            ]
        );
        let out = offline_reground("Cardiomediastinal contours are stable.", &[], &regions);
        assert_eq!(out[0].sentence, "Cardiac contours are stable.");
        assert_eq!(out[1].sentence, "Mediastinal contours are stable.");
    }

    #[test]
    fn offline_regions_are_always_among_the_thirty() {
        let regions = regions();
        let names: Vec<&str> = regions.names().collect();
        let all: Vec<String> = crate::regions::IMAGENOME_REGIONS
            .iter()
            .map(|name| name.to_string())
            .collect();
        let sentences = [
            "Small left pleural effusion.",
            "The lungs are clear.",
            "Patchy opacity.",
            "The cardiomediastinal silhouette is normal.",
            "ET tube tip 4 cm above the carina.",
            "Mild pulmonary venous congestion.",
        ];
        // Every subset of up to three of the 29 links, for each sentence.
        for sentence in sentences {
            for a in 0..all.len() {
                for b in a..all.len() {
                    for c in (b..all.len()).step_by(4) {
                        let links = [all[a].clone(), all[b].clone(), all[c].clone()];
                        for grounded in offline_reground(sentence, &links, &regions) {
                            assert!(names.contains(&grounded.region.as_str()), "{grounded:?}");
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn llm_answers_are_normalised_and_checked() {
        let task = task();
        assert_eq!(task.name(), "gemex_reground");
        assert_eq!(task.prompt().name(), "reground");
        assert!(task.prompt_version().starts_with("1+"));
        let input = json!({
            "study_id": "s1",
            "sentence": "The cardiomediastinal silhouette is normal.",
            "imagenome_regions": null,
        });
        let values = task.placeholders(&input).expect("placeholders");
        let (system, user) = task.prompt().render(&values).expect("render");
        assert!(
            system.contains("[right lung, right mid lung zone,"),
            "{system}"
        );
        assert!(system.contains("bilateral mid-to-upper lung zone]"));
        assert_eq!(
            user,
            "Input: \"The cardiomediastinal silhouette is normal.\""
        );

        let answer = json!({
            "The cardiac silhouette is normal.": "Cardiac Region",
            "The mediastinal silhouette is normal.": "mediastinum",
        });
        let records = task.check(&input, &answer).expect("valid");
        assert_eq!(
            records,
            [
                json!({"sentence": "The cardiac silhouette is normal.", "region": "cardiac silhouette", "rule": null}),
                json!({"sentence": "The mediastinal silhouette is normal.", "region": "mediastinum", "rule": null}),
            ]
        );
        // Left out: no records.
        assert_eq!(
            task.check(&input, &json!({})).expect("empty"),
            Vec::<Value>::new()
        );
        // Unknown regions and echoes are refused.
        let error = task
            .check(
                &input,
                &json!({"The cardiac silhouette is normal.": "left kidney"}),
            )
            .expect_err("unknown region");
        assert!(error.contains("\"left kidney\""), "{error}");
        let error = task
            .check(
                &input,
                &json!({"Small left pleural effusion is present.": "left lower lung zone"}),
            )
            .expect_err("echo");
        assert!(error.contains("not a sentence of the input"), "{error}");
        assert!(task.check(&input, &json!(["x"])).is_err());
        assert!(
            task.check(&input, &json!({"The heart is normal.": 3}))
                .is_err()
        );

        // A clinical rule that disagrees is recorded, the LLM's region kept.
        let input = json!({"sentence": "Small left pleural effusion.", "imagenome_regions": []});
        let records = task
            .check(
                &input,
                &json!({"Small left pleural effusion.": "left lung"}),
            )
            .expect("valid");
        assert_eq!(records[0]["region"], "left lung");
        assert_eq!(
            records[0]["rule"],
            "effusion-size: expected left lower lung zone"
        );
        let records = task
            .check(
                &input,
                &json!({"Small left pleural effusion.": "left base"}),
            )
            .expect("valid");
        assert_eq!(records[0]["region"], "left lower lung zone");
        assert_eq!(records[0]["rule"], Value::Null);

        assert!(task.placeholders(&json!({"sentence": " "})).is_err());
        assert!(task.placeholders(&json!({"sentence": 3})).is_err());
    }

    #[test]
    fn offline_task_records() {
        let task = task();
        assert_eq!(task.offline_id(), OFFLINE_ID);
        let records = task
            .offline(&json!({
                "study_id": "s1",
                "sentence": "Bibasilar atelectasis is seen without discrete focal consolidation.",
                "imagenome_regions": ["left lower lung zone", "right lower lung zone", "carina"],
            }))
            .expect("offline");
        assert_eq!(
            records,
            [json!({
                "sentence": "Bibasilar atelectasis is seen without discrete focal consolidation.",
                "region": "bilateral lower lung zone",
                "rule": null,
            })]
        );
        let none = task
            .offline(&json!({"sentence": "Old left clavicle fracture.", "imagenome_regions": ["left clavicle"]}))
            .expect("offline");
        assert!(none.is_empty());
    }
}
