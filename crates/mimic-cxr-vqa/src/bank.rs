//! The question bank (appendix A: 15 categories × 6 phrasings) and the value-conditioned
//! sampling of questions per (study, category) (table 2), from
//! `templates/mimic_cxr_vqa/questions.toml`.

use std::path::Path;

use serde::Deserialize;
use sha2::{Digest, Sha256};

use crate::{MimicVqaError, Result};

/// The bank file, embedded.
pub const EMBEDDED: &str = include_str!("../../../templates/mimic_cxr_vqa/questions.toml");

/// The bank's file name inside its folder.
pub const FILE: &str = "questions.toml";

/// A CheXpert label value (paper 001, section 3.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum LabelValue {
    /// 1.0: positive for the condition.
    Positive,
    /// 0.0: explicitly negative.
    Negative,
    /// -1.0: uncertain.
    Uncertain,
    /// NaN / blank: not mentioned (a negative for the answers).
    NotMentioned,
}

impl LabelValue {
    /// All values, in table 2's order.
    pub const ALL: [LabelValue; 4] = [
        Self::Positive,
        Self::Negative,
        Self::NotMentioned,
        Self::Uncertain,
    ];

    /// The value of a label cell (`None` for NaN or blank; other numbers are not label values).
    pub fn of(value: Option<f64>) -> Option<LabelValue> {
        match value {
            None => Some(Self::NotMentioned),
            Some(v) if v.is_nan() => Some(Self::NotMentioned),
            Some(1.0) => Some(Self::Positive),
            Some(0.0) => Some(Self::Negative),
            Some(-1.0) => Some(Self::Uncertain),
            Some(_) => None,
        }
    }

    /// The value as the paper writes it: `1.0`, `0.0`, `-1.0`, `NaN`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Positive => "1.0",
            Self::Negative => "0.0",
            Self::Uncertain => "-1.0",
            Self::NotMentioned => "NaN",
        }
    }

    /// The value written as [`LabelValue::as_str`] does.
    pub fn parse(text: &str) -> Option<LabelValue> {
        Self::ALL.into_iter().find(|v| v.as_str() == text)
    }
}

/// Questions asked per (study, category), by the label's value (table 2).
#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Sampling {
    /// For 1.0.
    pub positive: f64,
    /// For 0.0.
    pub negative: f64,
    /// For -1.0.
    pub uncertain: f64,
    /// For NaN (the balancing negatives).
    pub not_mentioned: f64,
    /// For the derived Heart label (always 1.0).
    pub heart: f64,
}

/// How an answer is typed open or closed.
#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AnswerTypeRule {
    /// A closed answer has at most this many words and starts with yes or no.
    pub closed_max_words: usize,
}

/// One category: a CheXpert label or Heart, with its six questions.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Category {
    /// Its id (`atelectasis`), the prefix of its template ids.
    pub id: String,
    /// Its name as the paper lists it.
    pub name: String,
    /// The `chexpert_labels` column it reads (`heart` for the derived label).
    pub label: String,
    /// Finding names of `refdefs/findings.toml` the offline answerer describes.
    #[serde(default)]
    pub findings: Vec<String>,
    /// Report words the offline judge reads for it.
    #[serde(default)]
    pub terms: Vec<String>,
    /// The six questions, verbatim.
    pub questions: Vec<String>,
    /// The six questions with the paper's typos corrected, where it has any.
    #[serde(default)]
    pub normalised: Vec<String>,
}

impl Category {
    /// Question `index` (0–5) in the paper's spelling or corrected.
    pub fn question(&self, index: usize, paper_typos: bool) -> &str {
        if !paper_typos && let Some(text) = self.normalised.get(index) {
            return text;
        }
        &self.questions[index]
    }

    /// The id of question `index`: `<category id>_<index + 1>`.
    pub fn template_id(&self, index: usize) -> String {
        format!("{}_{}", self.id, index + 1)
    }

    /// Whether this is the derived Heart label.
    pub fn is_heart(&self) -> bool {
        self.label == HEART
    }
}

/// The derived label's column name.
pub const HEART: &str = "heart";

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct BankFile {
    version: String,
    dataset_id: String,
    sampling: Sampling,
    answer_type: AnswerTypeRule,
    category: Vec<Category>,
}

/// The question bank.
#[derive(Debug, Clone)]
pub struct Bank {
    version: String,
    dataset_id: String,
    sampling: Sampling,
    answer_type: AnswerTypeRule,
    categories: Vec<Category>,
}

impl Bank {
    /// The bank embedded in cxrlake.
    pub fn embedded() -> Result<Bank> {
        Self::parse(EMBEDDED, "embedded")
    }

    /// The bank of `dir/questions.toml`.
    pub fn load(dir: &Path) -> Result<Bank> {
        let path = dir.join(FILE);
        let text = std::fs::read_to_string(&path).map_err(|source| MimicVqaError::Io {
            path: path.clone(),
            source,
        })?;
        Self::parse(&text, &path.display().to_string())
    }

    /// The bank of a file's text; `origin` names it in errors.
    pub fn parse(text: &str, origin: &str) -> Result<Bank> {
        let error = |reason: String| MimicVqaError::Bank {
            origin: origin.to_string(),
            reason,
        };
        let file: BankFile = toml::from_str(text).map_err(|e| error(e.to_string()))?;
        let mut seen = std::collections::BTreeSet::new();
        for category in &file.category {
            if !seen.insert(category.id.as_str()) {
                return Err(error(format!("category '{}' is given twice", category.id)));
            }
            if category.questions.len() != 6 {
                return Err(error(format!(
                    "category '{}' has {} questions; the bank has six per category",
                    category.id,
                    category.questions.len()
                )));
            }
            if !category.normalised.is_empty() && category.normalised.len() != 6 {
                return Err(error(format!(
                    "category '{}' has {} normalised questions; give none or six",
                    category.id,
                    category.normalised.len()
                )));
            }
        }
        let s = file.sampling;
        for (name, k) in [
            ("positive", s.positive),
            ("negative", s.negative),
            ("uncertain", s.uncertain),
            ("not_mentioned", s.not_mentioned),
            ("heart", s.heart),
        ] {
            if !(0.0..=6.0).contains(&k) {
                return Err(error(format!(
                    "sampling.{name} = {k}: questions per study and category lie in 0..=6"
                )));
            }
        }
        let mut hasher = Sha256::new();
        hasher.update(text.as_bytes());
        let digest = hex::encode(hasher.finalize());
        Ok(Bank {
            version: format!("{}+{}", file.version, &digest[..12]),
            dataset_id: file.dataset_id,
            sampling: file.sampling,
            answer_type: file.answer_type,
            categories: file.category,
        })
    }

    /// `"<declared version>+<12 hex of the file's sha256>"`.
    pub fn version(&self) -> &str {
        &self.version
    }

    /// The dataset id exports record (`mimic_cxr_vqa_upv_llama`).
    pub fn dataset_id(&self) -> &str {
        &self.dataset_id
    }

    /// The categories, in file order.
    pub fn categories(&self) -> &[Category] {
        &self.categories
    }

    /// The category with this id or label column.
    pub fn category(&self, id_or_label: &str) -> Option<&Category> {
        self.categories
            .iter()
            .find(|c| c.id == id_or_label || c.label == id_or_label)
    }

    /// The sampling settings.
    pub fn sampling(&self) -> Sampling {
        self.sampling
    }

    /// Expected questions per (study, category) with this value.
    pub fn expected(&self, category: &Category, value: LabelValue) -> f64 {
        let s = self.sampling;
        if category.is_heart() {
            return if value == LabelValue::Positive {
                s.heart
            } else {
                0.0
            };
        }
        match value {
            LabelValue::Positive => s.positive,
            LabelValue::Negative => s.negative,
            LabelValue::Uncertain => s.uncertain,
            LabelValue::NotMentioned => s.not_mentioned,
        }
    }

    /// The question indices (0–5) asked of `study_id` for `category` with `value`: floor(k)
    /// of them and one more with probability frac(k) ([`Bank::expected`]), in a seeded hash
    /// order of the six, all from one sha256 of (seed, study, category), so a rerun asks the
    /// same questions and a change of one study's labels changes only that study's.
    pub fn sample(
        &self,
        seed: u64,
        study_id: &str,
        category: &Category,
        value: LabelValue,
    ) -> Vec<usize> {
        let k = self.expected(category, value);
        if k <= 0.0 {
            return Vec::new();
        }
        let mut hasher = Sha256::new();
        hasher.update(seed.to_le_bytes());
        hasher.update(study_id.as_bytes());
        hasher.update([0]);
        hasher.update(category.id.as_bytes());
        let digest = hasher.finalize();
        let draw = u64::from_le_bytes(digest[..8].try_into().unwrap_or([0; 8])) as f64
            / (u64::MAX as f64 + 1.0);
        let mut n = k.floor() as usize;
        if draw < k - k.floor() {
            n += 1;
        }
        let n = n.min(category.questions.len());
        let mut order: Vec<usize> = (0..category.questions.len()).collect();
        // Fisher–Yates with the digest's later bytes.
        for i in (1..order.len()).rev() {
            let j = digest[8 + i] as usize % (i + 1);
            order.swap(i, j);
        }
        order.truncate(n);
        order.sort_unstable();
        order
    }

    /// `open` or `closed` for an answer ([`AnswerTypeRule`]).
    pub fn answer_type(&self, answer: &str) -> &'static str {
        let words = crate::text::words(answer);
        let closed = !words.is_empty()
            && words.len() <= self.answer_type.closed_max_words
            && matches!(words[0].as_str(), "yes" | "no");
        if closed { "closed" } else { "open" }
    }
}

/// The derived Heart label (paper 001, section 3.1): the report has the word "heart" (any
/// section, any case, a whole word: "heart" and "heart's", not "heartburn").
pub fn mentions_heart(report: &str) -> bool {
    crate::text::words(report).iter().any(|w| w == "heart")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bank_has_the_papers_90_questions_verbatim() {
        let bank = Bank::embedded().expect("bank");
        assert_eq!(bank.categories().len(), 15);
        assert_eq!(
            bank.categories()
                .iter()
                .map(|c| c.questions.len())
                .sum::<usize>(),
            90
        );
        let atelectasis = bank.category("atelectasis").expect("atelectasis");
        assert_eq!(
            atelectasis.questions,
            [
                "Is Atelectasis observed?",
                "Can Atelectasis be identified?",
                "Are there signs of Atelectasis?",
                "What evidence of Atelectasis is present?",
                "Does the patient have Atelectasis?",
                "Are there indications of Atelectasis?",
            ]
        );
        let heart = bank.category(HEART).expect("heart");
        assert_eq!(heart.question(2, true), "How is the size of the heart?");
        let mediastinum = bank
            .category("enlarged_cardiomediastinum")
            .expect("cardiomediastinum");
        assert_eq!(
            mediastinum.question(0, true),
            "Is the Cardiomedistinum enlarged?"
        );
        assert_eq!(
            mediastinum.question(0, false),
            "Is the Cardiomediastinum enlarged?"
        );
        assert_eq!(mediastinum.template_id(0), "enlarged_cardiomediastinum_1");
        // The 14 CheXpert labels and Heart, each category's questions distinct, all 90 distinct.
        let mut all: Vec<&str> = bank
            .categories()
            .iter()
            .flat_map(|c| c.questions.iter().map(String::as_str))
            .collect();
        all.sort_unstable();
        all.dedup();
        assert_eq!(all.len(), 90);
        // Every question of the paper's appendix A, as NOTES-001-004 §1.4 transcribes it.
        let support = bank.category("support_devices").expect("support devices");
        assert_eq!(support.questions[0], "Which Support Devices are found?");
        assert_eq!(support.questions[5], "Can any support devices be found?");
        assert_eq!(
            bank.category("no_finding").expect("no finding").questions[5],
            "Do you see any findings in the image?"
        );
        assert!(bank.version().starts_with("1+"));
        assert_eq!(bank.dataset_id(), "mimic_cxr_vqa_upv_llama");
    }

    #[test]
    fn sampling_is_seeded_stable_and_near_the_papers_rates() {
        let bank = Bank::embedded().expect("bank");
        let category = bank.category("edema").expect("edema");
        let a = bank.sample(7, "s1", category, LabelValue::Positive);
        assert_eq!(a, bank.sample(7, "s1", category, LabelValue::Positive));
        let n = 20_000;
        for (value, expected) in [
            (LabelValue::Positive, 3.75),
            (LabelValue::Negative, 2.30),
            (LabelValue::Uncertain, 3.22),
            (LabelValue::NotMentioned, 0.42),
        ] {
            let mut total = 0usize;
            let mut per_template = [0usize; 6];
            for study in 0..n {
                let picked = bank.sample(0, &format!("s{study}"), category, value);
                total += picked.len();
                for i in picked {
                    per_template[i] += 1;
                }
            }
            let mean = total as f64 / n as f64;
            assert!((mean - expected).abs() < 0.02, "{value:?}: {mean}");
            // Phrasings are used evenly (within 5 % of the mean).
            let even = total as f64 / 6.0;
            for count in per_template {
                assert!(
                    (count as f64 - even).abs() < 0.05 * even,
                    "{per_template:?}"
                );
            }
        }
        let heart = bank.category(HEART).expect("heart");
        assert!(bank.sample(0, "s1", heart, LabelValue::Negative).is_empty());
        assert!(!bank.sample(0, "s1", heart, LabelValue::Positive).is_empty());
        // Another seed draws other phrasings.
        let differs = (0..50).any(|s| {
            bank.sample(0, &format!("s{s}"), category, LabelValue::Negative)
                != bank.sample(1, &format!("s{s}"), category, LabelValue::Negative)
        });
        assert!(differs);
    }

    #[test]
    fn label_values_and_the_heart_rule() {
        assert_eq!(LabelValue::of(Some(1.0)), Some(LabelValue::Positive));
        assert_eq!(LabelValue::of(Some(-1.0)), Some(LabelValue::Uncertain));
        assert_eq!(
            LabelValue::of(Some(f64::NAN)),
            Some(LabelValue::NotMentioned)
        );
        assert_eq!(LabelValue::of(None), Some(LabelValue::NotMentioned));
        assert_eq!(LabelValue::of(Some(2.0)), None);
        assert_eq!(LabelValue::parse("-1.0"), Some(LabelValue::Uncertain));
        assert!(mentions_heart("The HEART size is normal."));
        assert!(mentions_heart("INDICATION: heart failure"));
        assert!(mentions_heart("The heart's contour is normal."));
        assert!(!mentions_heart("History of heartburn. Cardiomegaly."));
    }

    #[test]
    fn answers_are_typed_open_or_closed() {
        let bank = Bank::embedded().expect("bank");
        assert_eq!(bank.answer_type("No."), "closed");
        assert_eq!(bank.answer_type("Yes, it is."), "closed");
        assert_eq!(bank.answer_type("Yes, mild edema is seen."), "open");
        assert_eq!(bank.answer_type("Small effusion."), "open");
    }

    #[test]
    fn a_malformed_bank_says_what_is_wrong() {
        let text = EMBEDDED.replacen("    \"Is Atelectasis observed?\",\n", "", 1);
        let err = Bank::parse(&text, "x.toml")
            .expect_err("five questions")
            .to_string();
        assert!(err.contains("'atelectasis' has 5 questions"), "{err}");
        let text = EMBEDDED.replacen("positive = 3.75", "positive = 7", 1);
        let err = Bank::parse(&text, "x.toml").expect_err("k").to_string();
        assert!(err.contains("sampling.positive = 7"), "{err}");
    }
}
