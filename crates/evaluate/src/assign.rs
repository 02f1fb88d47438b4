//! Hungarian assignment and the GEMeX scores (paper 004, sec. 5.2): the A-score (answer or
//! choice accuracy of closed, single- and multi-choice questions, "matched from the responses"
//! when a model does not answer in the format) and the V-score (mIoU of the predicted and the
//! target boxes, matched one to one with the Hungarian algorithm).
//!
//! ```text
//!  predicted boxes P × target boxes T ──cost = −IoU──► hungarian ──► Σ IoU(pairs) / max(|P|, |T|)
//!  answer text ──normalise_choice (yes/no, option letter, set of letters)──┐
//!  target text ──normalise_choice──────────────────────────────────────────┴► equal? ──► A-score
//! ```

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use crate::masks::Rect;

/// The minimum-cost assignment of rows to columns of a rectangular `cost` matrix
/// (`rows × cols`, any shape): `min(rows, cols)` pairs `(row, col)`, sorted by row, each row
/// and column used at most once, with the least total cost — the optimum
/// `scipy.optimize.linear_sum_assignment` finds (which pairs, when several assignments tie,
/// may differ).
///
/// The algorithm is the Hungarian method in its shortest-augmenting-path form with row and
/// column potentials (Kuhn 1955, Munkres 1957; Jonker & Volgenant 1987), O(n² m) for
/// `n = min(rows, cols)`, `m = max(rows, cols)`: the shorter side is assigned one row at a time
/// along a shortest path of reduced costs. An empty matrix gives no pairs. Costs should be
/// finite; a NaN or infinite cost, or a cell missing from a short row, is treated as a cost
/// above any finite assignment, so it is used only when there is no other way.
pub fn hungarian(cost: &[Vec<f64>]) -> Vec<(usize, usize)> {
    let rows = cost.len();
    let cols = cost.iter().map(Vec::len).max().unwrap_or(0);
    if rows == 0 || cols == 0 {
        return Vec::new();
    }
    // The algorithm assigns every row of an n × m matrix with n ≤ m; transpose otherwise.
    let transposed = rows > cols;
    let (n, m) = if transposed {
        (cols, rows)
    } else {
        (rows, cols)
    };
    let finite = || cost.iter().flatten().copied().filter(|c| c.is_finite());
    let low = finite().fold(0.0f64, f64::min);
    let high = finite().fold(0.0f64, f64::max);
    // Above n·high − (n − 1)·low: dearer than any assignment of finite cells.
    let forbidden = high + (high - low + 1.0) * (n as f64 + 1.0);
    let at = |i: usize, j: usize| {
        let (r, c) = if transposed { (j, i) } else { (i, j) };
        match cost[r].get(c) {
            Some(&x) if x.is_finite() => x,
            _ => forbidden,
        }
    };
    // 1-based potentials of rows (u) and columns (v); column 0 is a virtual start column.
    let mut u = vec![0.0f64; n + 1];
    let mut v = vec![0.0f64; m + 1];
    // row_of[j]: the row assigned to column j (0: none); way[j]: the previous column on the
    // shortest path to j.
    let mut row_of = vec![0usize; m + 1];
    let mut way = vec![0usize; m + 1];
    for i in 1..=n {
        row_of[0] = i;
        let mut j0 = 0usize;
        let mut min_to = vec![f64::INFINITY; m + 1];
        let mut used = vec![false; m + 1];
        loop {
            used[j0] = true;
            let i0 = row_of[j0];
            let mut delta = f64::INFINITY;
            let mut j1 = 0usize;
            for j in 1..=m {
                if used[j] {
                    continue;
                }
                let reduced = at(i0 - 1, j - 1) - u[i0] - v[j];
                if reduced < min_to[j] {
                    min_to[j] = reduced;
                    way[j] = j0;
                }
                if min_to[j] < delta || j1 == 0 {
                    delta = min_to[j];
                    j1 = j;
                }
            }
            for j in 0..=m {
                if used[j] {
                    u[row_of[j]] += delta;
                    v[j] -= delta;
                } else {
                    min_to[j] -= delta;
                }
            }
            j0 = j1;
            if row_of[j0] == 0 {
                break;
            }
        }
        // Flip the assignment along the augmenting path.
        while j0 != 0 {
            let previous = way[j0];
            row_of[j0] = row_of[previous];
            j0 = previous;
        }
    }
    let mut pairs: Vec<(usize, usize)> = (1..=m)
        .filter(|&j| row_of[j] != 0)
        .map(|j| {
            let (i, j) = (row_of[j] - 1, j - 1);
            if transposed { (j, i) } else { (i, j) }
        })
        .collect();
    pairs.sort_unstable();
    pairs
}

/// GEMeX's V-score of one question: the predicted boxes are matched one to one to the target
/// boxes so that the total IoU is largest ([`hungarian`] on the cost `−IoU`), and the matched
/// IoUs are summed and divided by `max(|predicted|, |target|)`:
///
/// `V = Σ_(p,t) matched IoU(p, t) / max(|P|, |T|)`
///
/// Boxes left unmatched on either side count as IoU 0. The paper says only "mIoU with the
/// Hungarian algorithm to match the predicted bounding boxes with the actual ones"; dividing by
/// the larger side (rather than by the number of matched pairs) is this crate's choice, so that
/// a model gains nothing by predicting fewer boxes (dropping a hard target) or more boxes
/// (covering guesses). None when both sides are empty (no location to score), 0 when exactly
/// one side is.
pub fn v_score(predicted: &[Rect], target: &[Rect]) -> Option<f64> {
    if predicted.is_empty() && target.is_empty() {
        return None;
    }
    if predicted.is_empty() || target.is_empty() {
        return Some(0.0);
    }
    let cost: Vec<Vec<f64>> = predicted
        .iter()
        .map(|p| target.iter().map(|t| -p.iou(t)).collect())
        .collect();
    let matched: f64 = hungarian(&cost)
        .into_iter()
        .map(|(i, j)| predicted[i].iou(&target[j]))
        .sum();
    Some(matched / predicted.len().max(target.len()) as f64)
}

/// The kind of a question whose answer can be checked exactly (GEMeX's A-score types).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum ChoiceKind {
    /// Closed-ended: yes or no.
    Closed,
    /// Single choice: one option letter.
    Single,
    /// Multiple choice: a set of option letters, correct only when the sets are equal.
    Multi,
}

/// The canonical form of an answer, None when none can be read (then it is never correct):
/// `"yes"` / `"no"`, an option letter `"B"`, or the sorted letters `"A,C"`.
///
/// Both the model's answer and the target are read the same way. First, when the text holds a
/// GEMeX `<answer>` tag, only what follows it up to the next `<` is read
/// (`<answer>D <reason>…` → `D`). Then, by kind:
///
/// - **Closed**: the first word (letters and digits, case-insensitive) that is `yes` or `no`:
///   `Yes.`, `no`, `Yes, there is an effusion.`, `There is no effusion` (→ no).
/// - **Single**: an option is a letter A–H (either case) with optional brackets and a
///   trailing `.`, `)` or `:`. Read, in order: (1) the whole answer is one option: `B`, `b`,
///   `B.`, `(B)`, `[B]`; (2) it starts with an option followed by `)`, `.` or `:` and text:
///   `B) Pleural effusion`, `(B) effusion`, `B: Pleural effusion`; (3) the options after the
///   last cue word `answer`, `option` or `choice` (fillers such as `is`, `the`, `correct`
///   skipped) are exactly one: `The answer is B.`, `Answer: (b)`, `Option B is correct`.
/// - **Multi**: an option list is a run of options separated by spaces, commas, semicolons,
///   slashes, `&`, `+` or `and`, or written together in capitals: `A, C`, `[B, C]`,
///   `A and C`, `AC`, `(A)(C)`. Read (1) the whole answer as an option list, else (2) the list
///   after the last cue word: `The answers are A and C.`
///
/// A lone lower-case letter without brackets or a delimiter counts only as the last word
/// (`answer is a` reads `A`, `answer is a pleural effusion` reads nothing), so that the
/// article "a" is not an option.
pub fn normalise_choice(text: &str, kind: ChoiceKind) -> Option<String> {
    let text = answer_tag(text);
    match kind {
        ChoiceKind::Closed => yes_no(text).map(|yes| if yes { "yes" } else { "no" }.to_string()),
        ChoiceKind::Single => single_option(text).map(String::from),
        ChoiceKind::Multi => {
            let letters = option_set(text);
            (!letters.is_empty()).then(|| {
                letters
                    .iter()
                    .map(char::to_string)
                    .collect::<Vec<_>>()
                    .join(",")
            })
        }
    }
}

/// Whether `predicted` answers like `target`: both read by [`normalise_choice`] and equal (a
/// prediction that cannot be read is wrong).
pub fn choice_correct(predicted: &str, target: &str, kind: ChoiceKind) -> bool {
    match normalise_choice(predicted, kind) {
        Some(p) => normalise_choice(target, kind).is_some_and(|t| t == p),
        None => false,
    }
}

/// GEMeX's A-score: the share of `(predicted, target, kind)` answers that are correct by
/// [`choice_correct`] (multiply by 100 for the paper's percentages); None for no answers.
pub fn a_score<'a, I>(answers: I) -> Option<f64>
where
    I: IntoIterator<Item = (&'a str, &'a str, ChoiceKind)>,
{
    let (mut correct, mut all) = (0usize, 0usize);
    for (predicted, target, kind) in answers {
        all += 1;
        correct += usize::from(choice_correct(predicted, target, kind));
    }
    (all > 0).then(|| correct as f64 / all as f64)
}

/// The text after a `<answer>` tag up to the next `<`, or all of `text` without one.
fn answer_tag(text: &str) -> &str {
    let lower = text.to_ascii_lowercase();
    match lower.find("<answer>") {
        Some(start) => {
            let rest = &text[start + "<answer>".len()..];
            rest.split('<').next().unwrap_or(rest)
        }
        None => text,
    }
}

/// The first `yes` / `no` word.
fn yes_no(text: &str) -> Option<bool> {
    text.split(|c: char| !c.is_alphanumeric())
        .find_map(|word| match word.to_lowercase().as_str() {
            "yes" => Some(true),
            "no" => Some(false),
            _ => None,
        })
}

/// Brackets and punctuation around an option (`(B)`, `B.`, `[B,`).
fn is_wrapping(c: char) -> bool {
    matches!(
        c,
        '(' | ')' | '[' | ']' | '{' | '}' | '.' | ':' | ';' | ',' | '!' | '?' | '"' | '\'' | '*'
    )
}

/// Whether `c` can be an option letter (A–H, either case).
fn is_option_letter(c: char) -> bool {
    matches!(c.to_ascii_uppercase(), 'A'..='H')
}

/// Words of `text`: split on whitespace and the list separators `, ; / & +`.
fn words(text: &str) -> Vec<&str> {
    text.split(|c: char| c.is_whitespace() || matches!(c, ',' | ';' | '/' | '&' | '+'))
        .filter(|w| !w.is_empty())
        .collect()
}

/// The option letters of one word: `B`, `(b)`, `B.`, `AC`, `(A)(C)`; empty for anything else.
/// `last` says whether nothing follows the word (a bare lower-case letter counts only then).
fn word_options(word: &str, last: bool) -> Vec<char> {
    let letters: Vec<char> = word.chars().filter(|&c| !is_wrapping(c)).collect();
    let wrapped = letters.len() < word.chars().count();
    match letters.as_slice() {
        [c] if is_option_letter(*c) && (c.is_ascii_uppercase() || wrapped || last) => {
            vec![c.to_ascii_uppercase()]
        }
        [_, _, ..]
            if letters
                .iter()
                .all(|&c| c.is_ascii_uppercase() && is_option_letter(c)) =>
        {
            letters
        }
        _ => Vec::new(),
    }
}

/// The options of the leading run of option words in `words` (joined by `and`), and how many
/// words the run took.
fn option_run(words: &[&str]) -> (Vec<char>, usize) {
    let mut letters = Vec::new();
    let mut taken = 0;
    for (k, word) in words.iter().enumerate() {
        if word.eq_ignore_ascii_case("and") && !letters.is_empty() {
            continue;
        }
        if word.chars().all(is_wrapping) {
            continue;
        }
        let found = word_options(word, k + 1 == words.len());
        if found.is_empty() {
            break;
        }
        letters.extend(found);
        taken = k + 1;
    }
    (letters, taken)
}

/// The words after the last cue word (`answer`, `option`, `choice`, singular or plural), with
/// fillers skipped.
fn after_cue<'a>(words: &[&'a str]) -> Option<Vec<&'a str>> {
    let bare = |w: &str| w.trim_matches(is_wrapping).to_ascii_lowercase();
    let cue = words.iter().rposition(|w| {
        matches!(
            bare(w).as_str(),
            "answer" | "answers" | "option" | "options" | "choice" | "choices"
        )
    })?;
    let fillers = [
        "is", "are", "was", "would", "be", "should", "the", "correct", "final", "my",
    ];
    Some(
        words[cue + 1..]
            .iter()
            .copied()
            .skip_while(|w| {
                let w = bare(w);
                w.is_empty() || fillers.contains(&w.as_str())
            })
            .collect(),
    )
}

/// The one option letter of a single-choice answer (rules in [`normalise_choice`]).
fn single_option(text: &str) -> Option<char> {
    let trimmed = text.trim();
    let all = words(trimmed);
    // (1) The whole answer is one option.
    if let [word] = all.as_slice()
        && let [letter] = word_options(word, true).as_slice()
    {
        return Some(*letter);
    }
    // (2) A leading option with a delimiter, then text.
    let mut chars = trimmed.trim_start_matches(['(', '[']).chars();
    if let (Some(letter), Some(delimiter)) = (chars.next(), chars.next())
        && is_option_letter(letter)
        && matches!(delimiter, ')' | ']' | '.' | ':')
    {
        return Some(letter.to_ascii_uppercase());
    }
    // (3) Exactly one option after the cue.
    let rest = after_cue(&all)?;
    match option_run(&rest).0.as_slice() {
        [letter] => Some(*letter),
        _ => None,
    }
}

/// The set of option letters of a multi-choice answer (rules in [`normalise_choice`]).
fn option_set(text: &str) -> BTreeSet<char> {
    let all = words(text.trim());
    let (letters, taken) = option_run(&all);
    if !letters.is_empty() && taken == all.len() {
        return letters.into_iter().collect();
    }
    after_cue(&all)
        .map(|rest| option_run(&rest).0.into_iter().collect())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hungarian_finds_the_cheapest_assignment() {
        let cost = vec![
            vec![4.0, 1.0, 3.0],
            vec![2.0, 0.0, 5.0],
            vec![3.0, 2.0, 2.0],
        ];
        let pairs = hungarian(&cost);
        let total: f64 = pairs.iter().map(|&(i, j)| cost[i][j]).sum();
        assert_eq!(total, 5.0);
        // Rectangular both ways.
        let wide = vec![vec![1.0, 9.0, 0.5], vec![9.0, 1.0, 9.0]];
        assert_eq!(hungarian(&wide), vec![(0, 2), (1, 1)]);
        let tall = vec![vec![1.0, 9.0], vec![9.0, 1.0], vec![0.5, 9.0]];
        assert_eq!(hungarian(&tall), vec![(1, 1), (2, 0)]);
        assert!(hungarian(&[]).is_empty());
        assert!(hungarian(&[vec![], vec![]]).is_empty());
    }

    #[test]
    fn non_finite_costs_are_avoided() {
        let cost = vec![vec![f64::NAN, 1.0], vec![2.0, f64::INFINITY]];
        assert_eq!(hungarian(&cost), vec![(0, 1), (1, 0)]);
        // A short row: its missing cell is avoided.
        let ragged = vec![vec![0.0], vec![5.0, 1.0]];
        assert_eq!(hungarian(&ragged), vec![(0, 0), (1, 1)]);
        // Unavoidable: still a full assignment.
        let all_nan = vec![vec![f64::NAN; 2]; 2];
        assert_eq!(hungarian(&all_nan).len(), 2);
    }
}
