//! The MIMIC section parser: the FINAL REPORT banner, WET READ and other headers, and the
//! blocks of text between them.
//!
//! ```text
//!  line ─┬─ "FINAL REPORT" banner ─────────► later text is in the final report
//!        ├─ "____" rule ───────────────────► ends the current block
//!        ├─ blank line ────────────────────► ends the current block, unless its sentence
//!        │                                    goes on below ("no pneumothorax or⏎⏎effusion")
//!        ├─ "HEADER: text" / "HEADER" ─────► new section (name upper case, `_` for spaces)
//!        ├─ "1. text" ─────────────────────► new block (an enumeration item)
//!        └─ other ─────────────────────────► appended to the current block
//! ```

use crate::model::SectionType;

/// The section name for text outside sections in the final report.
pub(crate) const FINAL_REPORT_NO_SECTION: &str = "FINAL_REPORT_NO_SECTION";
/// The section name for text outside sections before the FINAL REPORT banner.
pub(crate) const PRE_FINAL_REPORT_NO_SECTION: &str = "PRE_FINAL_REPORT_NO_SECTION";

/// Header names written in mixed case that are still headers ("Findings:").
const KNOWN_HEADERS: &[&str] = &[
    "EXAMINATION",
    "EXAM",
    "TECHNIQUE",
    "INDICATION",
    "INDICATIONS",
    "HISTORY",
    "CLINICAL HISTORY",
    "CLINICAL INFORMATION",
    "CLINICAL INDICATION",
    "CLINICAL",
    "REASON",
    "REASON FOR EXAM",
    "REASON FOR EXAMINATION",
    "REASON FOR STUDY",
    "FINDING",
    "FINDINGS",
    "IMPRESSION",
    "IMPRESSIONS",
    "RECOMMENDATION",
    "RECOMMENDATIONS",
    "RECOMMENDATION(S)",
    "CONCLUSION",
    "CONCLUSIONS",
    "COMPARISON",
    "COMPARISONS",
    "REFERENCE EXAM",
    "NOTIFICATION",
    "WET READ",
    "PROCEDURE",
    "SUMMARY",
];

/// Section type by words in the header, checked in order (first hit wins).
const HEADER_RULES: &[(&str, SectionType)] = &[
    ("WET READ", SectionType::PreFinalReport),
    ("COMPARISON", SectionType::Ignore),
    ("REFERENCE EXAM", SectionType::Ignore),
    ("NOTIFICATION", SectionType::Ignore),
    ("FINDING", SectionType::Findings),
    ("IMPRESSION", SectionType::Impression),
    ("CONCLUSION", SectionType::Impression),
    ("RECOMMENDATION", SectionType::Impression),
    ("SUMMARY", SectionType::Impression),
    ("INDICATION", SectionType::Indication),
    ("HISTORY", SectionType::Indication),
    ("REASON", SectionType::Indication),
    ("CLINICAL", SectionType::Indication),
    ("MEDICAL CONDITION", SectionType::Indication),
    ("EXAM", SectionType::ExamTechnique),
    ("TECHNIQUE", SectionType::ExamTechnique),
    ("PROCEDURE", SectionType::ExamTechnique),
];

/// A run of text in one section.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Block {
    /// Section name as written, upper case with `_`.
    pub section: String,
    /// Type from the header; `None` where the content decides.
    pub section_type: Option<SectionType>,
    /// The text, lines joined with spaces.
    pub text: String,
}

/// The section type a header name implies, if any.
fn header_type(name: &str) -> Option<SectionType> {
    HEADER_RULES
        .iter()
        .find(|(word, _)| name.contains(word))
        .map(|(_, t)| *t)
}

/// `(header, rest of line)` when `line` starts with a section header.
fn split_header(line: &str) -> Option<(String, &str)> {
    let (prefix, rest) = match line.find(':') {
        Some(colon) => (&line[..colon], &line[colon + 1..]),
        None => (line.trim_end_matches(':'), ""),
    };
    let prefix = prefix.trim();
    let words = prefix.split_whitespace().count();
    let allowed = prefix
        .chars()
        .all(|c| c.is_ascii_alphabetic() || c.is_ascii_digit() || " ()#/&-".contains(c));
    let letters = prefix.chars().filter(char::is_ascii_alphabetic).count();
    if words == 0 || words > 6 || !allowed || letters < 3 {
        return None;
    }
    let normalized = prefix.split_whitespace().collect::<Vec<_>>().join(" ");
    let upper = normalized.to_uppercase();
    let all_caps = normalized == upper;
    let known = KNOWN_HEADERS.contains(&upper.as_str());
    let has_colon = line.contains(':');
    let is_header = if has_colon {
        known || all_caps
    } else {
        known && all_caps
    };
    is_header.then(|| (section_name(&upper), rest))
}

/// `REASON FOR EXAM` → `REASON_FOR_EXAM`; other characters than letters, digits and `#` dropped.
fn section_name(header: &str) -> String {
    header
        .split_whitespace()
        .map(|w| {
            w.chars()
                .filter(|c| c.is_ascii_alphanumeric() || *c == '#')
                .collect::<String>()
        })
        .filter(|w| !w.is_empty())
        .collect::<Vec<_>>()
        .join("_")
}

fn is_rule(line: &str) -> bool {
    line.len() >= 3 && line.chars().all(|c| c == '_' || c == '-' || c == '=')
}

/// Last words after which a sentence cannot have ended (compared in lower case).
const OPEN_ENDINGS: &[&str] = &[
    "or", "and", "nor", "of", "with", "without", "the", "a", "an", "to", "for", "in", "no", "is",
    "are", "by", "at", "on",
];

/// Whether `line`, after a blank line, continues the unfinished sentence at the end of `text`.
fn continues(text: &str, line: &str) -> bool {
    let text = text.trim_end();
    if text.is_empty() || text.ends_with(['.', '?', '!', ':', ';']) {
        return false;
    }
    let last = text
        .rsplit(|c: char| !c.is_alphanumeric())
        .next()
        .unwrap_or_default()
        .to_ascii_lowercase();
    text.ends_with(',')
        || OPEN_ENDINGS.contains(&last.as_str())
        || line.starts_with(|c: char| c.is_lowercase())
}

fn starts_enumeration(line: &str) -> bool {
    let digits = line.bytes().take_while(u8::is_ascii_digit).count();
    (1..=2).contains(&digits)
        && line[digits..].starts_with(['.', ')'])
        && line[digits + 1..].starts_with(' ')
}

/// Splits a report into section blocks.
pub(crate) fn blocks(report: &str) -> Vec<Block> {
    let has_banner = report.lines().any(is_banner);
    let mut in_final = !has_banner;
    let mut section: Option<(String, Option<SectionType>)> = None;
    let mut out: Vec<Block> = Vec::new();
    let mut current = String::new();
    let mut after_blank = false;
    let flush = |out: &mut Vec<Block>,
                 current: &mut String,
                 section: &Option<(String, Option<SectionType>)>,
                 in_final: bool| {
        if current.trim().is_empty() {
            current.clear();
            return;
        }
        let (name, section_type) = match section {
            Some((name, t)) => (name.clone(), *t),
            None if in_final => (FINAL_REPORT_NO_SECTION.to_owned(), None),
            None => (
                PRE_FINAL_REPORT_NO_SECTION.to_owned(),
                Some(SectionType::PreFinalReport),
            ),
        };
        out.push(Block {
            section: name,
            section_type,
            text: std::mem::take(current),
        });
    };
    for raw in report.lines() {
        let line = raw.trim();
        if is_banner(line) {
            flush(&mut out, &mut current, &section, in_final);
            in_final = true;
            section = None;
            continue;
        }
        if is_rule(line) {
            flush(&mut out, &mut current, &section, in_final);
            continue;
        }
        if line.is_empty() {
            after_blank = true;
            continue;
        }
        let header = split_header(line);
        if std::mem::take(&mut after_blank)
            && (header.is_some() || starts_enumeration(line) || !continues(&current, line))
        {
            flush(&mut out, &mut current, &section, in_final);
        }
        let mut body = line;
        if let Some((name, rest)) = header {
            flush(&mut out, &mut current, &section, in_final);
            let section_type =
                header_type(&name).or((!in_final).then_some(SectionType::PreFinalReport));
            section = Some((name, section_type));
            body = rest.trim();
        } else if starts_enumeration(line) {
            flush(&mut out, &mut current, &section, in_final);
        }
        if !body.is_empty() {
            if !current.is_empty() {
                current.push(' ');
            }
            current.push_str(body);
        }
        // A wet read header line carries only its time stamp; the read follows below.
        let wet_read = section
            .as_ref()
            .is_some_and(|(name, _)| name.starts_with("WET_READ"));
        if wet_read && body.len() == line.len().min(body.len()) && body != line {
            flush(&mut out, &mut current, &section, in_final);
        }
    }
    flush(&mut out, &mut current, &section, in_final);
    out
}

fn is_banner(line: &str) -> bool {
    line.trim().starts_with("FINAL REPORT")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_are_recognized_in_caps_and_known_mixed_case() {
        assert_eq!(
            split_header("REASON FOR EXAM:  eval"),
            Some(("REASON_FOR_EXAM".to_owned(), "  eval"))
        );
        assert_eq!(
            split_header("Findings: Clear."),
            Some(("FINDINGS".to_owned(), " Clear."))
        );
        assert_eq!(
            split_header("IMPRESSION"),
            Some(("IMPRESSION".to_owned(), ""))
        );
        assert_eq!(split_header("Discussed with Dr. ___ at 2:30 pm."), None);
        assert_eq!(split_header("The lungs: clear"), None);
        assert_eq!(
            split_header("WET READ VERSION #1"),
            None,
            "without a colon only known headers count"
        );
        assert_eq!(
            split_header("WET READ VERSION #1: ___"),
            Some(("WET_READ_VERSION_#1".to_owned(), " ___"))
        );
    }

    #[test]
    fn a_sentence_goes_on_across_a_blank_line() {
        let texts =
            |report: &str| -> Vec<String> { blocks(report).into_iter().map(|b| b.text).collect() };
        assert_eq!(
            texts("FINDINGS: No pneumothorax or\n\npleural effusion.\n\nHeart size is normal."),
            [
                "No pneumothorax or pleural effusion.",
                "Heart size is normal."
            ]
        );
        assert_eq!(
            texts("No focal consolidation,\n\n  effusion or pneumothorax.\n"),
            ["No focal consolidation, effusion or pneumothorax."]
        );
        assert_eq!(
            texts("Lungs are clear\n\nIMPRESSION: No acute process."),
            ["Lungs are clear", "No acute process."]
        );
    }

    #[test]
    fn text_before_the_banner_is_pre_final() {
        let blocks = blocks("Some preliminary text\n FINAL REPORT\n CHEST PA\n");
        assert_eq!(blocks[0].section, PRE_FINAL_REPORT_NO_SECTION);
        assert_eq!(blocks[1].section, FINAL_REPORT_NO_SECTION);
        assert_eq!(blocks[1].section_type, None);
    }
}
