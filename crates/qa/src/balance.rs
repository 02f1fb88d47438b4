//! Dataset-wide inputs of QA generation: the `qa_balance` table's sampling probabilities and
//! correlated findings, and the hash that makes sampling reproducible.

use std::collections::HashMap;

/// Sampling probabilities and correlations, one entry per region and finding (`qa_balance`).
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Balance {
    /// Regions with a non-zero sampling probability, by name.
    pub regions: Vec<(String, f64)>,
    /// Findings with a non-zero sampling probability, by name.
    pub findings: Vec<(String, f64)>,
    /// Correlated findings per finding, most correlated first.
    pub correlated: HashMap<String, Vec<String>>,
}

impl Balance {
    /// A short fingerprint of the content (part of the function's identity).
    pub fn identity(&self) -> String {
        let mut h = Fnv::new(0);
        for (name, p) in self.regions.iter().chain(&self.findings) {
            h.write(name.as_bytes());
            h.write(&p.to_le_bytes());
        }
        let mut keys: Vec<_> = self.correlated.iter().collect();
        keys.sort();
        for (k, v) in keys {
            h.write(k.as_bytes());
            for x in v {
                h.write(x.as_bytes());
            }
        }
        format!("{:016x}", h.finish())
    }
}

/// FNV-1a 64 with a splitmix64 finaliser: stable across platforms and versions.
#[derive(Debug, Clone, Copy)]
pub struct Fnv(u64);

impl Fnv {
    /// Starts a hash with `seed`.
    pub fn new(seed: u64) -> Fnv {
        let mut h = Fnv(0xcbf2_9ce4_8422_2325);
        h.write(&seed.to_le_bytes());
        h
    }

    /// Adds bytes (and a separator, so that ("ab","c") ≠ ("a","bc")).
    pub fn write(&mut self, bytes: &[u8]) {
        for &b in bytes.iter().chain(&[0xff]) {
            self.0 ^= u64::from(b);
            self.0 = self.0.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }

    /// The hash.
    pub fn finish(self) -> u64 {
        let mut z = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

/// `hash(seed, study, item)` as a number in `[0, 1)`.
pub fn unit_hash(seed: u64, study: &str, item: &str) -> f64 {
    let mut h = Fnv::new(seed);
    h.write(study.as_bytes());
    h.write(item.as_bytes());
    (h.finish() >> 11) as f64 / (1u64 << 53) as f64
}

#[cfg(test)]
mod tests {
    use super::unit_hash;

    #[test]
    fn sampling_is_uniform_reproducible_and_stable_under_small_changes() {
        let studies: Vec<String> = (0..20_000).map(|i| format!("s5{i:07}")).collect();
        let sampled = |p: f64| -> Vec<bool> {
            studies
                .iter()
                .map(|s| unit_hash(17, s, "pleural effusion") < p)
                .collect()
        };
        let at_30 = sampled(0.30);
        let at_31 = sampled(0.31);
        let share = at_30.iter().filter(|x| **x).count() as f64 / studies.len() as f64;
        assert!((share - 0.30).abs() < 0.015, "share {share}");
        // Raising p only adds samples, about 1 % of the studies.
        assert!(at_30.iter().zip(&at_31).all(|(a, b)| !a || *b));
        let added = at_30
            .iter()
            .zip(&at_31)
            .filter(|(a, b)| !**a && **b)
            .count();
        assert!(added < 400, "{added} samples changed");
        assert_eq!(at_30, sampled(0.30));
        // Another item or seed draws independently.
        let other: usize = studies
            .iter()
            .zip(&at_30)
            .filter(|(s, a)| **a && unit_hash(17, s, "pneumothorax") < 0.30)
            .count();
        assert!((other as f64 / studies.len() as f64 - 0.09).abs() < 0.01);
    }
}
