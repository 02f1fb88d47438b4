//! The compiled vocabulary: finding, region, modifier and change terms from the reference
//! definitions plus the negation, uncertainty and scope cues, in one Aho-Corasick automaton.
//!
//! ```text
//!  RefDefs synonyms ─┐
//!  normal phrases ───┼─► patterns (lower case, deduplicated by priority) ─► automaton
//!  side words, cues ─┘
//!  text ─► overlapping matches ─► word-boundary filter ─► leftmost-longest ─► mentions
//! ```

use std::collections::{HashMap, HashSet};

use aho_corasick::{AhoCorasick, AhoCorasickBuilder, AhoCorasickKind, MatchKind};
use cxrlake_refdefs::{ChangeKind, Laterality, RefDefs};

/// Findings that state normality; a positive mention of one answers an indication negatively.
const NORMAL_FINDINGS: &[&str] = &[
    "no acute cardiopulmonary process",
    "normal heart size",
    "normal cardiomediastinal silhouette",
    "clear lungs",
];

/// Normal and abnormal statements that are not contiguous refdefs synonyms: (phrase, finding).
const STATEMENT_PHRASES: &[(&str, &str)] = &[
    (
        "no acute intrathoracic process",
        "no acute cardiopulmonary process",
    ),
    (
        "no acute cardiopulmonary",
        "no acute cardiopulmonary process",
    ),
    (
        "no acute cardiopulmonary abnormalities",
        "no acute cardiopulmonary process",
    ),
    (
        "no acute intrathoracic abnormality",
        "no acute cardiopulmonary process",
    ),
    (
        "normal chest radiograph",
        "no acute cardiopulmonary process",
    ),
    ("normal chest x-ray", "no acute cardiopulmonary process"),
    (
        "no radiographic evidence of acute cardiopulmonary disease",
        "no acute cardiopulmonary process",
    ),
    ("lungs are well expanded and clear", "clear lungs"),
    ("lungs are clear", "clear lungs"),
    ("lungs are grossly clear", "clear lungs"),
    ("lungs remain clear", "clear lungs"),
    ("clear lungs", "clear lungs"),
    ("heart size is normal", "normal heart size"),
    ("heart size is within normal limits", "normal heart size"),
    ("heart is normal in size", "normal heart size"),
    ("heart size is top normal", "normal heart size"),
    ("normal cardiac silhouette", "normal heart size"),
    (
        "cardiac silhouette is within normal limits",
        "normal heart size",
    ),
    ("cardiac silhouette is normal", "normal heart size"),
    (
        "cardiomediastinal silhouette is within normal limits",
        "normal cardiomediastinal silhouette",
    ),
    (
        "cardiomediastinal silhouette is normal",
        "normal cardiomediastinal silhouette",
    ),
    (
        "cardiomediastinal contours are normal",
        "normal cardiomediastinal silhouette",
    ),
    (
        "cardiomediastinal contours are within normal limits",
        "normal cardiomediastinal silhouette",
    ),
    (
        "normal cardiomediastinal contours",
        "normal cardiomediastinal silhouette",
    ),
    (
        "normal cardiomediastinal silhouette",
        "normal cardiomediastinal silhouette",
    ),
    ("heart is enlarged", "cardiomegaly"),
    ("heart is mildly enlarged", "cardiomegaly"),
    ("heart is moderately enlarged", "cardiomegaly"),
    ("heart is severely enlarged", "cardiomegaly"),
    ("heart is markedly enlarged", "cardiomegaly"),
    ("heart is slightly enlarged", "cardiomegaly"),
    ("heart size is enlarged", "cardiomegaly"),
    ("heart size is mildly enlarged", "cardiomegaly"),
    ("heart size is moderately enlarged", "cardiomegaly"),
    ("heart size is severely enlarged", "cardiomegaly"),
    ("cardiac silhouette is enlarged", "cardiomegaly"),
    ("cardiac silhouette is mildly enlarged", "cardiomegaly"),
    ("cardiac silhouette is moderately enlarged", "cardiomegaly"),
    ("enlarged cardiac silhouette", "cardiomegaly"),
    ("mildly enlarged heart", "cardiomegaly"),
    ("moderately enlarged heart", "cardiomegaly"),
    ("severely enlarged heart", "cardiomegaly"),
];

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

/// What a cue does to the findings in its scope.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CueScope {
    /// Applies to the findings after it, up to the end of the clause.
    Forward,
    /// Applies to the findings before it, back to the start of the clause.
    Backward,
    /// Ends every scope: the clause ends here.
    Terminator,
}

/// Negation, uncertainty and scope cues: (phrase, probability name, scope).
const CUES: &[(&str, &str, CueScope)] = &[
    ("no", "negative", CueScope::Forward),
    ("not", "negative", CueScope::Forward),
    ("without", "negative", CueScope::Forward),
    ("no evidence of", "negative", CueScope::Forward),
    ("no evidence for", "negative", CueScope::Forward),
    ("no radiographic evidence of", "negative", CueScope::Forward),
    ("no signs of", "negative", CueScope::Forward),
    ("no new", "negative", CueScope::Forward),
    ("no definite", "negative", CueScope::Forward),
    ("no convincing", "negative", CueScope::Forward),
    ("no focal", "negative", CueScope::Forward),
    ("no large", "negative", CueScope::Forward),
    ("no significant", "negative", CueScope::Forward),
    ("free of", "negative", CueScope::Forward),
    ("clear of", "negative", CueScope::Forward),
    ("negative for", "negative", CueScope::Forward),
    ("absence of", "negative", CueScope::Forward),
    ("resolution of", "negative", CueScope::Forward),
    ("neither", "negative", CueScope::Forward),
    ("nor", "negative", CueScope::Forward),
    ("absent", "negative", CueScope::Backward),
    ("is absent", "negative", CueScope::Backward),
    ("are absent", "negative", CueScope::Backward),
    ("not seen", "negative", CueScope::Backward),
    ("is not seen", "negative", CueScope::Backward),
    ("are not seen", "negative", CueScope::Backward),
    ("not identified", "negative", CueScope::Backward),
    ("is not identified", "negative", CueScope::Backward),
    ("are not identified", "negative", CueScope::Backward),
    ("is not present", "negative", CueScope::Backward),
    ("not present", "negative", CueScope::Backward),
    ("not visualized", "negative", CueScope::Backward),
    ("not appreciated", "negative", CueScope::Backward),
    ("is resolved", "negative", CueScope::Backward),
    ("has resolved", "negative", CueScope::Backward),
    ("have resolved", "negative", CueScope::Backward),
    ("are resolved", "negative", CueScope::Backward),
    ("ruled out", "negative", CueScope::Backward),
    ("has been ruled out", "negative", CueScope::Backward),
    ("is excluded", "negative", CueScope::Backward),
    ("may", "possible", CueScope::Forward),
    ("might", "possible", CueScope::Forward),
    ("could", "possible", CueScope::Forward),
    ("possible", "possible", CueScope::Forward),
    ("possibly", "possible", CueScope::Forward),
    ("may represent", "possible", CueScope::Forward),
    ("could represent", "possible", CueScope::Forward),
    ("could reflect", "possible", CueScope::Forward),
    ("may reflect", "possible", CueScope::Forward),
    ("questionable", "possible", CueScope::Forward),
    ("question of", "possible", CueScope::Forward),
    ("concerning for", "possible", CueScope::Forward),
    ("worrisome for", "possible", CueScope::Forward),
    ("cannot exclude", "possible", CueScope::Forward),
    ("can not exclude", "possible", CueScope::Forward),
    ("differential includes", "possible", CueScope::Forward),
    ("versus", "possible", CueScope::Forward),
    ("vs", "possible", CueScope::Forward),
    ("equivocal", "possible", CueScope::Forward),
    ("suspected", "possible", CueScope::Forward),
    ("cannot be excluded", "possible", CueScope::Backward),
    ("can not be excluded", "possible", CueScope::Backward),
    ("cannot be ruled out", "possible", CueScope::Backward),
    ("not excluded", "possible", CueScope::Backward),
    ("is not excluded", "possible", CueScope::Backward),
    ("is possible", "possible", CueScope::Backward),
    ("is suspected", "possible", CueScope::Backward),
    ("is questionable", "possible", CueScope::Backward),
    ("likely", "probable", CueScope::Forward),
    ("most likely", "probable", CueScope::Forward),
    ("probable", "probable", CueScope::Forward),
    ("probably", "probable", CueScope::Forward),
    ("suggestive of", "probable", CueScope::Forward),
    ("suspicious for", "probable", CueScope::Forward),
    ("compatible with", "probable", CueScope::Forward),
    ("presumed", "probable", CueScope::Forward),
    ("is likely", "probable", CueScope::Backward),
    ("is probable", "probable", CueScope::Backward),
    ("are likely", "probable", CueScope::Backward),
    ("unlikely", "unlikely", CueScope::Backward),
    ("less likely", "unlikely", CueScope::Forward),
    ("doubtful", "unlikely", CueScope::Backward),
    ("is unlikely", "unlikely", CueScope::Backward),
    ("recommend", "recommendation", CueScope::Forward),
    ("recommended", "recommendation", CueScope::Forward),
    ("is recommended", "recommendation", CueScope::Backward),
    ("suggest", "recommendation", CueScope::Forward),
    ("advise", "recommendation", CueScope::Forward),
    ("follow-up", "recommendation", CueScope::Forward),
    ("further evaluation", "recommendation", CueScope::Forward),
    ("would be helpful", "recommendation", CueScope::Backward),
    ("could be obtained", "recommendation", CueScope::Backward),
    ("but", "", CueScope::Terminator),
    ("however", "", CueScope::Terminator),
    ("although", "", CueScope::Terminator),
    ("though", "", CueScope::Terminator),
    ("whereas", "", CueScope::Terminator),
    ("while", "", CueScope::Terminator),
    ("which", "", CueScope::Terminator),
    ("with", "", CueScope::Terminator),
    ("except", "", CueScope::Terminator),
    ("aside from", "", CueScope::Terminator),
    ("apart from", "", CueScope::Terminator),
    ("other than", "", CueScope::Terminator),
    ("otherwise", "", CueScope::Terminator),
    ("and there is", "", CueScope::Terminator),
    ("and there are", "", CueScope::Terminator),
    ("there is", "", CueScope::Terminator),
    ("there are", "", CueScope::Terminator),
    (";", "", CueScope::Terminator),
    (":", "", CueScope::Terminator),
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

/// A negation, uncertainty or scope cue.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Cue {
    /// The refdefs probability name it implies (empty for terminators).
    pub probability: &'static str,
    /// Where it applies.
    pub scope: CueScope,
    /// Whether it says the finding resolved ("has resolved", "resolution of").
    pub resolves: bool,
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
    /// Index into [`Lexicon::cues`].
    Cue(usize),
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
    /// Cues.
    pub cues: Vec<Cue>,
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
        for (phrase, finding) in STATEMENT_PHRASES {
            if let Some(&index) = finding_index.get(finding) {
                set.add(phrase, Term::Finding(index));
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

        let mut cues = Vec::new();
        for (phrase, probability, scope) in CUES {
            set.add(phrase, Term::Cue(cues.len()));
            cues.push(Cue {
                probability,
                scope: *scope,
                resolves: phrase.contains("resol"),
            });
        }

        let mut changes = Vec::new();
        for change in defs.changes() {
            let index = changes.len();
            changes.push(ChangeEntry {
                name: change.name.get_ref().clone(),
                kind: *change.kind.get_ref(),
            });
            set.add(change.name.get_ref(), Term::Change(index));
            for synonym in change.synonyms.iter().filter(|s| !ambiguous(s.get_ref())) {
                set.add(synonym.get_ref(), Term::Change(index));
            }
        }

        for (phrase, name) in EXTRA_CHANGES {
            if let Some(index) = changes.iter().position(|c: &ChangeEntry| c.name == *name) {
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
            cues,
            modifier_words,
            side_words,
        }
    }

    /// The terms of `text`, leftmost-longest, whole words only (a plural `s`/`es` after a
    /// finding or region still counts as the word's end).
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
        candidates.sort_by(|a, b| a.start.cmp(&b.start).then(b.end.cmp(&a.end)));
        let mut mentions: Vec<Mention> = Vec::with_capacity(candidates.len());
        let mut covered = 0;
        for candidate in candidates {
            if candidate.start >= covered {
                covered = candidate.end;
                mentions.push(candidate);
            }
        }
        mentions
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
