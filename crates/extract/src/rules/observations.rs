//! Observations of FINDINGS and IMPRESSION sentences: NegEx-style cue scopes, attachment of
//! regions, modifiers and changes to findings, and the listing-4 fields.
//!
//! ```text
//!  sentence ─► mentions ─► clauses (cut at terminators: but, however, ;, which, with, …)
//!     per finding: probability = nearest forward cue before it in its clause
//!                               | first backward cue after it | positive
//!                  regions, modifiers, changes = mentions next to it in its clause
//!                  (a clause without findings lends them to the previous finding)
//!     ─► RawObservation (+ regional-distinction and device-part children)
//! ```

use cxrlake_refdefs::{ChangeKind, Laterality};

use super::lexicon::{Cue, CueScope, Lexicon, Mention, Term};
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

/// A clause: a byte range of the sentence and the mentions in it.
struct Clause {
    start: usize,
    end: usize,
    mentions: Vec<Mention>,
}

/// A finding mention with what was attached to it.
struct Attached {
    finding: Mention,
    clause: usize,
    others: Vec<Mention>,
}

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
    let mentions = lexicon.mentions(sentence);
    let clauses = clauses(lexicon, sentence, &mentions);
    let attached = attach(sentence, &clauses);
    let findings_per_clause = |c: usize| attached.iter().filter(|a| a.clause == c).count();
    attached
        .iter()
        .filter_map(|a| {
            let Term::Finding(index) = a.finding.term else {
                return None;
            };
            let clause = &clauses[a.clause];
            let (probability, cue_resolves) = probability(lexicon, sentence, clause, &a.finding);
            let observation = build(
                lexicon,
                sentence,
                a,
                clause,
                findings_per_clause(a.clause) > 1,
                probability,
                cue_resolves,
            );
            Some((index, observation))
        })
        .collect()
}

/// Cuts the sentence into clauses at terminator cues (a leading `there is` stays in the clause).
fn clauses(lexicon: &Lexicon, sentence: &str, mentions: &[Mention]) -> Vec<Clause> {
    let mut clauses = Vec::new();
    let mut start = 0;
    let mut current = Vec::new();
    for mention in mentions {
        let terminator =
            matches!(mention.term, Term::Cue(i) if lexicon.cues[i].scope == CueScope::Terminator);
        if !terminator {
            current.push(*mention);
            continue;
        }
        clauses.push(Clause {
            start,
            end: mention.start,
            mentions: std::mem::take(&mut current),
        });
        let matched = sentence[mention.start..mention.end].to_ascii_lowercase();
        start = match matched.find("there") {
            Some(offset) => mention.start + offset,
            None => mention.end,
        };
    }
    clauses.push(Clause {
        start,
        end: sentence.len(),
        mentions: current,
    });
    clauses
}

/// Attaches regions, modifiers and changes to the finding next to them.
fn attach(sentence: &str, clauses: &[Clause]) -> Vec<Attached> {
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
            if !matches!(m.term, Term::Region(_) | Term::Modifier | Term::Change(_)) {
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

/// The probability of a finding in its clause, and whether the cue says it resolved.
fn probability(
    lexicon: &Lexicon,
    sentence: &str,
    clause: &Clause,
    finding: &Mention,
) -> (&'static str, bool) {
    let negating_statement = Cue {
        probability: "negative",
        scope: CueScope::Forward,
        resolves: false,
    };
    // A normal statement starting with "no" ("no acute process or effusion") negates onwards.
    let cue = |m: &Mention| match m.term {
        Term::Cue(i) => Some(lexicon.cues[i]),
        Term::Finding(f)
            if lexicon.findings[f].normal
                && sentence[m.start..]
                    .get(..3)
                    .is_some_and(|w| w.eq_ignore_ascii_case("no ")) =>
        {
            Some(negating_statement)
        }
        _ => None,
    };
    let forward_before = clause
        .mentions
        .iter()
        .filter(|m| m.end <= finding.start)
        .filter_map(|m| cue(m).filter(|c| c.scope == CueScope::Forward))
        .next_back();
    if let Some(c) = forward_before {
        return (c.probability, c.resolves);
    }
    let after: Vec<&Mention> = clause
        .mentions
        .iter()
        .filter(|m| m.start >= finding.end)
        .collect();
    for (i, m) in after.iter().enumerate() {
        let Some(c) = cue(m) else { continue };
        let finding_follows = after[i + 1..]
            .iter()
            .any(|m| matches!(m.term, Term::Finding(_)));
        let applies_backward = c.scope == CueScope::Backward
            || (c.scope == CueScope::Forward && !finding_follows && c.probability != "negative");
        if applies_backward {
            return (c.probability, c.resolves);
        }
    }
    ("positive", false)
}

fn build(
    lexicon: &Lexicon,
    sentence: &str,
    attached: &Attached,
    clause: &Clause,
    shared_clause: bool,
    probability: &'static str,
    cue_resolves: bool,
) -> RawObservation {
    let Term::Finding(index) = attached.finding.term else {
        return RawObservation::default();
    };
    let entry = &lexicon.findings[index];
    let text_of = |m: &Mention| sentence[m.start..m.end].to_lowercase();
    let written = text_of(&attached.finding);
    let is_statement = written.contains(" is ") || written.contains(" are ");
    let entity = if is_statement {
        entry.name.clone()
    } else {
        written.clone()
    };

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
        match m.term {
            Term::Region(r) if !regions.contains(&text) => {
                if m.end <= attached.finding.start {
                    regions_before += 1;
                }
                regions.push(text);
                region_entries.push(r);
            }
            Term::Modifier if !modifiers.contains(&text) => modifiers.push(text),
            // "again seen, slightly worse": a real change outranks a stability word.
            Term::Change(c)
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
    let change_entry = change.map(|c| &lexicon.changes[c]);
    let resolved =
        cue_resolves || change_entry.is_some_and(|c| c.kind == ChangeKind::Disappearance);
    let probability = if resolved && probability == "positive" {
        "negative"
    } else {
        probability
    };
    let change_name = match change_entry {
        Some(c) => Some(c.name.clone()),
        None if cue_resolves => Some("resolved".to_owned()),
        None => None,
    };

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
