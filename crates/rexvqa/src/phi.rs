//! The PHI check of the validation layer (paper 003, appendix A: the compliance check drops
//! questions with protected health information): patterns for what HIPAA's Safe Harbor lists and
//! a chest X-ray MCQ can leak from its report.
//!
//! | kind | examples |
//! |---|---|
//! | `de-identification marker` | `___` (MIMIC's marker: text next to it was a name, date or place) |
//! | `date` | `03/12/2019`, `2019-03-12`, `March 12, 2019`, `12th of March` |
//! | `name` | `Dr. Smith`, `Mrs. Jones`, `Name: Alice` |
//! | `identifier` | six or more digits, `MRN 12345`, `accession #A12` |
//! | `phone` | `617-555-0199`, `(617) 555 0199` |
//! | `email` | `someone@example.org` |
//! | `age over 89` | `92-year-old` |
//!
//! Years alone, times and clinical numbers (`1.9 x 1.8 cm`, `T6`) are not PHI. The paper's
//! de-identification NER model (`obi/deid_bert_i2b2`) is not part of this check.

use std::sync::LazyLock;

use regex::Regex;

const MONTH: &str = "(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|\
                     aug(?:ust)?|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)";

/// The patterns, with the kind each finds.
static PATTERNS: LazyLock<Vec<(&'static str, Regex)>> = LazyLock::new(|| {
    let pattern = |text: &str| Regex::new(text).expect("valid PHI pattern");
    vec![
        ("de-identification marker", pattern(r"_{3,}")),
        (
            "date",
            pattern(r"\b(?:\d{1,2}[/-]\d{1,2}[/-]\d{2,4}|\d{4}[/-]\d{1,2}[/-]\d{1,2})\b"),
        ),
        (
            "date",
            pattern(&format!(
                r"(?i)\b{MONTH}\.?\s+\d{{1,2}}(?:st|nd|rd|th)?\b(?:,?\s+\d{{4}})?"
            )),
        ),
        (
            "date",
            pattern(&format!(
                r"(?i)\b\d{{1,2}}(?:st|nd|rd|th)?\s+(?:of\s+)?{MONTH}\b"
            )),
        ),
        (
            "name",
            pattern(r"\b(?:Dr|DR|Mr|MR|Mrs|MRS|Ms|MS|Miss|Prof|Doctor)\.?\s+[A-Z][a-zA-Z'-]+"),
        ),
        (
            "name",
            pattern(r"(?i)\b(?:patient\s+)?name\s*:\s*[a-z][a-z'-]+"),
        ),
        (
            "phone",
            pattern(r"(?:\(\d{3}\)\s*|\b\d{3}[\s.-])\d{3}[\s.-]\d{4}\b"),
        ),
        ("email", pattern(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+")),
        (
            "identifier",
            pattern(
                r"(?i)\b(?:mrn|medical record(?: number)?|accession|ssn|patient id|unit no)\b\.?\s*(?:number|no\.?|#)?\s*:?\s*#?[a-z0-9-]*\d",
            ),
        ),
        ("identifier", pattern(r"\b\d{6,}\b")),
        (
            "age over 89",
            pattern(r"(?i)\b(?:9\d|1[0-4]\d)[\s-](?:years?|yrs?|y)[\s-]old\b"),
        ),
    ]
});

/// The PHI `text` contains, as `kind: matched text`, in pattern order, each once.
pub fn phi(text: &str) -> Vec<String> {
    let mut hits: Vec<String> = Vec::new();
    for (kind, pattern) in PATTERNS.iter() {
        for found in pattern.find_iter(text) {
            let hit = format!("{kind}: {}", found.as_str().trim());
            if !hits.contains(&hit) {
                hits.push(hit);
            }
        }
    }
    hits
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn injected_phi_is_caught() {
        let cases = [
            (
                "Comparison with the study of ___ shows a line.",
                "de-identification marker: ___",
            ),
            (
                "Findings were discussed with Dr. Hartley at 10:30.",
                "name: Dr. Hartley",
            ),
            ("Seen on the radiograph of 03/14/2021.", "date: 03/14/2021"),
            ("Seen on the radiograph of 2021-03-14.", "date: 2021-03-14"),
            ("Unchanged since March 14, 2021.", "date: March 14, 2021"),
            ("Unchanged since the 14th of March.", "date: 14th of March"),
            (
                "Patient MRN 4471902 has an effusion.",
                "identifier: MRN 4471902",
            ),
            ("Call 617-555-0199 with results.", "phone: 617-555-0199"),
            (
                "Results sent to j.doe@hospital.org.",
                "email: j.doe@hospital.org",
            ),
            ("A 93-year-old with dyspnea.", "age over 89: 93-year-old"),
            ("Patient name: Alice, cough.", "name: Patient name: Alice"),
        ];
        for (text, hit) in cases {
            let found = phi(text);
            assert!(found.iter().any(|h| h == hit), "{text}: {found:?}");
        }
    }

    #[test]
    fn clinical_text_is_not_phi() {
        for text in [
            "A 1.9 x 1.8 cm round density projects over the right mid lung.",
            "Which finding is seen in the left lower lung zone?",
            "The tip of the catheter is at the level of T6, 3 cm above the carina.",
            "In 2019 the patient had a mastectomy; the heart may be mildly enlarged.",
            "A 45-year-old man: mild pulmonary edema is observed.",
            "The endotracheal tube terminates 4.5 cm above the carina.",
        ] {
            assert_eq!(phi(text), Vec::<String>::new(), "{text}");
        }
    }
}
