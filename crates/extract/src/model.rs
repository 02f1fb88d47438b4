//! What extraction produces, whichever backend ran: the structures of the paper's prompt outputs
//! (listings 2, 4 and 6), with serde names equal to the JSON keys the LLM writes.

use serde::{Deserialize, Serialize};

/// The type of content of a sentence (listing 1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum SectionType {
    /// Examination and technique.
    ExamTechnique,
    /// Indication, history, reason for exam.
    Indication,
    /// Findings.
    Findings,
    /// Impression, recommendation.
    Impression,
    /// Wet read and text before the final report.
    PreFinalReport,
    /// Comparison, notification and other irrelevant content.
    Ignore,
}

impl SectionType {
    /// Every type, in listing 1's order.
    pub const ALL: [SectionType; 6] = [
        Self::ExamTechnique,
        Self::Indication,
        Self::Findings,
        Self::Impression,
        Self::PreFinalReport,
        Self::Ignore,
    ];

    /// The name as written in the tables and the LLM output, e.g. `EXAM_TECHNIQUE`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::ExamTechnique => "EXAM_TECHNIQUE",
            Self::Indication => "INDICATION",
            Self::Findings => "FINDINGS",
            Self::Impression => "IMPRESSION",
            Self::PreFinalReport => "PRE_FINAL_REPORT",
            Self::Ignore => "IGNORE",
        }
    }

    /// Parses a type name; case, spaces and `\_` escapes are tolerated.
    pub fn parse(text: &str) -> Option<SectionType> {
        let normalized = text
            .trim()
            .replace("\\_", "_")
            .replace(' ', "_")
            .to_uppercase();
        Self::ALL.into_iter().find(|t| t.as_str() == normalized)
    }
}

/// One sentence node (paper D.1) with the earlier sentences it may be merged with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sentence {
    /// `S01`, `S02`, … in report order.
    pub sent_id: String,
    /// The section name as written in the report (`FINDINGS`, `REASON_FOR_EXAM`,
    /// `FINAL_REPORT_NO_SECTION`, `PRE_FINAL_REPORT_NO_SECTION`, …), upper case with `_`.
    pub section: String,
    /// The type of content.
    pub section_type: SectionType,
    /// The raw sentence, newlines replaced by spaces.
    pub sentence: String,
    /// Ids of earlier sentences describing the same aspect.
    pub merge_with: Vec<String>,
}

/// Cluster ids (`C01`, `C02`, …) of `sentences`, one per sentence: the connected components of
/// the `merge_with` links, numbered by their first sentence. Links to unknown ids are ignored.
pub fn clusters(sentences: &[Sentence]) -> Vec<String> {
    let index_of = |id: &str| sentences.iter().position(|s| s.sent_id == id);
    let mut parent: Vec<usize> = (0..sentences.len()).collect();
    fn root(parent: &mut [usize], mut i: usize) -> usize {
        while parent[i] != i {
            parent[i] = parent[parent[i]];
            i = parent[i];
        }
        i
    }
    for (i, sentence) in sentences.iter().enumerate() {
        for other in sentence.merge_with.iter().filter_map(|id| index_of(id)) {
            let (a, b) = (root(&mut parent, i), root(&mut parent, other));
            let (low, high) = (a.min(b), a.max(b));
            parent[high] = low;
        }
    }
    let mut numbers = vec![0usize; sentences.len()];
    let mut next = 0;
    (0..sentences.len())
        .map(|i| {
            let r = root(&mut parent, i);
            if numbers[r] == 0 {
                next += 1;
                numbers[r] = next;
            }
            format!("C{:02}", numbers[r])
        })
        .collect()
}

/// One observation as extracted (listing 4), before entity mapping. Children have a
/// `child_type` and no children of their own.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct RawObservation {
    /// Type of relation to the parent (`regional_distinction`, `related_region`,
    /// `associated_with`, `device_part`, `recommendation`, `comparison_only`); `None` at top level.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub child_type: Option<String>,
    /// Short name, e.g. `left basilar atelectasis`.
    pub name: String,
    /// The finding entity, e.g. `atelectasis`.
    pub entity: String,
    /// Probability term (`positive`, `negative`, `possible`, or the report's words).
    #[serde(default)]
    pub probability: Option<String>,
    /// Change term, e.g. `new`, `worsened`.
    #[serde(default)]
    pub change: Option<String>,
    /// The observation in the report's words, without change language.
    pub summary_sentence: String,
    /// The change relative to the prior study, if mentioned.
    #[serde(default)]
    pub change_sentence: Option<String>,
    /// Region mentions, e.g. `left basilar`.
    #[serde(default)]
    pub regions: Vec<String>,
    /// Modifier mentions, e.g. `mild`, `patchy`.
    #[serde(default)]
    pub modifiers: Vec<String>,
    /// Child observations (regional distinctions, device parts, …).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub children: Vec<RawObservation>,
}

/// The indication node as extracted (listing 6).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Indication {
    /// Patient information, e.g. `female`.
    #[serde(default)]
    pub patient_info: Option<String>,
    /// The indication, e.g. `New onset ascites.`
    #[serde(default)]
    pub indication: Option<String>,
    /// What should be evaluated, e.g. `Evaluate for infection.`
    #[serde(default)]
    pub evaluation: Option<String>,
    /// A one-sentence summary of the above.
    #[serde(default)]
    pub indication_summary: Option<String>,
    /// Ids of FINDINGS/IMPRESSION sentences that answer the indication.
    #[serde(default)]
    pub associated_findings: Vec<String>,
    /// The answer to the indication's question, from the associated sentences.
    #[serde(default)]
    pub answer_for_indication: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sentence(id: &str, merge_with: &[&str]) -> Sentence {
        Sentence {
            sent_id: id.into(),
            section: "FINDINGS".into(),
            section_type: SectionType::Findings,
            sentence: String::new(),
            merge_with: merge_with.iter().map(|s| s.to_string()).collect(),
        }
    }

    #[test]
    fn clusters_follow_merge_links_transitively() {
        let sentences = [
            sentence("S01", &[]),
            sentence("S02", &[]),
            sentence("S03", &["S01"]),
            sentence("S04", &["S03", "S99"]),
            sentence("S05", &["S02"]),
        ];
        assert_eq!(clusters(&sentences), ["C01", "C02", "C01", "C01", "C02"]);
    }

    #[test]
    fn section_types_parse_escaped_and_lower_case_names() {
        assert_eq!(
            SectionType::parse("exam\\_technique"),
            Some(SectionType::ExamTechnique)
        );
        assert_eq!(
            SectionType::parse(" PRE FINAL REPORT "),
            Some(SectionType::PreFinalReport)
        );
        assert_eq!(SectionType::parse("FINDING"), None);
    }
}
