//! The Porter stemmer exactly as nltk's `PorterStemmer()` in its default mode
//! `NLTK_EXTENSIONS` (the stemmer nltk's `meteor_score` uses by default).
//!
//! ```text
//!  word ─lowercase─► irregular form? ─► its stem       (skies → sky, dying → die, news → news)
//!       ─► ≤ 2 letters? ─► unchanged
//!       ─► 1a (plurals) ─► 1b (-ed, -ing) ─► 1c (y → i) ─► 2, 3 (double/single suffixes)
//!       ─► 4 (remove suffixes, m > 1) ─► 5a (-e) ─► 5b (-ll) ─► stem
//! ```
//!
//! Besides Martin Porter's published extensions, nltk's mode adds: the irregular forms above,
//! `-ies`/`-ied` of four letters → `-ie`, `-ied` → `-i`, y → i only after a consonant that is
//! not the first letter, `-alli` → `-al` before step 2, `-fulli` → `-ful`, `-logi` → `-log`, and
//! two-letter stems ending vowel–consonant count as *o. Words are handled as Unicode scalar
//! values, as Python strings are.

/// Stems `word` as nltk's `PorterStemmer().stem(word)` does.
pub fn porter_stem(word: &str) -> String {
    let lower = word.to_lowercase();
    if let Some(stem) = irregular_form(&lower) {
        return stem.to_owned();
    }
    // nltk measures the word as given, before lowercasing.
    if word.chars().count() <= 2 {
        return lower;
    }
    let mut word: Vec<char> = lower.chars().collect();
    step1a(&mut word);
    step1b(&mut word);
    step1c(&mut word);
    step2(&mut word);
    step3(&mut word);
    step4(&mut word);
    step5a(&mut word);
    step5b(&mut word);
    word.into_iter().collect()
}

/// nltk's pool of irregular forms.
fn irregular_form(word: &str) -> Option<&'static str> {
    Some(match word {
        "sky" | "skies" => "sky",
        "dying" => "die",
        "lying" => "lie",
        "tying" => "tie",
        "news" => "news",
        "innings" | "inning" => "inning",
        "outings" | "outing" => "outing",
        "cannings" | "canning" => "canning",
        "howe" => "howe",
        "proceed" => "proceed",
        "exceed" => "exceed",
        "succeed" => "succeed",
        _ => return None,
    })
}

fn is_vowel(c: char) -> bool {
    matches!(c, 'a' | 'e' | 'i' | 'o' | 'u')
}

/// Porter's consonant: not a vowel, and a `y` only when it follows a vowel (or starts the word).
fn is_consonant(word: &[char], i: usize) -> bool {
    if is_vowel(word[i]) {
        return false;
    }
    if word[i] != 'y' {
        return true;
    }
    let mut j = i;
    let mut negate = false;
    while j > 0 && word[j] == 'y' {
        negate = !negate;
        j -= 1;
    }
    is_vowel(word[j]) == negate
}

/// Consonant flags of every letter, in one pass.
fn consonant_flags(word: &[char]) -> impl Iterator<Item = bool> + '_ {
    let mut previous = false;
    word.iter().enumerate().map(move |(i, &c)| {
        let consonant = match c {
            'a' | 'e' | 'i' | 'o' | 'u' => false,
            'y' => i == 0 || !previous,
            _ => true,
        };
        previous = consonant;
        consonant
    })
}

/// Porter's measure m: the number of vowel→consonant transitions in `[C](VC)^m[V]`.
fn measure(stem: &[char]) -> usize {
    let mut count = 0;
    let mut previous_vowel = false;
    for consonant in consonant_flags(stem) {
        if consonant && previous_vowel {
            count += 1;
        }
        previous_vowel = !consonant;
    }
    count
}

fn contains_vowel(stem: &[char]) -> bool {
    consonant_flags(stem).any(|consonant| !consonant)
}

/// *d: ends with a double consonant.
fn ends_double_consonant(word: &[char]) -> bool {
    let n = word.len();
    n >= 2 && word[n - 1] == word[n - 2] && is_consonant(word, n - 1)
}

/// *o: ends consonant–vowel–consonant, the last not w, x or y (nltk: or is a two-letter
/// vowel–consonant word).
fn ends_cvc(word: &[char]) -> bool {
    let n = word.len();
    (n >= 3
        && is_consonant(word, n - 3)
        && !is_consonant(word, n - 2)
        && is_consonant(word, n - 1)
        && !matches!(word[n - 1], 'w' | 'x' | 'y'))
        || (n == 2 && !is_consonant(word, 0) && is_consonant(word, 1))
}

fn ends_with(word: &[char], suffix: &str) -> bool {
    let n = suffix.len();
    word.len() >= n && word[word.len() - n..].iter().copied().eq(suffix.chars())
}

/// Replaces the last `suffix_len` letters by `replacement`.
fn replace_suffix(word: &mut Vec<char>, suffix_len: usize, replacement: &str) {
    word.truncate(word.len() - suffix_len);
    word.extend(replacement.chars());
}

/// Applies the first rule whose suffix `word` ends with, when `condition(stem, suffix)` holds on
/// the stem left after removing it; later rules are not tried either way (nltk's
/// `_apply_rule_list`).
fn apply_first_rule(
    word: &mut Vec<char>,
    rules: &[(&str, &str)],
    condition: impl Fn(&[char], &str) -> bool,
) {
    if let Some(&(suffix, replacement)) = rules.iter().find(|(suffix, _)| ends_with(word, suffix)) {
        let stem = &word[..word.len() - suffix.len()];
        if condition(stem, suffix) {
            replace_suffix(word, suffix.len(), replacement);
        }
    }
}

fn step1a(word: &mut Vec<char>) {
    if ends_with(word, "ies") && word.len() == 4 {
        replace_suffix(word, 3, "ie");
        return;
    }
    apply_first_rule(
        word,
        &[("sses", "ss"), ("ies", "i"), ("ss", "ss"), ("s", "")],
        |_, _| true,
    );
}

fn step1b(word: &mut Vec<char>) {
    if ends_with(word, "ied") {
        let replacement = if word.len() == 4 { "ie" } else { "i" };
        replace_suffix(word, 3, replacement);
        return;
    }
    if ends_with(word, "eed") {
        if measure(&word[..word.len() - 3]) > 0 {
            replace_suffix(word, 3, "ee");
        }
        return;
    }
    let Some(suffix) = ["ed", "ing"].into_iter().find(|suffix| {
        ends_with(word, suffix) && contains_vowel(&word[..word.len() - suffix.len()])
    }) else {
        return;
    };
    word.truncate(word.len() - suffix.len());
    if ends_with(word, "at") || ends_with(word, "bl") || ends_with(word, "iz") {
        word.push('e');
    } else if ends_double_consonant(word) {
        if !matches!(word.last(), Some('l' | 's' | 'z')) {
            word.pop();
        }
    } else if measure(word) == 1 && ends_cvc(word) {
        word.push('e');
    }
}

fn step1c(word: &mut [char]) {
    if word.last() == Some(&'y') {
        let stem_len = word.len() - 1;
        if stem_len > 1 && is_consonant(word, stem_len - 1) {
            word[stem_len] = 'i';
        }
    }
}

const STEP2_RULES: [(&str, &str); 22] = [
    ("ational", "ate"),
    ("tional", "tion"),
    ("enci", "ence"),
    ("anci", "ance"),
    ("izer", "ize"),
    ("bli", "ble"),
    ("alli", "al"),
    ("entli", "ent"),
    ("eli", "e"),
    ("ousli", "ous"),
    ("ization", "ize"),
    ("ation", "ate"),
    ("ator", "ate"),
    ("alism", "al"),
    ("iveness", "ive"),
    ("fulness", "ful"),
    ("ousness", "ous"),
    ("aliti", "al"),
    ("iviti", "ive"),
    ("biliti", "ble"),
    ("fulli", "ful"),
    ("logi", "log"),
];

fn step2(word: &mut Vec<char>) {
    if ends_with(word, "alli") && measure(&word[..word.len() - 4]) > 0 {
        replace_suffix(word, 4, "al");
        step2(word);
        return;
    }
    apply_first_rule(word, &STEP2_RULES, |stem, suffix| {
        if suffix == "logi" {
            // nltk tests the word minus "ogi", i.e. the stem plus its "l".
            let mut with_l = stem.to_vec();
            with_l.push('l');
            measure(&with_l) > 0
        } else {
            measure(stem) > 0
        }
    });
}

fn step3(word: &mut Vec<char>) {
    apply_first_rule(
        word,
        &[
            ("icate", "ic"),
            ("ative", ""),
            ("alize", "al"),
            ("iciti", "ic"),
            ("ical", "ic"),
            ("ful", ""),
            ("ness", ""),
        ],
        |stem, _| measure(stem) > 0,
    );
}

fn step4(word: &mut Vec<char>) {
    apply_first_rule(
        word,
        &[
            ("al", ""),
            ("ance", ""),
            ("ence", ""),
            ("er", ""),
            ("ic", ""),
            ("able", ""),
            ("ible", ""),
            ("ant", ""),
            ("ement", ""),
            ("ment", ""),
            ("ent", ""),
            ("ion", ""),
            ("ou", ""),
            ("ism", ""),
            ("ate", ""),
            ("iti", ""),
            ("ous", ""),
            ("ive", ""),
            ("ize", ""),
        ],
        |stem, suffix| {
            measure(stem) > 1 && (suffix != "ion" || matches!(stem.last(), Some('s' | 't')))
        },
    );
}

fn step5a(word: &mut Vec<char>) {
    if word.last() == Some(&'e') {
        let stem = &word[..word.len() - 1];
        let m = measure(stem);
        if m > 1 || (m == 1 && !ends_cvc(stem)) {
            word.pop();
        }
    }
}

fn step5b(word: &mut Vec<char>) {
    if ends_with(word, "ll") && measure(&word[..word.len() - 1]) > 1 {
        word.pop();
    }
}

#[cfg(test)]
mod tests {
    use super::porter_stem;

    #[test]
    fn known_stems() {
        for (word, stem) in [
            ("effusions", "effus"),
            ("effusion", "effus"),
            ("opacities", "opac"),
            ("opacity", "opac"),
            ("enlarged", "enlarg"),
            ("enlarging", "enlarg"),
            ("caresses", "caress"),
            ("ties", "tie"),
            ("happy", "happi"),
            ("relational", "relat"),
            ("skies", "sky"),
            ("is", "is"),
            ("hopping", "hop"),
            ("filing", "file"),
            ("controlling", "control"),
        ] {
            assert_eq!(porter_stem(word), stem, "{word}");
        }
    }
}
