//! The ConText engine: which trigger of `context.toml` governs each finding of a sentence.
//!
//! ```text
//!  mentions ─► clauses (cut at terminate triggers: but, however, which, ;, …)
//!  per finding, within its clause:
//!    forward   the nearest negated / uncertain / hypothetical trigger before it (forward or
//!              bidirectional); its scope runs over lists ("no A, B, or C") to the clause end.
//!              An earlier negation with no comma in between outranks it: "no opacity
//!              concerning for pneumonia" negates the pneumonia.
//!    backward  else the first trigger after it that reaches back: backward ones ("A, B, and C
//!              are absent"), bidirectional ones when it is the nearest finding before them
//!              ("atelectasis versus pneumonia"), and forward ones that end the clause
//!              ("atelectasis, likely.")
//!    else      positive
//!  pseudo triggers ("no change", "not only") modify nothing: they hide the trigger inside them.
//!  A statement with a verb ("the heart is enlarged") asserts itself: forward triggers before
//!  it do not reach it ("no effusion and the heart is enlarged").
//! ```

use cxrlake_refdefs::{Direction, TriggerCategory};

use super::lexicon::{Lexicon, Mention, Term, TriggerEntry};

/// The probability of a normal statement's own "no" ("no acute process or effusion").
const NEGATIVE: &str = "negative";

/// A clause: a byte range of the sentence and the mentions in it.
pub(crate) struct Clause {
    /// Byte offset of the first character.
    pub start: usize,
    /// Byte offset after the last character.
    pub end: usize,
    /// Mentions in the clause, terminators excluded.
    pub mentions: Vec<Mention>,
}

/// How the triggers read one finding.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Reading<'a> {
    /// The refdefs probability name (`positive` when no trigger reaches the finding).
    pub probability: &'a str,
    /// The change the governing trigger states ("has resolved"), by index into the changes.
    pub change: Option<usize>,
}

/// Cuts the sentence into clauses at terminate triggers (a leading `there is` stays in the
/// clause it starts).
pub(crate) fn clauses(lexicon: &Lexicon, sentence: &str, mentions: &[Mention]) -> Vec<Clause> {
    let mut clauses = Vec::new();
    let mut start = 0;
    let mut current = Vec::new();
    for mention in mentions {
        let terminator = matches!(mention.term, Term::Trigger(i)
            if lexicon.triggers[i].category == TriggerCategory::Terminate);
        if !terminator {
            current.push(*mention);
            continue;
        }
        clauses.push(Clause {
            start,
            end: mention.start,
            mentions: std::mem::take(&mut current),
        });
        let matched = sentence[mention.start..mention.end].to_ascii_lowercase();
        start = match matched.find("there") {
            Some(offset) => mention.start + offset,
            None => mention.end,
        };
    }
    clauses.push(Clause {
        start,
        end: sentence.len(),
        mentions: current,
    });
    clauses
}

/// A trigger that modifies findings, as it acts in one clause.
#[derive(Clone, Copy)]
struct Acting<'a> {
    mention: Mention,
    negated: bool,
    direction: Direction,
    probability: &'a str,
    change: Option<usize>,
}

impl<'a> Acting<'a> {
    fn reading(self) -> Reading<'a> {
        Reading {
            probability: self.probability,
            change: self.change,
        }
    }
}

/// The modifying trigger a mention is, if any: a trigger of category negated, uncertain or
/// hypothetical, or a normal statement starting with "no".
fn acting<'a>(lexicon: &'a Lexicon, sentence: &str, mention: &Mention) -> Option<Acting<'a>> {
    match mention.term {
        Term::Trigger(i) => {
            let TriggerEntry {
                category,
                direction,
                probability,
                change,
            } = &lexicon.triggers[i];
            Some(Acting {
                mention: *mention,
                negated: *category == TriggerCategory::Negated,
                direction: (*direction)?,
                probability: probability.as_deref()?,
                change: *change,
            })
        }
        Term::Finding(f)
            if lexicon.findings[f].normal
                && sentence[mention.start..]
                    .get(..3)
                    .is_some_and(|w| w.eq_ignore_ascii_case("no ")) =>
        {
            Some(Acting {
                mention: *mention,
                negated: true,
                direction: Direction::Forward,
                probability: NEGATIVE,
                change: None,
            })
        }
        _ => None,
    }
}

/// Whether a finding as written is a statement with its own verb ("heart is enlarged").
pub(crate) fn is_statement(written: &str) -> bool {
    let lower = written.to_ascii_lowercase();
    [
        " is ",
        " are ",
        " remain ",
        " remains ",
        " appear ",
        " appears ",
        " has ",
    ]
    .iter()
    .any(|verb| lower.contains(verb))
}

/// How the triggers of `clause` read `finding` (see the module docs).
pub(crate) fn reading<'a>(
    lexicon: &'a Lexicon,
    sentence: &str,
    clause: &Clause,
    finding: &Mention,
) -> Reading<'a> {
    let triggers: Vec<Acting<'a>> = clause
        .mentions
        .iter()
        .filter(|m| m.start != finding.start)
        .filter_map(|m| acting(lexicon, sentence, m))
        .collect();
    let reaches_forward = |t: &Acting<'_>| {
        t.mention.end <= finding.start
            && matches!(t.direction, Direction::Forward | Direction::Bidirectional)
    };
    if !is_statement(&sentence[finding.start..finding.end])
        && let Some(nearest) = triggers.iter().rev().find(|t| reaches_forward(t))
    {
        let outranking = triggers.iter().find(|n| {
            n.negated
                && !nearest.negated
                && reaches_forward(n)
                && n.mention.end <= nearest.mention.start
                && !sentence[n.mention.end..nearest.mention.start].contains(',')
        });
        return outranking.unwrap_or(nearest).reading();
    }
    let nearest_finding_before = |t: &Acting<'_>| {
        clause
            .mentions
            .iter()
            .rfind(|m| m.end <= t.mention.start && matches!(m.term, Term::Finding(_)))
            .is_some_and(|m| m.start == finding.start)
    };
    let ends_clause = |t: &Acting<'_>| {
        !sentence[t.mention.end..clause.end.max(t.mention.end)]
            .chars()
            .any(char::is_alphanumeric)
    };
    triggers
        .iter()
        .filter(|t| t.mention.start >= finding.end)
        .find(|t| match t.direction {
            Direction::Backward => true,
            Direction::Bidirectional => nearest_finding_before(t),
            Direction::Forward => ends_clause(t),
        })
        .map_or(
            Reading {
                probability: "positive",
                change: None,
            },
            |t| t.reading(),
        )
}

#[cfg(test)]
mod tests {
    use std::sync::OnceLock;

    use cxrlake_refdefs::RefDefs;

    use super::*;

    fn lexicon() -> &'static Lexicon {
        static LEXICON: OnceLock<Lexicon> = OnceLock::new();
        LEXICON.get_or_init(|| Lexicon::new(&RefDefs::embedded().expect("embedded refdefs")))
    }

    /// `(finding as written, probability)` of every finding of `sentence`.
    fn read(sentence: &str) -> Vec<(String, String)> {
        let lexicon = lexicon();
        let mentions = lexicon.mentions(sentence);
        let clauses = clauses(lexicon, sentence, &mentions);
        let mut out = Vec::new();
        for clause in &clauses {
            for m in &clause.mentions {
                if matches!(m.term, Term::Finding(_)) {
                    let r = reading(lexicon, sentence, clause, m);
                    out.push((
                        sentence[m.start..m.end].to_lowercase(),
                        r.probability.to_owned(),
                    ));
                }
            }
        }
        out
    }

    fn expect(sentence: &str, expected: &[(&str, &str)]) {
        let expected: Vec<(String, String)> = expected
            .iter()
            .map(|(f, p)| ((*f).to_owned(), (*p).to_owned()))
            .collect();
        assert_eq!(read(sentence), expected, "{sentence}");
    }

    #[test]
    fn forward_triggers_reach_the_findings_after_them() {
        expect("No pneumothorax.", &[("pneumothorax", "negative")]);
        expect(
            "The lungs are free of consolidation.",
            &[("consolidation", "negative")],
        );
        expect(
            "Possible small right pleural effusion.",
            &[("pleural effusion", "possible")],
        );
        expect(
            "Findings are suggestive of mild pulmonary edema.",
            &[("pulmonary edema", "probable")],
        );
    }

    #[test]
    fn backward_triggers_reach_the_findings_before_them() {
        expect("Pneumothorax is not seen.", &[("pneumothorax", "negative")]);
        expect(
            "Pneumonia cannot be excluded.",
            &[("pneumonia", "possible")],
        );
        expect(
            "Small right pleural effusion is suspected.",
            &[("pleural effusion", "possible")],
        );
    }

    #[test]
    fn bidirectional_triggers_read_forward_when_a_finding_follows() {
        expect(
            "Left lower lobe opacity, likely atelectasis.",
            &[("opacity", "positive"), ("atelectasis", "probable")],
        );
        expect(
            "Bibasilar atelectasis, likely.",
            &[("bibasilar atelectasis", "probable")],
        );
        expect("Pneumothorax is unlikely.", &[("pneumothorax", "unlikely")]);
    }

    #[test]
    fn pseudo_triggers_modify_nothing() {
        expect(
            "No change in the small left pleural effusion.",
            &[("pleural effusion", "positive")],
        );
        expect(
            "No significant interval change in moderate cardiomegaly.",
            &[("cardiomegaly", "positive")],
        );
        expect(
            "There is not only a right pleural effusion but also a small left effusion.",
            &[("pleural effusion", "positive"), ("effusion", "positive")],
        );
        expect(
            "No increase in the size of the left pleural effusion.",
            &[("pleural effusion", "positive")],
        );
    }

    #[test]
    fn terminators_end_the_scope() {
        expect(
            "No pneumothorax, but there is a small left pleural effusion.",
            &[
                ("pneumothorax", "negative"),
                ("pleural effusion", "positive"),
            ],
        );
        expect(
            "No focal consolidation; however, there is mild bibasilar atelectasis.",
            &[
                ("consolidation", "negative"),
                ("bibasilar atelectasis", "positive"),
            ],
        );
        expect(
            "No pneumonia, although there is mild left basilar atelectasis.",
            &[("pneumonia", "negative"), ("atelectasis", "positive")],
        );
        expect(
            "No consolidation except for a small area of atelectasis at the left base.",
            &[("consolidation", "negative"), ("atelectasis", "positive")],
        );
    }

    #[test]
    fn scopes_run_over_lists() {
        expect(
            "The lungs are clear of focal airspace disease, pneumothorax, or pleural effusion.",
            &[
                ("airspace disease", "negative"),
                ("pneumothorax", "negative"),
                ("pleural effusion", "negative"),
            ],
        );
        expect(
            "Neither pneumothorax nor pleural effusion is present.",
            &[
                ("pneumothorax", "negative"),
                ("pleural effusion", "negative"),
            ],
        );
        expect(
            "Pneumothorax, pleural effusion, and focal consolidation are absent.",
            &[
                ("pneumothorax", "negative"),
                ("pleural effusion", "negative"),
                ("consolidation", "negative"),
            ],
        );
        expect(
            "Without evidence of pneumothorax or pleural effusion.",
            &[
                ("pneumothorax", "negative"),
                ("pleural effusion", "negative"),
            ],
        );
    }

    #[test]
    fn an_earlier_negation_outranks_a_relational_uncertainty() {
        expect(
            "There is no focal consolidation concerning for pneumonia.",
            &[("consolidation", "negative"), ("pneumonia", "negative")],
        );
        expect(
            "No pneumothorax, possible small effusion.",
            &[("pneumothorax", "negative"), ("small effusion", "possible")],
        );
    }

    #[test]
    fn statements_assert_themselves() {
        expect(
            "No pleural effusion and the heart is enlarged.",
            &[
                ("pleural effusion", "negative"),
                ("heart is enlarged", "positive"),
            ],
        );
        expect(
            "No acute cardiopulmonary process or pleural effusion.",
            &[
                ("no acute cardiopulmonary process", "positive"),
                ("pleural effusion", "negative"),
            ],
        );
    }

    #[test]
    fn a_visualized_pneumothorax_stays_a_pneumothorax() {
        expect(
            "No visualized pneumothorax.",
            &[("pneumothorax", "negative")],
        );
    }
}
