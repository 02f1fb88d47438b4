//! Sentence splitting: whitespace collapsed, abbreviations and decimals kept whole, list
//! numbering (`1.`, `2)`) removed.

/// Words that end with a period without ending the sentence (compared in lower case).
const ABBREVIATIONS: &[&str] = &[
    "dr", "mr", "mrs", "ms", "approx", "vs", "e.g", "i.e", "eg", "ie", "st", "fig", "no", "nos",
    "cf", "resp", "incl", "pt", "pts", "hx", "s/p", "ca", "min", "max", "esp", "sq", "al",
];

/// Splits `text` into sentences.
///
/// Newlines and runs of whitespace become single spaces. A sentence ends at `.`, `?` or `!`
/// followed by a space and an upper-case letter, a digit, `_` or `(`, or at the end of the
/// text, unless the period ends an abbreviation (`approx.`, `Dr.`), an initial, or list
/// numbering (`1.` at the start of a sentence). Decimals (`2.5 cm`) never split. Leading list
/// numbering is removed; pieces without letters or digits (other than `___`) are dropped.
pub fn split_sentences(text: &str) -> Vec<String> {
    let collapsed = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let chars: Vec<(usize, char)> = collapsed.char_indices().collect();
    let mut sentences = Vec::new();
    let mut start = 0;
    for (position, &(offset, c)) in chars.iter().enumerate() {
        if !matches!(c, '.' | '?' | '!') {
            continue;
        }
        let next = chars.get(position + 1).map(|&(_, c)| c);
        let after = chars.get(position + 2).map(|&(_, c)| c);
        let at_end = next.is_none();
        let breaks = at_end
            || (next == Some(' ')
                && after.is_some_and(|a| {
                    a.is_uppercase() || a.is_ascii_digit() || a == '_' || a == '('
                }));
        if !breaks {
            continue;
        }
        let piece = &collapsed[start..offset];
        if c == '.' && !at_end && !ends_sentence(piece) {
            continue;
        }
        push_sentence(&mut sentences, &collapsed[start..offset + c.len_utf8()]);
        start = offset + c.len_utf8();
    }
    if start < collapsed.len() {
        push_sentence(&mut sentences, &collapsed[start..]);
    }
    sentences
}

/// Whether a period after `piece` (the sentence so far, without the period) ends it.
fn ends_sentence(piece: &str) -> bool {
    let trimmed = piece.trim_start();
    if trimmed.len() <= 2 && !trimmed.is_empty() && trimmed.chars().all(|c| c.is_ascii_digit()) {
        return false;
    }
    let last = piece.rsplit(' ').next().unwrap_or_default();
    let last = last.trim_start_matches(['(', '"']);
    if last.len() == 1 && last.chars().all(|c| c.is_alphabetic()) {
        return false;
    }
    !ABBREVIATIONS.iter().any(|a| last.eq_ignore_ascii_case(a))
}

/// The longest sentence kept whole, in bytes. Real report sentences are far shorter (MIMIC-CXR's
/// longest are a few hundred characters); a longer run without a sentence end (a forged or
/// broken report, one 50 MB line) is cut at spaces into pieces of at most this size, as the
/// observation rules are quadratic in a sentence's length.
pub(crate) const MAX_SENTENCE_BYTES: usize = 2_000;

fn push_sentence(sentences: &mut Vec<String>, piece: &str) {
    let mut rest = strip_numbering(piece.trim());
    while !rest.is_empty() {
        let mut end = rest.len();
        if end > MAX_SENTENCE_BYTES {
            let mut limit = MAX_SENTENCE_BYTES;
            while !rest.is_char_boundary(limit) {
                limit -= 1;
            }
            end = rest[..limit]
                .rfind(' ')
                .filter(|&at| at > 0)
                .unwrap_or(limit);
        }
        let sentence = rest[..end].trim();
        let meaningful = sentence.chars().any(|c| c.is_alphanumeric()) || sentence.contains("___");
        if meaningful {
            sentences.push(sentence.to_owned());
        }
        rest = rest[end..].trim_start();
    }
}

/// Removes leading list numbering such as `1. `, `2) ` or `(3) `.
pub(crate) fn strip_numbering(sentence: &str) -> &str {
    let rest = sentence.strip_prefix('(').unwrap_or(sentence);
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    if digits == 0 || digits > 2 {
        return sentence;
    }
    let rest = &rest[digits..];
    match rest.strip_prefix(['.', ')']) {
        Some(after) if after.is_empty() || after.starts_with(' ') => after.trim_start(),
        _ => sentence,
    }
}

#[cfg(test)]
mod tests {

    #[test]
    fn an_endless_sentence_is_cut_at_spaces() {
        let words: Vec<String> = (0..20_000).map(|i| format!("opacity{i}")).collect();
        let text = words.join(" ");
        let sentences = split_sentences(&text);
        assert!(sentences.len() > 50, "{}", sentences.len());
        assert!(sentences.iter().all(|s| s.len() <= MAX_SENTENCE_BYTES));
        assert_eq!(sentences.join(" "), text, "no word lost or cut");
        // One 3,000-byte word (no space to cut at) is cut at a character boundary.
        let long = "é".repeat(1_500);
        let pieces = split_sentences(&long);
        assert_eq!(pieces.concat(), long);
    }

    use super::*;

    #[test]
    fn splits_and_keeps_abbreviations_and_decimals() {
        assert_eq!(
            split_sentences(
                "Tube tip is approx. 2.5 cm above\n the carina. Discussed with Dr. Smith. OK"
            ),
            [
                "Tube tip is approx. 2.5 cm above the carina.",
                "Discussed with Dr. Smith.",
                "OK"
            ]
        );
    }

    #[test]
    fn removes_list_numbering() {
        assert_eq!(
            split_sentences("1. No pneumothorax. 2. Small left effusion.\n 3) Stable nodule."),
            ["No pneumothorax.", "Small left effusion.", "Stable nodule."]
        );
    }

    #[test]
    fn drops_empty_pieces_but_keeps_deidentified_ones() {
        assert_eq!(split_sentences(" . ___. "), ["___."]);
        assert_eq!(
            split_sentences("Is there effusion? No."),
            ["Is there effusion?", "No."]
        );
    }
}
