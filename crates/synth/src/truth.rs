//! Ground truth: what each synthetic report states, and the CheXpert labels derived from it.

use serde::Serialize;

use crate::vocab::{self, Certainty, Laterality};

/// Whether a finding is asserted or negated.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Positiveness {
    /// Present.
    Pos,
    /// Absent.
    Neg,
}

/// One statement of one finding in one sentence.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FindingTruth {
    /// Canonical finding or device name (see `vocab.rs`).
    pub finding: String,
    /// Asserted or negated.
    pub positiveness: Positiveness,
    /// How sure the sentence is.
    pub certainty: Certainty,
    /// Canonical region names.
    pub regions: Vec<String>,
    /// Side, if any.
    pub laterality: Option<Laterality>,
    /// Canonical severity, if graded.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub severity: Option<String>,
    /// Canonical change against the comparison, if stated.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub change: Option<String>,
    /// Report section the sentence is in (canonical: FINDINGS or IMPRESSION).
    pub section: &'static str,
    /// The sentence, whitespace-normalised (the report wraps lines; join them with spaces).
    pub sentence: String,
}

/// One line of `ground_truth.jsonl`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StudyTruth {
    /// `p` + subject id.
    pub patient_id: String,
    /// `s` + study id.
    pub study_id: String,
    /// Every finding statement in FINDINGS and IMPRESSION, in report order.
    pub findings: Vec<FindingTruth>,
    /// INDICATION (or HISTORY / REASON FOR EXAM) text, if the report has one.
    pub indication: Option<String>,
    /// True when the report describes no abnormality (devices do not count).
    pub normal: bool,
}

/// A CheXpert-style label value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Label {
    /// Mentioned as present (1.0).
    Positive,
    /// Mentioned as possible (-1.0).
    Uncertain,
    /// Mentioned as absent (0.0).
    Negative,
}

impl Label {
    /// The CSV cell text.
    pub fn as_csv(self) -> &'static str {
        match self {
            Self::Positive => "1.0",
            Self::Uncertain => "-1.0",
            Self::Negative => "0.0",
        }
    }

    fn rank(self) -> u8 {
        match self {
            Self::Positive => 3,
            Self::Uncertain => 2,
            Self::Negative => 1,
        }
    }
}

/// Label of one statement: negated → 0.0, certain or likely → 1.0, uncertain → -1.0.
pub fn statement_label(finding: &FindingTruth) -> Label {
    match (finding.positiveness, finding.certainty) {
        (Positiveness::Neg, _) => Label::Negative,
        (Positiveness::Pos, Certainty::Uncertain) => Label::Uncertain,
        (Positiveness::Pos, _) => Label::Positive,
    }
}

/// CheXpert column of a canonical finding or device name.
pub fn chexpert_column(finding: &str) -> Option<&'static str> {
    if let Some(def) = vocab::finding(finding) {
        return def.chexpert;
    }
    vocab::DEVICES
        .iter()
        .any(|d| d.canonical == finding)
        .then_some("Support Devices")
}

/// Labels in [`vocab::CHEXPERT_CSV_COLUMNS`] order (None = not mentioned → blank cell).
///
/// Several statements of one column combine as positive > uncertain > negative. `No Finding`
/// is 1.0 when no column other than `Support Devices` is positive or uncertain.
pub fn chexpert_labels(study: &StudyTruth) -> Vec<Option<Label>> {
    let mut labels: Vec<Option<Label>> = vec![None; vocab::CHEXPERT_CSV_COLUMNS.len()];
    for f in &study.findings {
        let Some(column) = chexpert_column(&f.finding) else {
            continue;
        };
        let Some(idx) = vocab::CHEXPERT_CSV_COLUMNS
            .iter()
            .position(|c| *c == column)
        else {
            continue;
        };
        let label = statement_label(f);
        if labels[idx].is_none_or(|old| old.rank() < label.rank()) {
            labels[idx] = Some(label);
        }
    }
    let abnormal = vocab::CHEXPERT_CSV_COLUMNS
        .iter()
        .zip(&labels)
        .any(|(col, label)| {
            *col != "Support Devices" && matches!(label, Some(Label::Positive | Label::Uncertain))
        });
    if !abnormal
        && let Some(idx) = vocab::CHEXPERT_CSV_COLUMNS
            .iter()
            .position(|c| *c == "No Finding")
    {
        labels[idx] = Some(Label::Positive);
    }
    labels
}

#[cfg(test)]
mod tests {
    use super::*;

    fn statement(finding: &str, positiveness: Positiveness, certainty: Certainty) -> FindingTruth {
        FindingTruth {
            finding: finding.to_owned(),
            positiveness,
            certainty,
            regions: vec![],
            laterality: None,
            severity: None,
            change: None,
            section: "FINDINGS",
            sentence: String::new(),
        }
    }

    #[test]
    fn labels_combine_by_priority() {
        let study = StudyTruth {
            patient_id: "p10000032".into(),
            study_id: "s50414267".into(),
            findings: vec![
                statement("pleural effusion", Positiveness::Neg, Certainty::Certain),
                statement("pleural effusion", Positiveness::Pos, Certainty::Uncertain),
                statement("pneumothorax", Positiveness::Neg, Certainty::Certain),
                statement("endotracheal tube", Positiveness::Pos, Certainty::Certain),
            ],
            indication: None,
            normal: false,
        };
        let labels = chexpert_labels(&study);
        let get = |c: &str| {
            labels[vocab::CHEXPERT_CSV_COLUMNS
                .iter()
                .position(|x| *x == c)
                .expect("column")]
        };
        assert_eq!(get("Pleural Effusion"), Some(Label::Uncertain));
        assert_eq!(get("Pneumothorax"), Some(Label::Negative));
        assert_eq!(get("Support Devices"), Some(Label::Positive));
        assert_eq!(get("No Finding"), None);
        assert_eq!(get("Edema"), None);
    }
}
