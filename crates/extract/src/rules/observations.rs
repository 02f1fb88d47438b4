//! Observations of FINDINGS and IMPRESSION sentences: ConText scopes, attachment of regions,
//! modifiers and changes to findings, and the listing-4 fields.
//!
//! ```text
//!  sentence (whitespace collapsed) ─► mentions
//!     ─► refinements: a de-identified device ("left chest ___ with tip …") becomes a device
//!        mention; a sized opacity ("1.9 x 1.8 cm round density") a nodule (< 3 cm) or mass
//!     ─► clauses (cut at terminate triggers: but, however, ;, which, with, …)
//!     per finding: probability and trigger change = the ConText reading (context.rs)
//!                  regions, modifiers, changes = mentions next to it in its clause
//!                  (a clause without findings lends them to the previous finding)
//!     ─► RawObservation (+ regional-distinction and device-part children)
//! ```

use cxrlake_refdefs::{ChangeKind, Laterality, TriggerCategory};

use super::context::{Clause, Reading, clauses, is_statement, reading};
use super::lexicon::{Lexicon, Mention, Term};
use crate::model::RawObservation;

/// Comparison phrases removed from summary sentences (compared in lower case).
const COMPARISON_PHRASES: &[&str] = &[
    "as compared to",
    "compared to",
    "compared with",
    "in comparison to",
    "since",
    "from",
    "relative to",
    "in the interval",
    "in size",
    "in position",
    "in extent",
    "in appearance",
];

/// Words left dangling when the change words after them are removed.
const DANGLING_WORDS: &[&str] = &[
    "is",
    "are",
    "has",
    "have",
    "been",
    "remains",
    "remain",
    "appears",
    "appear",
    "and",
    "or",
    "which",
    "slightly",
    "somewhat",
    "also",
    "now",
    "overall",
    "otherwise",
    "but",
    "with",
];

/// A finding mention with what was attached to it.
struct Attached {
    finding: Mention,
    clause: usize,
    others: Vec<Mention>,
}

/// Words next to a de-identified `___` that say it is a tube, line or catheter.
const DEVICE_CONTEXT: &[&str] = &[
    "tip",
    "tips",
    "terminates",
    "terminating",
    "terminate",
    "ends",
    "projects",
    "projecting",
    "courses",
    "coursing",
    "placement",
    "withdrawn",
    "advanced",
    "position",
    "catheter",
    "line",
    "tube",
    "leads",
];

/// Largest size of a lung nodule; a larger sized opacity is a mass (cm).
const NODULE_MAX_CM: f64 = 3.0;

/// Observations of one cluster of sentences, duplicates (same finding, probability and
/// compatible regions) merged.
pub(crate) fn cluster_observations(lexicon: &Lexicon, sentences: &[&str]) -> Vec<RawObservation> {
    let mut out: Vec<(usize, RawObservation)> = Vec::new();
    for sentence in sentences {
        for (finding, observation) in sentence_observations(lexicon, sentence) {
            let duplicate = out.iter_mut().find(|(f, o)| {
                *f == finding
                    && o.probability == observation.probability
                    && (o.regions == observation.regions
                        || o.regions.is_empty()
                        || observation.regions.is_empty())
            });
            match duplicate {
                Some((_, existing)) => {
                    if existing.regions.is_empty() {
                        existing.regions = observation.regions;
                        existing.name = observation.name;
                        existing.children = observation.children;
                    }
                    let stable = |c: &Option<String>| c.as_deref() == Some("unchanged");
                    if existing.change.is_none()
                        || (stable(&existing.change)
                            && observation.change.is_some()
                            && !stable(&observation.change))
                    {
                        existing.change = observation.change;
                        existing.change_sentence = observation.change_sentence;
                    }
                    for modifier in observation.modifiers {
                        if !existing.modifiers.contains(&modifier) {
                            existing.modifiers.push(modifier);
                        }
                    }
                }
                None => out.push((finding, observation)),
            }
        }
    }
    out.into_iter().map(|(_, o)| o).collect()
}

/// Observations of one sentence with the index of their finding class.
pub(crate) fn sentence_observations(
    lexicon: &Lexicon,
    sentence: &str,
) -> Vec<(usize, RawObservation)> {
    // A sentence given with its line breaks reads as one line.
    let collapsed;
    let sentence = if sentence.contains(['\n', '\r', '\t']) || sentence.contains("  ") {
        collapsed = sentence.split_whitespace().collect::<Vec<_>>().join(" ");
        collapsed.as_str()
    } else {
        sentence
    };
    let mut mentions = lexicon.mentions(sentence);
    deidentified_device(lexicon, sentence, &mut mentions);
    let clauses = clauses(lexicon, sentence, &mentions);
    let sized = sized_opacities(lexicon, sentence, &clauses);
    let attached = attach(lexicon, sentence, &clauses);
    let findings_per_clause = |c: usize| attached.iter().filter(|a| a.clause == c).count();
    attached
        .iter()
        .filter_map(|a| {
            let Term::Finding(index) = a.finding.term else {
                return None;
            };
            let clause = &clauses[a.clause];
            let read = reading(lexicon, sentence, clause, &a.finding);
            let resized = sized
                .iter()
                .find(|(start, _)| *start == a.finding.start)
                .map(|&(_, f)| f);
            let observation = build(
                lexicon,
                sentence,
                a,
                clause,
                findings_per_clause(a.clause) > 1,
                read,
                resized,
            );
            Some((resized.unwrap_or(index), observation))
        })
        .collect()
}

/// Adds a device mention for a de-identified device name: the first `___` (or `___-a-___`, a
/// port-a-cath) of a sentence that says where a tip is or where a line runs, when no device is
/// named already ("There is a left chest ___ with tip projecting over the lower SVC").
fn deidentified_device(lexicon: &Lexicon, sentence: &str, mentions: &mut Vec<Mention>) {
    let Some(at) = sentence.find("___") else {
        return;
    };
    let named = mentions
        .iter()
        .any(|m| matches!(m.term, Term::Finding(f) if lexicon.findings[f].device));
    let lower = sentence.to_ascii_lowercase();
    let placed = lower
        .split(|c: char| !c.is_ascii_alphanumeric())
        .any(|w| DEVICE_CONTEXT.contains(&w));
    if named || !placed {
        return;
    }
    let end = at
        + sentence[at..]
            .find(|c: char| c != '_')
            .unwrap_or(sentence.len() - at);
    let (end, device) = match sentence[end..].strip_prefix("-a-___") {
        Some(rest) => (sentence.len() - rest.len(), "port-a-cath"),
        None => (end, "support devices"),
    };
    let Some(index) = lexicon.finding_index(device) else {
        return;
    };
    if mentions.iter().any(|m| m.start < end && at < m.end) {
        return;
    }
    let position = mentions.partition_point(|m| m.start < at);
    mentions.insert(
        position,
        Mention {
            start: at,
            end,
            term: Term::Finding(index),
        },
    );
}

/// Opacities with a size in their clause ("a 1.9 x 1.8 cm round area of density", "rounded
/// density measuring 2 cm"): `(mention start, lung nodule or lung mass)`.
fn sized_opacities(lexicon: &Lexicon, sentence: &str, clauses: &[Clause]) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    for clause in clauses {
        for m in &clause.mentions {
            let Term::Finding(f) = m.term else { continue };
            if !lexicon.findings[f].sizable {
                continue;
            }
            let before = size_before(&sentence[clause.start..m.start]);
            let after = &sentence[m.end..clause.end];
            let measured = after
                .trim_start()
                .to_ascii_lowercase()
                .starts_with("measuring");
            let size = before
                .and_then(|b| sizes_cm(b).last().copied())
                .or_else(|| measured.then(|| sizes_cm(after).first().copied()).flatten());
            let Some(size) = size else { continue };
            let name = if size < NODULE_MAX_CM {
                "lung nodule"
            } else {
                "lung mass"
            };
            if let Some(index) = lexicon.finding_index(name) {
                out.push((m.start, index));
            }
        }
    }
    out
}

/// Words between a size and an opacity that make the size another thing's ("4 cm above the
/// carina and right basilar opacity").
const SIZE_BREAKS: &[&str] = &[
    "above", "below", "from", "into", "beyond", "past", "distal", "proximal", "and", "or", "with",
    "the", "in", "at",
];

/// The text before an opacity that may size it: from the last size unit on, when no word of
/// [`SIZE_BREAKS`] follows the unit ("a 1.9 x 1.8 cm round area of").
fn size_before(text: &str) -> Option<&str> {
    let lower = text.to_ascii_lowercase();
    let unit_end = ["cm", "mm"]
        .iter()
        .filter_map(|unit| {
            lower.rmatch_indices(unit).find_map(|(at, _)| {
                let after = lower[at + unit.len()..].chars().next();
                let before = lower[..at].chars().next_back();
                let whole = after.is_none_or(|c| !c.is_ascii_alphanumeric())
                    && before.is_some_and(|c| c.is_ascii_digit() || c == ' ');
                whole.then_some(at + unit.len())
            })
        })
        .max()?;
    let gap = &lower[unit_end..];
    let broken = gap
        .split(|c: char| !c.is_ascii_alphanumeric())
        .any(|w| SIZE_BREAKS.contains(&w));
    (!broken).then_some(text)
}

/// The sizes written in `text` ("1.9 x 1.8 cm", "8 mm"), each as its largest dimension in cm,
/// in text order.
pub(crate) fn sizes_cm(text: &str) -> Vec<f64> {
    let lower = text.to_ascii_lowercase();
    let words = lower
        .split(|c: char| c.is_whitespace() || c == ',' || c == '(' || c == ')')
        .map(|w| w.trim_end_matches(['.', ';', ':']))
        .filter(|w| !w.is_empty());
    let mut sizes = Vec::new();
    let mut numbers: Vec<f64> = Vec::new();
    for word in words {
        let (number, unit) = match word.find(|c: char| c.is_ascii_alphabetic()) {
            Some(0) => (None, word),
            Some(i) => (word[..i].parse::<f64>().ok(), &word[i..]),
            None => (word.parse::<f64>().ok(), ""),
        };
        numbers.extend(number);
        let per_cm = match unit {
            "cm" => 1.0,
            "mm" => 10.0,
            "x" | "by" => continue,
            "" if number.is_some() => continue,
            _ => {
                numbers.clear();
                continue;
            }
        };
        if let Some(max) = numbers.iter().copied().reduce(f64::max) {
            sizes.push(max / per_cm);
        }
        numbers.clear();
    }
    sizes
}

/// Whether a mention states a change: a change term or a pseudo trigger with a change ("no
/// change in …").
fn states_change(lexicon: &Lexicon, mention: &Mention) -> bool {
    match mention.term {
        Term::Change(_) => true,
        Term::Trigger(i) => {
            let trigger = &lexicon.triggers[i];
            trigger.category == TriggerCategory::Pseudo && trigger.change.is_some()
        }
        _ => false,
    }
}

/// The change index a change mention states (see [`states_change`]).
fn change_of(lexicon: &Lexicon, mention: &Mention) -> Option<usize> {
    match mention.term {
        Term::Change(c) => Some(c),
        Term::Trigger(i) => lexicon.triggers[i].change,
        _ => None,
    }
}

/// Attaches regions, modifiers and changes to the finding next to them.
fn attach(lexicon: &Lexicon, sentence: &str, clauses: &[Clause]) -> Vec<Attached> {
    let mut attached: Vec<Attached> = Vec::new();
    for (c, clause) in clauses.iter().enumerate() {
        let first = attached.len();
        for m in &clause.mentions {
            if matches!(m.term, Term::Finding(_)) {
                attached.push(Attached {
                    finding: *m,
                    clause: c,
                    others: Vec::new(),
                });
            }
        }
        let here = first..attached.len();
        for m in &clause.mentions {
            if !matches!(m.term, Term::Region(_) | Term::Modifier) && !states_change(lexicon, m) {
                continue;
            }
            let target = if here.is_empty() {
                first.checked_sub(1)
            } else {
                let next = here.clone().find(|&i| attached[i].finding.start >= m.end);
                let previous = here
                    .clone()
                    .rev()
                    .find(|&i| attached[i].finding.end <= m.start);
                match (previous, next) {
                    (None, next) => next,
                    (previous, None) => previous,
                    (Some(previous), Some(next)) => {
                        // A list separator between the word and the next finding: the word
                        // belongs to the finding before it ("effusion is new and atelectasis").
                        let gap = &sentence[m.end..attached[next].finding.start];
                        let separated = gap.contains(',')
                            || gap.contains(" and ")
                            || gap.contains(" or ")
                            || gap.contains(" is ")
                            || gap.contains(" are ");
                        Some(if separated { previous } else { next })
                    }
                }
            };
            if let Some(target) = target {
                attached[target].others.push(*m);
            }
        }
    }
    attached
}

/// The observation of one attached finding; `resized` replaces the finding by a nodule or mass
/// (a sized opacity), named by its refdefs name.
fn build(
    lexicon: &Lexicon,
    sentence: &str,
    attached: &Attached,
    clause: &Clause,
    shared_clause: bool,
    read: Reading<'_>,
    resized: Option<usize>,
) -> RawObservation {
    let Term::Finding(index) = attached.finding.term else {
        return RawObservation::default();
    };
    let entry = &lexicon.findings[resized.unwrap_or(index)];
    let text_of = |m: &Mention| sentence[m.start..m.end].to_lowercase();
    let written = text_of(&attached.finding);
    // Statements, de-identified devices and sized opacities are named by their refdefs name;
    // other findings as written (a name or synonym of the vocabulary).
    let canonical = is_statement(&written) || written.starts_with("___") || resized.is_some();
    let entity = if canonical {
        entry.name.clone()
    } else {
        written.clone()
    };
    let probability = read.probability;

    let mut regions: Vec<String> = Vec::new();
    let mut region_entries = Vec::new();
    let mut regions_before = 0;
    let mut modifiers: Vec<String> = Vec::new();
    for word in written.split([' ', '-']) {
        if let Some(r) = lexicon.side_word(word) {
            regions.push(word.to_owned());
            region_entries.push(r);
            regions_before += 1;
        } else if !entry.device && lexicon.is_modifier_word(word) {
            modifiers.push(word.to_owned());
        }
    }
    let mut change = None;
    for m in &attached.others {
        let text = text_of(m);
        match (m.term, change_of(lexicon, m)) {
            (Term::Region(r), _) if !regions.contains(&text) => {
                if m.end <= attached.finding.start {
                    regions_before += 1;
                }
                regions.push(text);
                region_entries.push(r);
            }
            (Term::Modifier, _) if !modifiers.contains(&text) => modifiers.push(text),
            // "again seen, slightly worse": a real change outranks a stability word.
            (_, Some(c))
                if change.is_none_or(|previous: usize| {
                    lexicon.changes[previous].kind == ChangeKind::Stability
                        && lexicon.changes[c].kind != ChangeKind::Stability
                }) =>
            {
                change = Some(c)
            }
            _ => {}
        }
    }
    let change_entry = change.or(read.change).map(|c| &lexicon.changes[c]);
    let resolved = change_entry.is_some_and(|c| c.kind == ChangeKind::Disappearance);
    let probability = if resolved && probability == "positive" {
        "negative"
    } else {
        probability
    };
    let change_name = change_entry.map(|c| c.name.clone());

    // The name takes the regions written before the finding ("left lower lobe opacity"), else
    // those after it ("opacity in the left lower lobe"); a device only those before.
    let name_regions: Vec<&String> = if regions_before > 0 || entry.device {
        regions.iter().take(regions_before).collect()
    } else {
        regions.iter().collect()
    };
    let base_name = if entry.normal {
        entry.name.clone()
    } else {
        entity.clone()
    };
    let name_regions: Vec<&str> = name_regions
        .into_iter()
        .filter(|r| !base_name.contains(r.as_str()))
        .map(String::as_str)
        .collect();
    let name = if name_regions.is_empty() {
        base_name
    } else {
        format!("{} {base_name}", name_regions.join(" "))
    };

    let changes_here: Vec<&Mention> = attached
        .others
        .iter()
        .filter(|m| matches!(m.term, Term::Change(_)))
        .collect();
    let summary_sentence = if shared_clause {
        let start = attached
            .others
            .iter()
            .map(|m| m.start)
            .chain([attached.finding.start])
            .min()
            .unwrap_or(attached.finding.start);
        let end = attached
            .others
            .iter()
            .map(|m| m.end)
            .chain([attached.finding.end])
            .max()
            .unwrap_or(attached.finding.end);
        let phrase = without_changes(sentence, start, end, &changes_here);
        format!("{}{phrase}", probability_prefix(probability))
    } else {
        without_changes(sentence, clause.start, clause.end, &changes_here)
    };
    let summary_sentence = finish(&summary_sentence);
    let change_sentence = change_name.as_deref().map(|c| change_sentence(&name, c));

    let mut children = Vec::new();
    if probability != "negative" && !entry.device {
        let (sides, parent_regions) = regional_children(
            lexicon,
            &entity,
            &regions,
            &region_entries,
            probability,
            change_name.as_deref(),
        );
        children.extend(sides);
        regions = parent_regions;
    }
    let has_tip = sentence
        .split(|c: char| !c.is_ascii_alphanumeric())
        .any(|w| w.eq_ignore_ascii_case("tip"));
    if entry.device && has_tip && !entity.contains("tip") {
        children.push(RawObservation {
            child_type: Some("device_part".to_owned()),
            name: format!("{entity} tip"),
            entity: entity.clone(),
            probability: Some(probability.to_owned()),
            change: None,
            summary_sentence: summary_sentence.clone(),
            change_sentence: None,
            regions: regions.clone(),
            modifiers: Vec::new(),
            children: Vec::new(),
        });
    }
    RawObservation {
        child_type: None,
        name,
        entity,
        probability: Some(probability.to_owned()),
        change: change_name,
        summary_sentence,
        change_sentence,
        regions,
        modifiers,
        children,
    }
}

/// One child per side when the regions say both sides, and the parent's regions (explicit
/// sides move to the children when a bilateral region is named).
fn regional_children(
    lexicon: &Lexicon,
    entity: &str,
    regions: &[String],
    entries: &[usize],
    probability: &str,
    change: Option<&str>,
) -> (Vec<RawObservation>, Vec<String>) {
    let mut left: Vec<String> = Vec::new();
    let mut right: Vec<String> = Vec::new();
    let mut bilateral: Vec<(String, String, String)> = Vec::new();
    for (text, &r) in regions.iter().zip(entries) {
        let entry = &lexicon.regions[r];
        match entry.laterality {
            Laterality::Left => left.push(text.clone()),
            Laterality::Right => right.push(text.clone()),
            Laterality::Bilateral => {
                bilateral.extend(entry.sides.clone().map(|(l, r)| (text.clone(), l, r)))
            }
            Laterality::Unknown => {}
        }
    }
    let explicit = !left.is_empty() && !right.is_empty();
    let (sides, parent_regions, replaced): (Vec<String>, Vec<String>, Option<String>) =
        match bilateral.into_iter().next() {
            Some((_, _, _)) if explicit => {
                let parent = regions
                    .iter()
                    .filter(|r| !left.contains(r) && !right.contains(r))
                    .cloned()
                    .collect();
                (left.into_iter().chain(right).collect(), parent, None)
            }
            Some((text, l, r)) => (vec![l, r], regions.to_vec(), Some(text)),
            None if explicit => (
                left.into_iter().chain(right).collect(),
                regions.to_vec(),
                None,
            ),
            None => return (Vec::new(), regions.to_vec()),
        };
    let children = sides
        .into_iter()
        .map(|side| {
            let name = match &replaced {
                Some(bilateral) if entity.contains(bilateral.as_str()) => {
                    entity.replacen(bilateral.as_str(), &side, 1)
                }
                _ => format!("{side} {entity}"),
            };
            RawObservation {
                child_type: Some("regional_distinction".to_owned()),
                summary_sentence: finish(&format!("{}{name}", probability_prefix(probability))),
                change_sentence: change.map(|c| change_sentence(&name, c)),
                name,
                entity: entity.to_owned(),
                probability: Some(probability.to_owned()),
                change: change.map(str::to_owned),
                regions: vec![side],
                modifiers: Vec::new(),
                children: Vec::new(),
            }
        })
        .collect();
    (children, parent_regions)
}

fn probability_prefix(probability: &str) -> &'static str {
    match probability {
        "negative" => "No ",
        "possible" => "Possible ",
        "probable" => "Probable ",
        "unlikely" => "Unlikely ",
        "recommendation" => "Recommended evaluation of ",
        _ => "",
    }
}

/// The listing-4 style change sentence for an observation called `name`.
fn change_sentence(name: &str, change: &str) -> String {
    let name = capitalize(name);
    match change {
        "new" => format!("{name} is new."),
        "resolved" => format!("{name} has resolved."),
        "unchanged" => format!("{name} is unchanged compared to prior."),
        "worsened" | "improved" | "increased" | "decreased" | "changed" => {
            format!("{name} has {change} compared to prior.")
        }
        "recurred" => format!("{name} has recurred."),
        "inserted" => format!("{name} has been newly placed."),
        "removed" | "repositioned" | "replaced" => format!("{name} has been {change}."),
        other => format!("{name}: {other} compared to prior."),
    }
}

/// `sentence[start..end]` without the change mentions and the comparison words around them.
fn without_changes(sentence: &str, start: usize, end: usize, changes: &[&Mention]) -> String {
    let mut text = String::new();
    let mut cursor = start;
    let mut inside: Vec<&&Mention> = changes
        .iter()
        .filter(|m| m.start >= start && m.end <= end)
        .collect();
    inside.sort_by_key(|m| m.start);
    for m in inside {
        text.push_str(strip_dangling(&sentence[cursor..m.start]));
        text.push(' ');
        cursor = strip_comparison(sentence, m.end, end);
    }
    text.push_str(&sentence[cursor.min(end)..end]);
    let lower = text.to_ascii_lowercase();
    let cut = [
        "compared to",
        "compared with",
        "since the prior",
        "since prior",
        "from prior",
    ]
    .iter()
    .filter_map(|p| lower.find(p))
    .min();
    if let Some(cut) = cut {
        text.truncate(cut);
    }
    text
}

fn strip_dangling(text: &str) -> &str {
    let mut text = text.trim_end();
    loop {
        let last_start = text.rfind(' ').map_or(0, |i| i + 1);
        let last = &text[last_start..];
        if DANGLING_WORDS.iter().any(|w| last.eq_ignore_ascii_case(w)) {
            text = text[..last_start].trim_end();
        } else {
            return text;
        }
    }
}

/// Skips comparison words starting at `from`; returns the new offset.
fn strip_comparison(sentence: &str, from: usize, end: usize) -> usize {
    let rest = &sentence[from..end];
    let trimmed = rest.trim_start();
    let lower = trimmed.to_ascii_lowercase();
    match COMPARISON_PHRASES.iter().find(|p| lower.starts_with(*p)) {
        Some(phrase) => {
            let after = &trimmed[phrase.len()..];
            let stop = after.find([',', ';', '.']).unwrap_or(after.len());
            end - after.len() + stop
        }
        None => from,
    }
}

/// Capitalized, whitespace collapsed, dangling words and stray punctuation removed, ending `.`.
pub(crate) fn finish(text: &str) -> String {
    let collapsed = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let collapsed = collapsed.replace(" ,", ",").replace(" .", ".");
    let mut body = collapsed.trim_matches(|c: char| c == ',' || c == ';' || c == ':' || c == ' ');
    loop {
        let before = body;
        body = body.trim_end_matches(['.', ',', ';', ':', ' ']);
        body = strip_dangling(body);
        let first_end = body.find(' ').unwrap_or(body.len());
        let first = &body[..first_end];
        if ["and", "or", "but", "with", "which"]
            .iter()
            .any(|w| first.eq_ignore_ascii_case(w))
        {
            body = body[first_end..].trim_start();
        }
        if body == before {
            break;
        }
    }
    if body.is_empty() {
        return String::new();
    }
    format!("{}.", capitalize(body))
}

pub(crate) fn capitalize(text: &str) -> String {
    let mut chars = text.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_are_read_in_cm() {
        assert_eq!(sizes_cm("a 1.9 x 1.8 cm round"), [1.9]);
        assert_eq!(sizes_cm("an 8 mm nodule"), [0.8]);
        assert_eq!(sizes_cm("measuring 2.2cm."), [2.2]);
        assert_eq!(sizes_cm("4 x 3 cm and 12 mm"), [4.0, 1.2]);
        assert!(sizes_cm("in 2 views, 3 ribs").is_empty());
        assert!(sizes_cm("T12 and the 7th rib").is_empty());
    }

    #[test]
    fn a_size_before_an_opacity_must_be_its_own() {
        assert!(size_before("There is a 1.9 x 1.8 cm round area of ").is_some());
        assert!(size_before("A 12 mm rounded ").is_some());
        assert!(size_before("Tube tip 4 cm above the carina and right basilar ").is_none());
        assert!(size_before("Right basilar ").is_none());
        assert!(size_before("Mild cmv-related ").is_none());
    }

    #[test]
    fn finish_cleans_fragments() {
        assert_eq!(
            finish("there is a small left effusion."),
            "There is a small left effusion."
        );
        assert_eq!(finish(" left effusion is ,"), "Left effusion.");
        assert_eq!(finish("but no pneumothorax"), "No pneumothorax.");
    }

    #[test]
    fn change_words_and_comparisons_are_removed() {
        let sentence = "Left pleural effusion has worsened compared to prior.";
        let start = sentence.find("worsened").unwrap_or_default();
        let change = Mention {
            start,
            end: start + "worsened".len(),
            term: Term::Change(0),
        };
        assert_eq!(
            finish(&without_changes(sentence, 0, sentence.len(), &[&change])),
            "Left pleural effusion."
        );
    }
}
