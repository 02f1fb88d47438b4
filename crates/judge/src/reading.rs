//! The reading judge: the heuristic judge with an entailment criterion that reads the report,
//! recorded as `reading-1` (`cxrlake run --judge reading`). The heuristic judges entailment by
//! provenance, so every part taken from the report is `ALIGNED_MENTIONED` by construction and
//! nothing rates below B; the reading judge checks each answer part's claims (finding,
//! polarity, side, read by a [`ReportReader`], e.g. cxrlake's rules extractor) against the
//! report's own, and gives contradicted or unsupported parts the lower levels of table 12:
//!
//! | the part claims … | the report says … | level |
//! |---|---|---|
//! | a finding present | it absent (and nowhere present) | `NON_ALIGNED_CONTRADICTING` (D) |
//! | a finding absent | it present (and nowhere absent) | `NON_ALIGNED_CONTRADICTING` (D) |
//! | a finding on one side | it only on the other side | `NON_ALIGNED_MISLEADING` (C) |
//! | a finding present | nothing about it | `NON_ALIGNED_NON_INFERRABLE` (B) |
//! | a finding absent | nothing about it | `ALIGNED_NEGATIVE_NOT_MENTIONED` (A+) |
//! | a finding as the report does | the same | `ALIGNED_MENTIONED` (report part) or `ALIGNED_INFERRABLE` (template part) (A++) |
//!
//! A finding matches a report finding when either is the other or one of its ancestors in the
//! reference definitions, in one direction only: a general statement supports or contradicts a
//! specific one as logic allows ("no opacity" contradicts "atelectasis", "atelectasis" supports
//! "opacity", the report's "small pleural effusion" supports "pleural effusion"), never the
//! other way ("an enteric tube" says nothing of "no nasogastric tube", "no consolidation"
//! nothing of "opacity"). An uncertain statement is compatible with either polarity. A part with
//! several claims takes its worst level; a part without a claim ("Yes.") keeps the provenance
//! rule.
//!
//! Completeness reads the question's findings and the report's claims about them: an answer
//! that denies one the report states present is `INCOMPLETE_MISLEADING` (C), one that leaves it
//! out `INCOMPLETE_NON_MISLEADING` (B); otherwise (no finding asked about, or none present) the
//! heuristic's rule. The other three criteria are the heuristic's.
//!
//! What the judge reads of a part, and so its content key, is the part's claims and the
//! report's claims about the same findings only, so parts about the same facts share a verdict
//! across studies.

use std::fmt::Debug;

use serde::{Deserialize, Serialize};

/// The `judge` value of the reading judge (bump when a rule changes).
pub const READING_JUDGE: &str = "reading-1";

/// One statement about a finding, as a reader takes it from a text.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Claim {
    /// The finding and its ancestors, nearest first (`["small pleural effusion", "pleural
    /// effusion"]`).
    pub lineage: Vec<String>,
    /// `pos`, `neg` or `unc`.
    pub polarity: String,
    /// `left`, `right`, `bilateral`, or None when the text names no side.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub side: Option<String>,
}

impl Claim {
    /// The finding itself.
    pub fn finding(&self) -> &str {
        self.lineage.first().map_or("", String::as_str)
    }

    /// Whether `other` is about the same finding: one's finding is in the other's lineage.
    pub fn same_finding(&self, other: &Claim) -> bool {
        self.lineage.iter().any(|f| f == other.finding())
            || other.lineage.iter().any(|f| f == self.finding())
    }
}

/// What reads claims from report text (cxrlake's rules extractor in the pipeline).
pub trait ReportReader: Send + Sync + Debug {
    /// The claims of a whole report (its findings and impression).
    fn report_claims(&self, report: &str) -> Vec<Claim>;

    /// The claims of one answer part's text.
    fn text_claims(&self, text: &str) -> Vec<Claim>;
}

/// A part's claims and the report's claims about the same findings: what the reading judge
/// reads for one part's entailment.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PartReading {
    /// The part's claims.
    pub claims: Vec<Claim>,
    /// The report's claims about the same findings (sorted, each once).
    pub report: Vec<Claim>,
}

impl PartReading {
    /// The reading of a part with `claims` in a report with `report` claims.
    pub fn new(claims: Vec<Claim>, report: &[Claim]) -> PartReading {
        let mut relevant: Vec<Claim> = report
            .iter()
            .filter(|r| claims.iter().any(|c| c.same_finding(r)))
            .cloned()
            .collect();
        relevant.sort();
        relevant.dedup();
        PartReading {
            claims,
            report: relevant,
        }
    }
}

fn compatible(a: &str, b: &str) -> bool {
    a == b || a == "unc" || b == "unc"
}

fn sides_agree(claim: Option<&str>, report: Option<&str>) -> bool {
    match (claim, report) {
        (Some(c), Some(r)) => c == r || r == "bilateral" || c == "bilateral",
        _ => true,
    }
}

/// What a report claim says of a part's claim about the same finding.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Evidence {
    Supports,
    Contradicts,
    Unrelated,
}

/// The evidence of report claim `r` for part claim `c`. Same finding: polarities agree or not.
/// The report more general (its finding an ancestor of the part's): "no opacity" supports "no
/// atelectasis", "opacity" supports "atelectasis", "no opacity" contradicts "atelectasis"; "an
/// enteric tube" says nothing of "no nasogastric tube". The report more specific: "atelectasis"
/// supports "opacity" and contradicts "no opacity"; "no consolidation" says nothing of "opacity".
fn evidence(c: &Claim, r: &Claim) -> Evidence {
    let (cp, rp) = (c.polarity.as_str(), r.polarity.as_str());
    if c.finding() == r.finding() {
        return if compatible(cp, rp) {
            Evidence::Supports
        } else {
            Evidence::Contradicts
        };
    }
    if cp == "unc" || rp == "unc" {
        return Evidence::Unrelated;
    }
    let report_general = c.lineage.iter().skip(1).any(|f| f == r.finding());
    match (report_general, cp, rp) {
        (true, "neg", "neg") | (true, "pos", "pos") | (false, "pos", "pos") => Evidence::Supports,
        (true, "pos", "neg") | (false, "neg", "pos") => Evidence::Contradicts,
        _ => Evidence::Unrelated,
    }
}

/// What the reading judge reads for completeness: the question's claims (what it asks about),
/// the answer's (all parts) and the report's about the question's findings.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AnswerReading {
    /// The question's claims.
    pub asked: Vec<Claim>,
    /// The answer parts' claims.
    pub answered: Vec<Claim>,
    /// The report's claims about the question's findings (sorted, each once).
    pub report: Vec<Claim>,
}

impl AnswerReading {
    /// The reading of an answer with `answered` claims to a question with `asked` claims, in a
    /// report with `report` claims.
    pub fn new(asked: Vec<Claim>, answered: Vec<Claim>, report: &[Claim]) -> AnswerReading {
        let mut relevant: Vec<Claim> = report
            .iter()
            .filter(|r| asked.iter().any(|c| c.same_finding(r)))
            .cloned()
            .collect();
        relevant.sort();
        relevant.dedup();
        AnswerReading {
            asked,
            answered,
            report: relevant,
        }
    }
}

/// The completeness level of an answer read against the report's findings in the question's
/// scope (None: the question names no finding, or the report states none of them present, so
/// the heuristic's rule applies): an answer that denies a finding the report states present is
/// `INCOMPLETE_MISLEADING` (C); one that leaves such a finding out, `INCOMPLETE_NON_MISLEADING`
/// (B).
pub fn completeness(reading: &AnswerReading) -> Option<(&'static str, String)> {
    let present: Vec<&Claim> = reading
        .report
        .iter()
        .filter(|r| r.polarity == "pos")
        .collect();
    if reading.asked.is_empty() || present.is_empty() {
        return None;
    }
    let mut missing = Vec::new();
    for r in present {
        let said: Vec<Evidence> = reading
            .answered
            .iter()
            .filter(|c| c.same_finding(r))
            .map(|c| evidence(c, r))
            .collect();
        if said.contains(&Evidence::Supports) {
            continue;
        }
        if said.contains(&Evidence::Contradicts) {
            return Some((
                "INCOMPLETE_MISLEADING",
                format!("the answer denies {}, which the report states", r.finding()),
            ));
        }
        missing.push(r.finding().to_string());
    }
    (!missing.is_empty()).then(|| {
        (
            "INCOMPLETE_NON_MISLEADING",
            format!("the answer leaves out {} of the report", missing.join(", ")),
        )
    })
}

/// The entailment level of a part read against the report (None: the part claims nothing, so
/// the provenance rule applies), with the reason.
pub fn entailment(from_report: bool, reading: &PartReading) -> Option<(&'static str, String)> {
    let mut worst: Option<(i32, &'static str, String)> = None;
    for claim in &reading.claims {
        let about: Vec<(&Claim, Evidence)> = reading
            .report
            .iter()
            .filter(|r| claim.same_finding(r))
            .map(|r| (r, evidence(claim, r)))
            .collect();
        let supporting: Vec<&Claim> = about
            .iter()
            .filter(|(_, e)| *e == Evidence::Supports)
            .map(|(r, _)| *r)
            .collect();
        let finding = claim.finding();
        let (score, level, why) = if supporting
            .iter()
            .any(|r| sides_agree(claim.side.as_deref(), r.side.as_deref()))
        {
            if from_report {
                (
                    3,
                    "ALIGNED_MENTIONED",
                    format!("{finding}: as the report says"),
                )
            } else {
                (
                    2,
                    "ALIGNED_INFERRABLE",
                    format!("{finding}: as the report says"),
                )
            }
        } else if !supporting.is_empty() {
            (
                -2,
                "NON_ALIGNED_MISLEADING",
                format!(
                    "{finding} on the {}: the report names another side",
                    claim.side.as_deref().unwrap_or("?")
                ),
            )
        } else if let Some((r, _)) = about.iter().find(|(_, e)| *e == Evidence::Contradicts) {
            (
                -3,
                "NON_ALIGNED_CONTRADICTING",
                format!(
                    "{finding} {}: the report says {} {}",
                    if claim.polarity == "neg" {
                        "absent"
                    } else {
                        "present"
                    },
                    r.finding(),
                    if r.polarity == "neg" {
                        "absent"
                    } else {
                        "present"
                    },
                ),
            )
        } else if claim.polarity == "neg" {
            (
                1,
                "ALIGNED_NEGATIVE_NOT_MENTIONED",
                format!("no {finding}; the report does not mention it"),
            )
        } else {
            (
                -1,
                "NON_ALIGNED_NON_INFERRABLE",
                format!("{finding}: the report does not mention it"),
            )
        };
        if worst.as_ref().is_none_or(|(s, _, _)| score < *s) {
            worst = Some((score, level, why));
        }
    }
    worst.map(|(_, level, why)| (level, why))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn claim(lineage: &[&str], polarity: &str, side: Option<&str>) -> Claim {
        Claim {
            lineage: lineage.iter().map(|s| s.to_string()).collect(),
            polarity: polarity.to_string(),
            side: side.map(str::to_string),
        }
    }

    fn level(from_report: bool, part: Vec<Claim>, report: &[Claim]) -> Option<&'static str> {
        entailment(from_report, &PartReading::new(part, report)).map(|(level, _)| level)
    }

    #[test]
    fn parts_are_read_against_the_reports_claims() {
        let report = [
            claim(
                &["small pleural effusion", "pleural effusion"],
                "pos",
                Some("left"),
            ),
            claim(&["pneumothorax"], "neg", None),
            claim(&["atelectasis", "lung opacity"], "unc", Some("right")),
        ];
        let effusion =
            |polarity: &str, side: Option<&str>| vec![claim(&["pleural effusion"], polarity, side)];
        assert_eq!(
            level(true, effusion("pos", Some("left")), &report),
            Some("ALIGNED_MENTIONED")
        );
        assert_eq!(
            level(false, effusion("pos", None), &report),
            Some("ALIGNED_INFERRABLE")
        );
        assert_eq!(
            level(true, effusion("neg", None), &report),
            Some("NON_ALIGNED_CONTRADICTING")
        );
        assert_eq!(
            level(true, effusion("pos", Some("right")), &report),
            Some("NON_ALIGNED_MISLEADING")
        );
        assert_eq!(
            level(true, vec![claim(&["pneumothorax"], "pos", None)], &report),
            Some("NON_ALIGNED_CONTRADICTING")
        );
        assert_eq!(
            level(true, vec![claim(&["cardiomegaly"], "pos", None)], &report),
            Some("NON_ALIGNED_NON_INFERRABLE")
        );
        assert_eq!(
            level(false, vec![claim(&["cardiomegaly"], "neg", None)], &report),
            Some("ALIGNED_NEGATIVE_NOT_MENTIONED")
        );
        // Uncertain in the report: either polarity is compatible.
        assert_eq!(
            level(
                true,
                vec![claim(&["atelectasis", "lung opacity"], "neg", None)],
                &report
            ),
            Some("ALIGNED_MENTIONED")
        );
        // The worst claim decides; no claim, no reading.
        assert_eq!(
            level(
                true,
                vec![
                    claim(&["pneumothorax"], "neg", None),
                    claim(&["cardiomegaly"], "pos", None)
                ],
                &report
            ),
            Some("NON_ALIGNED_NON_INFERRABLE")
        );
        assert_eq!(level(true, Vec::new(), &report), None);
    }

    #[test]
    fn general_and_specific_findings_support_or_contradict_in_one_direction_only() {
        let tube = |name: &str, polarity: &str| {
            let lineage: &[&str] = if name == "nasogastric tube" {
                &["nasogastric tube", "enteric tube"]
            } else {
                &["enteric tube"]
            };
            vec![claim(lineage, polarity, None)]
        };
        let enteric_present = [claim(&["enteric tube"], "pos", None)];
        // "No NG tube" is not contradicted by "an enteric tube".
        assert_eq!(
            level(false, tube("nasogastric tube", "neg"), &enteric_present),
            Some("ALIGNED_NEGATIVE_NOT_MENTIONED")
        );
        assert_eq!(
            level(false, tube("nasogastric tube", "pos"), &enteric_present),
            Some("ALIGNED_INFERRABLE")
        );
        let ng_present = [claim(&["nasogastric tube", "enteric tube"], "pos", None)];
        assert_eq!(
            level(false, tube("enteric tube", "neg"), &ng_present),
            Some("NON_ALIGNED_CONTRADICTING")
        );
        // "Opacity" is not contradicted by "no consolidation"; "no opacity" contradicts
        // "atelectasis".
        let no_consolidation = [claim(&["consolidation", "lung opacity"], "neg", None)];
        assert_eq!(
            level(
                false,
                vec![claim(&["lung opacity"], "pos", None)],
                &no_consolidation
            ),
            Some("NON_ALIGNED_NON_INFERRABLE")
        );
        let no_opacity = [claim(&["lung opacity"], "neg", None)];
        assert_eq!(
            level(
                true,
                vec![claim(&["atelectasis", "lung opacity"], "pos", None)],
                &no_opacity
            ),
            Some("NON_ALIGNED_CONTRADICTING")
        );
    }

    #[test]
    fn answers_are_complete_against_the_reports_findings_in_scope() {
        let report = [
            claim(&["pleural effusion"], "pos", Some("left")),
            claim(&["atelectasis", "lung opacity"], "pos", None),
            claim(&["pneumothorax"], "neg", None),
        ];
        let asked = vec![claim(&["pleural effusion"], "pos", None)];
        let level = |answered: Vec<Claim>| {
            completeness(&AnswerReading::new(asked.clone(), answered, &report)).map(|(l, _)| l)
        };
        assert_eq!(
            level(vec![claim(&["pleural effusion"], "pos", Some("left"))]),
            None
        );
        assert_eq!(
            level(vec![claim(&["pleural effusion"], "neg", None)]),
            Some("INCOMPLETE_MISLEADING")
        );
        assert_eq!(level(Vec::new()), Some("INCOMPLETE_NON_MISLEADING"));
        // Only the question's findings are in scope; a question about an absent finding or
        // about no finding is the heuristic's.
        let about_pneumothorax = AnswerReading::new(
            vec![claim(&["pneumothorax"], "pos", None)],
            Vec::new(),
            &report,
        );
        assert_eq!(completeness(&about_pneumothorax), None);
        assert_eq!(
            completeness(&AnswerReading::new(Vec::new(), Vec::new(), &report)),
            None
        );
    }

    #[test]
    fn a_part_reads_only_the_report_claims_about_its_findings() {
        let report = [
            claim(&["pneumothorax"], "neg", None),
            claim(&["cardiomegaly"], "pos", None),
        ];
        let reading = PartReading::new(vec![claim(&["pneumothorax"], "neg", None)], &report);
        assert_eq!(reading.report, vec![claim(&["pneumothorax"], "neg", None)]);
    }
}
