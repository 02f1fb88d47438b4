//! The rule-based extractor on arbitrary report text, as the `extract` stage runs it on one
//! report: sentences (listing 1), then observations per cluster of FINDINGS/IMPRESSION
//! sentences (listing 3), then the indication (listing 5). It has no error path; the
//! properties are "no panic", the per-input time bound (super-linear behaviour on long or
//! repetitive text) and well-formed sentence ids and links.

use std::collections::HashSet;
use std::sync::OnceLock;

use cxrlake_extract::rules::RulesExtractor;
use cxrlake_extract::{SectionType, clusters};
use cxrlake_fuzz::{Outcome, Target, check};
use cxrlake_refdefs::RefDefs;

use crate::corpus::corpus;

fn extractor() -> &'static RulesExtractor {
    static EXTRACTOR: OnceLock<RulesExtractor> = OnceLock::new();
    EXTRACTOR.get_or_init(|| RulesExtractor::new(&RefDefs::embedded().expect("embedded refdefs")))
}

/// One report through the three rule-based steps.
fn extract(report: &str) -> Outcome {
    let rules = extractor();
    let sentences = rules.sentences(report);
    let ids: HashSet<&str> = sentences.iter().map(|s| s.sent_id.as_str()).collect();
    if ids.len() != sentences.len() {
        return Outcome::Broken("repeated sentence ids".into());
    }
    if let Some(link) = sentences
        .iter()
        .flat_map(|s| &s.merge_with)
        .find(|id| !ids.contains(id.as_str()))
    {
        return Outcome::Broken(format!("merge link to a missing sentence {link}"));
    }
    let cluster_of = clusters(&sentences);
    let mut groups: Vec<(String, Vec<&str>)> = Vec::new();
    for (sentence, cluster) in sentences.iter().zip(&cluster_of) {
        if !matches!(
            sentence.section_type,
            SectionType::Findings | SectionType::Impression
        ) {
            continue;
        }
        match groups.iter_mut().find(|(c, _)| c == cluster) {
            Some((_, texts)) => texts.push(&sentence.sentence),
            None => groups.push((cluster.clone(), vec![&sentence.sentence])),
        }
    }
    for (_, texts) in &groups {
        let _ = rules.observations(texts);
    }
    let indication: Vec<&str> = sentences
        .iter()
        .filter(|s| s.section_type == SectionType::Indication)
        .map(|s| s.sentence.as_str())
        .collect();
    let findings: Vec<(&str, &str)> = sentences
        .iter()
        .filter(|s| {
            matches!(
                s.section_type,
                SectionType::Findings | SectionType::Impression
            )
        })
        .map(|s| (s.sent_id.as_str(), s.sentence.as_str()))
        .collect();
    let _ = rules.indication(&indication.join(" "), &findings);
    Outcome::Accepted
}

#[test]
fn rules_extract() {
    // Build the automaton before the timed inputs.
    let _ = extractor();
    let seeds = corpus()
        .reports
        .iter()
        .map(|(_, text)| text.clone())
        .chain([
            b"                                 FINAL REPORT\n EXAMINATION:  CHEST (PORTABLE AP)\n\n \
              INDICATION:  ___M with fever, evaluate for pneumonia.\n\n COMPARISON:  ___\n\n \
              FINDINGS: \n\n 1. Left basilar opacity may reflect atelectasis, though infection \
              is not excluded.  2. No pleural effusion or pneumothorax.  Heart size is mildly \
              enlarged, unchanged.  It is stable.\n\n IMPRESSION: \n\n Possible left lower \
              lobe pneumonia.  No effusion.\n\n NOTIFICATION:  Dr. ___ was paged at 10:00.\n"
                .to_vec(),
            b"WET READ: ___ ___ 8:15 PM\n  No acute process.\n______________________________\n\
              FINAL REPORT\nHISTORY: Chest pain.\nFINDINGS: Lungs clear. No free air.\n"
                .to_vec(),
        ])
        .collect();
    check(
        &Target::new("rules_extract", seeds, |data| {
            extract(&String::from_utf8_lossy(data))
        })
        .with_dictionary([
            "FINDINGS:",
            "IMPRESSION:",
            "INDICATION:",
            "HISTORY:",
            "WET READ:",
            "FINAL REPORT",
            " no ",
            "not ",
            "without ",
            "may represent ",
            "cannot be excluded",
            "unchanged",
            "pleural effusion",
            "pneumothorax",
            "left lower lobe ",
            "bilateral ",
            "1. ",
            ". ",
            "___",
            "It ",
        ])
        .with_max_len(64 << 10),
    );
}
