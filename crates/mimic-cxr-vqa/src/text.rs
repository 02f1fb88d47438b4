//! Word-level helpers of the answerer, the linter and the judge.

/// The lower-case words (letters, digits and apostrophes inside a word) of `text`, in order; a
/// possessive `'s` is dropped (`heart's` → `heart`).
pub(crate) fn words(text: &str) -> Vec<String> {
    text.to_lowercase()
        .split(|c: char| !(c.is_alphanumeric() || c == '\''))
        .map(|w| w.trim_matches('\''))
        .map(|w| w.strip_suffix("'s").unwrap_or(w))
        .filter(|w| !w.is_empty())
        .map(str::to_string)
        .collect()
}

/// The sentences of `text` (split at `.`, `;`, `?`, `!` and line breaks), trimmed, non-empty.
pub(crate) fn sentences(text: &str) -> Vec<&str> {
    text.split(['.', ';', '?', '!', '\n'])
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .collect()
}

/// Whether the phrase `phrase` (lower-case words separated by spaces) occurs in `words`; a
/// phrase word matches a word it starts (`effusion` matches `effusions`, `enlarg` matches
/// `enlarged`) when it has at least five letters.
pub(crate) fn position(words: &[String], phrase: &str) -> Option<usize> {
    let parts: Vec<&str> = phrase.split(' ').collect();
    if parts.is_empty() || words.len() < parts.len() {
        return None;
    }
    words.windows(parts.len()).position(|window| {
        window
            .iter()
            .zip(&parts)
            .all(|(w, p)| w == p || (p.len() >= 5 && w.starts_with(p)))
    })
}

/// Words that negate a finding named within the next few words ("no effusion", "without
/// consolidation", "negative for pneumonia", "free of", "absence of").
const NEGATIONS: &[&str] = &[
    "no",
    "not",
    "without",
    "negative",
    "free",
    "absence",
    "absent",
    "nor",
    "resolved",
    "clear",
    "normal",
    "unremarkable",
];

/// Words that make a following finding uncertain.
const HEDGES: &[&str] = &[
    "may",
    "might",
    "possible",
    "possibly",
    "probable",
    "probably",
    "questionable",
    "suspected",
    "suspicious",
    "likely",
    "cannot",
    "can't",
    "versus",
    "vs",
    "concern",
    "concerning",
    "equivocal",
    "suggest",
    "suggests",
    "suggesting",
    "could",
];

/// Words that end the scope of a negation or hedge ("no effusion but there is atelectasis").
const SCOPE_BREAKS: &[&str] = &[
    "but", "however", "although", "though", "which", "with", "and",
];

/// How a sentence speaks of a finding at word `at`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Stance {
    /// Said to be there.
    Present,
    /// Said to be perhaps there.
    Uncertain,
    /// Said not to be there.
    Absent,
}

/// The stance toward the finding whose phrase starts at `at` in `words`: negated by a negation
/// word among the six words before it (within its scope), hedged by a hedge in the sentence,
/// else present. `X is not seen`, `X is absent`, `X is normal` and `X is within normal limits`
/// count as negated too (for an abnormality, normal is its absence).
pub(crate) fn stance(words: &[String], at: usize, phrase_len: usize) -> Stance {
    let start = at.saturating_sub(6);
    let mut negated = false;
    for word in words[start..at].iter().rev() {
        if SCOPE_BREAKS.contains(&word.as_str()) && word != "and" {
            break;
        }
        if NEGATIONS.contains(&word.as_str()) {
            negated = true;
            break;
        }
    }
    let after = &words[(at + phrase_len).min(words.len())..(at + phrase_len + 4).min(words.len())];
    if after.iter().any(|w| {
        matches!(
            w.as_str(),
            "not"
                | "absent"
                | "resolved"
                | "excluded"
                | "none"
                | "normal"
                | "unremarkable"
                | "within"
        )
    }) && !after.iter().any(|w| w == "cannot" || w == "be")
    {
        negated = true;
    }
    let hedged = words.iter().any(|w| HEDGES.contains(&w.as_str()));
    let cannot_exclude = words.iter().any(|w| w == "excluded" || w == "cannot");
    if hedged && (!negated || cannot_exclude) {
        Stance::Uncertain
    } else if negated {
        Stance::Absent
    } else {
        Stance::Present
    }
}

/// The placeholders both prompts share: `INDICATION` (`none` when the report has none),
/// `FINDINGS` and `QUESTION`, trimmed.
pub(crate) fn report_placeholders(
    indication: &str,
    findings: &str,
    question: &str,
) -> Vec<(&'static str, String)> {
    let indication = match indication.trim() {
        "" => "none",
        text => text,
    };
    vec![
        ("INDICATION", indication.to_string()),
        ("FINDINGS", findings.trim().to_string()),
        ("QUESTION", question.trim().to_string()),
    ]
}

/// Words that carry no content of their own for comparing an answer with a report.
pub(crate) const STOPWORDS: &[&str] = &[
    "a",
    "an",
    "the",
    "is",
    "are",
    "was",
    "were",
    "be",
    "been",
    "there",
    "this",
    "that",
    "these",
    "those",
    "of",
    "in",
    "on",
    "at",
    "to",
    "and",
    "or",
    "with",
    "without",
    "no",
    "not",
    "yes",
    "any",
    "as",
    "by",
    "for",
    "from",
    "it",
    "its",
    "seen",
    "see",
    "observed",
    "identified",
    "present",
    "visible",
    "shown",
    "shows",
    "show",
    "demonstrated",
    "noted",
    "radiograph",
    "image",
    "images",
    "signs",
    "sign",
    "evidence",
    "findings",
    "finding",
    "which",
    "can",
    "detected",
    "indications",
    "indication",
    "appears",
    "appear",
    "suggest",
    "suggests",
    "also",
    "also",
    "both",
    "has",
    "have",
    "patient",
    "chest",
    "x",
    "ray",
    "does",
    "do",
    "some",
    "other",
    "within",
    "size",
    "but",
    "than",
    "may",
    "be",
    "likely",
    "possible",
    "there's",
    "consistent",
];
