//! Top-1 matching of query embeddings against a fixed set of candidate texts.

use crate::{EmbedError, Embedder, Result, cosine};

/// The paper's threshold: a query maps to its most similar candidate only if the cosine
/// similarity is at least 0.5.
pub const DEFAULT_MATCH_THRESHOLD: f32 = 0.5;

/// Candidate embeddings (e.g. reference-definition tags) with a similarity threshold.
#[derive(Debug, Clone)]
pub struct Matcher {
    candidates: Vec<Vec<f32>>,
    dimension: usize,
    threshold: f32,
}

impl Matcher {
    /// Embeds `candidates` with `embedder`; the threshold is [`DEFAULT_MATCH_THRESHOLD`].
    pub fn new(embedder: &dyn Embedder, candidates: &[&str]) -> Result<Self> {
        let dimension = embedder.dimension();
        let embeddings = embedder.embed(candidates)?;
        if let Some(bad) = embeddings.iter().find(|e| e.len() != dimension) {
            return Err(EmbedError::DimensionMismatch {
                expected: dimension,
                actual: bad.len(),
            });
        }
        Ok(Self {
            candidates: embeddings,
            dimension,
            threshold: DEFAULT_MATCH_THRESHOLD,
        })
    }

    /// Returns the matcher with another threshold (a cosine similarity, at most 1).
    pub fn with_threshold(mut self, threshold: f32) -> Result<Self> {
        if !(threshold.is_finite() && threshold <= 1.0) {
            return Err(EmbedError::InvalidSetting(format!(
                "match threshold must be a finite cosine similarity <= 1, got {threshold}"
            )));
        }
        self.threshold = threshold;
        Ok(self)
    }

    /// The similarity a match needs.
    pub fn threshold(&self) -> f32 {
        self.threshold
    }

    /// Number of candidates.
    pub fn len(&self) -> usize {
        self.candidates.len()
    }

    /// Whether there are no candidates.
    pub fn is_empty(&self) -> bool {
        self.candidates.is_empty()
    }

    /// The most similar candidate `(index, cosine)` if its similarity reaches the threshold;
    /// ties go to the lowest index. A query of the wrong dimension matches nothing.
    pub fn best(&self, query_embedding: &[f32]) -> Option<(usize, f32)> {
        if query_embedding.len() != self.dimension {
            return None;
        }
        let mut best: Option<(usize, f32)> = None;
        for (index, candidate) in self.candidates.iter().enumerate() {
            let score = cosine(query_embedding, candidate);
            if best.is_none_or(|(_, top)| score > top) {
                best = Some((index, score));
            }
        }
        best.filter(|&(_, score)| score >= self.threshold)
    }
}
