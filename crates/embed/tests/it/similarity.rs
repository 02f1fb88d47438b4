//! Property test of `cosine` against a plain reference, fed by a seeded generator.

use cxrlake_embed::{cosine, l2_normalize};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

fn reference_cosine(a: &[f32], b: &[f32]) -> f64 {
    let dot: f64 = a
        .iter()
        .zip(b)
        .map(|(&x, &y)| f64::from(x) * f64::from(y))
        .sum();
    let na: f64 = a.iter().map(|&x| f64::from(x).powi(2)).sum::<f64>().sqrt();
    let nb: f64 = b.iter().map(|&x| f64::from(x).powi(2)).sum::<f64>().sqrt();
    if na == 0.0 || nb == 0.0 {
        0.0
    } else {
        dot / (na * nb)
    }
}

#[test]
fn cosine_matches_reference_and_is_symmetric() {
    let mut rng = ChaCha8Rng::seed_from_u64(55);
    for _ in 0..500 {
        let len = rng.random_range(1..64);
        let a: Vec<f32> = (0..len).map(|_| rng.random_range(-3.0..3.0)).collect();
        let b: Vec<f32> = (0..len).map(|_| rng.random_range(-3.0..3.0)).collect();
        let got = cosine(&a, &b);
        assert!((f64::from(got) - reference_cosine(&a, &b)).abs() < 1e-5);
        assert_eq!(got, cosine(&b, &a));
        let mut unit = a.clone();
        l2_normalize(&mut unit);
        assert!((cosine(&unit, &b) - got).abs() < 1e-5, "scale invariance");
    }
}
