//! Identifiers and per-patient seeding.
//!
//! Every patient gets its own ChaCha stream seeded from `mix(seed, patient index)`, so the
//! corpus is identical whatever the thread count. Ids are spread over the MIMIC ranges with a
//! stride plus a seeded jitter smaller than the stride, which keeps them unique without any
//! shared state: subject ids are 8 digits in `10000000..=19999999`, study ids 8 digits starting
//! with `5`, DICOM ids five dash-separated groups of 8 hex digits.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// SplitMix64 finaliser: a fast, well-mixed 64-bit hash step.
pub fn splitmix64(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

/// Hash of the corpus seed, a stream tag and an index.
pub fn mix(seed: u64, tag: u64, index: u64) -> u64 {
    splitmix64(splitmix64(seed ^ splitmix64(tag)) ^ index)
}

/// Stream tags, so that independent decisions never share random numbers.
pub mod tag {
    /// Number of studies of a patient.
    pub const STUDY_COUNT: u64 = 1;
    /// Everything generated for a patient.
    pub const PATIENT: u64 = 2;
    /// Subject id jitter.
    pub const SUBJECT_ID: u64 = 3;
    /// Study id jitter.
    pub const STUDY_ID: u64 = 4;
}

/// The RNG for everything about one patient.
pub fn patient_rng(seed: u64, patient_index: u64) -> ChaCha8Rng {
    ChaCha8Rng::seed_from_u64(mix(seed, tag::PATIENT, patient_index))
}

/// Allocates subject and study ids for a corpus of known size.
#[derive(Debug, Clone, Copy)]
pub struct IdSpace {
    seed: u64,
    subject_stride: u64,
    study_stride: u64,
}

impl IdSpace {
    /// Id space for `patients` patients and `studies` studies (both at least 1).
    pub fn new(seed: u64, patients: usize, studies: usize) -> Self {
        let subject_stride = (10_000_000 / patients.max(1) as u64).max(1);
        let study_stride = (10_000_000 / studies.max(1) as u64).max(1);
        Self {
            seed,
            subject_stride,
            study_stride,
        }
    }

    /// Subject id (without the `p`) of the patient at `index`.
    pub fn subject_id(&self, index: usize) -> u32 {
        let jitter = mix(self.seed, tag::SUBJECT_ID, index as u64) % self.subject_stride;
        (10_000_000 + index as u64 * self.subject_stride + jitter) as u32
    }

    /// Study id (without the `s`) of the study at global `index`.
    pub fn study_id(&self, index: usize) -> u32 {
        let jitter = mix(self.seed, tag::STUDY_ID, index as u64) % self.study_stride;
        (50_000_000 + index as u64 * self.study_stride + jitter) as u32
    }
}

/// A MIMIC-CXR-JPG style DICOM id, e.g. `02aa804e-bde0afdd-112c0b34-7bc16630-4e384014`.
pub fn dicom_id<R: Rng>(rng: &mut R) -> String {
    let g: [u32; 5] = rng.random();
    format!(
        "{:08x}-{:08x}-{:08x}-{:08x}-{:08x}",
        g[0], g[1], g[2], g[3], g[4]
    )
}

/// Report path relative to the corpus root: `files/p10/p10000032/s50414267.txt`.
pub fn report_path(subject_id: u32, study_id: u32) -> String {
    format!(
        "files/p{}/p{subject_id}/s{study_id}.txt",
        subject_id / 1_000_000
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_unique_and_in_range() {
        let space = IdSpace::new(42, 65_000, 227_835);
        let mut last = 0;
        for i in 0..65_000 {
            let id = space.subject_id(i);
            assert!(id > last && (10_000_000..20_000_000).contains(&id));
            last = id;
        }
        let mut last = 0;
        for i in (0..227_835).step_by(7) {
            let id = space.study_id(i);
            assert!(id > last && (50_000_000..60_000_000).contains(&id));
            last = id;
        }
        assert_eq!(
            report_path(10_000_032, 50_414_267),
            "files/p10/p10000032/s50414267.txt"
        );
    }
}
