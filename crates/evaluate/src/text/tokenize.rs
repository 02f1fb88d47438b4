//! The one tokenizer of the n-gram metrics (BLEU, METEOR, ROUGE-L, CIDEr-D), and the corpus
//! they share: every text tokenized once, every distinct token interned as a `u32`.
//!
//! The rules follow the coco-caption convention (Stanford PTB tokenization with `-lowerCase`,
//! then punctuation tokens dropped), kept simple enough to state in three lines:
//!
//! 1. The text is lowercased (Unicode `to_lowercase`).
//! 2. A token is a maximal run of alphanumeric characters; a `-`, `.`, `'` or `/` with an
//!    alphanumeric character on both sides stays inside it (`x-ray`, `1.5`, `t12-l1`,
//!    `patient's`, `and/or`).
//! 3. Every other character separates tokens and is dropped: whitespace, punctuation
//!    (`.` `,` `;` `:` `!` `?` quotes, brackets, dashes) and symbols such as `%` or `+`.
//!
//! ```text
//!  "Small LEFT pleural effusion; no pneumothorax." ─► small left pleural effusion no pneumothorax
//!  "Post-op x-ray (AP view): 1.5 cm nodule."       ─► post-op x-ray ap view 1.5 cm nodule
//! ```
//!
//! Tokenizing the space-joined tokens again gives the same tokens, so reference implementations
//! (pycocoevalcap, rouge-score, nltk) can be fed `tokens.join(" ")` and see exactly these tokens.

use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasherDefault, Hasher};

use crate::{EvaluateError, Result};

/// Characters that join two alphanumeric runs into one token.
const JOINERS: [char; 4] = ['-', '.', '\'', '/'];

/// Splits `text` into lowercase tokens by the rules of the module documentation.
pub fn tokenize(text: &str) -> Vec<String> {
    let lower = text.to_lowercase();
    let mut tokens = Vec::new();
    let mut current = String::new();
    let mut chars = lower.chars().peekable();
    while let Some(c) = chars.next() {
        let joins = JOINERS.contains(&c)
            && !current.is_empty()
            && chars.peek().is_some_and(|next| next.is_alphanumeric());
        if c.is_alphanumeric() || joins {
            current.push(c);
        } else if !current.is_empty() {
            tokens.push(std::mem::take(&mut current));
        }
    }
    if !current.is_empty() {
        tokens.push(current);
    }
    tokens
}

/// A fast, non-cryptographic hasher (FxHash) for the n-gram maps: keys are short `u32` slices
/// built from this process's own vocabulary, so hash flooding is not a concern.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct FxHasher {
    hash: u64,
}

const FX_SEED: u64 = 0x51_7c_c1_b7_27_22_0a_95;

impl FxHasher {
    fn add(&mut self, word: u64) {
        self.hash = (self.hash.rotate_left(5) ^ word).wrapping_mul(FX_SEED);
    }
}

impl Hasher for FxHasher {
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for chunk in &mut chunks {
            let mut word = [0_u8; 8];
            word.copy_from_slice(chunk);
            self.add(u64::from_le_bytes(word));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut word = [0_u8; 8];
            word[..rest.len()].copy_from_slice(rest);
            self.add(u64::from_le_bytes(word));
        }
    }

    fn write_u32(&mut self, value: u32) {
        self.add(u64::from(value));
    }

    fn write_u128(&mut self, value: u128) {
        self.add(value as u64);
        self.add((value >> 64) as u64);
    }

    fn write_u64(&mut self, value: u64) {
        self.add(value);
    }

    fn write_usize(&mut self, value: usize) {
        self.add(value as u64);
    }

    fn finish(&self) -> u64 {
        self.hash
    }
}

/// `HashMap` with [`FxHasher`].
pub(crate) type FxHashMap<K, V> = HashMap<K, V, BuildHasherDefault<FxHasher>>;
/// `HashSet` with [`FxHasher`].
pub(crate) type FxHashSet<K> = HashSet<K, BuildHasherDefault<FxHasher>>;

/// A tokenized sentence: the ids of its tokens in the corpus vocabulary.
pub(crate) type Sentence = Vec<u32>;

/// Candidates and their references, tokenized once and interned, shared by the n-gram metrics.
#[derive(Debug, Clone, Default)]
pub(crate) struct Corpus {
    /// Token text by id.
    pub(crate) vocabulary: Vec<String>,
    /// One tokenized candidate per item.
    pub(crate) candidates: Vec<Sentence>,
    /// The tokenized references of each item (at least one).
    pub(crate) references: Vec<Vec<Sentence>>,
}

impl Corpus {
    /// Tokenizes and interns; errors when the lengths differ, the corpus is empty or an item
    /// has no reference.
    pub(crate) fn new(candidates: &[&str], references: &[Vec<&str>]) -> Result<Self> {
        validate(candidates.len(), references)?;
        let mut ids: HashMap<String, u32> = HashMap::new();
        let mut corpus = Self::default();
        let mut intern = |text: &str, vocabulary: &mut Vec<String>| -> Sentence {
            tokenize(text)
                .into_iter()
                .map(|token| {
                    *ids.entry(token).or_insert_with_key(|token| {
                        vocabulary.push(token.clone());
                        // More than 4 billion distinct tokens do not fit in memory anyway.
                        u32::try_from(vocabulary.len() - 1).unwrap_or(u32::MAX)
                    })
                })
                .collect()
        };
        for (candidate, item_references) in candidates.iter().zip(references) {
            let candidate = intern(candidate, &mut corpus.vocabulary);
            corpus.candidates.push(candidate);
            let item_references = item_references
                .iter()
                .map(|reference| intern(reference, &mut corpus.vocabulary))
                .collect();
            corpus.references.push(item_references);
        }
        Ok(corpus)
    }

    /// Number of items.
    pub(crate) fn len(&self) -> usize {
        self.candidates.len()
    }
}

/// Checks that there is one non-empty reference list per candidate and at least one item.
pub(crate) fn validate<R>(candidates: usize, references: &[Vec<R>]) -> Result<()> {
    if candidates != references.len() {
        return Err(EvaluateError::Input(format!(
            "{candidates} candidates but {} reference lists: pass one list of references per \
             candidate, in the same order",
            references.len()
        )));
    }
    if candidates == 0 {
        return Err(EvaluateError::Input(
            "no items to score: pass at least one candidate with its references".into(),
        ));
    }
    if let Some(item) = references.iter().position(Vec::is_empty) {
        return Err(EvaluateError::Input(format!(
            "item {item} has no references: every candidate needs at least one reference text \
             (drop the item or add its ground truth)"
        )));
    }
    Ok(())
}

/// An n-gram of at most 4 tokens packed in one integer: token id + 1 in each 32-bit lane,
/// first token in the lowest lane, unused lanes 0 (so n-grams of different orders differ).
pub(crate) type NGram = u128;

/// Bits per token in an [`NGram`].
const LANE_BITS: u32 = 32;

/// The n-grams of `tokens` with `1 ≤ n ≤ 4`, packed.
pub(crate) fn ngrams(tokens: &[u32], n: usize) -> impl Iterator<Item = NGram> + '_ {
    tokens.windows(n).map(|window| {
        window.iter().enumerate().fold(0, |key, (lane, &id)| {
            key | ((NGram::from(id) + 1) << (lane as u32 * LANE_BITS))
        })
    })
}

/// The n of a packed n-gram.
pub(crate) fn ngram_order(ngram: NGram) -> usize {
    (NGram::BITS - ngram.leading_zeros()).div_ceil(LANE_BITS) as usize
}

/// Counts of every n-gram of `tokens` with `1 ≤ n ≤ max_n ≤ 4`.
pub(crate) fn ngram_counts(tokens: &[u32], max_n: usize) -> FxHashMap<NGram, u32> {
    let mut counts = FxHashMap::default();
    for n in 1..=max_n {
        for ngram in ngrams(tokens, n) {
            *counts.entry(ngram).or_insert(0) += 1;
        }
    }
    counts
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_punctuation_and_keeps_joined_words() {
        assert_eq!(
            tokenize("Post-op X-ray (AP view): 1.5 cm nodule, patient's and/or -- ok. 5%"),
            [
                "post-op",
                "x-ray",
                "ap",
                "view",
                "1.5",
                "cm",
                "nodule",
                "patient's",
                "and/or",
                "ok",
                "5"
            ]
        );
        assert!(tokenize(" .,;: ").is_empty());
        assert_eq!(tokenize("end-"), ["end"]);
        assert_eq!(tokenize("a--b"), ["a", "b"]);
    }

    #[test]
    fn packed_ngrams_keep_their_order_and_tokens() {
        let tokens = [0, 7, u32::MAX - 1, 3];
        for n in 1..=4 {
            let packed: Vec<NGram> = ngrams(&tokens, n).collect();
            assert_eq!(packed.len(), 5 - n);
            assert!(packed.iter().all(|&g| ngram_order(g) == n), "{n}");
        }
        assert_ne!(ngrams(&[0], 1).next(), ngrams(&[0, 0], 2).next());
    }

    #[test]
    fn tokenizing_joined_tokens_is_idempotent() {
        let tokens = tokenize("Mild cardiomegaly; T12-L1 fracture... No effusion!");
        assert_eq!(tokenize(&tokens.join(" ")), tokens);
    }
}
