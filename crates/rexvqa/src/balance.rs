//! Option-position balancing of the correct answer (paper 003 does not say how its answers are
//! placed; an LLM puts most correct answers first or second): each MCQ's correct option moves to
//! the position a seeded hash of the MCQ's key picks, A to D with equal probability, and the
//! other options keep their order. The same seed and key always give the same position.

use sha2::{Digest, Sha256};

/// The position (0 to `count - 1`) the correct option of the MCQ `key` takes under `seed`.
pub fn target(seed: u64, key: &str, count: usize) -> usize {
    let digest = Sha256::digest(format!("{seed}/rexvqa-position/{key}").as_bytes());
    let mut bytes = [0u8; 8];
    bytes.copy_from_slice(&digest[..8]);
    (u64::from_le_bytes(bytes) % count.max(1) as u64) as usize
}

/// `options` with the correct one (`answer`) moved to `target`, the others in their order, and
/// the correct option's new index. Out-of-range indices leave the options as they are.
pub fn place<T: Clone>(options: &[T], answer: usize, target: usize) -> (Vec<T>, usize) {
    if answer >= options.len() || target >= options.len() {
        return (options.to_vec(), answer);
    }
    let mut others: Vec<T> = options
        .iter()
        .enumerate()
        .filter(|(i, _)| *i != answer)
        .map(|(_, o)| o.clone())
        .collect();
    others.insert(target, options[answer].clone());
    (others, target)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_correct_option_moves_and_the_others_keep_their_order() {
        let options = ["a", "b", "c", "d"];
        assert_eq!(place(&options, 0, 2), (vec!["b", "c", "a", "d"], 2));
        assert_eq!(place(&options, 3, 0), (vec!["d", "a", "b", "c"], 0));
        assert_eq!(place(&options, 1, 1), (vec!["a", "b", "c", "d"], 1));
        assert_eq!(place(&options[..3], 5, 1), (vec!["a", "b", "c"], 5));
    }

    #[test]
    fn positions_are_uniform_over_ten_thousand_questions() {
        // Chi-square with 3 degrees of freedom: 11.34 is the 1 % critical value.
        let mut counts = [0f64; 4];
        for n in 0..10_000 {
            counts[target(7, &format!("s{n:08}_{}", n % 5), 4)] += 1.0;
        }
        let chi2: f64 = counts.iter().map(|c| (c - 2500.0).powi(2) / 2500.0).sum();
        assert!(chi2 < 11.34, "{counts:?}: chi-square {chi2:.2}");
        assert_eq!(target(7, "k", 4), target(7, "k", 4));
        assert_ne!(
            (0..32)
                .map(|n| target(1, &n.to_string(), 4))
                .collect::<Vec<_>>(),
            (0..32)
                .map(|n| target(2, &n.to_string(), 4))
                .collect::<Vec<_>>()
        );
    }
}
