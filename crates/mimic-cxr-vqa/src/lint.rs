//! The linter of paper 001's answers: the 17 prohibited comparison terms of the system prompt's
//! "Prohibited Terms and Constraints" and the report references its "Terminology Guidelines"
//! forbid ("the report", "mentioned", "described"). The paper enforces them only through the
//! prompt; cxrlake counts them per answer and can ask again or drop (`cxrlake.vqa_lint`).

use cxrlake_generate::lint::terms_in;

/// The 17 comparison terms of appendix B, verbatim.
pub const PROHIBITED_TERMS: [&str; 17] = [
    "unchanged",
    "new",
    "previous",
    "compared",
    "remains",
    "alteration",
    "progressive",
    "stable",
    "worsening",
    "improving",
    "evolving",
    "resolving",
    "persistent",
    "ongoing",
    "recurrent",
    "interval",
    "follow-up",
];

/// References to the report instead of the radiograph (appendix B, "Terminology Guidelines").
pub const REPORT_REFERENCES: [&str; 3] = ["the report", "mentioned", "described"];

/// What an answer breaks.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Lint {
    /// The prohibited comparison terms it uses, in the order of [`PROHIBITED_TERMS`].
    pub prohibited: Vec<String>,
    /// The report references it uses.
    pub report_references: Vec<String>,
}

impl Lint {
    /// Whether the answer is clean.
    pub fn is_clean(&self) -> bool {
        self.prohibited.is_empty() && self.report_references.is_empty()
    }

    /// `uses prohibited terms: new, stable; refers to the report: mentioned` (empty when clean).
    pub fn reason(&self) -> String {
        let mut parts = Vec::new();
        if !self.prohibited.is_empty() {
            parts.push(format!(
                "uses prohibited comparison terms: {}",
                self.prohibited.join(", ")
            ));
        }
        if !self.report_references.is_empty() {
            parts.push(format!(
                "refers to the report instead of the radiograph: {}",
                self.report_references.join(", ")
            ));
        }
        parts.join("; ")
    }
}

/// The terms of the two lists `text` uses, as whole words, case-insensitively (`follow-up`
/// also as `follow up`).
pub fn lint(text: &str) -> Lint {
    let prohibited: Vec<&str> = PROHIBITED_TERMS
        .iter()
        .map(|term| {
            if *term == "follow-up" {
                "follow up"
            } else {
                term
            }
        })
        .collect();
    let strip = |hits: Vec<String>| -> Vec<String> {
        hits.into_iter()
            .map(|hit| match hit.split_once(": ") {
                Some((_, "follow up")) => "follow-up".to_string(),
                Some((_, term)) => term.to_string(),
                None => hit,
            })
            .collect()
    };
    Lint {
        prohibited: strip(terms_in(&[("comparison", &prohibited)], text)),
        report_references: strip(terms_in(&[("report", &REPORT_REFERENCES)], text)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hits_and_misses() {
        let hit =
            lint("A new left effusion is seen, unchanged since the prior; follow-up advised.");
        assert_eq!(hit.prohibited, ["unchanged", "new", "follow-up"]);
        assert!(hit.report_references.is_empty());
        let hit = lint("As mentioned in the report, the heart is Stable.");
        assert_eq!(hit.prohibited, ["stable"]);
        assert_eq!(hit.report_references, ["the report", "mentioned"]);
        assert!(hit.reason().contains("prohibited comparison terms: stable"));
        // Whole words only: "newly" is not "new", "intervals" is not "interval", "reported" is
        // not "the report".
        for clean in [
            "Newly placed catheter tip in the SVC.",
            "Lines at regular intervals; reported by the radiologist.",
            "No pleural effusion is seen in the radiograph.",
            "A nasogastric tube is seen, its tip described as... ",
        ] {
            let found = lint(clean);
            if clean.contains("described") {
                assert_eq!(found.report_references, ["described"]);
            } else {
                assert!(found.is_clean(), "{clean}: {found:?}");
            }
        }
        assert_eq!(PROHIBITED_TERMS.len(), 17);
    }
}
