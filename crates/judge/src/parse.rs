//! Tolerant parsers of LLM-judge answers (listings 7–11): per-part lines `[01] LABEL` (with
//! `REDUNDANT_INFO(01,02)`), and a single `explanation -> LABEL`.
//!
//! Models add markdown (`**`, bullets, `\_` escapes), prose around the lines and spell some
//! labels differently (`ALIGNED_INFERABLE` in the prompt, `ALIGNED_INFERRABLE` in table 12);
//! all of that is accepted. What cannot be mapped to a level is an error or a missing level,
//! never a guess.
//!
//! A batched answer (several items in one call) is split at its `Item N:` lines first
//! ([`batch_levels`]); each item's block is then read like a single-item answer.

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

/// The levels of item `i`'s answer: per part (`parts[i]` numbered lines) or one.
fn item_levels(
    criterion: Criterion,
    answer: &str,
    parts: usize,
) -> Result<Vec<Option<&'static str>>, String> {
    if criterion.per_part() {
        part_levels(criterion, answer, parts)
    } else {
        single_level(criterion, answer).map(|level| vec![Some(level)])
    }
}

/// The number of an item header line like `Item 3:`, `**Item 3**`, `### Item 3` or `- Item 3)`,
/// and what follows it on the line.
fn item_header(line: &str) -> Option<(usize, &str)> {
    let line = line
        .trim_start()
        .trim_start_matches(['-', '*', '•', '#', ' ', '\t']);
    let rest = line
        .get(..4)
        .filter(|word| word.eq_ignore_ascii_case("item"))
        .map(|_| &line[4..])?;
    let rest = rest.trim_start();
    let end = rest
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(rest.len());
    let number = rest[..end].parse().ok()?;
    let rest = rest[end..].trim_start_matches(['*', ':', ')', '.', ' ', '\t', '-']);
    Some((number, rest))
}

/// The levels of each item of an answer to a batched prompt, `parts[i]` being the number of
/// answer parts of item `i + 1` (per-part criteria; ignored otherwise).
///
/// The answer is split at its `Item N:` lines (markdown accepted); text on a header line after
/// the number belongs to the item (`Item 2: clear -> OPTIMAL`). The first block of each number
/// wins, numbers outside `1..=parts.len()` are ignored, items may come in any order. An item
/// without a block, or whose block has no readable level, is an error for that item alone.
pub fn batch_levels(
    criterion: Criterion,
    answer: &str,
    parts: &[usize],
) -> Vec<Result<Vec<Option<&'static str>>, String>> {
    let mut blocks: Vec<Option<String>> = vec![None; parts.len()];
    let mut current: Option<usize> = None;
    for line in answer.lines() {
        if let Some((number, rest)) = item_header(line) {
            current = number
                .checked_sub(1)
                .filter(|&i| i < blocks.len() && blocks[i].is_none());
            if let Some(i) = current {
                blocks[i] = Some(format!("{rest}\n"));
            }
            continue;
        }
        if let Some(block) = current.and_then(|i| blocks[i].as_mut()) {
            block.push_str(line);
            block.push('\n');
        }
    }
    // Reasons name no item number: an item's place depends on the group it was asked in.
    blocks
        .iter()
        .zip(parts)
        .map(|(block, &count)| match block {
            Some(block) => item_levels(criterion, block, count)
                .map_err(|reason| format!("in its item block: {reason}")),
            None => Err("no 'Item N:' block for this item in the answer".to_string()),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batched_answers_split_per_item() {
        let answer = "Here are the ratings.\n**Item 2:**\n- [01] OPTIMAL\n\n### Item 1\n\
                      [01] UNCLEAR_ANSWER\n[02] OPTIMAL\nItem 3: [01] OPTIMAL";
        let levels = batch_levels(Criterion::AnswerClarity, answer, &[2, 1, 1]);
        assert_eq!(
            levels,
            vec![
                Ok(vec![Some("UNCLEAR_ANSWER"), Some("OPTIMAL")]),
                Ok(vec![Some("OPTIMAL")]),
                Ok(vec![Some("OPTIMAL")]),
            ]
        );
    }

    #[test]
    fn a_missing_or_unreadable_item_fails_alone_and_extra_items_are_ignored() {
        let answer = "Item 1:\nclear -> OPTIMAL\nItem 3:\nno idea\nItem 4:\nclear -> OPTIMAL\n\
                      Item 1:\n-> UNCLEAR_QUESTION";
        let levels = batch_levels(Criterion::QuestionClarity, answer, &[1, 1, 1]);
        assert_eq!(levels[0], Ok(vec![Some("OPTIMAL")]), "the first block wins");
        assert_eq!(
            levels[1],
            Err("no 'Item N:' block for this item in the answer".to_string())
        );
        assert!(
            levels[2]
                .as_ref()
                .is_err_and(|e| e.starts_with("in its item block: ")),
            "{levels:?}"
        );
        let single = batch_levels(
            Criterion::Completeness,
            "Item 1: all there -> FULLY_COMPLETE",
            &[1],
        );
        assert_eq!(single, vec![Ok(vec![Some("FULLY_COMPLETE")])]);
        assert_eq!(
            batch_levels(Criterion::Completeness, "", &[1, 1])
                .iter()
                .filter(|l| l.is_err())
                .count(),
            2
        );
    }

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
