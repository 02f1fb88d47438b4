//! The heuristic judge: the offline default, recorded as `heuristic-1` in `qa.judge`.
//!
//! It reads only what each rule below needs, and that is its input (and content key) per
//! criterion, so identical inputs are judged once:
//!
//! | criterion | reads | rule (first match) |
//! |---|---|---|
//! | entailment | strategy; per part: from report, positiveness, grounded | report part → `ALIGNED_MENTIONED`; template part of a study-level (`abnormal`) question → `ALIGNED_GENERAL_STATEMENT`; template part restating tagged observations → `ALIGNED_INFERRABLE`; untagged negative template part → `ALIGNED_NEGATIVE_NOT_MENTIONED`; else `NON_ALIGNED_NON_INFERRABLE` |
//! | relevance | per part: answer type, text | empty → `IRRELEVANT_INFO`; same text as an earlier part of its type → `REDUNDANT_INFO`; `related_information` → `RELATED_INFO`; else `RELEVANT_MAIN_ANSWER` |
//! | completeness | per part: answer type, from report, positiveness | no main answer → `NOT_ANSWERED`; a positive template main answer without a report part → `DETAILS_MISSING`; else `FULLY_COMPLETE` |
//! | question clarity | the question | empty → `UNANSWERABLE`; unfilled placeholder or `___` → `UNCLEAR_QUESTION`; tag with underscores, repeated word, lower-case start → `GRAMMATICAL_ERRORS`; no final punctuation or over 40 words → `UNUSUAL_SENTENCE_STRUCTURE`; else `OPTIMAL` |
//! | answer clarity | per part: text | empty → `NOT_UNDERSTANDABLE`; unfilled placeholder → `UNCLEAR_ANSWER`; tag with underscores, repeated word, lower-case start → `GRAMMATICAL_ERRORS`; `___`, no final punctuation or over 60 words → `UNUSUAL_SENTENCE_STRUCTURE`; else `OPTIMAL` |
//!
//! Entailment by provenance is what a judge without the report can say: report parts are the
//! report's own statements, template parts are correct by construction but paraphrase, summarize
//! or (for findings never mentioned) assume the negative. It cannot see extraction errors; the
//! LLM judge can.

use std::borrow::Cow;

use serde::{Deserialize, Serialize};

use crate::criterion::Criterion;
use crate::item::QaItem;
use crate::reading::{self, AnswerReading, PartReading, ReportReader};
use crate::verdict::Verdict;

/// The `judge` value of the heuristic judge (bump when a rule changes).
pub const HEURISTIC_JUDGE: &str = "heuristic-1";

#[derive(Debug, Serialize, Deserialize)]
struct EntailmentInput<'a> {
    strategy: Cow<'a, str>,
    /// `(from_report, positiveness, grounded)` per part.
    parts: Vec<(bool, Option<Cow<'a, str>>, bool)>,
    /// The reading judge's: per part, its claims and the report's about the same findings
    /// (absent for the heuristic judge, whose inputs stay as they were).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    readings: Option<Vec<PartReading>>,
}

#[derive(Debug, Serialize, Deserialize)]
struct RelevanceInput<'a> {
    /// `(answer_type, text)` per part.
    parts: Vec<(Cow<'a, str>, Cow<'a, str>)>,
}

#[derive(Debug, Serialize, Deserialize)]
struct CompletenessInput<'a> {
    /// `(answer_type, from_report, positiveness)` per part.
    parts: Vec<(Cow<'a, str>, bool, Option<Cow<'a, str>>)>,
    /// The reading judge's: the question's, the answer's and the report's claims (absent for
    /// the heuristic judge).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    reading: Option<AnswerReading>,
}

#[derive(Debug, Serialize, Deserialize)]
struct QuestionInput<'a> {
    question: Cow<'a, str>,
}

#[derive(Debug, Serialize, Deserialize)]
struct AnswerInput<'a> {
    texts: Vec<Cow<'a, str>>,
}

/// What the heuristic judge reads of `item` for `criterion`, as canonical JSON.
pub fn input(criterion: Criterion, item: &QaItem<'_>) -> String {
    let json = match criterion {
        Criterion::Entailment => serde_json::to_string(&entailment_input(item, None)),
        Criterion::Relevance => serde_json::to_string(&RelevanceInput {
            parts: item
                .parts
                .iter()
                .map(|p| (p.answer_type.into(), p.text.into()))
                .collect(),
        }),
        Criterion::Completeness => serde_json::to_string(&completeness_input(item, None)),
        Criterion::QuestionClarity => serde_json::to_string(&QuestionInput {
            question: item.question.into(),
        }),
        Criterion::AnswerClarity => serde_json::to_string(&AnswerInput {
            texts: item.parts.iter().map(|p| p.text.into()).collect(),
        }),
    };
    json.unwrap_or_else(|e| unreachable!("plain structs serialize: {e}"))
}

fn completeness_input<'a>(
    item: &QaItem<'a>,
    reading: Option<AnswerReading>,
) -> CompletenessInput<'a> {
    CompletenessInput {
        parts: item
            .parts
            .iter()
            .map(|p| {
                (
                    p.answer_type.into(),
                    p.from_report,
                    p.positiveness.map(Cow::from),
                )
            })
            .collect(),
        reading,
    }
}

fn entailment_input<'a>(
    item: &QaItem<'a>,
    readings: Option<Vec<PartReading>>,
) -> EntailmentInput<'a> {
    EntailmentInput {
        strategy: item.strategy.into(),
        parts: item
            .parts
            .iter()
            .map(|p| (p.from_report, p.positiveness.map(Cow::from), p.grounded))
            .collect(),
        readings,
    }
}

/// What the reading judge reads of `item` for `criterion`: the heuristic's input, with the
/// entailment input carrying each part's claims and the report's about the same findings
/// ([`crate::reading`]); without a report, each part's claims against none.
pub fn reading_input(criterion: Criterion, item: &QaItem<'_>, reader: &dyn ReportReader) -> String {
    if !matches!(criterion, Criterion::Entailment | Criterion::Completeness) {
        return input(criterion, item);
    }
    let report = item
        .report
        .map(|r| reader.report_claims(r))
        .unwrap_or_default();
    let json = if criterion == Criterion::Entailment {
        let readings = item
            .parts
            .iter()
            .map(|p| PartReading::new(reader.text_claims(p.text), &report))
            .collect();
        serde_json::to_string(&entailment_input(item, Some(readings)))
    } else {
        let mut answered: Vec<_> = item
            .parts
            .iter()
            .flat_map(|p| reader.text_claims(p.text))
            .collect();
        answered.sort();
        answered.dedup();
        let reading = AnswerReading::new(reader.text_claims(item.question), answered, &report);
        serde_json::to_string(&completeness_input(item, Some(reading)))
    };
    json.unwrap_or_else(|e| unreachable!("plain structs serialize: {e}"))
}

/// The heuristic verdict on an [`input`] of `criterion`; an input that is not one is an
/// unusable verdict, not a panic.
pub fn judge(criterion: Criterion, input: &str) -> Verdict {
    let parsed = match criterion {
        Criterion::Entailment => serde_json::from_str(input).map(|i| entailment(&i)),
        Criterion::Relevance => serde_json::from_str(input).map(|i| relevance(&i)),
        Criterion::Completeness => serde_json::from_str(input).map(|i| completeness(&i)),
        Criterion::QuestionClarity => {
            serde_json::from_str(input).map(|i: QuestionInput<'_>| question_clarity(&i.question))
        }
        Criterion::AnswerClarity => serde_json::from_str(input).map(|i| answer_clarity(&i)),
    };
    parsed.unwrap_or_else(|e| {
        Verdict::unrated(
            format!("not a {HEURISTIC_JUDGE} {criterion} input: {e}"),
            input,
        )
    })
}

/// Levels and reasons of several parts, as one verdict.
fn per_part(rated: Vec<(&'static str, String)>) -> Verdict {
    let explanation = rated
        .iter()
        .enumerate()
        .map(|(i, (level, why))| format!("[{:02}] {level}: {why}", i + 1))
        .collect::<Vec<_>>()
        .join("\n");
    Verdict::rated(
        rated.into_iter().map(|(level, _)| level).collect(),
        explanation,
    )
}

fn entailment(input: &EntailmentInput<'_>) -> Verdict {
    per_part(
        input
            .parts
            .iter()
            .enumerate()
            .map(|(i, (from_report, positiveness, grounded))| {
                let (from_report, grounded) = (*from_report, *grounded);
                let read = input
                    .readings
                    .as_ref()
                    .and_then(|r| r.get(i))
                    .and_then(|r| reading::entailment(from_report, r));
                if let Some((level, why)) = read {
                    return (level, why);
                }
                let positiveness = positiveness.as_deref();
                let (level, why) = if from_report {
                    ("ALIGNED_MENTIONED", "the report's own statement")
                } else if input.strategy == "abnormal" {
                    ("ALIGNED_GENERAL_STATEMENT", "template summary of the study")
                } else if grounded {
                    (
                        "ALIGNED_INFERRABLE",
                        "template restating tagged observations",
                    )
                } else if positiveness == Some("neg") {
                    (
                        "ALIGNED_NEGATIVE_NOT_MENTIONED",
                        "template negative for what the report does not mention",
                    )
                } else {
                    (
                        "NON_ALIGNED_NON_INFERRABLE",
                        "template statement without observations behind it",
                    )
                };
                (level, why.to_string())
            })
            .collect(),
    )
}

/// Lower-cased words of `text`, for comparing part texts.
fn normalized(text: &str) -> String {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect::<Vec<_>>()
        .join(" ")
}

fn relevance(input: &RelevanceInput<'_>) -> Verdict {
    let texts: Vec<String> = input.parts.iter().map(|(_, t)| normalized(t)).collect();
    per_part(
        input
            .parts
            .iter()
            .enumerate()
            .map(|(i, (answer_type, _))| {
                let earlier =
                    (0..i).find(|&j| input.parts[j].0 == *answer_type && texts[j] == texts[i]);
                if texts[i].is_empty() {
                    ("IRRELEVANT_INFO", "empty text".to_string())
                } else if let Some(j) = earlier {
                    ("REDUNDANT_INFO", format!("repeats part {:02}", j + 1))
                } else if answer_type == "related_information" {
                    ("RELATED_INFO", "related information".to_string())
                } else {
                    ("RELEVANT_MAIN_ANSWER", format!("{answer_type} part"))
                }
            })
            .collect(),
    )
}

fn completeness(input: &CompletenessInput<'_>) -> Verdict {
    if let Some((level, why)) = input.reading.as_ref().and_then(reading::completeness) {
        return Verdict::rated(vec![level], &why);
    }
    let main = input.parts.iter().find(|(t, _, _)| t == "main_answer");
    let any_report = input.parts.iter().any(|(_, from_report, _)| *from_report);
    let (level, why) = match main {
        None => ("NOT_ANSWERED", "no main answer"),
        Some((_, false, Some(p))) if p == "pos" && !any_report => (
            "DETAILS_MISSING",
            "a positive template answer without the report's statement",
        ),
        Some(_) => ("FULLY_COMPLETE", "main answer with its observations"),
    };
    Verdict::rated(vec![level], why)
}

/// Whether `text` still holds a template placeholder.
fn has_placeholder(text: &str) -> bool {
    text.contains(['{', '}', '<', '>'])
}

/// Whether a word is written twice in a row ("the the").
fn has_repeated_word(text: &str) -> bool {
    let words: Vec<String> = text
        .split_whitespace()
        .map(|w| w.trim_matches(|c: char| !c.is_alphabetic()).to_lowercase())
        .collect();
    words.windows(2).any(|w| !w[0].is_empty() && w[0] == w[1])
}

/// Whether a word joins letters with `_` (a tag name such as `left_lung` leaked into text).
fn has_tag_underscores(text: &str) -> bool {
    text.split_whitespace().any(|w| {
        let w = w.trim_matches(|c: char| !c.is_alphanumeric() && c != '_');
        w.contains('_') && !w.contains("__") && w.chars().any(char::is_alphabetic)
    })
}

fn starts_lower(text: &str) -> bool {
    text.chars().next().is_some_and(char::is_lowercase)
}

fn ends_sentence(text: &str) -> bool {
    text.trim_end().ends_with(['?', '.', '!'])
}

/// `(level, why)` of a text against the clarity rules shared by questions and answers; `None`
/// when no rule applies (optimal).
fn clarity_issue(text: &str, max_words: usize) -> Option<(&'static str, &'static str)> {
    if has_tag_underscores(text) {
        return Some(("GRAMMATICAL_ERRORS", "a tag name with underscores"));
    }
    if has_repeated_word(text) {
        return Some(("GRAMMATICAL_ERRORS", "a repeated word"));
    }
    if starts_lower(text) {
        return Some(("GRAMMATICAL_ERRORS", "starts in lower case"));
    }
    if !ends_sentence(text) {
        return Some(("UNUSUAL_SENTENCE_STRUCTURE", "no final punctuation"));
    }
    if text.split_whitespace().count() > max_words {
        return Some(("UNUSUAL_SENTENCE_STRUCTURE", "very long"));
    }
    None
}

fn question_clarity(question: &str) -> Verdict {
    let question = question.trim();
    let (level, why) = if question.is_empty() {
        ("UNANSWERABLE", "empty question")
    } else if has_placeholder(question) {
        ("UNCLEAR_QUESTION", "unfilled placeholder")
    } else if question.contains("___") {
        ("UNCLEAR_QUESTION", "de-identification gap (___)")
    } else {
        clarity_issue(question, 40).unwrap_or(("OPTIMAL", "clear"))
    };
    Verdict::rated(vec![level], why)
}

fn answer_clarity(input: &AnswerInput<'_>) -> Verdict {
    per_part(
        input
            .texts
            .iter()
            .map(|text| {
                let text = text.trim();
                let (level, why) = if text.is_empty() {
                    ("NOT_UNDERSTANDABLE", "empty text")
                } else if has_placeholder(text) {
                    ("UNCLEAR_ANSWER", "unfilled placeholder")
                } else if let Some(issue) = clarity_issue(text, 60) {
                    issue
                } else if text.contains("___") {
                    ("UNUSUAL_SENTENCE_STRUCTURE", "de-identification gap (___)")
                } else {
                    ("OPTIMAL", "clear")
                };
                (level, why.to_string())
            })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::item::Part;

    fn part<'a>(answer_type: &'a str, text: &'a str, from_report: bool, pos: &'a str) -> Part<'a> {
        Part {
            answer_type,
            text,
            from_report,
            positiveness: Some(pos),
            grounded: from_report,
        }
    }

    fn item<'a>(strategy: &'a str, question: &'a str, parts: Vec<Part<'a>>) -> QaItem<'a> {
        QaItem {
            strategy,
            question,
            parts,
            report: Some("FINDINGS: No effusion."),
        }
    }

    fn levels(criterion: Criterion, item: &QaItem<'_>) -> Vec<Option<&'static str>> {
        let verdict = judge(criterion, &input(criterion, item));
        assert!(verdict.error.is_none(), "{verdict:?}");
        assert!(verdict.is_valid_for(criterion));
        verdict.levels
    }

    #[test]
    fn entailment_follows_provenance() {
        let mut sampled = part("main_answer", "No, there is no pneumothorax.", false, "neg");
        sampled.grounded = false;
        let restated = Part {
            grounded: true,
            ..part("main_answer", "Yes, there is an effusion.", false, "pos")
        };
        let finding = item(
            "finding",
            "Is there a pneumothorax?",
            vec![
                sampled,
                restated,
                part("details", "Small left effusion.", true, "pos"),
            ],
        );
        assert_eq!(
            levels(Criterion::Entailment, &finding),
            vec![
                Some("ALIGNED_NEGATIVE_NOT_MENTIONED"),
                Some("ALIGNED_INFERRABLE"),
                Some("ALIGNED_MENTIONED")
            ]
        );
        let study = item("abnormal", "Is the study abnormal?", vec![restated]);
        assert_eq!(
            levels(Criterion::Entailment, &study),
            vec![Some("ALIGNED_GENERAL_STATEMENT")]
        );
    }

    #[test]
    fn relevance_finds_repeats_of_the_same_type() {
        let qa = item(
            "finding",
            "Is there an effusion?",
            vec![
                part("main_answer", "Yes.", false, "pos"),
                part("details", "Small effusion.", true, "pos"),
                part("details", "small  effusion", true, "pos"),
                part("related_information", "Small effusion.", true, "pos"),
            ],
        );
        assert_eq!(
            levels(Criterion::Relevance, &qa),
            vec![
                Some("RELEVANT_MAIN_ANSWER"),
                Some("RELEVANT_MAIN_ANSWER"),
                Some("REDUNDANT_INFO"),
                Some("RELATED_INFO")
            ]
        );
    }

    #[test]
    fn completeness_needs_a_main_answer_and_the_report_behind_a_yes() {
        let bare_yes = item(
            "finding",
            "Q?",
            vec![part("main_answer", "Yes.", false, "pos")],
        );
        assert_eq!(
            levels(Criterion::Completeness, &bare_yes),
            vec![Some("DETAILS_MISSING")]
        );
        let no_main = item(
            "finding",
            "Q?",
            vec![part("details", "Effusion.", true, "pos")],
        );
        assert_eq!(
            levels(Criterion::Completeness, &no_main),
            vec![Some("NOT_ANSWERED")]
        );
        let full = item(
            "finding",
            "Q?",
            vec![
                part("main_answer", "Yes.", false, "pos"),
                part("details", "Effusion.", true, "pos"),
            ],
        );
        assert_eq!(
            levels(Criterion::Completeness, &full),
            vec![Some("FULLY_COMPLETE")]
        );
    }

    #[test]
    fn clarity_rules() {
        let cases = [
            ("Is there any evidence of pleural effusion?", "OPTIMAL"),
            ("Is the the heart enlarged?", "GRAMMATICAL_ERRORS"),
            ("Is there any {finding}?", "UNCLEAR_QUESTION"),
            ("Is the left_lung clear?", "GRAMMATICAL_ERRORS"),
            ("is the heart enlarged?", "GRAMMATICAL_ERRORS"),
            ("Evaluate for pneumonia", "UNUSUAL_SENTENCE_STRUCTURE"),
            ("Evaluate for pneumonia.", "OPTIMAL"),
            ("History of ___ with cough.", "UNCLEAR_QUESTION"),
            ("", "UNANSWERABLE"),
        ];
        for (question, expected) in cases {
            let qa = item("finding", question, Vec::new());
            assert_eq!(
                levels(Criterion::QuestionClarity, &qa),
                vec![Some(expected)],
                "{question}"
            );
        }
        let qa = item(
            "finding",
            "Q?",
            vec![
                part(
                    "details",
                    "Since ___, the opacity has increased.",
                    true,
                    "pos",
                ),
                part("details", "", true, "pos"),
                part("details", "No pleural effusion.", true, "neg"),
            ],
        );
        assert_eq!(
            levels(Criterion::AnswerClarity, &qa),
            vec![
                Some("UNUSUAL_SENTENCE_STRUCTURE"),
                Some("NOT_UNDERSTANDABLE"),
                Some("OPTIMAL")
            ]
        );
    }

    #[test]
    fn inputs_are_what_the_rules_read() {
        let a = item(
            "finding",
            "Is there X?",
            vec![part("details", "Effusion.", true, "pos")],
        );
        let b = QaItem {
            report: Some("another report"),
            question: "Is there Y?",
            ..a.clone()
        };
        // Entailment by provenance reads neither the report nor the question.
        assert_eq!(
            input(Criterion::Entailment, &a),
            input(Criterion::Entailment, &b)
        );
        assert_ne!(
            input(Criterion::QuestionClarity, &a),
            input(Criterion::QuestionClarity, &b)
        );
        let broken = judge(Criterion::Relevance, "not json");
        assert!(broken.error.is_some() && broken.level(0).is_none());
    }
}
