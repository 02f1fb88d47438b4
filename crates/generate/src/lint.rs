//! Linters every flavour shares: words a generated question or answer must not use (comparisons
//! with earlier studies, references to the report, staff notifications, other views), the
//! invariants of choice questions, and near-duplicates by embedding cosine.

/// Terms a question or answer about one image must not use, by why (paper 004 rule 4, paper 001
/// appendix B, paper 002 P1). Matched as whole words or phrases, case-insensitively.
pub const BANNED_TERMS: &[(&str, &[&str])] = &[
    (
        "comparison",
        &[
            "compared",
            "comparison",
            "prior",
            "previous",
            "previously",
            "interval",
            "since",
            "unchanged",
            "improved",
            "improving",
            "worsened",
            "worsening",
            "progressed",
            "progression",
            "resolved",
            "stable",
            "again",
            "persistent",
            "new",
            "earlier",
            "before",
        ],
    ),
    (
        "report reference",
        &[
            "the report",
            "report",
            "mentioned",
            "described",
            "text description",
            "as stated",
            "stated",
            "the text",
        ],
    ),
    (
        "staff notification",
        &[
            "notified",
            "discussed with",
            "telephone",
            "paged",
            "communicated",
        ],
    ),
    (
        "other view or scan",
        &[
            "lateral view",
            "pa view",
            "ap view",
            "other scan",
            "ct scan",
            "prior study",
        ],
    ),
];

/// The banned terms `text` uses, each as `kind: term`, in lexicon order.
pub fn banned_terms(text: &str) -> Vec<String> {
    terms_in(BANNED_TERMS, text)
}

/// The terms of `lexicon` (`(kind, terms)`, each term lower-case words separated by spaces) that
/// `text` uses as whole words or phrases, case-insensitively, each as `kind: term`, in lexicon
/// order.
pub fn terms_in(lexicon: &[(&str, &[&str])], text: &str) -> Vec<String> {
    let words: Vec<String> = text
        .to_lowercase()
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_string)
        .collect();
    let mut hits = Vec::new();
    for (kind, terms) in lexicon {
        for term in *terms {
            let parts: Vec<&str> = term.split(' ').collect();
            if words.windows(parts.len()).any(|w| w == parts.as_slice()) {
                hits.push(format!("{kind}: {term}"));
            }
        }
    }
    hits
}

/// The option letters of a choice answer: `B`, `B, C`, `[B, C]`, `B and C`, in order, without
/// repeats (other characters are ignored; lower case is read as upper case).
pub fn answer_letters(answer: &str) -> Vec<char> {
    let mut letters = Vec::new();
    for token in answer.split(|c: char| !c.is_alphanumeric()) {
        let token = token.trim();
        if token.len() == 1 {
            let letter = token.chars().next().map(|c| c.to_ascii_uppercase());
            if let Some(letter @ 'A'..='D') = letter
                && !letters.contains(&letter)
            {
                letters.push(letter);
            }
        }
    }
    letters
}

/// Why a question of `question_type` (`open-ended`, `closed-ended`, `single-choice`,
/// `multi-choice`) with these `choices` and `answer` is malformed, `None` when it is well
/// formed: closed questions answer yes or no without choices, single-choice questions have four
/// distinct choices `A: …` … `D: …` and one letter, multi-choice ones the same choices and at
/// least one letter, open questions no choices and a non-empty answer.
pub fn check_choices(question_type: &str, choices: &[String], answer: &str) -> Option<String> {
    let answer = answer.trim();
    if answer.is_empty() {
        return Some("the answer is empty".into());
    }
    match question_type {
        "open-ended" => {
            (!choices.is_empty()).then(|| "an open-ended question has no choices".into())
        }
        "closed-ended" => {
            if !choices.is_empty() {
                return Some("a closed-ended question has no choices".into());
            }
            let word = answer.trim_end_matches(['.', '!']).to_lowercase();
            (word != "yes" && word != "no")
                .then(|| format!("a closed-ended answer is yes or no, not '{answer}'"))
        }
        "single-choice" | "multi-choice" => {
            if let Some(problem) = choice_labels(choices) {
                return Some(problem);
            }
            let letters = answer_letters(answer);
            match (question_type, letters.len()) {
                (_, 0) => Some(format!("the answer '{answer}' names no option A-D")),
                ("single-choice", 1) | ("multi-choice", _) => None,
                _ => Some(format!(
                    "a single-choice answer is one letter, not '{answer}'"
                )),
            }
        }
        other => Some(format!(
            "unknown question type '{other}': open-ended, closed-ended, single-choice or \
             multi-choice"
        )),
    }
}

/// Why `choices` are not four distinct options labelled `A:` … `D:` in order.
fn choice_labels(choices: &[String]) -> Option<String> {
    if choices.len() != 4 {
        return Some(format!("{} choices instead of 4", choices.len()));
    }
    let mut texts: Vec<String> = Vec::new();
    for (choice, letter) in choices.iter().zip(['A', 'B', 'C', 'D']) {
        let Some(text) = choice
            .trim()
            .strip_prefix(letter)
            .and_then(|rest| rest.trim_start().strip_prefix([':', '.', ')']))
        else {
            return Some(format!("choice '{choice}' is not labelled '{letter}: …'"));
        };
        let text = text.trim().to_lowercase();
        if text.is_empty() {
            return Some(format!("choice {letter} is empty"));
        }
        if texts.contains(&text) {
            return Some(format!("choice {letter} repeats another choice"));
        }
        texts.push(text);
    }
    None
}

/// For each vector, the index of the first earlier vector it is a near-duplicate of (cosine at
/// least `threshold`, vectors L2-normalised), else `None`: the first of a group of duplicates is
/// the one kept, so the choice does not depend on anything but the order.
pub fn near_duplicates(vectors: &[Vec<f32>], threshold: f32) -> Vec<Option<usize>> {
    let mut out: Vec<Option<usize>> = Vec::with_capacity(vectors.len());
    for (i, vector) in vectors.iter().enumerate() {
        let duplicate = (0..i).filter(|&j| out[j].is_none()).find(|&j| {
            let dot: f32 = vector.iter().zip(&vectors[j]).map(|(a, b)| a * b).sum();
            dot >= threshold
        });
        out.push(duplicate);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn banned_terms_are_whole_words_and_phrases() {
        assert_eq!(
            banned_terms("Is the effusion unchanged compared with the prior study?"),
            [
                "comparison: compared",
                "comparison: prior",
                "comparison: unchanged",
                "other view or scan: prior study"
            ]
        );
        assert_eq!(
            banned_terms("As mentioned in the report, it is stable."),
            [
                "comparison: stable",
                "report reference: the report",
                "report reference: report",
                "report reference: mentioned"
            ]
        );
        // "newly" and "reported" are other words.
        assert!(banned_terms("Is there a pleural effusion in the left lung?").is_empty());
        assert!(banned_terms("A newly placed line.").is_empty());
    }

    #[test]
    fn choice_invariants() {
        let choices: Vec<String> = [
            "A: Pleural effusion",
            "B: Pneumothorax",
            "C: Edema",
            "D: None",
        ]
        .map(String::from)
        .to_vec();
        assert_eq!(check_choices("single-choice", &choices, "B"), None);
        assert_eq!(check_choices("multi-choice", &choices, "[A, C]"), None);
        assert_eq!(check_choices("multi-choice", &choices, "A and C"), None);
        assert!(check_choices("single-choice", &choices, "A, C").is_some());
        assert!(check_choices("single-choice", &choices, "E").is_some());
        assert!(check_choices("single-choice", &choices[..3], "A").is_some());
        let repeated: Vec<String> = ["A: Edema", "B: edema", "C: x", "D: y"]
            .map(String::from)
            .to_vec();
        assert!(check_choices("multi-choice", &repeated, "A").is_some());
        let unlabelled: Vec<String> = ["Edema", "B: x", "C: y", "D: z"].map(String::from).to_vec();
        assert!(check_choices("single-choice", &unlabelled, "A").is_some());
        assert_eq!(check_choices("closed-ended", &[], "Yes."), None);
        assert!(check_choices("closed-ended", &[], "Maybe").is_some());
        assert!(check_choices("closed-ended", &choices, "Yes").is_some());
        assert_eq!(check_choices("open-ended", &[], "Atelectasis."), None);
        assert!(check_choices("open-ended", &choices, "x").is_some());
        assert!(check_choices("open-ended", &[], " ").is_some());
        assert!(check_choices("essay", &[], "x").is_some());
        assert_eq!(answer_letters("[b, C, B]"), ['B', 'C']);
    }

    #[test]
    fn near_duplicates_keep_the_first() {
        let norm = |v: [f32; 2]| {
            let n = (v[0] * v[0] + v[1] * v[1]).sqrt();
            vec![v[0] / n, v[1] / n]
        };
        let vectors = [
            norm([1.0, 0.0]),
            norm([1.0, 0.05]),
            norm([0.0, 1.0]),
            norm([0.05, 1.0]),
        ];
        assert_eq!(
            near_duplicates(&vectors, 0.99),
            [None, Some(0), None, Some(2)]
        );
        assert_eq!(near_duplicates(&vectors, 1.1), [None, None, None, None]);
    }
}
