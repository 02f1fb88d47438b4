//! Tolerant parsers of LLM-judge answers (listings 7–11): per-part lines `[01] LABEL` (with
//! `REDUNDANT_INFO(01,02)`), and a single `explanation -> LABEL`.
//!
//! Models add markdown (`**`, bullets, `\_` escapes), prose around the lines and spell some
//! labels differently (`ALIGNED_INFERABLE` in the prompt, `ALIGNED_INFERRABLE` in table 12);
//! all of that is accepted. What cannot be mapped to a level is an error or a missing level,
//! never a guess.

use crate::criterion::Criterion;

/// The level name of `criterion` that `label` means, if any (case-insensitive, markdown and
/// the prompt's spellings accepted, `REDUNDANT_INFO(…)` references dropped).
pub fn level_name(criterion: Criterion, label: &str) -> Option<&'static str> {
    let cleaned: String = label
        .chars()
        .filter(|c| !matches!(c, '*' | '\\' | '`' | '"' | '\''))
        .collect();
    let cleaned = cleaned.trim();
    let cleaned = cleaned.split('(').next().unwrap_or(cleaned).trim();
    let upper = cleaned.to_ascii_uppercase().replace([' ', '-'], "_");
    let spelled = upper.replace("INFERABLE", "INFERRABLE");
    criterion.aspect().level(&spelled).map(|level| level.name)
}

/// The per-part levels of an answer to a per-part prompt with `parts` numbered lines.
///
/// Every line that starts (after bullets and markdown) with `[NN]` or `NN.` / `NN:` followed by
/// a label is read; the first rating of each number wins, numbers outside `1..=parts` are
/// ignored. Parts without a readable rating are `None`. Fails when no line could be read.
pub fn part_levels(
    criterion: Criterion,
    answer: &str,
    parts: usize,
) -> Result<Vec<Option<&'static str>>, String> {
    let mut levels: Vec<Option<&'static str>> = vec![None; parts];
    let mut read = 0;
    for line in answer.lines() {
        let Some((number, rest)) = numbered(line) else {
            continue;
        };
        let Some(label) = rest.split_whitespace().next() else {
            continue;
        };
        let Some(level) = level_name(criterion, label) else {
            continue;
        };
        if let Some(slot) = number.checked_sub(1).and_then(|i| levels.get_mut(i))
            && slot.is_none()
        {
            *slot = Some(level);
            read += 1;
        }
    }
    if read == 0 {
        return Err(format!(
            "no '[NN] LABEL' line with a {criterion} level in the answer"
        ));
    }
    Ok(levels)
}

/// `(number, rest)` of a line like `- [01] LABEL`, `**[01]** LABEL`, `01. LABEL` or `1: LABEL`.
fn numbered(line: &str) -> Option<(usize, &str)> {
    let line = line
        .trim_start()
        .trim_start_matches(['-', '*', '•', ' ', '\t']);
    let (digits, rest) = if let Some(inner) = line.strip_prefix('[') {
        let (digits, rest) = inner.split_once(']')?;
        (digits, rest)
    } else {
        let end = line.find(|c: char| !c.is_ascii_digit())?;
        let (digits, rest) = line.split_at(end);
        let rest = rest.strip_prefix(['.', ':', ')'])?;
        (digits, rest)
    };
    let number = digits.trim().parse().ok()?;
    let rest = rest.trim_start_matches(['*', ':', ' ', '\t', '-', '>']);
    Some((number, rest))
}

/// The level of an answer `explanation -> LABEL` (also `→`, `=>` and the `>` of listing 9):
/// the label after the last arrow, else the last word of the answer that is a level.
pub fn single_level(criterion: Criterion, answer: &str) -> Result<&'static str, String> {
    let after_arrow = ["->", "→", "=>", ">"]
        .iter()
        .filter_map(|arrow| answer.rfind(arrow).map(|at| &answer[at + arrow.len()..]))
        .min_by_key(|tail| tail.len());
    if let Some(tail) = after_arrow
        && let Some(level) = tail
            .split_whitespace()
            .find_map(|w| level_name(criterion, w))
    {
        return Ok(level);
    }
    answer
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .filter_map(|word| level_name(criterion, word))
        .next_back()
        .ok_or_else(|| format!("no {criterion} level in the answer"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn per_part_lines_with_markdown_and_references() {
        let answer = "Rating (provide 3 ratings):\n- **[01]** RELEVANT_MAIN_ANSWER\n\
                      [02] REDUNDANT\\_INFO(01)\n[03] related_info\n[04] IRRELEVANT_INFO";
        let levels = part_levels(Criterion::Relevance, answer, 3).expect("parsed");
        assert_eq!(
            levels,
            vec![
                Some("RELEVANT_MAIN_ANSWER"),
                Some("REDUNDANT_INFO"),
                Some("RELATED_INFO")
            ]
        );
    }

    #[test]
    fn the_prompts_spelling_maps_to_table_12() {
        let levels = part_levels(
            Criterion::Entailment,
            "[01] ALIGNED_INFERABLE\n[02] NON_ALIGNED_NON_INFERABLE",
            2,
        )
        .expect("parsed");
        assert_eq!(
            levels,
            vec![
                Some("ALIGNED_INFERRABLE"),
                Some("NON_ALIGNED_NON_INFERRABLE")
            ]
        );
    }

    #[test]
    fn missing_parts_are_none_and_nothing_readable_is_an_error() {
        let levels = part_levels(Criterion::AnswerClarity, "1. OPTIMAL\n", 2).expect("parsed");
        assert_eq!(levels, vec![Some("OPTIMAL"), None]);
        assert!(part_levels(Criterion::AnswerClarity, "[01] FANTASTIC", 1).is_err());
        assert!(part_levels(Criterion::AnswerClarity, "I cannot rate this.", 1).is_err());
    }

    #[test]
    fn single_levels_after_the_arrow_or_last_mentioned() {
        assert_eq!(
            single_level(
                Criterion::Completeness,
                "severity is missing -> DETAILS_MISSING"
            ),
            Ok("DETAILS_MISSING")
        );
        assert_eq!(
            single_level(
                Criterion::QuestionClarity,
                "Not OPTIMAL since the grammar is off → **GRAMMATICAL_ERRORS**"
            ),
            Ok("GRAMMATICAL_ERRORS")
        );
        assert_eq!(
            single_level(Criterion::QuestionClarity, "Rating: UNCLEAR_QUESTION."),
            Ok("UNCLEAR_QUESTION")
        );
        assert!(single_level(Criterion::Completeness, "fine").is_err());
    }
}
