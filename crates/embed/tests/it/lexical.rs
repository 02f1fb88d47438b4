//! The lexical embedder and the matcher on top of it.

use cxrlake_embed::{DEFAULT_MATCH_THRESHOLD, Embedder, LexicalEmbedder, Matcher, cosine};

fn similarity(embedder: &dyn Embedder, a: &str, b: &str) -> f32 {
    let vectors = embedder
        .embed(&[a, b])
        .expect("lexical embedding cannot fail");
    cosine(&vectors[0], &vectors[1])
}

#[test]
fn deterministic_unit_vectors_of_declared_dimension() {
    let embedder = LexicalEmbedder::new();
    assert_eq!(embedder.id(), "lexical-1-d1024");
    let texts = [
        "pleural effusion",
        "Cardiomegaly",
        "",
        "left lower lobe opacity",
    ];
    let first = embedder.embed(&texts).expect("embed");
    let second = LexicalEmbedder::new().embed(&texts).expect("embed");
    assert_eq!(first, second);
    for (text, vector) in texts.iter().zip(&first) {
        assert_eq!(vector.len(), 1024);
        let norm: f32 = vector.iter().map(|x| x * x).sum::<f32>().sqrt();
        let expected = if text.is_empty() { 0.0 } else { 1.0 };
        assert!((norm - expected).abs() < 1e-5, "{text:?} has norm {norm}");
    }
    // Pinned values: a change here means the feature scheme changed, so bump SCHEME_VERSION.
    let nonzero: Vec<usize> = first[1]
        .iter()
        .enumerate()
        .filter(|(_, x)| **x != 0.0)
        .map(|(i, _)| i)
        .collect();
    assert_eq!(
        nonzero.len(),
        13,
        "cardiomegaly: 1 word + 12 padded trigrams, no collisions"
    );
}

#[test]
fn normalisation_makes_variants_near_identical() {
    let embedder = LexicalEmbedder::new();
    assert!(similarity(&embedder, "Pleural Effusions", "pleural effusion") > 0.9);
    assert!(similarity(&embedder, "pleural_effusion.", "  PLEURAL   effusion ") > 0.99);
    assert!(similarity(&embedder, "Opacities", "opacity") > 0.99);
}

#[test]
#[allow(clippy::print_stderr)]
fn related_phrases_are_closer_than_unrelated_ones() {
    let embedder = LexicalEmbedder::new();
    let near = similarity(&embedder, "pleural effusion", "left pleural effusion");
    let far = similarity(&embedder, "pleural effusion", "cardiomegaly");
    let variant = similarity(&embedder, "Pleural Effusions", "pleural effusion");
    let paraphrase = similarity(&embedder, "pleural effusion", "fluid in the pleural space");
    eprintln!(
        "lexical cosine: variant {variant:.4}, left {near:.4}, paraphrase {paraphrase:.4}, cardiomegaly {far:.4}"
    );
    assert!(near > far, "near {near} vs far {far}");
    assert!(
        near > DEFAULT_MATCH_THRESHOLD && far < DEFAULT_MATCH_THRESHOLD,
        "near {near} far {far}"
    );
}

#[test]
fn matcher_applies_threshold_and_picks_top_one() {
    let embedder = LexicalEmbedder::new();
    let candidates = [
        "pleural effusion",
        "cardiomegaly",
        "pneumothorax",
        "atelectasis",
    ];
    let matcher = Matcher::new(&embedder, &candidates).expect("matcher");
    assert_eq!(matcher.len(), 4);
    assert_eq!(matcher.threshold(), 0.5);
    let query = |text: &str| embedder.embed(&[text]).expect("embed").remove(0);

    let (index, score) = matcher
        .best(&query("Bilateral pleural effusions"))
        .expect("a match");
    assert_eq!(index, 0);
    assert!(score >= 0.5);
    assert_eq!(
        matcher.best(&query("Cardiomegaly")).map(|(i, _)| i),
        Some(1)
    );
    assert_eq!(
        matcher.best(&query("rib fracture")),
        None,
        "below threshold"
    );
    assert_eq!(matcher.best(&[1.0, 0.0]), None, "wrong dimension");

    let strict = matcher.clone().with_threshold(0.999).expect("threshold");
    assert_eq!(strict.best(&query("Bilateral pleural effusions")), None);
    assert_eq!(strict.best(&query("pneumothoraces")).map(|(i, _)| i), None);
    assert_eq!(strict.best(&query("PNEUMOTHORAX")).map(|(i, _)| i), Some(2));
    let lenient = matcher.with_threshold(-1.0).expect("threshold");
    assert!(
        lenient.best(&query("rib fracture")).is_some(),
        "any query matches at -1"
    );
    assert!(
        Matcher::new(&embedder, &[])
            .expect("empty")
            .best(&query("x"))
            .is_none()
    );
}

#[test]
fn invalid_settings_are_rejected() {
    assert!(LexicalEmbedder::with_dimension(8).is_err());
    assert_eq!(
        LexicalEmbedder::with_dimension(256).expect("256").id(),
        "lexical-1-d256"
    );
    let matcher = Matcher::new(&LexicalEmbedder::new(), &["a"]).expect("matcher");
    assert!(matcher.clone().with_threshold(f32::NAN).is_err());
    assert!(matcher.with_threshold(1.5).is_err());
}

#[test]
fn matcher_agrees_with_brute_force_cosine() {
    let embedder = LexicalEmbedder::new();
    let candidates = [
        "pleural effusion",
        "cardiomegaly",
        "left lower lobe",
        "pneumothorax",
        "endotracheal tube",
        "atelectasis",
        "",
    ];
    let vectors = embedder.embed(&candidates).expect("embed");
    let matcher = Matcher::new(&embedder, &candidates).expect("matcher");
    for query in [
        "small left effusion",
        "enlarged heart",
        "lower lobe on the left",
        "et tube tip",
        "bibasilar atelectases",
        "zzzz",
    ] {
        let q = &embedder.embed(&[query]).expect("embed")[0];
        let (index, score) = matcher.top(q).expect("non-zero query");
        let brute = vectors
            .iter()
            .map(|c| cosine(q, c))
            .fold(f32::NEG_INFINITY, f32::max);
        assert!((score - brute).abs() < 1e-5, "{query}: {score} vs {brute}");
        assert!((cosine(q, &vectors[index]) - brute).abs() < 1e-5, "{query}");
    }
    assert_eq!(matcher.top(&vec![0.0; embedder.dimension()]), None);
}
