//! The rule-based extraction backend: the outputs of listings 1, 3 and 5 without an LLM.
//!
//! ```text
//!  report ─► sections (banner, WET READ, headers) ─► sentences (split, numbering removed)
//!         ─► section types (header, else content) ─► merge links (same finding, continuation)
//!  cluster sentences ─► mentions (one Aho-Corasick automaton over the refdefs vocabulary)
//!         ─► ConText trigger scopes (refdefs context.toml) ─► observations with regions,
//!            modifiers, changes, children
//!  indication text + findings ─► patient, history, evaluation, associated sentences, answer
//! ```

mod context;
mod indication;
mod lexicon;
mod observations;
mod sections;
mod split;

use cxrlake_refdefs::RefDefs;

use crate::model::{Indication, RawObservation, SectionType, Sentence};
use lexicon::Lexicon;

pub use split::split_sentences;

/// Version of the rules; part of the `extractor` column value and of stage fingerprints. Bump
/// when output changes.
pub const RULES_VERSION: &str = "rules-2";

/// First words of a sentence that continues the previous one.
const CONTINUATION_WORDS: &[&str] = &[
    "it",
    "this",
    "these",
    "those",
    "they",
    "which",
    "the latter",
];

/// Words of exam and technique lines ("PORTABLE CHEST OF ___", "PA and lateral views").
const EXAM_WORDS: &[&str] = &[
    "chest",
    "view",
    "views",
    "radiograph",
    "radiographs",
    "portable",
    "pa",
    "ap",
    "lateral",
    "upright",
    "supine",
    "semi-upright",
    "semi-erect",
    "frontal",
    "x-ray",
    "exam",
    "study",
    "film",
];

/// The rule-based extractor: the compiled vocabulary of one set of reference definitions.
#[derive(Debug, Clone)]
pub struct RulesExtractor {
    lexicon: Lexicon,
    /// The fingerprint of the definitions it was compiled from.
    defs: String,
}

impl RulesExtractor {
    /// Compiles the vocabulary (findings, regions, modifiers, changes and ConText triggers) of
    /// `defs`.
    pub fn new(defs: &RefDefs) -> Self {
        Self {
            lexicon: Lexicon::new(defs),
            defs: defs.fingerprint().to_string(),
        }
    }

    /// The fingerprint of the reference definitions it was compiled from: two extractors with
    /// the same one extract the same.
    pub fn defs_fingerprint(&self) -> &str {
        &self.defs
    }

    /// Listing 1's output: every sentence with section name, section type and merge links
    /// (same finding in FINDINGS and IMPRESSION, or a sentence continuing the previous one),
    /// ids `S01`.. in report order.
    pub fn sentences(&self, report: &str) -> Vec<Sentence> {
        let mut out: Vec<Sentence> = Vec::new();
        let mut findings_of: Vec<Vec<(usize, bool)>> = Vec::new();
        for block in sections::blocks(report) {
            for text in split_sentences(&block.text) {
                let needs_findings = block
                    .section_type
                    .is_none_or(|t| matches!(t, SectionType::Findings | SectionType::Impression));
                let findings = if needs_findings {
                    self.stated_findings(&text)
                } else {
                    Vec::new()
                };
                let observed = findings
                    .iter()
                    .any(|&(f, _)| !self.lexicon.findings[f].technical);
                let section_type = block
                    .section_type
                    .unwrap_or_else(|| infer_type(&text, observed));
                let merge_with =
                    self.merge_links(&out, &findings_of, &text, section_type, &findings);
                findings_of.push(findings);
                out.push(Sentence {
                    sent_id: format!("S{:02}", out.len() + 1),
                    section: block.section.clone(),
                    section_type,
                    sentence: text,
                    merge_with,
                });
            }
        }
        out
    }

    /// Listing 3's output for one cluster of FINDINGS/IMPRESSION sentences (passed as the
    /// sentences' texts in order).
    pub fn observations(&self, sentences: &[&str]) -> Vec<RawObservation> {
        observations::cluster_observations(&self.lexicon, sentences)
    }

    /// Listing 5's output: from the INDICATION sentences' text and the `(sent_id, sentence)`
    /// pairs of FINDINGS/IMPRESSION; `None` when the indication text is empty or has no words
    /// (only `___`).
    pub fn indication(&self, indication: &str, findings: &[(&str, &str)]) -> Option<Indication> {
        indication::indication(&self.lexicon, indication, findings)
    }

    /// The findings a sentence states, each with whether it is negated.
    fn stated_findings(&self, text: &str) -> Vec<(usize, bool)> {
        observations::sentence_observations(&self.lexicon, text)
            .into_iter()
            .map(|(f, o)| (f, o.probability.as_deref() == Some("negative")))
            .collect()
    }

    /// Earlier sentences `text` continues or, for an impression, earlier findings sentences
    /// stating one of the same findings with the same polarity.
    fn merge_links(
        &self,
        earlier: &[Sentence],
        findings_of: &[Vec<(usize, bool)>],
        text: &str,
        section_type: SectionType,
        findings: &[(usize, bool)],
    ) -> Vec<String> {
        let reportable =
            |t: SectionType| matches!(t, SectionType::Findings | SectionType::Impression);
        if !reportable(section_type) {
            return Vec::new();
        }
        let mut links: Vec<String> = Vec::new();
        if section_type == SectionType::Impression {
            for (sentence, theirs) in earlier.iter().zip(findings_of) {
                let shared = theirs.iter().any(|f| findings.contains(f));
                if sentence.section_type == SectionType::Findings && shared {
                    links.push(sentence.sent_id.clone());
                }
            }
        }
        let lower = text.to_ascii_lowercase();
        let continues = CONTINUATION_WORDS.iter().any(|w| {
            lower
                .strip_prefix(w)
                .is_some_and(|rest| rest.starts_with([' ', ',']))
        });
        if continues
            && let Some(previous) = earlier.last()
            && reportable(previous.section_type)
            && !links.contains(&previous.sent_id)
        {
            links.push(previous.sent_id.clone());
        }
        links
    }
}

/// The type of a sentence outside a typed section: findings text or an exam/technique line.
fn infer_type(text: &str, has_finding: bool) -> SectionType {
    let exam_line = text
        .split(|c: char| !c.is_ascii_alphanumeric() && c != '-')
        .any(|w| EXAM_WORDS.iter().any(|e| w.eq_ignore_ascii_case(e)));
    if !has_finding && exam_line {
        SectionType::ExamTechnique
    } else {
        SectionType::Findings
    }
}
