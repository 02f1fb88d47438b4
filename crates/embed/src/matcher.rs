//! Top-1 matching of query embeddings against a fixed set of candidate texts.
//!
//! Candidates are stored unit-normalised and transposed (`dimension × candidates`), so a query
//! adds one contiguous row per non-zero component: a lexical query with ~50 non-zero buckets
//! costs ~50 row additions instead of a full dot product per candidate, and dense (ONNX) queries
//! cost the same as the plain loop.

use crate::{EmbedError, Embedder, Result, l2_normalize};

/// The paper's threshold: a query maps to its most similar candidate only if the cosine
/// similarity is at least 0.5.
pub const DEFAULT_MATCH_THRESHOLD: f32 = 0.5;

/// Candidate embeddings (e.g. reference-definition tags) with a similarity threshold.
#[derive(Debug, Clone)]
pub struct Matcher {
    /// Row `d` holds component `d` of every unit-normalised candidate.
    transposed: Vec<f32>,
    candidates: usize,
    dimension: usize,
    threshold: f32,
}

impl Matcher {
    /// Embeds `candidates` with `embedder`; the threshold is [`DEFAULT_MATCH_THRESHOLD`].
    pub fn new(embedder: &dyn Embedder, candidates: &[&str]) -> Result<Self> {
        Self::from_embeddings(embedder.dimension(), embedder.embed(candidates)?)
    }

    /// A matcher over embeddings computed elsewhere (e.g. read from a cache), each of
    /// `dimension` components.
    pub fn from_embeddings(dimension: usize, embeddings: Vec<Vec<f32>>) -> Result<Self> {
        if let Some(bad) = embeddings.iter().find(|e| e.len() != dimension) {
            return Err(EmbedError::DimensionMismatch {
                expected: dimension,
                actual: bad.len(),
            });
        }
        let candidates = embeddings.len();
        let mut transposed = vec![0.0_f32; dimension * candidates];
        for (c, mut embedding) in embeddings.into_iter().enumerate() {
            l2_normalize(&mut embedding);
            for (d, value) in embedding.into_iter().enumerate() {
                transposed[d * candidates + c] = value;
            }
        }
        Ok(Self {
            transposed,
            candidates,
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
        self.candidates
    }

    /// Whether there are no candidates.
    pub fn is_empty(&self) -> bool {
        self.candidates == 0
    }

    /// The most similar candidate `(index, cosine)`, whatever its similarity; ties go to the
    /// lowest index. `None` for no candidates, a zero query or one of the wrong dimension.
    pub fn top(&self, query_embedding: &[f32]) -> Option<(usize, f32)> {
        if query_embedding.len() != self.dimension || self.candidates == 0 {
            return None;
        }
        let norm = query_embedding
            .iter()
            .map(|&x| f64::from(x) * f64::from(x))
            .sum::<f64>()
            .sqrt();
        if norm == 0.0 {
            return None;
        }
        let mut scores = vec![0.0_f32; self.candidates];
        for (d, &q) in query_embedding.iter().enumerate() {
            if q == 0.0 {
                continue;
            }
            let row = &self.transposed[d * self.candidates..(d + 1) * self.candidates];
            for (score, &c) in scores.iter_mut().zip(row) {
                *score += q * c;
            }
        }
        let mut best = (0, f32::NEG_INFINITY);
        for (index, &score) in scores.iter().enumerate() {
            if score > best.1 {
                best = (index, score);
            }
        }
        Some((best.0, ((f64::from(best.1) / norm) as f32).clamp(-1.0, 1.0)))
    }

    /// The most similar candidate `(index, cosine)` if its similarity reaches the threshold;
    /// ties go to the lowest index. A query of the wrong dimension matches nothing.
    pub fn best(&self, query_embedding: &[f32]) -> Option<(usize, f32)> {
        self.top(query_embedding)
            .filter(|&(_, score)| score >= self.threshold)
    }
}
