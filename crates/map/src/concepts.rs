//! The reference tags every extracted tag is matched against (paper 000, E.1.3): per kind, every
//! reference name and synonym, embedded once; a query maps to the reference name of its most
//! similar candidate if the cosine similarity reaches the threshold.
//!
//! ```text
//!  "Pleural Effusions" ─normalize─► exact name/synonym? ──yes──► ("pleural effusion", 1.0)
//!                                        │ no
//!                                        ▼
//!  "apical pneumonia" ─► a finding name/synonym as a run of its words? ──yes──► ("pneumonia", 1.0)
//!                        (the longest run, then the last;  │ no
//!                         texts of up to six words)        │
//!                                        ▼
//!                         embed (preloaded vector or the embedder) ─► Matcher top-1 ≥ threshold
//! ```
//! The second step guards findings against near-spellings that character n-grams confuse
//! ("apical pneumonia" is no "atypical pneumonia", "visualized pneumothorax" no pneumonia): an
//! exact or synonym match of words inside the text always wins over similarity.
//! Results are memoised per (kind, text), so each distinct string is matched once per run.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};

use cxrlake_embed::{EmbedError, Embedder, Matcher, normalize_text};
use cxrlake_refdefs::RefDefs;

/// What a tag is matched against.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ConceptKind {
    /// Findings, diseases, devices, technical classes (`ref_findings`).
    Finding,
    /// Regions (`ref_regions`).
    Region,
    /// Modifiers of all four types and probabilities (`ref_modifiers`): the matched tag decides
    /// the type.
    Modifier,
    /// Change types (`ref_changes`).
    Change,
}

impl ConceptKind {
    /// All kinds.
    pub const ALL: [ConceptKind; 4] = [Self::Finding, Self::Region, Self::Modifier, Self::Change];

    /// The name `match_concept` takes.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Finding => "finding",
            Self::Region => "region",
            Self::Modifier => "modifier",
            Self::Change => "change",
        }
    }

    /// The kind named `name` (`finding`, `region`, `modifier`, `change`).
    pub fn parse(name: &str) -> Option<ConceptKind> {
        Self::ALL.into_iter().find(|k| k.as_str() == name)
    }
}

/// A matched reference tag.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Hit<'a> {
    /// The reference name.
    pub tag: &'a str,
    /// Cosine similarity (1.0 for an exact name or synonym, alone or, for findings, as a run of
    /// the text's words).
    pub score: f32,
}

#[derive(Debug)]
struct KindIndex {
    /// Reference names.
    tags: Vec<String>,
    /// Normalised name or synonym → tag.
    exact: HashMap<String, u32>,
    /// One candidate per name and synonym.
    matcher: Matcher,
    /// Candidate → tag.
    candidate_tag: Vec<u32>,
}

type Memo = HashMap<(ConceptKind, String), Option<(u32, f32)>>;

/// Reference tags of every kind with their embeddings (see the module docs).
#[derive(Debug)]
pub struct ConceptIndex {
    embedder: Arc<dyn Embedder>,
    threshold: f32,
    kinds: Vec<KindIndex>,
    /// Embeddings of query texts: preloaded from a cache, or computed during this run.
    vectors: RwLock<HashMap<String, Vec<f32>>>,
    /// Texts embedded during this run (not preloaded), in order.
    computed: RwLock<Vec<String>>,
    memo: RwLock<Memo>,
    identity: String,
    /// Every text looked up, for the tests of the splitting rule (`texts.rs`).
    #[cfg(test)]
    pub(crate) queried: std::sync::Mutex<Vec<(ConceptKind, String)>>,
}

/// `(tag, candidate texts)` of one kind, in file order.
fn entries(defs: &RefDefs, kind: ConceptKind) -> Vec<(String, Vec<String>)> {
    fn entry<'a>(
        name: &'a cxrlake_refdefs::model::Name,
        synonyms: &'a [cxrlake_refdefs::model::Name],
    ) -> (String, Vec<String>) {
        let mut texts = vec![name.get_ref().clone()];
        texts.extend(synonyms.iter().map(|s| s.get_ref().clone()));
        (name.get_ref().clone(), texts)
    }
    match kind {
        ConceptKind::Finding => defs
            .findings()
            .map(|f| entry(&f.name, &f.synonyms))
            .collect(),
        ConceptKind::Region => defs
            .regions()
            .map(|r| entry(&r.name, &r.synonyms))
            .collect(),
        ConceptKind::Modifier => defs
            .modifiers()
            .map(|m| entry(&m.name, &m.synonyms))
            .chain(defs.probabilities().map(|p| entry(&p.name, &p.synonyms)))
            .collect(),
        ConceptKind::Change => defs
            .changes()
            .map(|c| entry(&c.name, &c.synonyms))
            .collect(),
    }
}

impl ConceptKind {
    /// Whether `a` and `b` define this kind's tags, names and synonyms alike: texts then map to
    /// the same tag of this kind under both (at one threshold).
    pub fn defined_alike(self, a: &RefDefs, b: &RefDefs) -> bool {
        entries(a, self) == entries(b, self)
    }
}

impl ConceptIndex {
    /// Every reference text of every kind (what [`ConceptIndex::new`] embeds), for warming a
    /// cache.
    pub fn reference_texts(defs: &RefDefs) -> Vec<String> {
        ConceptKind::ALL
            .into_iter()
            .flat_map(|kind| entries(defs, kind))
            .flat_map(|(_, texts)| texts)
            .collect()
    }

    /// Embeds every reference name and synonym of `defs`; texts in `preloaded` (e.g. read from
    /// the lake's embedding cache) are not embedded again.
    pub fn new(
        defs: &RefDefs,
        embedder: Arc<dyn Embedder>,
        threshold: f32,
        mut preloaded: HashMap<String, Vec<f32>>,
    ) -> Result<Self, EmbedError> {
        if !(threshold.is_finite() && threshold <= 1.0) {
            return Err(EmbedError::InvalidSetting(format!(
                "match threshold must be a finite cosine similarity <= 1, got {threshold}"
            )));
        }
        let mut kinds = Vec::new();
        let mut fresh = Vec::new();
        for kind in ConceptKind::ALL {
            let mut tags = Vec::new();
            let mut exact = HashMap::new();
            let mut texts = Vec::new();
            let mut candidate_tag = Vec::new();
            for (tag, synonyms) in entries(defs, kind) {
                let index = tags.len() as u32;
                for text in synonyms {
                    exact.entry(normalize_text(&text)).or_insert(index);
                    texts.push(text);
                    candidate_tag.push(index);
                }
                tags.push(tag);
            }
            let vectors = embed_all(embedder.as_ref(), &mut preloaded, &mut fresh, &texts)?;
            let matcher = Matcher::from_embeddings(embedder.dimension(), vectors)?
                .with_threshold(threshold)?;
            kinds.push(KindIndex {
                tags,
                exact,
                matcher,
                candidate_tag,
            });
        }
        let identity = format!("{}@{}>={threshold}", embedder.id(), defs.fingerprint());
        if embedder.is_cheap() {
            preloaded.clear();
            fresh.clear();
        }
        Ok(Self {
            embedder,
            threshold,
            kinds,
            vectors: RwLock::new(preloaded),
            computed: RwLock::new(fresh),
            memo: RwLock::new(HashMap::new()),
            identity,
            #[cfg(test)]
            queried: std::sync::Mutex::default(),
        })
    }

    /// The embedder's id (recorded in every mapped row).
    pub fn embedder_id(&self) -> &str {
        self.embedder.id()
    }

    /// Embedder, reference definitions and threshold: what the results depend on.
    pub fn identity(&self) -> &str {
        &self.identity
    }

    /// The similarity a match needs.
    pub fn threshold(&self) -> f32 {
        self.threshold
    }

    /// The reference tag `text` maps to, if any (blank text maps to nothing).
    pub fn best(&self, kind: ConceptKind, text: &str) -> Result<Option<Hit<'_>>, EmbedError> {
        #[cfg(test)]
        if let Ok(mut queried) = self.queried.lock() {
            queried.push((kind, text.to_string()));
        }
        let index = &self.kinds[kind as usize];
        let hit = |found: Option<(u32, f32)>| {
            found.map(|(tag, score)| Hit {
                tag: &index.tags[tag as usize],
                score,
            })
        };
        let key = (kind, text.to_string());
        if let Some(found) = self.memo.read().ok().and_then(|m| m.get(&key).copied()) {
            return Ok(hit(found));
        }
        let normalized = normalize_text(text);
        let found = if normalized.is_empty() {
            None
        } else if let Some(&tag) = index.exact.get(&normalized) {
            Some((tag, 1.0))
        } else if let Some(tag) = (kind == ConceptKind::Finding)
            .then(|| exact_run(&index.exact, &normalized))
            .flatten()
        {
            Some((tag, 1.0))
        } else {
            let known = self.vectors.read().ok().and_then(|v| v.get(text).cloned());
            let vector = match known {
                Some(vector) => vector,
                None => {
                    let vector = self.embedder.embed(&[text])?.remove(0);
                    self.remember(text, &vector);
                    vector
                }
            };
            index
                .matcher
                .best(&vector)
                .map(|(candidate, score)| (index.candidate_tag[candidate], score))
        };
        if let Ok(mut memo) = self.memo.write() {
            memo.insert(key, found);
        }
        Ok(hit(found))
    }
}

/// Shortest name or synonym (normal form, in bytes) a run of words may match: shorter ones
/// ("as", "pe", "tb") are too often other words.
const MIN_RUN_LEN: usize = 4;

/// Most words a text may have for a run inside it to decide: a longer text is a sentence (the
/// summary fallback), which names several things and is left to similarity.
const MAX_RUN_TEXT_WORDS: usize = 6;

/// The tag of the longest run of words of `normalized` (the last of equally long ones) that is
/// an exact name or synonym; `None` for texts of more than [`MAX_RUN_TEXT_WORDS`] words.
fn exact_run(exact: &HashMap<String, u32>, normalized: &str) -> Option<u32> {
    let words: Vec<&str> = normalized.split(' ').collect();
    if words.len() > MAX_RUN_TEXT_WORDS {
        return None;
    }
    let mut best: Option<(usize, usize, u32)> = None;
    for start in 0..words.len() {
        for end in start + 1..=words.len() {
            let run = words[start..end].join(" ");
            if run.len() < MIN_RUN_LEN {
                continue;
            }
            if let Some(&tag) = exact.get(&run) {
                let key = (end - start, start);
                if best.is_none_or(|(n, s, _)| key >= (n, s)) {
                    best = Some((key.0, key.1, tag));
                }
            }
        }
    }
    best.map(|(_, _, tag)| tag)
}

impl ConceptIndex {
    fn remember(&self, text: &str, vector: &[f32]) {
        if self.embedder.is_cheap() {
            return;
        }
        if let Ok(mut vectors) = self.vectors.write()
            && vectors.insert(text.to_string(), vector.to_vec()).is_none()
            && let Ok(mut computed) = self.computed.write()
        {
            computed.push(text.to_string());
        }
    }

    /// Embeds, in batches, the `texts` not embedded yet (for model embedders, whose batches are
    /// much faster than single texts); returns how many were embedded.
    pub fn prefetch(&self, texts: &[String], batch: usize) -> Result<usize, EmbedError> {
        if self.embedder.is_cheap() {
            return Ok(0);
        }
        let missing: Vec<&str> = {
            let vectors = self.vectors.read().map_err(|_| poisoned())?;
            let mut seen = std::collections::HashSet::new();
            texts
                .iter()
                .map(String::as_str)
                .filter(|t| !t.trim().is_empty() && !vectors.contains_key(*t) && seen.insert(*t))
                .collect()
        };
        for chunk in missing.chunks(batch.max(1)) {
            let vectors = self.embedder.embed(chunk)?;
            for (text, vector) in chunk.iter().zip(vectors) {
                self.remember(text, &vector);
            }
        }
        Ok(missing.len())
    }

    /// The texts embedded during this run with their vectors (to append to a cache).
    pub fn computed_vectors(&self) -> Vec<(String, Vec<f32>)> {
        let (Ok(computed), Ok(vectors)) = (self.computed.read(), self.vectors.read()) else {
            return Vec::new();
        };
        computed
            .iter()
            .filter_map(|t| Some((t.clone(), vectors.get(t)?.clone())))
            .collect()
    }
}

fn poisoned() -> EmbedError {
    EmbedError::InvalidSetting("embedding cache lock poisoned by a panic".into())
}

/// Embeddings of `texts`, taking preloaded ones where present.
/// Embeddings of `texts`; those not in `known` are computed, added to `known` and listed in
/// `fresh` (so they reach the cache too).
fn embed_all(
    embedder: &dyn Embedder,
    known: &mut HashMap<String, Vec<f32>>,
    fresh: &mut Vec<String>,
    texts: &[String],
) -> Result<Vec<Vec<f32>>, EmbedError> {
    let mut missing: Vec<&str> = texts
        .iter()
        .filter(|t| !known.contains_key(*t))
        .map(String::as_str)
        .collect();
    missing.sort_unstable();
    missing.dedup();
    let computed = embedder.embed(&missing)?;
    for (text, vector) in missing.iter().zip(computed) {
        known.insert(text.to_string(), vector);
        fresh.push(text.to_string());
    }
    Ok(texts
        .iter()
        .map(|t| known.get(t).cloned().unwrap_or_default())
        .collect())
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use cxrlake_embed::LexicalEmbedder;

    use super::*;

    fn index() -> ConceptIndex {
        let defs = RefDefs::embedded().expect("refdefs");
        ConceptIndex::new(
            &defs,
            Arc::new(LexicalEmbedder::new()),
            0.5,
            Default::default(),
        )
        .expect("index")
    }

    fn finding(index: &ConceptIndex, text: &str) -> Option<(String, f32)> {
        index
            .best(ConceptKind::Finding, text)
            .expect("best")
            .map(|hit| (hit.tag.to_string(), hit.score))
    }

    #[test]
    fn a_synonym_inside_the_text_wins_over_a_near_spelling() {
        let index = index();
        for (text, tag) in [
            ("No visualized pneumothorax.", "pneumothorax"),
            ("visualized pneumothorax", "pneumothorax"),
            ("apical pneumonia", "pneumonia"),
            ("small nodule", "lung nodule"),
            (
                "right left ventricular enlargement",
                "left ventricular enlargement",
            ),
            ("mild pulmonary edema", "pulmonary edema"),
        ] {
            assert_eq!(
                finding(&index, text),
                Some((tag.to_string(), 1.0)),
                "{text}"
            );
        }
    }

    #[test]
    fn exact_matches_and_similarity_are_unchanged() {
        let index = index();
        assert_eq!(
            finding(&index, "Pleural Effusions"),
            Some(("pleural effusion".to_string(), 1.0))
        );
        // No name or synonym inside: similarity decides, below 1.
        let similar = finding(&index, "pneumothoraxes").expect("a match");
        assert_eq!(similar.0, "pneumothorax");
        assert!(similar.1 < 1.0);
        // Short synonyms ("as", "pe") are not looked for inside other words' company.
        assert_ne!(
            finding(&index, "same as before").map(|(tag, _)| tag),
            Some("aortic stenosis".to_string())
        );
        // A sentence (the summary fallback) names several things: similarity decides.
        let sentence = finding(
            &index,
            "There is a small left pleural effusion again today.",
        );
        assert!(sentence.is_none_or(|(_, score)| score < 1.0));
        // Regions keep the plain rule.
        assert!(
            index
                .best(ConceptKind::Region, "the left lower lobe")
                .expect("best")
                .is_none_or(|hit| hit.score < 1.0)
        );
    }
}
