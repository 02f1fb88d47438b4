//! The reading judge's reader (`cxrlake run --judge reading`, judge id `reading-1`): claims
//! (finding with its refdefs ancestors, polarity, side) read by cxrlake's rules extractor from a
//! report's FINDINGS and IMPRESSION sentences and from answer parts, for
//! `cxrlake_judge::reading` to check each part against its report. Claims are cached per text
//! (answer parts repeat across studies; a report is read once for all its QA pairs).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use cxrlake_extract::model::{RawObservation, SectionType};
use cxrlake_extract::rules::RulesExtractor;
use cxrlake_judge::{Claim, ReportReader};
use cxrlake_refdefs::RefDefs;

/// Cached texts before the cache is emptied (bounds memory on big lakes).
const CACHE_LIMIT: usize = 50_000;

/// Reads claims with the rules extractor.
#[derive(Debug)]
pub struct RulesReader {
    extractor: RulesExtractor,
    /// Finding → its ancestors, nearest first.
    ancestors: HashMap<String, Vec<String>>,
    /// Finding name or synonym → the finding.
    canonical: HashMap<String, String>,
    texts: Mutex<HashMap<String, Arc<Vec<Claim>>>>,
    reports: Mutex<HashMap<String, Arc<Vec<Claim>>>>,
}

impl RulesReader {
    /// The reader of `defs`' vocabulary.
    pub fn new(defs: &RefDefs) -> RulesReader {
        let parents: HashMap<String, Vec<String>> = defs
            .findings()
            .map(|f| {
                (
                    f.name.get_ref().to_lowercase(),
                    f.parents
                        .iter()
                        .map(|p| p.get_ref().to_lowercase())
                        .collect(),
                )
            })
            .collect();
        let ancestors = parents
            .keys()
            .map(|name| {
                let mut out: Vec<String> = Vec::new();
                let mut frontier = vec![name.clone()];
                while let Some(next) = frontier.pop() {
                    for parent in parents.get(&next).into_iter().flatten() {
                        if !out.contains(parent) && parent != name && out.len() < 32 {
                            out.push(parent.clone());
                            frontier.insert(0, parent.clone());
                        }
                    }
                }
                (name.clone(), out)
            })
            .collect();
        let mut canonical = HashMap::new();
        for finding in defs.findings() {
            let name = finding.name.get_ref().to_lowercase();
            for synonym in &finding.synonyms {
                canonical
                    .entry(synonym.get_ref().to_lowercase())
                    .or_insert_with(|| name.clone());
            }
            canonical.insert(name.clone(), name);
        }
        RulesReader {
            extractor: RulesExtractor::new(defs),
            ancestors,
            canonical,
            texts: Mutex::new(HashMap::new()),
            reports: Mutex::new(HashMap::new()),
        }
    }

    fn claims(&self, observations: &[RawObservation]) -> Vec<Claim> {
        let mut out: Vec<Claim> = observations
            .iter()
            .filter(|o| !o.entity.trim().is_empty())
            .map(|o| {
                let entity = self.canonical_name(&o.entity);
                let mut lineage = vec![entity.clone()];
                lineage.extend(self.ancestors.get(&entity).cloned().unwrap_or_default());
                let polarity = match o.probability.as_deref() {
                    Some("negative") => "neg",
                    Some("positive") | None => "pos",
                    Some(_) => "unc",
                };
                Claim {
                    lineage,
                    polarity: polarity.to_string(),
                    side: side(o),
                }
            })
            .collect();
        out.sort();
        out.dedup();
        out
    }

    /// The finding a name or synonym is (a plural read as its singular), else the name.
    fn canonical_name(&self, name: &str) -> String {
        let lower = name.trim().to_lowercase();
        let singular = lower.strip_suffix('s').unwrap_or(&lower);
        self.canonical
            .get(&lower)
            .or_else(|| self.canonical.get(singular))
            .cloned()
            .unwrap_or(lower)
    }

    fn sentence_claims(&self, sentence: &str) -> Vec<Claim> {
        self.claims(&self.extractor.observations(&[sentence]))
    }

    /// The claims of one clause; the indication answer's "Evaluation for X is negative" (or
    /// positive, uncertain) states X with that polarity.
    fn clause_claims(&self, clause: &str) -> Vec<Claim> {
        let lower = clause.trim().trim_end_matches('.').to_lowercase();
        let verdict = lower
            .strip_prefix("evaluation for ")
            .and_then(|rest| rest.rsplit_once(" is "));
        match verdict {
            Some((what, word @ ("negative" | "positive" | "uncertain"))) => {
                let polarity = match word {
                    "negative" => "neg",
                    "positive" => "pos",
                    _ => "unc",
                };
                self.sentence_claims(&format!("There is {what}."))
                    .into_iter()
                    .map(|c| Claim {
                        polarity: polarity.to_string(),
                        ..c
                    })
                    .collect()
            }
            _ => self.sentence_claims(clause),
        }
    }
}

/// The side an observation names, from its regions and name.
fn side(observation: &RawObservation) -> Option<String> {
    let text = format!(" {} {} ", observation.regions.join(" "), observation.name).to_lowercase();
    let left = text.contains("left");
    let right = text.contains("right");
    if text.contains("bilateral") || text.contains(" both ") || (left && right) {
        Some("bilateral".into())
    } else if left {
        Some("left".into())
    } else if right {
        Some("right".into())
    } else {
        None
    }
}

/// `key`'s claims from `cache`, else `read` them and keep them.
fn cached(
    cache: &Mutex<HashMap<String, Arc<Vec<Claim>>>>,
    key: &str,
    read: impl FnOnce() -> Vec<Claim>,
) -> Vec<Claim> {
    if let Some(hit) = cache.lock().ok().and_then(|c| c.get(key).cloned()) {
        return hit.as_ref().clone();
    }
    let claims = Arc::new(read());
    if let Ok(mut cache) = cache.lock() {
        if cache.len() >= CACHE_LIMIT {
            cache.clear();
        }
        cache.insert(key.to_string(), Arc::clone(&claims));
    }
    claims.as_ref().clone()
}

impl ReportReader for RulesReader {
    fn report_claims(&self, report: &str) -> Vec<Claim> {
        cached(&self.reports, report, || {
            let mut claims: Vec<Claim> = self
                .extractor
                .sentences(report)
                .iter()
                .filter(|s| {
                    matches!(
                        s.section_type,
                        SectionType::Findings | SectionType::Impression
                    )
                })
                .flat_map(|s| self.sentence_claims(&s.sentence))
                .collect();
            claims.sort();
            claims.dedup();
            claims
        })
    }

    /// Each sentence and colon-separated clause read on its own: a template's "Evaluation for
    /// rib fracture is negative: Heart size is normal." negates the fracture, not the heart size.
    fn text_claims(&self, text: &str) -> Vec<Claim> {
        cached(&self.texts, text, || {
            let mut claims: Vec<Claim> = text
                .split([':', ';'])
                .flat_map(|clause| clause.split(". "))
                .filter(|clause| !clause.trim().is_empty())
                .flat_map(|clause| self.clause_claims(clause.trim()))
                .collect();
            claims.sort();
            claims.dedup();
            claims
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cxrlake_judge::reading::{PartReading, entailment};

    fn level(reader: &RulesReader, report: &str, part: &str, from_report: bool) -> String {
        let report = reader.report_claims(report);
        entailment(
            from_report,
            &PartReading::new(reader.text_claims(part), &report),
        )
        .map_or("none".to_string(), |(level, _)| level.to_string())
    }

    #[test]
    fn answers_are_checked_against_real_style_reports() {
        let defs = RefDefs::embedded().expect("refdefs");
        let reader = RulesReader::new(&defs);
        let report = "FINDINGS: Small left pleural effusion. No pneumothorax. The heart size is \
                      normal.\nIMPRESSION: Small left pleural effusion.";
        assert_eq!(
            level(
                &reader,
                report,
                "There is a small left pleural effusion.",
                true
            ),
            "ALIGNED_MENTIONED"
        );
        assert_eq!(
            level(&reader, report, "There is no pleural effusion.", true),
            "NON_ALIGNED_CONTRADICTING"
        );
        assert_eq!(
            level(&reader, report, "There is a right pleural effusion.", false),
            "NON_ALIGNED_MISLEADING"
        );
        assert_eq!(
            level(&reader, report, "There is a pneumothorax.", false),
            "NON_ALIGNED_CONTRADICTING"
        );
        assert_eq!(
            level(
                &reader,
                report,
                "There is a right upper lobe consolidation.",
                false
            ),
            "NON_ALIGNED_NON_INFERRABLE"
        );
        assert_eq!(
            level(&reader, report, "No consolidation is seen.", false),
            "ALIGNED_NEGATIVE_NOT_MENTIONED"
        );
        assert_eq!(level(&reader, report, "Yes.", true), "none");
        assert_eq!(
            level(
                &reader,
                "FINDINGS: Bilateral pleural effusions.",
                "Pleural effusion is seen.",
                false
            ),
            "ALIGNED_INFERRABLE"
        );
        assert_eq!(
            level(
                &reader,
                report,
                "Evaluation for pneumothorax is negative: Small left pleural effusion.",
                false
            ),
            "ALIGNED_INFERRABLE"
        );
        assert_eq!(
            level(
                &reader,
                report,
                "Evaluation for pneumothorax is positive: Small left pleural effusion.",
                false
            ),
            "NON_ALIGNED_CONTRADICTING"
        );
    }

    #[test]
    fn the_reading_judge_rates_a_contradicting_pair_through_its_requests() {
        use cxrlake_judge::{Criterion, Judge, Part, QaItem, heuristic};
        let defs = RefDefs::embedded().expect("refdefs");
        let judge = Judge::Reading {
            reader: Arc::new(RulesReader::new(&defs)),
        };
        assert_eq!(judge.id(), "reading-1");
        let report = "FINDINGS: No pneumothorax. Small right pleural effusion.";
        let part = |text| Part {
            answer_type: "main_answer",
            text,
            from_report: true,
            positiveness: Some("pos"),
            grounded: true,
        };
        let levels = |text| {
            let item = QaItem {
                strategy: "finding",
                question: "Is there a pneumothorax?",
                parts: vec![part(text)],
                report: Some(report),
            };
            let request = judge.request(&judge.cache_id(), Criterion::Entailment, &item);
            heuristic::judge(Criterion::Entailment, &request.input).levels
        };
        assert_eq!(
            levels("Yes, there is a pneumothorax."),
            [Some("NON_ALIGNED_CONTRADICTING")]
        );
        assert_eq!(
            levels("There is a small left pleural effusion."),
            [Some("NON_ALIGNED_MISLEADING")]
        );
        assert_eq!(
            levels("There is a large mass."),
            [Some("NON_ALIGNED_NON_INFERRABLE")]
        );
        assert_eq!(
            levels("Small right pleural effusion."),
            [Some("ALIGNED_MENTIONED")]
        );
        // The heuristic judge's inputs are as before: no reading in them.
        let item = QaItem {
            strategy: "finding",
            question: "Is there a pneumothorax?",
            parts: vec![part("Yes, there is a pneumothorax.")],
            report: Some(report),
        };
        let plain = Judge::Heuristic.request("heuristic-1", Criterion::Entailment, &item);
        assert!(!plain.input.contains("readings"), "{}", plain.input);
        assert_eq!(
            heuristic::judge(Criterion::Entailment, &plain.input).levels,
            [Some("ALIGNED_MENTIONED")]
        );
    }
}
