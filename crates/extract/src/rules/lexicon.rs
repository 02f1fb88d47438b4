//! The compiled vocabulary: finding, region, modifier and change terms from the reference
//! definitions plus the ConText triggers of `context.toml`, in one Aho-Corasick automaton.
//!
//! ```text
//!  RefDefs synonyms ───┐
//!  statement templates ┼─► patterns (lower case, deduplicated by priority) ─► automaton
//!  side words, triggers┘
//!  text ─► overlapping matches ─► word-boundary filter ─► longest first ─► mentions
//! ```

use std::collections::{HashMap, HashSet};

use aho_corasick::{AhoCorasick, AhoCorasickBuilder, AhoCorasickKind, MatchKind};
use cxrlake_refdefs::{ChangeKind, Direction, Laterality, RefDefs, TriggerCategory};

/// Findings that state normality; a positive mention of one answers an indication negatively.
const NORMAL_FINDINGS: &[&str] = &[
    "no acute cardiopulmonary process",
    "normal heart size",
    "normal cardiomediastinal silhouette",
    "clear lungs",
];

/// Normal and abnormal statements that are not contiguous refdefs synonyms, as templates:
/// `{a|b}` picks one alternative, an empty alternative (`{|mildly }`) makes words optional.
const STATEMENT_TEMPLATES: &[(&str, &str)] = &[
    (
        "no acute {cardiopulmonary|intrathoracic} {process|abnormality|abnormalities|disease|findings}",
        "no acute cardiopulmonary process",
    ),
    (
        "no acute cardiopulmonary",
        "no acute cardiopulmonary process",
    ),
    (
        "no {|radiographic }evidence of acute {|cardiopulmonary |intrathoracic }{disease|process|abnormality}",
        "no acute cardiopulmonary process",
    ),
    (
        "{normal chest radiograph|normal chest x-ray}",
        "no acute cardiopulmonary process",
    ),
    (
        "chest {radiograph|x-ray} is {normal|within normal limits|unremarkable}",
        "no acute cardiopulmonary process",
    ),
    ("lungs are well expanded and clear", "clear lungs"),
    (
        "lungs {are|remain} {|grossly |otherwise }clear",
        "clear lungs",
    ),
    ("clear lungs", "clear lungs"),
    (
        "{heart size|heart|cardiac silhouette|cardiac size} {is|remains|appears} {normal|within normal limits|normal in size|not enlarged|top normal|top-normal|at the upper limits of normal}",
        "normal heart size",
    ),
    ("normal cardiac silhouette", "normal heart size"),
    (
        "{cardiomediastinal silhouette|cardiomediastinal contour|cardiomediastinal contours|mediastinal contours|mediastinal silhouette|cardiomediastinal and hilar contours|mediastinal and hilar contours|cardiac and mediastinal contours} {is|are|remains|remain|appears|appear} {normal|within normal limits|unremarkable|not widened}",
        "normal cardiomediastinal silhouette",
    ),
    (
        "{mediastinum|superior mediastinum} is not widened",
        "normal cardiomediastinal silhouette",
    ),
    (
        "normal cardiomediastinal {silhouette|contours}",
        "normal cardiomediastinal silhouette",
    ),
    (
        "{heart|heart size|cardiac silhouette} {is|remains|appears|is again|has} {|mildly |moderately |severely |markedly |slightly |massively }enlarged",
        "cardiomegaly",
    ),
    (
        "{mildly |moderately |severely |markedly |}enlarged heart",
        "cardiomegaly",
    ),
    ("enlarged cardiac silhouette", "cardiomegaly"),
    (
        "{cardiomediastinal silhouette|cardiomediastinal contours} {is|are|remains|appears} {|mildly |moderately |slightly }{enlarged|widened|prominent}",
        "enlarged cardiomediastinum",
    ),
    (
        "{mediastinal contours are|mediastinal contours appear|mediastinum is|mediastinum appears} {|mildly |slightly }prominent",
        "enlarged cardiomediastinum",
    ),
    (
        "{mediastinum|superior mediastinum|upper mediastinum|mediastinal contours} {is|are|remains|appears} {|mildly |moderately |slightly }widened",
        "mediastinal widening",
    ),
    (
        "lungs {are|remain|appear} {hyperinflated|hyperexpanded|overinflated}",
        "hyperinflation",
    ),
    ("aorta is {|mildly |markedly }tortuous", "aortic tortuosity"),
    (
        "hemidiaphragm is {|mildly |moderately |markedly }elevated",
        "elevated hemidiaphragm",
    ),
];

/// The phrases of a statement template (see [`STATEMENT_TEMPLATES`]).
fn expand(template: &str) -> Vec<String> {
    let Some(open) = template.find('{') else {
        return vec![template.to_owned()];
    };
    let close = template[open..]
        .find('}')
        .map_or(template.len(), |c| open + c);
    let (head, tail) = (&template[..open], template.get(close + 1..).unwrap_or(""));
    template[open + 1..close]
        .split('|')
        .flat_map(|choice| {
            expand(tail)
                .into_iter()
                .map(move |rest| format!("{head}{choice}{rest}"))
        })
        .collect()
}

/// Synonyms of other vocabularies that mislead more often than they help in free text.
const AMBIGUOUS_SYNONYMS: &[&str] = &[
    "enlarged",
    "advanced",
    "different",
    "prior",
    "single",
    "complete",
    "total",
    "random",
    "segment",
    "remaining",
    "throughout",
    "established",
    "early",
    "remote",
    "mixed",
    "round",
    "global",
    "change",
    "none",
];

/// Change words not in changes.toml: (phrase, change name).
const EXTRA_CHANGES: &[(&str, &str)] = &[
    ("worse", "worsened"),
    ("slightly worse", "worsened"),
    ("better", "improved"),
    ("newly", "new"),
    ("not significantly changed", "unchanged"),
    ("no interval change", "unchanged"),
    ("unchanged in position", "unchanged"),
];

/// Side and zone words not in regions.toml: (word, laterality, left form, right form).
const SIDE_WORDS: &[(&str, Laterality, &str, &str)] = &[
    ("left", Laterality::Left, "", ""),
    ("right", Laterality::Right, "", ""),
    ("left-sided", Laterality::Left, "", ""),
    ("right-sided", Laterality::Right, "", ""),
    ("left basilar", Laterality::Left, "", ""),
    ("right basilar", Laterality::Right, "", ""),
    ("left basal", Laterality::Left, "", ""),
    ("right basal", Laterality::Right, "", ""),
    ("bilateral", Laterality::Bilateral, "left", "right"),
    ("bilaterally", Laterality::Bilateral, "left", "right"),
    ("both sides", Laterality::Bilateral, "left", "right"),
    (
        "bibasilar",
        Laterality::Bilateral,
        "left basilar",
        "right basilar",
    ),
    (
        "bibasal",
        Laterality::Bilateral,
        "left basal",
        "right basal",
    ),
    ("basilar", Laterality::Unknown, "", ""),
    ("retrocardiac", Laterality::Left, "", ""),
];

/// A finding class of the vocabulary.
#[derive(Debug, Clone)]
pub(crate) struct FindingEntry {
    /// The refdefs name.
    pub name: String,
    /// A device (category `DEVICE`).
    pub device: bool,
    /// A statement of normality.
    pub normal: bool,
    /// The lung opacity class, which a size makes a nodule or mass.
    pub sizable: bool,
    /// A technical class (view, positioning), not an observation of the patient.
    pub technical: bool,
    /// Parents and `indicative_of` targets, by index.
    pub related: Vec<usize>,
}

/// A region term: a refdefs region or a side word.
#[derive(Debug, Clone)]
pub(crate) struct RegionEntry {
    /// Side of the body.
    pub laterality: Laterality,
    /// For bilateral regions: the left and right forms to split into.
    pub sides: Option<(String, String)>,
}

/// A change type.
#[derive(Debug, Clone)]
pub(crate) struct ChangeEntry {
    /// The refdefs name.
    pub name: String,
    /// Its group.
    pub kind: ChangeKind,
}

/// A ConText trigger (refdefs `context.toml`).
#[derive(Debug, Clone)]
pub(crate) struct TriggerEntry {
    /// What it does.
    pub category: TriggerCategory,
    /// Where its scope reaches (modifying triggers).
    pub direction: Option<Direction>,
    /// The probability it gives the findings in its scope (modifying triggers).
    pub probability: Option<String>,
    /// The change it states, by index into [`Lexicon::changes`].
    pub change: Option<usize>,
}

/// What a matched pattern stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Term {
    /// Index into [`Lexicon::findings`].
    Finding(usize),
    /// Index into [`Lexicon::regions`].
    Region(usize),
    /// A modifier (its words are kept as written).
    Modifier,
    /// Index into [`Lexicon::changes`].
    Change(usize),
    /// Index into [`Lexicon::triggers`].
    Trigger(usize),
}

/// One recognized term in a text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Mention {
    /// Byte offset of the first character.
    pub start: usize,
    /// Byte offset after the last character.
    pub end: usize,
    /// What it is.
    pub term: Term,
}

/// The compiled vocabulary.
#[derive(Debug, Clone)]
pub(crate) struct Lexicon {
    automaton: AhoCorasick,
    terms: Vec<Term>,
    /// Finding classes.
    pub findings: Vec<FindingEntry>,
    /// Region terms.
    pub regions: Vec<RegionEntry>,
    /// Change types.
    pub changes: Vec<ChangeEntry>,
    /// ConText triggers.
    pub triggers: Vec<TriggerEntry>,
    modifier_words: HashSet<String>,
    side_words: HashMap<&'static str, usize>,
}

/// Collects patterns, the first term for a pattern winning.
#[derive(Default)]
struct PatternSet {
    patterns: Vec<String>,
    terms: Vec<Term>,
    seen: HashMap<String, usize>,
}

impl PatternSet {
    fn add(&mut self, pattern: &str, term: Term) {
        let pattern = pattern.trim().to_lowercase();
        if pattern.is_empty() || self.seen.contains_key(&pattern) {
            return;
        }
        self.seen.insert(pattern.clone(), self.patterns.len());
        self.patterns.push(pattern);
        self.terms.push(term);
    }
}

impl Lexicon {
    /// Compiles the vocabulary of `defs`.
    pub fn new(defs: &RefDefs) -> Self {
        let mut set = PatternSet::default();
        let ambiguous = |s: &str| AMBIGUOUS_SYNONYMS.contains(&s);

        let mut findings: Vec<FindingEntry> = defs
            .findings()
            .map(|f| FindingEntry {
                name: f.name.get_ref().clone(),
                device: f.category.get_ref() == "DEVICE",
                normal: NORMAL_FINDINGS.contains(&f.name.get_ref().as_str()),
                sizable: f.name.get_ref() == "lung opacity",
                technical: f.category.get_ref() == "TECHNICAL",
                related: Vec::new(),
            })
            .collect();
        let finding_index: HashMap<&str, usize> = defs
            .findings()
            .enumerate()
            .map(|(i, f)| (f.name.get_ref().as_str(), i))
            .collect();
        let related: Vec<Vec<usize>> = defs
            .findings()
            .map(|f| {
                f.parents
                    .iter()
                    .chain(&f.indicative_of)
                    .filter_map(|n| finding_index.get(n.get_ref().as_str()).copied())
                    .collect()
            })
            .collect();
        for (entry, related) in findings.iter_mut().zip(related) {
            entry.related = related;
        }
        for (template, finding) in STATEMENT_TEMPLATES {
            if let Some(&index) = finding_index.get(finding) {
                for phrase in expand(template) {
                    set.add(&phrase, Term::Finding(index));
                }
            }
        }
        let all_terms: HashSet<String> = defs
            .findings()
            .flat_map(|f| std::iter::once(&f.name).chain(&f.synonyms))
            .map(|n| n.get_ref().to_lowercase())
            .collect();
        // "no focal consolidation" is better read as a negated consolidation.
        let negated_finding = |synonym: &str| {
            synonym.strip_prefix("no ").is_some_and(|rest| {
                rest.char_indices()
                    .filter(|(i, c)| *i == 0 || *c == ' ')
                    .any(|(i, _)| all_terms.contains(rest[i..].trim_start()))
            })
        };
        for (index, finding) in defs.findings().enumerate() {
            set.add(finding.name.get_ref(), Term::Finding(index));
            let normal = findings[index].normal;
            for synonym in &finding.synonyms {
                if !(normal && negated_finding(&synonym.get_ref().to_lowercase())) {
                    set.add(synonym.get_ref(), Term::Finding(index));
                }
            }
        }

        let mut regions = Vec::new();
        for region in defs.regions() {
            let laterality = *region.laterality.get_ref();
            let sides = match (laterality, &region.left, &region.right) {
                (Laterality::Bilateral, Some(left), Some(right)) => {
                    Some((left.get_ref().clone(), right.get_ref().clone()))
                }
                _ => None,
            };
            let index = regions.len();
            regions.push(RegionEntry { laterality, sides });
            set.add(region.name.get_ref(), Term::Region(index));
            for synonym in region.synonyms.iter().filter(|s| !ambiguous(s.get_ref())) {
                set.add(synonym.get_ref(), Term::Region(index));
            }
        }
        let mut side_words = HashMap::new();
        for (word, laterality, left, right) in SIDE_WORDS {
            let index = regions.len();
            side_words.insert(*word, index);
            regions.push(RegionEntry {
                laterality: *laterality,
                sides: (!left.is_empty()).then(|| ((*left).to_owned(), (*right).to_owned())),
            });
            set.add(word, Term::Region(index));
        }

        let changes: Vec<ChangeEntry> = defs
            .changes()
            .map(|change| ChangeEntry {
                name: change.name.get_ref().clone(),
                kind: *change.kind.get_ref(),
            })
            .collect();
        let change_index = |name: &str| changes.iter().position(|c| c.name == name);

        let mut triggers = Vec::new();
        for trigger in defs.triggers() {
            set.add(trigger.text.get_ref(), Term::Trigger(triggers.len()));
            triggers.push(TriggerEntry {
                category: *trigger.category.get_ref(),
                direction: trigger.direction.as_ref().map(|d| *d.get_ref()),
                probability: trigger.probability.as_ref().map(|p| p.get_ref().clone()),
                change: trigger
                    .change
                    .as_ref()
                    .and_then(|c| change_index(c.get_ref())),
            });
        }

        for (index, change) in defs.changes().enumerate() {
            set.add(change.name.get_ref(), Term::Change(index));
            for synonym in change.synonyms.iter().filter(|s| !ambiguous(s.get_ref())) {
                set.add(synonym.get_ref(), Term::Change(index));
            }
        }

        for (phrase, name) in EXTRA_CHANGES {
            if let Some(index) = change_index(name) {
                set.add(phrase, Term::Change(index));
            }
        }

        let mut modifier_words = HashSet::new();
        for modifier in defs.modifiers() {
            let names = std::iter::once(&modifier.name).chain(&modifier.synonyms);
            for name in names.filter(|s| !ambiguous(s.get_ref())) {
                set.add(name.get_ref(), Term::Modifier);
                modifier_words.insert(name.get_ref().to_lowercase());
            }
        }

        let automaton = AhoCorasickBuilder::new()
            .ascii_case_insensitive(true)
            .match_kind(MatchKind::Standard)
            .kind(Some(AhoCorasickKind::DFA))
            .build(&set.patterns)
            // Only fails beyond the automaton's size limits, orders above any vocabulary.
            .expect("the vocabulary automaton fits the default size limits");
        Self {
            automaton,
            terms: set.terms,
            findings,
            regions,
            changes,
            triggers,
            modifier_words,
            side_words,
        }
    }

    /// The terms of `text` in text order, whole words only (a plural `s`/`es` after a finding
    /// or region still counts as the word's end). Overlaps go to the longer term, then to a
    /// finding ("left chest tube": the device, not the region "left chest"), then to the
    /// earlier one.
    pub fn mentions(&self, text: &str) -> Vec<Mention> {
        let bytes = text.as_bytes();
        let is_word = |i: usize| bytes.get(i).is_some_and(|b| b.is_ascii_alphanumeric());
        let mut candidates: Vec<Mention> = Vec::new();
        for found in self.automaton.find_overlapping_iter(text) {
            let (start, mut end) = (found.start(), found.end());
            let term = self.terms[found.pattern().as_usize()];
            let starts_word = start == 0 || !is_word(start - 1) || !is_word(start);
            if !starts_word {
                continue;
            }
            let last_is_word = end > start && is_word(end - 1);
            if last_is_word && is_word(end) {
                let nouns = matches!(term, Term::Finding(_) | Term::Region(_));
                let plural = ["s", "es"].into_iter().find(|suffix| {
                    text.get(end..end + suffix.len())
                        .is_some_and(|s| s.eq_ignore_ascii_case(suffix))
                        && !is_word(end + suffix.len())
                });
                match plural {
                    Some(suffix) if nouns => end += suffix.len(),
                    _ => continue,
                }
            }
            candidates.push(Mention { start, end, term });
        }
        // "right ij line": the side and the device, not the region "right ij" and "line".
        let is_region = |m: &Mention| matches!(m.term, Term::Region(_));
        let is_finding = |m: &Mention| matches!(m.term, Term::Finding(_));
        let split_off: Vec<bool> = candidates
            .iter()
            .map(|r| {
                is_region(r)
                    && candidates.iter().any(|f| {
                        is_finding(f)
                            && r.start < f.start
                            && f.start < r.end
                            && r.end < f.end
                            && candidates.iter().any(|side| {
                                is_region(side)
                                    && side.start == r.start
                                    && side.end < f.start
                                    && text[side.end..f.start]
                                        .chars()
                                        .all(|c| c.is_whitespace() || c == '-')
                            })
                    })
            })
            .collect();
        let mut candidates: Vec<Mention> = candidates
            .into_iter()
            .zip(split_off)
            .filter(|(_, split)| !split)
            .map(|(m, _)| m)
            .collect();
        let finding_last = |m: &Mention| !is_finding(m);
        candidates.sort_by(|a, b| {
            (b.end - b.start)
                .cmp(&(a.end - a.start))
                .then(finding_last(a).cmp(&finding_last(b)))
                .then(a.start.cmp(&b.start))
        });
        let mut mentions: Vec<Mention> = Vec::with_capacity(candidates.len());
        for candidate in candidates {
            let free = mentions
                .iter()
                .all(|m| candidate.end <= m.start || candidate.start >= m.end);
            if free {
                mentions.push(candidate);
            }
        }
        mentions.sort_by_key(|m| m.start);
        mentions
    }

    /// The index of the finding named `name`.
    pub fn finding_index(&self, name: &str) -> Option<usize> {
        self.findings.iter().position(|f| f.name == name)
    }

    /// The region index of a side word (`left`, `bibasilar`, …) given in lower case.
    pub fn side_word(&self, word: &str) -> Option<usize> {
        self.side_words.get(word).copied()
    }

    /// Whether `word` (lower case) is a modifier term.
    pub fn is_modifier_word(&self, word: &str) -> bool {
        self.modifier_words.contains(word)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lexicon() -> Lexicon {
        Lexicon::new(&RefDefs::embedded().expect("embedded refdefs"))
    }

    fn texts<'a>(lexicon: &Lexicon, text: &'a str) -> Vec<&'a str> {
        lexicon
            .mentions(text)
            .iter()
            .map(|m| &text[m.start..m.end])
            .collect()
    }

    #[test]
    fn matches_are_whole_words_and_longest() {
        let lexicon = lexicon();
        assert_eq!(
            texts(
                &lexicon,
                "No left lower lobe opacity, nodule or pleural effusions."
            ),
            [
                "No",
                "left lower lobe",
                "opacity",
                "nodule",
                "pleural effusions"
            ]
        );
        assert_eq!(texts(&lexicon, "Normal nodes."), Vec::<&str>::new());
    }

    #[test]
    fn templates_expand_every_choice() {
        assert_eq!(
            expand("{heart|cardiac silhouette} is {|mildly }enlarged"),
            [
                "heart is enlarged",
                "heart is mildly enlarged",
                "cardiac silhouette is enlarged",
                "cardiac silhouette is mildly enlarged",
            ]
        );
        assert_eq!(expand("clear lungs"), ["clear lungs"]);
    }

    #[test]
    fn a_side_and_a_device_beat_a_region_that_swallows_the_device() {
        let lexicon = lexicon();
        assert_eq!(
            texts(&lexicon, "Right IJ line and left chest tube."),
            ["Right", "IJ line", "left", "chest tube"]
        );
        assert_eq!(
            texts(&lexicon, "Left lower lobe collapse."),
            ["Left lower lobe", "collapse"]
        );
    }

    #[test]
    fn normal_statements_are_findings_not_negations() {
        let lexicon = lexicon();
        let mentions = lexicon.mentions("No acute cardiopulmonary process.");
        assert_eq!(mentions.len(), 1);
        let Term::Finding(index) = mentions[0].term else {
            panic!("expected a finding, got {:?}", mentions[0].term);
        };
        assert!(lexicon.findings[index].normal);
    }
}
