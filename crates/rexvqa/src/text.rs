//! Word-level helpers of the offline generator and the heuristic judge.

/// Nouns that name where in the chest without saying which part: a region is named by its
/// other words (`left lower lung zone` by "left lower").
pub(crate) const ANATOMY_NOUNS: &[&str] = &[
    "lung",
    "lungs",
    "zone",
    "zones",
    "lobe",
    "lobes",
    "structures",
    "structure",
    "space",
    "region",
    "field",
    "fields",
];

/// The words that say how bilateral a statement is.
pub(crate) const BOTH_SIDES: &[&str] =
    &["bilateral", "both", "bibasilar", "biapical", "bilaterally"];

/// The lower-case words (letters and digits) of `text`, in order.
pub(crate) fn words(text: &str) -> Vec<String> {
    text.to_lowercase()
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_string)
        .collect()
}

/// Whether the phrase `phrase` (lower-case words separated by spaces) occurs in `words`; a
/// phrase word of five or more letters matches a word it starts (`effusion` ~ `effusions`).
pub(crate) fn contains_phrase(words: &[String], phrase: &str) -> bool {
    let parts: Vec<&str> = phrase.split_whitespace().collect();
    if parts.is_empty() || words.len() < parts.len() {
        return false;
    }
    words.windows(parts.len()).any(|window| {
        window
            .iter()
            .zip(&parts)
            .all(|(w, p)| w == p || (p.len() >= 5 && w.starts_with(p)))
    })
}

/// `text` with its first letter in upper case.
pub(crate) fn capitalize(text: &str) -> String {
    let mut chars = text.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

/// `text` as a sentence: trimmed, capitalised, ending with a full stop.
pub(crate) fn sentence(text: &str) -> String {
    let text = capitalize(text.trim());
    if text.ends_with(['.', '!', '?']) {
        text
    } else {
        format!("{text}.")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn phrases_match_word_prefixes_of_long_words() {
        let w = words("Small bilateral pleural effusions, no pneumothorax.");
        assert!(contains_phrase(&w, "pleural effusion"));
        assert!(contains_phrase(&w, "pneumothorax"));
        assert!(!contains_phrase(&w, "no effusion"));
        assert!(!contains_phrase(&w, ""));
        assert_eq!(sentence(" the heart is normal"), "The heart is normal.");
    }
}
