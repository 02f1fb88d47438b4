//! The sentence-extraction output (listings 1 and 2): one line per sentence,
//! `[S01] SECTION(TYPE) - merge with [S..]: text`.
//!
//! ```text
//!  output ──► unescape `\_` `\#` … ──► lines
//!     ├─ code fences, blank lines: end the open sentence
//!     ├─ `[S07] …`: a new sentence (section, type, merge ids, text)
//!     ├─ other lines right after a sentence: continue its text (wrapped lines)
//!     └─ other lines: prose, ignored
//!  ──► drop empty sentences ──► keep ids (strictly increasing) or renumber S01.. ──► links
//! ```

use crate::{ExtractError, Result, SectionType, Sentence};

/// Section used for a sentence line without a recognisable `SECTION(TYPE)` header.
const UNKNOWN_SECTION: &str = "UNKNOWN";

/// Section names per type, from listing 1 (normalised: upper case, `_` as space).
const SECTION_NAMES: [(SectionType, &[&str]); 6] = [
    (
        SectionType::ExamTechnique,
        &["EXAMINATION", "EXAM", "TECHNIQUE"],
    ),
    (
        SectionType::Indication,
        &[
            "INDICATION",
            "INDICATIONS",
            "HISTORY",
            "CLINICAL HISTORY",
            "CLINICAL",
            "REASON",
            "REASON FOR EXAM",
        ],
    ),
    (SectionType::Findings, &["FINDING", "FINDINGS"]),
    (
        SectionType::Impression,
        &["IMPRESSION", "IMPRESSIONS", "RECOMMENDATION"],
    ),
    (
        SectionType::PreFinalReport,
        &[
            "WET READ",
            "WET READ VERSION#1",
            "PRE FINAL REPORT NO SECTION",
        ],
    ),
    (
        SectionType::Ignore,
        &[
            "COMPARISON",
            "COMPARISONS",
            "REFERENCE EXAM",
            "NOTIFICATION",
        ],
    ),
];

/// Parses the sentence-extraction output. Fails only when no sentence line is found.
pub fn sentences(output: &str) -> Result<Vec<Sentence>> {
    let text = unescape_markdown(output);
    let mut drafts: Vec<Draft> = Vec::new();
    let mut open = false;
    for line in text.lines() {
        let trimmed = line.trim();
        if trimmed.is_empty() || trimmed.starts_with("```") {
            open = false;
        } else if let Some((number, rest)) = sentence_id(trimmed) {
            drafts.push(Draft::parse(number, rest));
            open = true;
        } else if open && let Some(last) = drafts.last_mut() {
            open = last.continues_with(line);
            if open {
                last.append(trimmed.trim_start_matches(WRAP_MARKS).trim());
            }
        }
    }
    drafts.retain(|draft| !draft.text.is_empty());
    if drafts.is_empty() {
        return Err(ExtractError::parse(
            "sentences",
            "no line of the form `[S01] SECTION(TYPE) - merge with []: text` found",
        ));
    }
    Ok(resolve(drafts))
}

/// Line-wrap marks of PDF listings.
const WRAP_MARKS: [char; 3] = ['↪', '↳', '→'];

/// One sentence line as read, before ids are resolved.
#[derive(Debug)]
struct Draft {
    number: u32,
    section: String,
    section_type: SectionType,
    merge_numbers: Vec<u32>,
    text: String,
}

impl Draft {
    /// Parses what follows `[Snn]`: `SECTION(TYPE) - merge with [..]: text`, each part optional.
    fn parse(number: u32, rest: &str) -> Draft {
        let rest = rest.trim_start_matches(|c: char| c == '*' || c.is_whitespace());
        let name_end = rest
            .find(['(', ':', '-', '–', '—', '['])
            .unwrap_or(rest.len());
        let name = rest[..name_end].trim();
        let followed_by_type = rest[name_end..].starts_with('(');
        let is_header = !name.is_empty()
            && (followed_by_type
                || (name.split_whitespace().count() <= 6
                    && !name.chars().any(char::is_lowercase)
                    && name_end < rest.len()));
        if !is_header {
            return Draft {
                number,
                section: UNKNOWN_SECTION.to_string(),
                section_type: SectionType::Ignore,
                merge_numbers: Vec::new(),
                text: rest.trim().to_string(),
            };
        }
        let mut cursor = &rest[name_end..];
        let mut type_text = None;
        if let Some(after_paren) = cursor.strip_prefix('(') {
            let end = after_paren
                .find(')')
                .or_else(|| after_paren.find([':', '-']))
                .unwrap_or(after_paren.len());
            type_text = Some(&after_paren[..end]);
            cursor = after_paren[end..]
                .strip_prefix(')')
                .unwrap_or(&after_paren[end..]);
        }
        cursor =
            cursor.trim_start_matches(|c: char| c.is_whitespace() || matches!(c, '-' | '–' | '—'));
        let mut merge_numbers = Vec::new();
        if cursor
            .get(..5)
            .is_some_and(|word| word.eq_ignore_ascii_case("merge"))
        {
            cursor = cursor[5..].trim_start();
            if cursor
                .get(..4)
                .is_some_and(|word| word.eq_ignore_ascii_case("with"))
            {
                cursor = cursor[4..].trim_start();
            }
            let merge_end = match cursor.strip_prefix('[') {
                Some(inner) => inner.find(']').map_or(cursor.len(), |end| end + 2),
                None => cursor.find(':').unwrap_or(cursor.len()),
            };
            merge_numbers = numbers_in(&cursor[..merge_end]);
            cursor = &cursor[merge_end..];
        }
        cursor = cursor.trim_start();
        let text = cursor.strip_prefix(':').unwrap_or(cursor).trim();
        Draft {
            number,
            section: normalize_section(name),
            section_type: section_type(type_text, name),
            merge_numbers,
            text: text.to_string(),
        }
    }

    /// Whether `line` (not a sentence line) continues this sentence's text: it is indented, or
    /// the text so far is empty or does not end a sentence.
    fn continues_with(&self, line: &str) -> bool {
        line.starts_with(char::is_whitespace)
            || line.trim_start().starts_with(WRAP_MARKS)
            || !self.text.ends_with(['.', '!', '?'])
    }

    fn append(&mut self, more: &str) {
        if !self.text.is_empty() && !more.is_empty() {
            self.text.push(' ');
        }
        self.text.push_str(more);
    }
}

/// Replaces markdown escapes (`\_`, `\#`, `\*`, `\[`, `\]`) by the plain character.
fn unescape_markdown(text: &str) -> String {
    text.replace("\\_", "_")
        .replace("\\#", "#")
        .replace("\\*", "*")
        .replace("\\[", "[")
        .replace("\\]", "]")
}

/// The number of a line's leading `[S07]` (also `S07]`, `[s7]`, `[07]`, `- [S07]`, `**[S07]**`)
/// and the rest of the line. Small models drop the `S` inside the brackets.
fn sentence_id(line: &str) -> Option<(u32, &str)> {
    let line =
        line.trim_start_matches(|c: char| c.is_whitespace() || matches!(c, '-' | '*' | '•' | '>'));
    let (bracketed, line) = match line.strip_prefix('[') {
        Some(rest) => (true, rest.trim_start()),
        None => (false, line),
    };
    let line = match line.strip_prefix(['S', 's']) {
        Some(rest) => rest,
        None if bracketed => line,
        None => return None,
    };
    let digits = line
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(line.len());
    if digits == 0 || digits > 6 {
        return None;
    }
    let number = line[..digits].parse().ok()?;
    let rest = line[digits..].trim_start().strip_prefix(']')?;
    Some((number, rest))
}

/// Every number in `text` (`[S01, S03]`, `S01 and 3`), in order.
fn numbers_in(text: &str) -> Vec<u32> {
    text.split(|c: char| !c.is_ascii_digit())
        .filter(|digits| !digits.is_empty() && digits.len() <= 6)
        .filter_map(|digits| digits.parse().ok())
        .collect()
}

/// Upper case with `_` for spaces, without decoration; `UNKNOWN` when empty.
fn normalize_section(name: &str) -> String {
    let words: Vec<String> = name
        .trim_matches(|c: char| c == '*' || c == ':' || c.is_whitespace())
        .split_whitespace()
        .map(str::to_uppercase)
        .collect();
    if words.is_empty() {
        UNKNOWN_SECTION.to_string()
    } else {
        words.join("_")
    }
}

/// The type as written, else inferred from the written type or the section name with listing
/// 1's section-name lists, else `IGNORE`.
fn section_type(type_text: Option<&str>, section: &str) -> SectionType {
    type_text
        .and_then(SectionType::parse)
        .or_else(|| type_text.and_then(type_of_section_name))
        .or_else(|| type_of_section_name(section))
        .unwrap_or(SectionType::Ignore)
}

fn type_of_section_name(name: &str) -> Option<SectionType> {
    let normalized = name
        .replace('_', " ")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .to_uppercase();
    let normalized = normalized.trim_end_matches(':');
    SECTION_NAMES
        .iter()
        .find(|(_, names)| names.contains(&normalized))
        .map(|(section_type, _)| *section_type)
        .or_else(|| {
            normalized
                .starts_with("WET READ")
                .then_some(SectionType::PreFinalReport)
        })
}

/// Assigns ids and turns merge numbers into links to earlier sentences.
///
/// The model's numbers are kept when strictly increasing; otherwise sentences are renumbered
/// `S01..` and a link goes to the latest earlier sentence with that number (else the first later
/// one). A link to a later sentence is stored on that sentence, pointing back.
fn resolve(drafts: Vec<Draft>) -> Vec<Sentence> {
    let numbers: Vec<u32> = drafts.iter().map(|draft| draft.number).collect();
    let keep = numbers.windows(2).all(|pair| pair[0] < pair[1]);
    let ids: Vec<String> = if keep {
        numbers.iter().map(|n| format!("S{n:02}")).collect()
    } else {
        (1..=drafts.len()).map(|n| format!("S{n:02}")).collect()
    };
    let mut links: Vec<Vec<usize>> = vec![Vec::new(); drafts.len()];
    for (index, draft) in drafts.iter().enumerate() {
        for number in &draft.merge_numbers {
            let earlier = numbers[..index].iter().rposition(|n| n == number);
            let later = || {
                numbers[index + 1..]
                    .iter()
                    .position(|n| n == number)
                    .map(|at| index + 1 + at)
            };
            match earlier.or_else(later) {
                Some(target) if target < index => links[index].push(target),
                Some(target) if target > index => links[target].push(index),
                _ => {}
            }
        }
    }
    drafts
        .into_iter()
        .zip(links)
        .zip(&ids)
        .map(|((draft, mut targets), id)| {
            targets.sort_unstable();
            targets.dedup();
            Sentence {
                sent_id: id.clone(),
                section: draft.section,
                section_type: draft.section_type,
                sentence: draft.text,
                merge_with: targets
                    .into_iter()
                    .map(|target| ids[target].clone())
                    .collect(),
            }
        })
        .collect()
}
