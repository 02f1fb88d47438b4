//! The patient-disjoint split of GIV-CXR (paper 002: test 136,793 of 354,293 QA pairs, 5,391
//! patients; train and validation sizes not given): every patient is drawn into one split by a
//! seeded hash of its id, so a patient's pairs never cross splits, whichever studies a run
//! covers.

use sha2::{Digest, Sha256};

/// Shares of the three splits (`cxrlake.givcxr_split`), or MIMIC-CXR-JPG's official split.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Split {
    /// The `split` column of the images (patient-disjoint in MIMIC-CXR-JPG); `validate` is
    /// written `val`.
    Official,
    /// Seeded patient draw with these shares of validation and test (train takes the rest).
    Shares {
        /// Validation share.
        val: f64,
        /// Test share.
        test: f64,
    },
}

impl Split {
    /// Parses `official` or `train:val:test` shares (e.g. `0.564:0.05:0.386`, summing to 1).
    pub fn parse(text: &str) -> Result<Split, String> {
        let text = text.trim();
        if text == "official" {
            return Ok(Split::Official);
        }
        let shares: Vec<f64> = text
            .split(':')
            .map(|s| s.trim().parse::<f64>())
            .collect::<Result<_, _>>()
            .map_err(|_| {
                format!(
                    "'{text}': give `official` or train:val:test shares such as 0.564:0.05:0.386"
                )
            })?;
        match shares.as_slice() {
            [train, val, test]
                if [*train, *val, *test]
                    .iter()
                    .all(|s| (0.0..=1.0).contains(s))
                    && ((train + val + test) - 1.0).abs() < 1e-6 =>
            {
                Ok(Split::Shares {
                    val: *val,
                    test: *test,
                })
            }
            _ => Err(format!(
                "'{text}': three shares train:val:test between 0 and 1 that sum to 1 (or `official`)"
            )),
        }
    }

    /// The split of `patient_id` (`official` is the images' own, `official_split`).
    pub fn of(&self, patient_id: &str, seed: u64, official_split: &str) -> &'static str {
        match *self {
            Split::Official => match official_split {
                "test" => "test",
                "validate" | "val" => "val",
                _ => "train",
            },
            Split::Shares { val, test } => {
                let digest = Sha256::digest(format!("{seed}/givcxr-split/{patient_id}"));
                let draw = u64::from_be_bytes(digest[..8].try_into().expect("8 bytes")) as f64
                    / u64::MAX as f64;
                if draw < test {
                    "test"
                } else if draw < test + val {
                    "val"
                } else {
                    "train"
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shares_draw_patients_in_proportion() {
        let split = Split::parse("0.564:0.05:0.386").expect("fixture");
        let mut counts = std::collections::BTreeMap::new();
        for p in 0..10_000 {
            *counts
                .entry(split.of(&format!("p{p}"), 7, "train"))
                .or_insert(0) += 1;
        }
        let test = counts["test"] as f64 / 10_000.0;
        assert!((test - 0.386).abs() < 0.02, "{counts:?}");
        assert_eq!(split.of("p1", 7, ""), split.of("p1", 7, "test"));
        assert_eq!(
            Split::parse("official")
                .expect("fixture")
                .of("p1", 7, "validate"),
            "val"
        );
        assert!(Split::parse("0.5:0.5").is_err());
        assert!(Split::parse("0.5:0.5:0.5").is_err());
    }
}
