//! The indication node (listing 6): patient information, history, what to evaluate, the
//! associated FINDINGS/IMPRESSION sentences and the answer they give.
//!
//! ```text
//!  "___F with new onset ascites // eval for infection"
//!   └ patient ┘     └ history ┘      └ cue ┘└ target ┘
//!  target findings ─► sentences with related observations (else normal statements, else the
//!  last sentence) ─► positive / uncertain / negative ─► "Evaluation for X is negative: …"
//! ```

use super::lexicon::{Lexicon, Term};
use super::observations::{capitalize, finish, sentence_observations};
use crate::model::Indication;

/// Evaluation cues: (phrase, whether the target follows as "for X").
const EVALUATION_CUES: &[(&str, bool)] = &[
    ("please evaluate for", true),
    ("please assess for", true),
    ("eval for", true),
    ("evaluate for", true),
    ("evaluation for", true),
    ("evaluation of", true),
    ("assess for", true),
    ("assessment for", true),
    ("assessment of", true),
    ("check for", true),
    ("look for", true),
    ("rule out", true),
    ("r/o", true),
    ("question of", true),
    ("concern for", true),
    ("please evaluate", false),
    ("please assess", false),
    ("eval", false),
    ("evaluate", false),
    ("assess", false),
    ("check", false),
    ("?", true),
];

const FEMALE: &[&str] = &["f", "female", "woman", "lady", "girl"];
const MALE: &[&str] = &["m", "male", "man", "gentleman", "boy"];

/// Extracts the indication node; `None` when `text` has no words.
pub(crate) fn indication(
    lexicon: &Lexicon,
    text: &str,
    findings: &[(&str, &str)],
) -> Option<Indication> {
    let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if !text.chars().any(char::is_alphanumeric) {
        return None;
    }
    let (patient_info, patient_end) = patient(&text);
    let (history_part, evaluation) = match find_evaluation(&text) {
        Some((cue_start, target, with_for)) => (&text[..cue_start], Some((target, with_for))),
        None => (text.as_str(), None),
    };
    let history_start = patient_end.min(history_part.len());
    let history = clean_history(&history_part[history_start..]);

    let evaluation_text = evaluation.as_ref().map(|(target, with_for)| {
        if *with_for {
            format!("Evaluate for {target}.")
        } else {
            format!("Evaluate {target}.")
        }
    });
    let subject = patient_info
        .as_deref()
        .map_or("Patient".to_owned(), capitalize);
    // "Intubated patient" already names the patient: no "Patient with intubated patient".
    let names_patient = |h: &str| {
        patient_info.is_none()
            && h.split(|c: char| !c.is_ascii_alphabetic()).any(|w| {
                matches!(
                    w.to_ascii_lowercase().as_str(),
                    "patient" | "pt" | "man" | "woman"
                )
            })
    };
    let summary = match (&history, &evaluation) {
        (Some(h), Some((t, _))) if names_patient(h) => {
            format!(
                "{}; should be evaluated for {t}.",
                capitalize(h.trim_end_matches('.'))
            )
        }
        (Some(h), None) if names_patient(h) => finish(h),
        (Some(h), Some((t, _))) => format!(
            "{subject} with {}; should be evaluated for {t}.",
            lower_first(h)
        ),
        (Some(h), None) => format!("{subject} with {}.", lower_first(h)),
        (None, Some((t, _))) => format!("{subject} should be evaluated for {t}."),
        (None, None) => finish(&text),
    };

    let mut targets = finding_indices(lexicon, evaluation.as_ref().map_or("", |(t, _)| t.as_str()));
    if targets.is_empty() {
        targets = finding_indices(lexicon, history.as_deref().unwrap_or_default());
    }
    let (associated, verdict) = associate(lexicon, &targets, findings);
    let answer = (!associated.is_empty()).then(|| {
        let sentences = associated
            .iter()
            .filter_map(|id| findings.iter().find(|(i, _)| i == id))
            .map(|(_, s)| *s)
            .collect::<Vec<_>>()
            .join(" ");
        match &evaluation {
            Some((target, _)) => format!("Evaluation for {target} is {verdict}: {sentences}"),
            None => sentences,
        }
    });
    Some(Indication {
        patient_info,
        indication: history.map(|h| finish(&h)),
        evaluation: evaluation_text,
        indication_summary: Some(summary),
        associated_findings: associated,
        answer_for_indication: answer,
    })
}

/// `(patient info, byte offset after the patient phrase)`.
fn patient(text: &str) -> (Option<String>, usize) {
    let mut age: Option<String> = None;
    let mut sex: Option<&str> = None;
    let mut end = 0;
    let mut offset = 0;
    for (index, raw) in text.split(' ').enumerate() {
        let word_end = offset + raw.len();
        let word = raw
            .trim_matches(|c: char| !c.is_alphanumeric() && c != '_' && c != '-')
            .to_lowercase();
        offset = word_end + 1;
        if index > 5 {
            break;
        }
        let stripped = word.trim_start_matches(|c: char| c == '_' || c.is_ascii_digit());
        let digits: String = word.chars().take_while(char::is_ascii_digit).collect();
        if !digits.is_empty() && age.is_none() {
            age = Some(digits);
        }
        let stripped = stripped
            .trim_start_matches('-')
            .trim_start_matches("year-old")
            .trim_start_matches("-year-old")
            .trim_start_matches("yo")
            .trim_start_matches('-');
        let is_age_word = stripped.is_empty()
            || ["year", "years", "old", "year-old", "y/o", "yo", "-year-old"].contains(&stripped);
        if FEMALE.contains(&stripped) {
            sex = Some("female");
            end = word_end;
            break;
        }
        if MALE.contains(&stripped) {
            sex = Some("male");
            end = word_end;
            break;
        }
        if !is_age_word {
            break;
        }
        end = word_end;
    }
    let info = match (sex, &age) {
        (Some(sex), Some(age)) => Some(format!("{age}-year-old {sex}")),
        (Some(sex), None) => Some(sex.to_owned()),
        (None, Some(age)) if end > 0 => Some(format!("{age}-year-old patient")),
        _ => None,
    };
    (info.clone(), if info.is_some() { end } else { 0 })
}

/// `(cue start, target, "for" form)` of the first evaluation cue with a target after it.
fn find_evaluation(text: &str) -> Option<(usize, String, bool)> {
    let lower = text.to_ascii_lowercase();
    let bytes = lower.as_bytes();
    let mut best: Option<(usize, usize, bool)> = None;
    for (cue, with_for) in EVALUATION_CUES {
        let mut from = 0;
        while let Some(found) = lower[from..].find(cue) {
            let start = from + found;
            let end = start + cue.len();
            from = end;
            let word_start = start == 0 || !bytes[start - 1].is_ascii_alphanumeric();
            let word_end = *cue == "?" || !bytes.get(end).is_some_and(u8::is_ascii_alphanumeric);
            if !(word_start && word_end) {
                continue;
            }
            let better = best.is_none_or(|(s, e, _)| start < s || (start == s && end > e));
            if better {
                best = Some((start, end, *with_for));
            }
            break;
        }
    }
    let (start, end, with_for) = best?;
    let rest = &text[end..];
    let stop = rest.find(['.', ';', '/', '?']).unwrap_or(rest.len());
    let target = rest[..stop]
        .trim()
        .trim_matches(|c: char| c == ',' || c == ':' || c == '-')
        .trim();
    let target = target
        .strip_prefix("for ")
        .or_else(|| target.strip_prefix("of "))
        .unwrap_or(target);
    (!target.is_empty() && target.chars().any(char::is_alphabetic))
        .then(|| (start, lower_first(target), with_for))
}

/// The history part without connecting words; `None` when nothing is left.
fn clean_history(text: &str) -> Option<String> {
    let mut history = text
        .trim()
        .trim_matches(|c: char| "/,;:-.".contains(c))
        .trim();
    for prefix in [
        "with ",
        "w/ ",
        "presenting with ",
        "who presents with ",
        "pt with ",
    ] {
        if history
            .get(..prefix.len())
            .is_some_and(|head| head.eq_ignore_ascii_case(prefix))
        {
            history = history[prefix.len()..].trim_start();
        }
    }
    let history = history
        .trim_end_matches(|c: char| "/,;:-. ".contains(c))
        .trim_end();
    let history = ["please", "and", "to", "now"].iter().fold(history, |h, w| {
        h.strip_suffix(w)
            .filter(|r| r.is_empty() || r.ends_with(' '))
            .map_or(h, str::trim_end)
    });
    let history = history.trim_end_matches(|c: char| "/,;:-. ".contains(c));
    history
        .chars()
        .any(char::is_alphabetic)
        .then(|| capitalize(history))
}

fn lower_first(text: &str) -> String {
    let mut chars = text.chars();
    let second_upper = text.chars().nth(1).is_some_and(char::is_uppercase);
    match chars.next() {
        Some(first) if !second_upper => first.to_lowercase().chain(chars).collect(),
        _ => text.to_owned(),
    }
}

fn finding_indices(lexicon: &Lexicon, text: &str) -> Vec<usize> {
    lexicon
        .mentions(text)
        .into_iter()
        .filter_map(|m| match m.term {
            Term::Finding(i) => Some(i),
            _ => None,
        })
        .collect()
}

/// Sentence ids answering the targets, and the verdict they give.
fn associate(
    lexicon: &Lexicon,
    targets: &[usize],
    findings: &[(&str, &str)],
) -> (Vec<String>, &'static str) {
    let related = |a: usize, b: usize| {
        a == b
            || lexicon.findings[a].related.contains(&b)
            || lexicon.findings[b].related.contains(&a)
    };
    let analysed: Vec<(&str, Vec<(usize, String)>)> = findings
        .iter()
        .map(|(id, sentence)| {
            let observations = sentence_observations(lexicon, sentence)
                .into_iter()
                .map(|(f, o)| (f, o.probability.unwrap_or_default()))
                .collect();
            (*id, observations)
        })
        .collect();
    let mut relevant: Vec<(&str, Vec<(usize, String)>)> = analysed
        .iter()
        .filter_map(|(id, obs)| {
            let hits: Vec<(usize, String)> = obs
                .iter()
                .filter(|(f, _)| targets.iter().any(|&t| related(*f, t)))
                .cloned()
                .collect();
            (!hits.is_empty()).then_some((*id, hits))
        })
        .collect();
    if relevant.is_empty() {
        relevant = analysed
            .iter()
            .filter(|(_, obs)| obs.iter().any(|(f, _)| lexicon.findings[*f].normal))
            .map(|(id, obs)| (*id, obs.clone()))
            .collect();
    }
    if relevant.is_empty()
        && let Some((id, obs)) = analysed.last()
    {
        relevant.push((id, obs.clone()));
    }
    let positive = |(f, p): &(usize, String)| {
        !lexicon.findings[*f].normal && (p == "positive" || p == "probable")
    };
    let observations = relevant.iter().flat_map(|(_, obs)| obs);
    let verdict = if observations.clone().any(positive) {
        "positive"
    } else if observations
        .clone()
        .any(|(f, p)| !lexicon.findings[*f].normal && p == "possible")
    {
        "uncertain"
    } else {
        "negative"
    };
    (
        relevant.into_iter().map(|(id, _)| id.to_owned()).collect(),
        verdict,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patient_phrases() {
        assert_eq!(patient("___F with ascites").0.as_deref(), Some("female"));
        assert_eq!(
            patient("72-year-old man with cough").0.as_deref(),
            Some("72-year-old male")
        );
        assert_eq!(
            patient("___ year old woman with pain").0.as_deref(),
            Some("female")
        );
        assert_eq!(patient("History of CHF").0, None);
    }

    #[test]
    fn evaluation_targets() {
        assert_eq!(
            find_evaluation("___M with hypoxia, ? effusion."),
            Some((19, "effusion".to_owned(), true))
        );
        assert_eq!(
            find_evaluation("Intubated patient, assess ET tube position.").map(|e| e.1),
            Some("ET tube position".to_owned())
        );
        assert_eq!(find_evaluation("Chest pain"), None);
    }
}
