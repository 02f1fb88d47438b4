//! The offline generators of prompts P1 and P2: region-specific questions from a region
//! context's facts, and answers to any question from the same facts (deterministic, no LLM).
//!
//! Questions, per region context (R = the region's name):
//! - with findings present: "What abnormality is visible in the R?" (detection), where the first
//!   finding is (localization), which device is seen when one is (detection), the texture when a
//!   cue is present (texture), the suggested disease when one is stated (disease) and what the
//!   first finding may be caused by when a disease is stated (cause: only explicit diseases);
//!   "Is there a suspicious area in the R?" (suspicious area);
//! - without: "Is there any abnormality in the R?" and, for up to two findings stated absent,
//!   "Is there a pneumothorax in the R?".
//!
//! An answer reads the question's aspect and the facts it names (an attribute value in the
//! question), and states only facts of the context: never a finding the context lacks.

use crate::context::{Context, article, join_and};
use crate::text::aspect;

const DEVICES: &str = "tubesandlines";

/// The questions of a region context.
pub fn questions(context: &Context) -> Vec<String> {
    let r = &context.region_name;
    let facts = context.facts();
    let positives = context.positives();
    let mut out = Vec::new();
    if let Some(first) = facts
        .iter()
        .find(|a| a.is_finding() && a.present && a.category != DEVICES)
    {
        out.push(format!("What abnormality is visible in the {r}?"));
        out.push(format!(
            "Where in the {r} is the {} seen on this X-ray?",
            first.value
        ));
        if let Some(disease) = context.diseases().first()
            && *disease != first.value
        {
            out.push(format!(
                "What could be the cause of the {} in the {r}?",
                first.value
            ));
        }
    }
    if facts.iter().any(|a| a.category == DEVICES && a.present) {
        out.push(format!("Which device is seen in the {r}?"));
    }
    if !context.textures().is_empty() {
        out.push(format!("How would you describe the texture of the {r}?"));
    }
    if !context.diseases().is_empty() {
        out.push(format!(
            "Which disease is suggested by the findings in the {r}?"
        ));
    }
    if positives.is_empty() {
        out.push(format!("Is there any abnormality in the {r}?"));
        for absent in context.negatives().iter().take(2) {
            out.push(format!("Is there {} {absent} in the {r}?", article(absent)));
        }
    } else {
        out.push(format!("Is there a suspicious area in the {r}?"));
    }
    out
}

/// The answer to `question` from the context's facts.
pub fn answer(context: &Context, question: &str) -> String {
    let r = &context.region_name;
    let lower = question.to_lowercase();
    let facts = context.facts();
    let named = facts
        .iter()
        .filter(|a| a.is_finding())
        .find(|a| lower.contains(&a.value));
    let positives = context.positives();
    let listed = join_and(&positives);
    match (aspect(question), named) {
        (_, Some(a)) if !a.present => format!("No, there is no {} in the {r}.", a.value),
        ("localization", Some(a)) => {
            format!("The {} is seen in the {r}, within the marked box.", a.value)
        }
        ("cause", Some(a)) => match context.diseases().first() {
            Some(disease) if *disease != a.value => {
                format!("The {} in the {r} is consistent with {disease}.", a.value)
            }
            _ => format!(
                "The {} is seen in the {r}; the image does not show its cause.",
                a.value
            ),
        },
        (_, Some(a)) => format!("Yes, {} {} is seen in the {r}.", article(&a.value), a.value),
        ("texture", None) => match context.textures().as_slice() {
            [] => format!("No abnormal texture is seen in the {r}."),
            cues => format!("The {r} shows an area of {} texture.", join_and(cues)),
        },
        ("disease", None) => match context.diseases().as_slice() {
            [] if positives.is_empty() => format!("No disease is suggested in the {r}."),
            [] => format!("The {r} shows {listed}; no specific disease is named."),
            diseases => format!("The findings in the {r} suggest {}.", join_and(diseases)),
        },
        _ if lower.contains("device") => {
            let devices: Vec<String> = facts
                .iter()
                .filter(|a| a.category == DEVICES && a.present)
                .map(|a| format!("{} {}", article(&a.value), a.value))
                .collect();
            match devices.as_slice() {
                [] => format!("No device is seen in the {r}."),
                devices => format!("The {r} shows {}.", join_and(devices)),
            }
        }
        _ if positives.is_empty() => format!("No abnormality is seen; the {r} appears normal."),
        ("localization", None) => {
            format!("The {listed} is seen in the {r}, within the marked box.")
        }
        _ => format!("The {r} shows {listed}."),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn context(attributes: &[&str], texture: &[&str]) -> Context {
        Context::from_row(&json!({
            "region": "right_lung", "region_name": "right lung", "bbox": [1, 2, 3, 4],
            "attributes": attributes, "texture": texture, "phrases": []
        }))
        .expect("fixture")
    }

    #[test]
    fn an_abnormal_region_gets_region_specific_questions_answered_from_its_facts() {
        let c = context(
            &[
                "anatomicalfinding|yes|atelectasis",
                "disease|yes|pneumonia",
                "nlp|yes|abnormal",
            ],
            &["texture|yes|opacity"],
        );
        let qs = questions(&c);
        assert_eq!(qs.len(), 6, "{qs:?}");
        assert!(qs.iter().all(|q| q.contains("right lung")), "{qs:?}");
        let answers: Vec<String> = qs.iter().map(|q| answer(&c, q)).collect();
        assert_eq!(
            answers[0],
            "The right lung shows atelectasis and pneumonia."
        );
        assert_eq!(
            answers[1],
            "The atelectasis is seen in the right lung, within the marked box."
        );
        assert_eq!(
            answers[2],
            "The atelectasis in the right lung is consistent with pneumonia."
        );
        assert_eq!(
            answers[3],
            "The right lung shows an area of opacity texture."
        );
        assert_eq!(
            answers[4],
            "The findings in the right lung suggest pneumonia."
        );
    }

    #[test]
    fn a_normal_region_is_asked_about_its_absent_findings() {
        let c = context(
            &[
                "anatomicalfinding|no|pneumothorax",
                "anatomicalfinding|no|pleural effusion",
                "nlp|yes|normal",
            ],
            &[],
        );
        let qs = questions(&c);
        assert_eq!(
            qs,
            vec![
                "Is there any abnormality in the right lung?",
                "Is there a pneumothorax in the right lung?",
                "Is there a pleural effusion in the right lung?",
            ]
        );
        assert_eq!(
            answer(&c, &qs[0]),
            "No abnormality is seen; the right lung appears normal."
        );
        assert_eq!(
            answer(&c, &qs[1]),
            "No, there is no pneumothorax in the right lung."
        );
    }

    #[test]
    fn devices_are_named_as_devices() {
        let c = context(&["tubesandlines|yes|endotracheal tube"], &[]);
        let qs = questions(&c);
        assert_eq!(qs[0], "Which device is seen in the right lung?");
        assert_eq!(
            answer(&c, &qs[0]),
            "The right lung shows an endotracheal tube."
        );
    }
}
