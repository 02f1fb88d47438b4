//! A zero set-up, deterministic lexical embedder: hashed character trigrams plus whole words.
//!
//! ```text
//!  "Pleural Effusions" ─normalize─► "pleural effusion"
//!     words:    "pleural", "effusion"               ── weight 1 each, hashed with prefix "w:"
//!     trigrams: "#pl" "ple" … "al#", "#ef" … "on#"  ── weight 1 each, hashed with prefix "c:"
//!  index = FNV-1a-64(prefix ++ utf8 bytes) mod dimension; counts summed, then L2-normalised
//! ```
//!
//! FNV-1a (64-bit, offset basis 0xcbf29ce484222325, prime 0x100000001b3) has no seed, so the
//! vectors are identical across runs and platforms.

use crate::{EmbedError, Embedder, Result, l2_normalize};

/// Dimension of [`LexicalEmbedder::default`].
const DEFAULT_DIMENSION: usize = 1024;
/// Version of the feature scheme; bump when normalisation, features or hashing change.
const SCHEME_VERSION: u32 = 1;
/// Pads each word so trigrams see word starts and ends.
const WORD_BOUNDARY: char = '#';

/// Deterministic hashed character-trigram and word embedder (see the module docs).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct LexicalEmbedder {
    dimension: usize,
    id: String,
}

impl Default for LexicalEmbedder {
    fn default() -> Self {
        Self::build(DEFAULT_DIMENSION)
    }
}

impl LexicalEmbedder {
    /// An embedder with the default dimension (1024).
    pub fn new() -> Self {
        Self::default()
    }

    /// An embedder hashing into `dimension` buckets (at least 16).
    pub fn with_dimension(dimension: usize) -> Result<Self> {
        if dimension < 16 {
            return Err(EmbedError::InvalidSetting(format!(
                "lexical embedding dimension must be at least 16, got {dimension}"
            )));
        }
        Ok(Self::build(dimension))
    }

    fn build(dimension: usize) -> Self {
        Self {
            dimension,
            id: format!("lexical-{SCHEME_VERSION}-d{dimension}"),
        }
    }

    fn embed_one(&self, text: &str) -> Vec<f32> {
        let mut vector = vec![0.0_f32; self.dimension];
        let normalized = normalize_text(text);
        let mut trigram = String::with_capacity(12);
        for word in normalized.split(' ').filter(|w| !w.is_empty()) {
            vector[self.bucket(b"w:", word)] += 1.0;
            let padded: Vec<char> = std::iter::once(WORD_BOUNDARY)
                .chain(word.chars())
                .chain(std::iter::once(WORD_BOUNDARY))
                .collect();
            for window in padded.windows(3) {
                trigram.clear();
                trigram.extend(window);
                vector[self.bucket(b"c:", &trigram)] += 1.0;
            }
        }
        l2_normalize(&mut vector);
        vector
    }

    fn bucket(&self, prefix: &[u8], feature: &str) -> usize {
        let hash = fnv1a_64(prefix.iter().chain(feature.as_bytes()).copied());
        (hash % self.dimension as u64) as usize
    }
}

impl Embedder for LexicalEmbedder {
    fn id(&self) -> &str {
        &self.id
    }

    fn dimension(&self) -> usize {
        self.dimension
    }

    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
        Ok(texts.iter().map(|text| self.embed_one(text)).collect())
    }

    /// Microseconds per text: recomputing beats reading 4 KB back from a cache.
    fn is_cheap(&self) -> bool {
        true
    }
}

/// FNV-1a, 64-bit.
fn fnv1a_64(bytes: impl IntoIterator<Item = u8>) -> u64 {
    const OFFSET_BASIS: u64 = 0xcbf2_9ce4_8422_2325;
    const PRIME: u64 = 0x0000_0100_0000_01b3;
    bytes.into_iter().fold(OFFSET_BASIS, |hash, byte| {
        (hash ^ u64::from(byte)).wrapping_mul(PRIME)
    })
}

/// Normalises text for lexical matching: lower case; anything not alphanumeric (punctuation,
/// underscores, whitespace) becomes a space; runs of spaces collapse; each word loses a simple
/// plural ending (see [`singular`]).
pub fn normalize_text(text: &str) -> String {
    let spaced: String = text
        .chars()
        .flat_map(char::to_lowercase)
        .map(|c| if c.is_alphanumeric() { c } else { ' ' })
        .collect();
    spaced
        .split_whitespace()
        .map(singular)
        .collect::<Vec<_>>()
        .join(" ")
}

/// Strips simple English plural endings from words longer than three letters:
/// `-ies` → `-y` (opacities → opacity), `-sses` → `-ss` (masses → mass), and a final `-s`
/// unless the word ends in `-ss`, `-us` or `-is` (effusions → effusion; atelectasis, hilus kept).
fn singular(word: &str) -> String {
    if word.chars().count() <= 3 {
        return word.to_owned();
    }
    if let Some(stem) = word.strip_suffix("ies") {
        return format!("{stem}y");
    }
    if let Some(stem) = word.strip_suffix("sses") {
        return format!("{stem}ss");
    }
    if word.ends_with("ss") || word.ends_with("us") || word.ends_with("is") {
        return word.to_owned();
    }
    word.strip_suffix('s').unwrap_or(word).to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fnv1a_reference_values() {
        // Published FNV-1a 64-bit test vectors.
        assert_eq!(fnv1a_64(*b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a_64(*b"a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(fnv1a_64(*b"foobar"), 0x8594_4171_f739_67e8);
    }

    #[test]
    fn plural_stripping() {
        assert_eq!(
            normalize_text("Pleural_Effusions, bilateral!"),
            "pleural effusion bilateral"
        );
        assert_eq!(
            normalize_text("Opacities  masses\tatelectasis"),
            "opacity mass atelectasis"
        );
        assert_eq!(normalize_text("  gas  "), "gas");
    }
}
