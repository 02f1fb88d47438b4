//! What is read from a question or answer's words: its reasoning aspect, its length, the
//! guideline breaches of prompts P1 and P2 (a reference to the report, a temporal comparison,
//! subjective phrasing, a question about the whole image) and the reverse-negation pattern of
//! prompt P3 (asking why a finding is absent or a region normal).

use std::sync::LazyLock;

use regex::Regex;

/// The reasoning aspects: the six foci of prompt P1 (the paper's label set is not printed; its
/// schema example is `detection`).
pub const ASPECTS: [&str; 6] = [
    "detection",
    "localization",
    "cause",
    "suspicious_area",
    "disease",
    "texture",
];

fn regex(pattern: &str) -> Regex {
    Regex::new(pattern).expect("a valid pattern")
}

static TEXTURE: LazyLock<Regex> = LazyLock::new(|| {
    regex(r"(?i)\b(texture|textures|pattern|appearance|density|lucen\w*|look like)\b")
});
static CAUSE: LazyLock<Regex> = LazyLock::new(|| {
    regex(
        r"(?i)\b(cause|causes|caused|causing|reason|why|explain\w*|due to|responsible|account for|underlying)\b",
    )
});
static DISEASE: LazyLock<Regex> = LazyLock::new(|| {
    regex(r"(?i)\b(disease|diseases|diagnos\w*|condition|conditions|suggest\w*|indicat\w*)\b")
});
static LOCATION: LazyLock<Regex> = LazyLock::new(|| {
    regex(
        r"(?i)\b(where|location|located|locate|which part|which side|what part|position|extend\w*|portion)\b",
    )
});
static SUSPICIOUS: LazyLock<Regex> =
    LazyLock::new(|| regex(r"(?i)\b(suspicious|concerning|area of concern|areas of concern)\b"));

/// The reasoning aspect of a question: the first of texture, cause, suspicious area, disease,
/// localization its words ask about, else detection.
pub fn aspect(question: &str) -> &'static str {
    if TEXTURE.is_match(question) {
        "texture"
    } else if CAUSE.is_match(question) {
        "cause"
    } else if SUSPICIOUS.is_match(question) {
        "suspicious_area"
    } else if DISEASE.is_match(question) {
        "disease"
    } else if LOCATION.is_match(question) {
        "localization"
    } else {
        "detection"
    }
}

/// Words (white-space separated tokens), the length unit of `question_length` and
/// `answer_length`.
pub fn words(text: &str) -> usize {
    text.split_whitespace().count()
}

static REPORT: LazyLock<Regex> =
    LazyLock::new(|| regex(r"(?i)\b(report|reports|reported|radiologist'?s? note)\b"));
static TEMPORAL: LazyLock<Regex> = LazyLock::new(|| {
    regex(
        r"(?i)\b(prior|previous|previously|compared|comparison|since the last|interval|unchanged|worsen\w*|improv\w*|progress\w*|earlier|follow-up|over time)\b",
    )
});
static SUBJECTIVE: LazyLock<Regex> = LazyLock::new(|| {
    regex(
        r"(?i)(\bis my\b|\bmy condition\b|\bshould i\b|\bam i\b|\bconcerned\b|\bworried\b|why is this happening)",
    )
});
static REGION_WORDS: LazyLock<Regex> = LazyLock::new(|| {
    regex(
        r"(?i)\b(this|that|the|given|marked|highlighted|indicated|x-ray) (region|zone|area|structure|location)\b",
    )
});

/// The guideline breaches of a question (prompt P1), as lint codes: `mentions_report`,
/// `temporal`, `subjective`, `not_region_specific` (names neither the region nor "this
/// region/zone/area").
pub fn question_lint(question: &str, region_name: &str) -> Vec<String> {
    let mut lint = Vec::new();
    if REPORT.is_match(question) {
        lint.push("mentions_report".to_string());
    }
    if TEMPORAL.is_match(question) {
        lint.push("temporal".to_string());
    }
    if SUBJECTIVE.is_match(question) {
        lint.push("subjective".to_string());
    }
    if !names_region(question, region_name) {
        lint.push("not_region_specific".to_string());
    }
    lint
}

/// The guideline breaches of an answer (prompt P2): `answer_mentions_report`.
pub fn answer_lint(answer: &str) -> Vec<String> {
    if REPORT.is_match(answer) {
        vec!["answer_mentions_report".to_string()]
    } else {
        Vec::new()
    }
}

/// Whether `text` names the region (its words other than the side, e.g. "hilar" for the right
/// hilar structures, or "lung" for the left lung base) or a deictic "this region".
fn names_region(text: &str, region_name: &str) -> bool {
    if REGION_WORDS.is_match(text) {
        return true;
    }
    let lower = text.to_lowercase();
    region_name
        .split([' ', '_'])
        .filter(|w| {
            !matches!(
                *w,
                "right" | "left" | "soft" | "structures" | "space" | "zone"
            )
        })
        .flat_map(|w| {
            let stem = &w[..w.len().min(5)];
            let other: &[&str] = match w {
                "hilar" => &["hil"],
                "cardiac" | "silhouette" => &["heart", "cardi"],
                "hemidiaphragm" => &["diaphragm"],
                "apical" => &["apex", "apic"],
                _ => &[],
            };
            std::iter::once(stem).chain(other.iter().copied())
        })
        .any(|stem| stem.len() >= 3 && lower.contains(stem))
}

static REVERSE_NEGATION: LazyLock<Vec<Regex>> = LazyLock::new(|| {
    let absent = r"(absence|absent|lack|lacking|no\b|not\b|without|normal|clear|unremarkable|free of|negative for|ruled out|rule out)";
    let why = r"(why|reason|reasons|cause|causes|caused|explain\w*|account\w* for|responsible|contribut\w*|lead\w* to|due to|because)";
    vec![
        regex(&format!(r"(?i)\b{why}\b[^.?!]*\b{absent}")),
        regex(&format!(
            r"(?i)\b{absent}[^.?!]*\b(due to|because of|caused by|explained by|the reason)\b"
        )),
    ]
});

/// Whether a question asks why a finding is absent or a region normal ("What might be the
/// reason for the absence of pneumothorax in the right lung?"): prompt P3's reverse negation,
/// always a hallucination.
pub fn reverse_negation(question: &str) -> bool {
    REVERSE_NEGATION.iter().any(|r| r.is_match(question))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aspects_follow_the_questions_words() {
        assert_eq!(
            aspect("What abnormality is visible in the right lung?"),
            "detection"
        );
        assert_eq!(aspect("Where is the opacity located?"), "localization");
        assert_eq!(
            aspect("What could cause the effusion in the left costophrenic angle?"),
            "cause"
        );
        assert_eq!(
            aspect("Which disease is suggested in the right lung?"),
            "disease"
        );
        assert_eq!(
            aspect("How would you describe the texture of the left lung?"),
            "texture"
        );
        assert_eq!(
            aspect("Is there a suspicious area in the carina?"),
            "suspicious_area"
        );
        assert_eq!(words("  What is   seen? "), 3);
    }

    #[test]
    fn lint_finds_the_guideline_breaches() {
        assert_eq!(
            question_lint(
                "What does the report say about the right lung?",
                "right lung"
            ),
            vec!["mentions_report"]
        );
        assert_eq!(
            question_lint(
                "Has the opacity worsened compared to the prior film?",
                "right lung"
            ),
            vec!["temporal", "not_region_specific"]
        );
        assert_eq!(
            question_lint("Should I be concerned about this region?", "right lung"),
            vec!["subjective"]
        );
        assert!(
            question_lint(
                "Is there a finding at the right hilum?",
                "right hilar structures"
            )
            .is_empty()
        );
        assert!(question_lint("Is the left lung base clear?", "left lung base").is_empty());
        assert!(question_lint("What is the texture in the region?", "spine").is_empty());
        assert_eq!(
            question_lint("What is the cause of the abnormality?", "right lung"),
            vec!["not_region_specific"]
        );
        assert_eq!(
            answer_lint("As mentioned in the report, it is clear."),
            vec!["answer_mentions_report"]
        );
    }

    #[test]
    fn reverse_negation_questions_are_recognised() {
        for q in [
            "What might be the reason for the absence of pneumothorax in the right lung?",
            "Why is there no pleural effusion in the left costophrenic angle?",
            "What explains the normal appearance of the cardiac silhouette?",
            "What could be the cause of the lack of consolidation in the right lower lobe?",
            "Why does the trachea appear normal?",
            "What is the reason the left lung is clear?",
        ] {
            assert!(reverse_negation(q), "{q}");
        }
        for q in [
            "What could be the cause of the opacity in the right lung?",
            "Is there a pneumothorax in the right lung?",
            "Does the cardiac silhouette appear normal?",
            "What abnormality is visible in the left lung?",
        ] {
            assert!(!reverse_negation(q), "{q}");
        }
    }
}
