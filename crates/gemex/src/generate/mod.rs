//! Stage II of GEMeX (paper 004, section 3.2, table 10): 11 grounded, explainable questions
//! per frontal image from its re-grounded report — 3 open-ended, 2 closed-ended, 3
//! single-choice and 3 multi-choice — each with a content type, answer, reason, visual regions
//! and their boxes on the image.
//!
//! ```text
//!  input row ── sentences ──► REPORT "sentence [visual location: region] …" ──► LLM
//!            │                                       answer {questions: [...]}
//!            │         check: per question choices, banned terms, regions (→ 30)
//!            │                quota 3/2/3/3 ──► records + boxes (original, 224)
//!            └── sentences, facts ──► offline generator (11 questions) ──► the same checks
//! ```

mod offline;

use std::collections::BTreeMap;
use std::sync::Arc;

use cxrlake_generate::lint::{answer_letters, banned_terms, check_choices};
use cxrlake_generate::{GenerationTask, PromptSet, TaskPrompt};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::frame::{clamp, to_224};
use crate::regions::Regions;
use crate::{Result, nullable};

/// The SQL function name of the QA generation task.
pub const TASK_NAME: &str = "gemex_generate";

/// The offline generator's id (bump it when its output changes).
pub const OFFLINE_ID: &str = "offline-gemex-generate-1";

/// Reports with fewer re-grounded sentences are not used (paper 004, section 3.2).
pub const MIN_SENTENCES: usize = 3;

/// The four question types of GEMeX.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum QuestionType {
    /// A free-text answer.
    OpenEnded,
    /// Yes or no.
    ClosedEnded,
    /// Four options, one correct.
    SingleChoice,
    /// Four options, one or more correct.
    MultiChoice,
}

impl QuestionType {
    /// The four types, in the prompt's order.
    pub const ALL: [QuestionType; 4] = [
        QuestionType::OpenEnded,
        QuestionType::ClosedEnded,
        QuestionType::SingleChoice,
        QuestionType::MultiChoice,
    ];

    /// Its name in records and prompts (`open-ended`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            QuestionType::OpenEnded => "open-ended",
            QuestionType::ClosedEnded => "closed-ended",
            QuestionType::SingleChoice => "single-choice",
            QuestionType::MultiChoice => "multi-choice",
        }
    }

    /// The type named `name` (exactly as [`QuestionType::as_str`] spells it).
    pub fn parse(name: &str) -> Option<QuestionType> {
        Self::ALL.into_iter().find(|kind| kind.as_str() == name)
    }

    /// How many questions of this type one image gets: 3, 2, 3, 3.
    pub fn quota(self) -> usize {
        match self {
            QuestionType::ClosedEnded => 2,
            _ => 3,
        }
    }

    /// Whether its questions have four options.
    pub fn has_choices(self) -> bool {
        matches!(self, QuestionType::SingleChoice | QuestionType::MultiChoice)
    }
}

/// The seven content categories of GEMeX questions (paper 004, figure 4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ContentType {
    /// What is abnormal.
    Abnormality,
    /// Which disease.
    Disease,
    /// Where.
    Location,
    /// How severe.
    Severity,
    /// Why (the cause of a disease).
    Cause,
    /// How large.
    Size,
    /// What it implies.
    Implication,
}

impl ContentType {
    /// The seven categories.
    pub const ALL: [ContentType; 7] = [
        ContentType::Abnormality,
        ContentType::Disease,
        ContentType::Location,
        ContentType::Severity,
        ContentType::Cause,
        ContentType::Size,
        ContentType::Implication,
    ];

    /// Its name in records and prompts.
    pub fn as_str(self) -> &'static str {
        match self {
            ContentType::Abnormality => "abnormality",
            ContentType::Disease => "disease",
            ContentType::Location => "location",
            ContentType::Severity => "severity",
            ContentType::Cause => "cause",
            ContentType::Size => "size",
            ContentType::Implication => "implication",
        }
    }

    /// The category named `name` (any case, surrounding spaces ignored).
    pub fn parse(name: &str) -> Option<ContentType> {
        let name = name.trim().to_lowercase();
        Self::ALL.into_iter().find(|kind| kind.as_str() == name)
    }
}

/// One GEMeX question: the record of `gemex_generate` (`schemas::gemex::qa_record_fields`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QaRecord {
    /// Open-ended, closed-ended, single-choice or multi-choice.
    pub question_type: QuestionType,
    /// One of the seven content categories.
    pub content_type: ContentType,
    /// The question.
    pub question: String,
    /// `A: …` … `D: …` for choice questions, else empty.
    #[serde(default, deserialize_with = "nullable")]
    pub choices: Vec<String>,
    /// Text (open-ended), `Yes` or `No` (closed-ended), one letter (single-choice), letters
    /// `B, C` (multi-choice).
    pub answer: String,
    /// The letters of a choice answer (`["B", "C"]`), else empty.
    #[serde(default, deserialize_with = "nullable")]
    pub answer_letters: Vec<String>,
    /// Why the answer holds.
    #[serde(default, deserialize_with = "nullable")]
    pub reason: String,
    /// The visual regions, names of the 30.
    #[serde(default, deserialize_with = "nullable")]
    pub regions: Vec<String>,
    /// The boxes of those regions on the image that have one, in original pixels, in the order
    /// of `regions`.
    #[serde(default, deserialize_with = "nullable")]
    pub location: Vec<[f32; 4]>,
    /// The same boxes in Chest ImaGenome's 224 × 224 frame.
    #[serde(default, deserialize_with = "nullable")]
    pub location_224: Vec<[f32; 4]>,
}

/// One re-grounded sentence of the input row.
#[derive(Debug, Clone, Deserialize)]
struct SentenceRow {
    #[serde(default, deserialize_with = "nullable")]
    sentence: String,
    #[serde(default, deserialize_with = "nullable")]
    region: String,
}

/// One region box of the input row (original pixels).
#[derive(Debug, Deserialize)]
struct BoxRow {
    #[serde(default, deserialize_with = "nullable")]
    region: String,
    bbox: Option<[f32; 4]>,
}

/// One top-level scene-graph observation of the study (its `regions` are not read: a fact is
/// placed by the re-grounded sentence it belongs to).
#[derive(Debug, Clone, Default, Deserialize)]
struct Fact {
    #[serde(default, deserialize_with = "nullable")]
    finding: String,
    #[serde(default, deserialize_with = "nullable")]
    positiveness: String,
    #[serde(default, deserialize_with = "nullable")]
    severity: String,
    #[serde(default, deserialize_with = "nullable")]
    sentence: String,
}

/// The input row as it comes.
#[derive(Debug, Deserialize)]
struct InputRow {
    #[serde(default, deserialize_with = "nullable")]
    image_id: String,
    width: Option<f64>,
    height: Option<f64>,
    #[serde(default, deserialize_with = "nullable")]
    sentences: Vec<SentenceRow>,
    #[serde(default, deserialize_with = "nullable")]
    boxes: Vec<BoxRow>,
    #[serde(default, deserialize_with = "nullable")]
    facts: Vec<Fact>,
}

/// One frontal image's input, checked: sentences with regions of the 30, boxes by region
/// (inside the image).
#[derive(Debug)]
struct Image {
    image_id: String,
    width: u32,
    height: u32,
    sentences: Vec<(String, String)>,
    boxes: BTreeMap<String, [f32; 4]>,
    facts: Vec<Fact>,
}

/// A positive image dimension from JSON.
fn dimension(value: Option<f64>, name: &str) -> std::result::Result<u32, String> {
    match value {
        Some(v) if v.is_finite() && v >= 1.0 && v <= f64::from(u32::MAX) => Ok(v as u32),
        _ => Err(format!("the input row has no valid image {name}")),
    }
}

/// The grounded report of table 10's user message: each sentence followed by
/// `[visual location: <region>]`, joined by spaces.
pub fn grounded_report<'a>(sentences: impl IntoIterator<Item = (&'a str, &'a str)>) -> String {
    sentences
        .into_iter()
        .map(|(sentence, region)| format!("{} [visual location: {region}]", sentence.trim()))
        .collect::<Vec<_>>()
        .join(" ")
}

/// The QA generation task (`gemex_generate`): the prompt of table 10, the checks of an LLM
/// answer, and the offline generator.
#[derive(Debug)]
pub struct GenerateTask {
    prompts: Arc<PromptSet>,
    prompt: TaskPrompt,
    regions: Arc<Regions>,
}

impl GenerateTask {
    /// The task over these prompts (task `generate`) and regions.
    pub fn new(prompts: Arc<PromptSet>, regions: Arc<Regions>) -> Result<GenerateTask> {
        let prompt = prompts.require("generate")?.clone();
        Ok(GenerateTask {
            prompts,
            prompt,
            regions,
        })
    }

    /// The input row checked: an image id, its size, sentences on regions of the 30 (others are
    /// dropped), the boxes of the regions (clamped to the image).
    fn image(&self, input: &Value) -> std::result::Result<Image, String> {
        let row: InputRow = serde_json::from_value(input.clone())
            .map_err(|e| format!("invalid QA generation input row: {e}"))?;
        if row.image_id.trim().is_empty() {
            return Err("the input row has no image_id".into());
        }
        let width = dimension(row.width, "width")?;
        let height = dimension(row.height, "height")?;
        let sentences = row
            .sentences
            .into_iter()
            .filter(|s| !s.sentence.trim().is_empty())
            .filter_map(|s| {
                let region = self.regions.normalize(&s.region)?.to_string();
                Some((s.sentence.trim().to_string(), region))
            })
            .collect();
        let mut boxes = BTreeMap::new();
        for row in row.boxes {
            if let (Some(region), Some(bbox)) = (self.regions.normalize(&row.region), row.bbox)
                && bbox.iter().all(|v| v.is_finite())
            {
                boxes.insert(region.to_string(), clamp(bbox, width, height));
            }
        }
        Ok(Image {
            image_id: row.image_id,
            width,
            height,
            sentences,
            boxes,
            facts: row.facts,
        })
    }

    /// One question of an answer as a record, or why it is invalid: a known type and content
    /// category, a question, the choice invariants (`check_choices`), no banned term in the
    /// question, its choices or answer, a reason, and at least one region of the 30 (unknown
    /// regions are dropped). Answers are written canonically: `Yes`/`No`, `B`, `B, C`.
    fn record(&self, image: &Image, question: &Value) -> std::result::Result<QaRecord, String> {
        let text = |key: &str| {
            question
                .get(key)
                .and_then(Value::as_str)
                .map(str::trim)
                .unwrap_or_default()
        };
        let list = |key: &str| -> Vec<String> {
            question
                .get(key)
                .and_then(Value::as_array)
                .map(|items| {
                    items
                        .iter()
                        .filter_map(Value::as_str)
                        .map(|item| item.trim().to_string())
                        .collect()
                })
                .unwrap_or_default()
        };
        let question_type = QuestionType::parse(text("question_type"))
            .ok_or_else(|| format!("unknown question_type '{}'", text("question_type")))?;
        let content_type = ContentType::parse(text("content_type"))
            .ok_or_else(|| format!("unknown content_type '{}'", text("content_type")))?;
        let question_text = text("question");
        if question_text.is_empty() {
            return Err("the question is empty".into());
        }
        let choices = list("choices");
        let answer = text("answer");
        if let Some(problem) = check_choices(question_type.as_str(), &choices, answer) {
            return Err(problem);
        }
        let mut banned: Vec<String> = Vec::new();
        for part in std::iter::once(question_text)
            .chain(choices.iter().map(String::as_str))
            .chain([answer])
        {
            for term in banned_terms(part) {
                if !banned.contains(&term) {
                    banned.push(term);
                }
            }
        }
        if !banned.is_empty() {
            return Err(format!(
                "uses words that need another study, the report or another view ({}); ask only \
                 what this image shows",
                banned.join(", ")
            ));
        }
        let reason = text("reason");
        if reason.is_empty() {
            return Err("the reason is empty".into());
        }
        let named = list("regions");
        let mut regions: Vec<String> = Vec::new();
        for name in &named {
            if let Some(region) = self.regions.normalize(name)
                && !regions.iter().any(|seen| seen == region)
            {
                regions.push(region.to_string());
            }
        }
        if regions.is_empty() {
            return Err(format!(
                "none of its regions ({}) is a region of the phrases' visual locations",
                named.join(", ")
            ));
        }
        let letters: Vec<String> = if question_type.has_choices() {
            answer_letters(answer).iter().map(char::to_string).collect()
        } else {
            Vec::new()
        };
        let answer = match question_type {
            QuestionType::OpenEnded => answer.to_string(),
            QuestionType::ClosedEnded => {
                let yes = answer
                    .trim_end_matches(['.', '!'])
                    .eq_ignore_ascii_case("yes");
                (if yes { "Yes" } else { "No" }).to_string()
            }
            QuestionType::SingleChoice | QuestionType::MultiChoice => letters.join(", "),
        };
        let location: Vec<[f32; 4]> = regions
            .iter()
            .filter_map(|region| image.boxes.get(region).copied())
            .collect();
        let location_224 = location
            .iter()
            .map(|bbox| to_224(*bbox, image.width, image.height))
            .collect();
        Ok(QaRecord {
            question_type,
            content_type,
            question: question_text.to_string(),
            choices,
            answer,
            answer_letters: letters,
            reason: reason.to_string(),
            regions,
            location,
            location_224,
        })
    }

    /// The records of an answer `{questions: [...]}`: every question valid
    /// ([`GenerateTask::record`]), no question twice, and exactly 3 open-ended, 2 closed-ended, 3
    /// single-choice and 3 multi-choice questions.
    fn records(&self, image: &Image, answer: &Value) -> std::result::Result<Vec<QaRecord>, String> {
        let questions = answer
            .get("questions")
            .and_then(Value::as_array)
            .ok_or("the answer has no \"questions\" list")?;
        let mut records = Vec::with_capacity(questions.len());
        let mut problems = Vec::new();
        for (index, question) in questions.iter().enumerate() {
            match self.record(image, question) {
                Ok(record) => {
                    let repeated = records.iter().any(|earlier: &QaRecord| {
                        earlier.question.eq_ignore_ascii_case(&record.question)
                    });
                    if repeated {
                        problems.push(format!("question {} repeats an earlier one", index + 1));
                    }
                    records.push(record);
                }
                Err(problem) => problems.push(format!("question {}: {problem}", index + 1)),
            }
        }
        if !problems.is_empty() {
            return Err(problems.join("; "));
        }
        let counts: Vec<usize> = QuestionType::ALL
            .iter()
            .map(|kind| records.iter().filter(|r| r.question_type == *kind).count())
            .collect();
        let expected: Vec<usize> = QuestionType::ALL.iter().map(|kind| kind.quota()).collect();
        if counts != expected {
            let got: Vec<String> = QuestionType::ALL
                .iter()
                .zip(&counts)
                .map(|(kind, count)| format!("{count} {}", kind.as_str()))
                .collect();
            return Err(format!(
                "expected 3 open-ended, 2 closed-ended, 3 single-choice and 3 multi-choice \
                 questions, got {}",
                got.join(", ")
            ));
        }
        Ok(records)
    }
}

/// Records as JSON objects.
fn to_values(records: &[QaRecord]) -> std::result::Result<Vec<Value>, String> {
    records
        .iter()
        .map(|record| serde_json::to_value(record).map_err(|e| e.to_string()))
        .collect()
}

impl GenerationTask for GenerateTask {
    fn name(&self) -> &str {
        TASK_NAME
    }

    fn prompt(&self) -> &TaskPrompt {
        &self.prompt
    }

    fn prompt_version(&self) -> &str {
        self.prompts.version()
    }

    /// `REPORT`: the grounded report (X08). A report with fewer than three re-grounded
    /// sentences is not asked (X09).
    fn placeholders(
        &self,
        input: &Value,
    ) -> std::result::Result<Vec<(&'static str, String)>, String> {
        let image = self.image(input)?;
        if image.sentences.len() < MIN_SENTENCES {
            return Err(format!(
                "the report has {} re-grounded sentences; GEMeX uses reports with {MIN_SENTENCES} \
                 or more",
                image.sentences.len()
            ));
        }
        let report = grounded_report(
            image
                .sentences
                .iter()
                .map(|(sentence, region)| (sentence.as_str(), region.as_str())),
        );
        Ok(vec![("REPORT", report)])
    }

    fn check(&self, input: &Value, answer: &Value) -> std::result::Result<Vec<Value>, String> {
        let image = self.image(input)?;
        to_values(&self.records(&image, answer)?)
    }

    /// 11 questions from the sentences and facts (see the `offline` module); none for a report
    /// with fewer than three re-grounded sentences.
    fn offline(&self, input: &Value) -> std::result::Result<Vec<Value>, String> {
        let image = self.image(input)?;
        if image.sentences.len() < MIN_SENTENCES {
            return Ok(Vec::new());
        }
        let questions = offline::questions(&image, &self.regions, |question| {
            self.record(&image, question)
        })?;
        // The same checks as an LLM answer, the quota and repeated questions included.
        let answer = serde_json::json!({ "questions": questions });
        to_values(&self.records(&image, &answer)?)
    }

    fn offline_id(&self) -> &str {
        OFFLINE_ID
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn regions() -> Arc<Regions> {
        Arc::new(Regions::embedded().expect("embedded regions"))
    }

    fn task() -> GenerateTask {
        let prompts = Arc::new(crate::prompts().expect("embedded prompts"));
        GenerateTask::new(prompts, regions()).expect("task")
    }

    /// Chest ImaGenome-like boxes of a 2000 × 2500 image (one past the border), as the 30
    /// regions' boxes.
    fn boxes(regions: &Regions) -> Vec<Value> {
        let imagenome = [
            ("right lung", [300.0, 400.0, 980.0, 2000.0]),
            ("left lung", [1020.0, 380.0, 1750.0, 2010.0]),
            ("right lower lung zone", [310.0, 1450.0, 980.0, 2000.0]),
            ("left lower lung zone", [1020.0, 1460.0, 1740.0, 2010.0]),
            ("left costophrenic angle", [1500.0, 1800.0, 2100.0, 2050.0]),
            ("right mid lung zone", [310.0, 900.0, 980.0, 1450.0]),
            ("left mid lung zone", [1020.0, 900.0, 1740.0, 1460.0]),
            ("cardiac silhouette", [800.0, 1100.0, 1500.0, 1800.0]),
            ("right hilar structures", [700.0, 900.0, 950.0, 1200.0]),
            ("left hilar structures", [1050.0, 900.0, 1300.0, 1200.0]),
            ("right upper lung zone", [320.0, 400.0, 980.0, 900.0]),
            ("left apical zone", [1030.0, 380.0, 1700.0, 600.0]),
            ("left upper lung zone", [1020.0, 380.0, 1740.0, 900.0]),
            ("mediastinum", [850.0, 300.0, 1200.0, 1300.0]),
            ("svc", [850.0, 500.0, 1000.0, 1000.0]),
            ("trachea", [950.0, 100.0, 1100.0, 700.0]),
            ("spine", [900.0, 0.0, 1150.0, 2500.0]),
            ("abdomen", [300.0, 2000.0, 1800.0, 2500.0]),
            ("right hemidiaphragm", [300.0, 1900.0, 980.0, 2100.0]),
            ("left hemidiaphragm", [1020.0, 1950.0, 1750.0, 2150.0]),
        ];
        regions
            .image_boxes(&imagenome)
            .into_iter()
            .map(|(region, bbox)| json!({"region": region, "bbox": bbox}))
            .collect()
    }

    fn input(sentences: &[(&str, &str)]) -> Value {
        json!({
            "image_id": "img-1",
            "study_id": "s1",
            "width": 2000,
            "height": 2500,
            "sentences": sentences
                .iter()
                .map(|(sentence, region)| json!({"sentence": sentence, "region": region}))
                .collect::<Vec<_>>(),
            "boxes": boxes(&regions()),
            "facts": [
                {"finding": "pleural effusion", "positiveness": "pos", "severity": "small",
                 "regions": ["left lung"], "sentence": "There is a small left pleural effusion."},
                {"finding": "pneumothorax", "positiveness": "neg", "severity": null,
                 "regions": null, "sentence": "There is no pneumothorax."},
            ],
        })
    }

    const REPORT: [(&str, &str); 4] = [
        (
            "There is also fullness of the right hilum which is new.",
            "right hilar structures",
        ),
        (
            "There is a small left pleural effusion.",
            "left lower lung zone",
        ),
        ("The heart size is mildly enlarged.", "cardiac silhouette"),
        ("There is no pneumothorax.", "bilateral lung"),
    ];

    fn q(
        kind: &str,
        content: &str,
        question: &str,
        choices: &[&str],
        answer: &str,
        regions: &[&str],
    ) -> Value {
        json!({
            "question_type": kind,
            "content_type": content,
            "question": question,
            "choices": choices,
            "answer": answer,
            "reason": "The CXR shows it.",
            "regions": regions,
        })
    }

    const CHOICES: [&str; 4] = [
        "A: Pleural effusion",
        "B: Cardiomegaly",
        "C: Pneumothorax",
        "D: Rib fracture",
    ];

    /// A valid answer: 3 open, 2 closed, 3 single, 3 multi.
    fn answer() -> Vec<Value> {
        vec![
            q(
                "open-ended",
                "abnormality",
                "What abnormality is seen in the left lower lung zone?",
                &[],
                "A small pleural effusion.",
                &["left lower lung zone"],
            ),
            q(
                "open-ended",
                "location",
                "Where is the hilar fullness?",
                &[],
                "Right hilum.",
                &["Right Hilum"],
            ),
            q(
                "open-ended",
                "implication",
                "What does the enlarged heart suggest?",
                &[],
                "Cardiac disease.",
                &["cardiac region", "left kidney"],
            ),
            q(
                "closed-ended",
                "disease",
                "Is there a pneumothorax?",
                &[],
                "No.",
                &["bilateral lung"],
            ),
            q(
                "closed-ended",
                "size",
                "Is the heart enlarged?",
                &[],
                "yes",
                &["heart"],
            ),
            q(
                "single-choice",
                "location",
                "Where is the effusion?",
                &[
                    "A: Left lower lung zone",
                    "B: Right lung",
                    "C: Spine",
                    "D: Trachea",
                ],
                "A",
                &["left lower lung zone"],
            ),
            q(
                "single-choice",
                "size",
                "How large is the heart?",
                &[
                    "A: Normal",
                    "B: Mildly enlarged",
                    "C: Moderately enlarged",
                    "D: Severely enlarged",
                ],
                "B",
                &["cardiac silhouette"],
            ),
            q(
                "single-choice",
                "severity",
                "How large is the effusion?",
                &["A: Small", "B: Moderate", "C: Large", "D: Absent"],
                "A",
                &["left lower lung zone"],
            ),
            q(
                "multi-choice",
                "abnormality",
                "Which findings are present?",
                &CHOICES,
                "[A, B]",
                &["left lower lung zone", "cardiac silhouette"],
            ),
            q(
                "multi-choice",
                "location",
                "Which regions show findings?",
                &[
                    "A: Left lower lung zone",
                    "B: Cardiac silhouette",
                    "C: Spine",
                    "D: Abdomen",
                ],
                "A and B",
                &["left lower lung zone", "cardiac silhouette"],
            ),
            q(
                "multi-choice",
                "cause",
                "Which conditions can cause an effusion?",
                &[
                    "A: Heart failure",
                    "B: Pneumonia",
                    "C: Osteoporosis",
                    "D: Anemia",
                ],
                "A, B",
                &["left lower lung zone"],
            ),
        ]
    }

    fn check(questions: Vec<Value>) -> std::result::Result<Vec<QaRecord>, String> {
        let records = task().check(&input(&REPORT), &json!({ "questions": questions }))?;
        Ok(records
            .into_iter()
            .map(|record| serde_json::from_value(record).expect("a QA record"))
            .collect())
    }

    #[test]
    fn the_report_placeholder_is_the_grounded_report() {
        let task = task();
        assert_eq!(task.name(), "gemex_generate");
        assert_eq!(task.prompt().name(), "generate");
        let values = task.placeholders(&input(&REPORT)).expect("placeholders");
        assert_eq!(
            values,
            [(
                "REPORT",
                "There is also fullness of the right hilum which is new. [visual location: right \
                 hilar structures] There is a small left pleural effusion. [visual location: left \
                 lower lung zone] The heart size is mildly enlarged. [visual location: cardiac \
                 silhouette] There is no pneumothorax. [visual location: bilateral lung]"
                    .to_string()
            )]
        );
        let (_, user) = task.prompt().render(&values).expect("render");
        assert!(user.starts_with("Chest X-ray: There is also fullness of the right hilum"));
        let error = task
            .placeholders(&input(&REPORT[..2]))
            .expect_err("two sentences");
        assert!(error.contains("2 re-grounded sentences"), "{error}");
        assert!(
            task.placeholders(&json!({"image_id": "x", "width": 0, "height": 10}))
                .is_err()
        );
        assert!(
            task.placeholders(&json!({"width": 10, "height": 10}))
                .is_err()
        );
    }

    #[test]
    fn a_valid_answer_gives_eleven_records_with_boxes() {
        let records = check(answer()).expect("valid answer");
        assert_eq!(records.len(), 11);
        // Regions normalised; unknown ones dropped.
        assert_eq!(records[1].regions, ["right hilar structures"]);
        assert_eq!(records[2].regions, ["cardiac silhouette"]);
        // Canonical answers and letters.
        assert_eq!(records[3].answer, "No");
        assert_eq!(records[4].answer, "Yes");
        assert_eq!(records[5].answer_letters, ["A"]);
        assert_eq!(records[8].answer, "A, B");
        assert_eq!(records[9].answer_letters, ["A", "B"]);
        assert!(records[0].answer_letters.is_empty());
        // Boxes in both frames, one per region with a box, inside the image.
        let first = &records[0];
        assert_eq!(first.location, [[1020.0, 1460.0, 2000.0, 2050.0]]);
        let framed = first.location_224[0];
        assert!((framed[2] - 201.6).abs() < 1e-3, "{framed:?}");
        assert_eq!(records[8].location.len(), 2);
        for record in &records {
            assert_eq!(record.location.len(), record.location_224.len());
            for (bbox, framed) in record.location.iter().zip(&record.location_224) {
                assert!(bbox[0] >= 0.0 && bbox[2] <= 2000.0 && bbox[1] >= 0.0 && bbox[3] <= 2500.0);
                assert!(
                    framed.iter().all(|v| (0.0..=224.0).contains(v)),
                    "{framed:?}"
                );
            }
        }
    }

    #[test]
    fn short_quotas_are_rejected_with_the_counts() {
        let mut questions = answer();
        questions.remove(6);
        let error = check(questions).expect_err("short");
        assert!(
            error.contains("got 3 open-ended, 2 closed-ended, 2 single-choice, 3 multi-choice"),
            "{error}"
        );
        let mut questions = answer();
        questions.push(questions[0].clone());
        let error = check(questions).expect_err("repeated");
        assert!(error.contains("question 12 repeats"), "{error}");
        assert!(
            task()
                .check(&input(&REPORT), &json!({"items": []}))
                .is_err()
        );
    }

    #[test]
    fn bad_choices_banned_terms_and_regions_are_rejected() {
        let with = |index: usize, key: &str, value: Value| {
            let mut questions = answer();
            questions[index][key] = value;
            check(questions).expect_err("invalid")
        };
        let error = with(5, "choices", json!(["A: x", "B: y", "C: z"]));
        assert!(
            error.starts_with("question 6: 3 choices instead of 4"),
            "{error}"
        );
        let error = with(8, "answer", json!("E"));
        assert!(error.contains("names no option"), "{error}");
        let error = with(6, "answer", json!("A, B"));
        assert!(
            error.contains("single-choice answer is one letter"),
            "{error}"
        );
        let error = with(3, "answer", json!("Maybe"));
        assert!(error.contains("yes or no"), "{error}");
        let error = with(0, "choices", json!(CHOICES));
        assert!(error.contains("no choices"), "{error}");
        let error = with(
            3,
            "question",
            json!("Is the effusion unchanged compared with the prior study?"),
        );
        assert!(error.contains("comparison: unchanged"), "{error}");
        let error = with(
            10,
            "choices",
            json!(["A: As mentioned in the report", "B: x", "C: y", "D: z"]),
        );
        assert!(error.contains("report reference"), "{error}");
        let error = with(0, "regions", json!(["left kidney", "right elbow"]));
        assert!(
            error.contains("none of its regions (left kidney, right elbow)"),
            "{error}"
        );
        let error = with(0, "content_type", json!("trivia"));
        assert!(error.contains("unknown content_type"), "{error}");
        // Several problems are reported together.
        let mut questions = answer();
        questions[0]["regions"] = json!([]);
        questions[1]["question"] = json!("Since when is the hilum full?");
        let error = check(questions).expect_err("invalid");
        assert!(
            error.contains("question 1:") && error.contains("question 2:"),
            "{error}"
        );
    }

    /// A synthetic fact: finding, positiveness, severity.
    type SyntheticFact = (&'static str, &'static str, &'static str);

    /// A synthetic grounded report with facts, from a seed.
    fn synthetic(seed: u64, sentences: usize) -> Value {
        const POOL: [(&str, &str, Option<SyntheticFact>); 10] = [
            (
                "There is a small left pleural effusion.",
                "left lower lung zone",
                Some(("pleural effusion", "pos", "small")),
            ),
            (
                "Moderate cardiomegaly is present.",
                "cardiac silhouette",
                Some(("cardiomegaly", "pos", "moderate")),
            ),
            (
                "There is no pneumothorax.",
                "bilateral lung",
                Some(("pneumothorax", "neg", "")),
            ),
            ("The lungs are clear.", "bilateral lung", None),
            (
                "Bibasilar atelectasis is seen.",
                "bilateral lower lung zone",
                None,
            ),
            (
                "Mild pulmonary edema.",
                "bilateral lung",
                Some(("pulmonary edema", "pos", "mild")),
            ),
            ("The heart size is normal.", "cardiac silhouette", None),
            ("The mediastinal silhouette is normal.", "mediastinum", None),
            (
                "A right-sided PICC line terminates in the mid SVC.",
                "svc",
                None,
            ),
            (
                "Patchy opacity in the right upper lung zone.",
                "right upper lung zone",
                None,
            ),
        ];
        let mut state = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
        let mut next = |bound: usize| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state % bound as u64) as usize
        };
        let mut picked: Vec<usize> = Vec::new();
        while picked.len() < sentences {
            let index = next(POOL.len());
            if !picked.contains(&index) {
                picked.push(index);
            }
        }
        let with_facts = next(2) == 0;
        json!({
            "image_id": format!("{seed:08x}-image"),
            "study_id": format!("s{seed}"),
            "width": 1500 + next(1500),
            "height": 1500 + next(1500),
            "sentences": picked.iter().map(|&i| json!({"sentence": POOL[i].0, "region": POOL[i].1})).collect::<Vec<_>>(),
            "boxes": boxes(&regions()),
            "facts": if with_facts {
                picked
                    .iter()
                    .filter_map(|&i| POOL[i].2.map(|(finding, positiveness, severity)| json!({
                        "finding": finding, "positiveness": positiveness, "severity": severity,
                        "regions": [], "sentence": POOL[i].0,
                    })))
                    .collect::<Vec<_>>()
            } else {
                Vec::new()
            },
        })
    }

    #[test]
    fn offline_gives_eleven_well_formed_questions() {
        let task = task();
        assert_eq!(task.offline_id(), OFFLINE_ID);
        let regions = regions();
        let names: Vec<&str> = regions.names().collect();
        for seed in 0..60 {
            let input = synthetic(seed, 3 + (seed % 5) as usize);
            let values = task.offline(&input).expect("offline");
            assert_eq!(
                values,
                task.offline(&input).expect("again"),
                "deterministic"
            );
            let records: Vec<QaRecord> = values
                .into_iter()
                .map(|v| serde_json::from_value(v).expect("record"))
                .collect();
            let count = |kind| records.iter().filter(|r| r.question_type == kind).count();
            assert_eq!(QuestionType::ALL.map(count), [3, 2, 3, 3], "{input}");
            let mut contents: Vec<ContentType> = records.iter().map(|r| r.content_type).collect();
            contents.sort_unstable();
            contents.dedup();
            assert_eq!(contents.len(), 7, "{records:#?}");
            let (width, height) = (
                input["width"].as_f64().expect("w") as f32,
                input["height"].as_f64().expect("h") as f32,
            );
            for record in &records {
                assert_eq!(
                    check_choices(
                        record.question_type.as_str(),
                        &record.choices,
                        &record.answer
                    ),
                    None
                );
                assert!(banned_terms(&record.question).is_empty(), "{record:?}");
                assert!(banned_terms(&record.answer).is_empty(), "{record:?}");
                assert!(!record.regions.is_empty());
                assert!(record.regions.iter().all(|r| names.contains(&r.as_str())));
                assert!(!record.location.is_empty(), "{record:?}");
                for (bbox, framed) in record.location.iter().zip(&record.location_224) {
                    assert!(
                        bbox[0] >= 0.0 && bbox[1] >= 0.0 && bbox[2] <= width && bbox[3] <= height
                    );
                    assert!(
                        framed.iter().all(|v| (0.0..=224.0).contains(v)),
                        "{framed:?}"
                    );
                }
            }
            // The checks of an LLM answer accept them.
            let answer = json!({ "questions": records });
            assert_eq!(task.check(&input, &answer).expect("valid").len(), 11);
        }
    }

    #[test]
    fn offline_uses_the_report() {
        let task = task();
        let records: Vec<QaRecord> = task
            .offline(&input(&REPORT))
            .expect("offline")
            .into_iter()
            .map(|v| serde_json::from_value(v).expect("record"))
            .collect();
        assert_eq!(
            records[0].question,
            "What abnormality is seen in the left lower lung zone?"
        );
        assert_eq!(records[0].answer, "Pleural effusion.");
        assert_eq!(records[1].question, "Where is the cardiomegaly located?");
        assert_eq!(records[1].answer, "Cardiac silhouette.");
        let size = &records[7];
        assert_eq!(size.question, "What is the size of the pleural effusion?");
        let letter = size.answer_letters[0].as_bytes()[0] - b'A';
        assert_eq!(
            size.choices[letter as usize],
            format!("{}: Small", size.answer)
        );
    }

    #[test]
    fn reports_with_fewer_than_three_sentences_give_nothing() {
        let task = task();
        assert!(
            task.offline(&input(&REPORT[..2]))
                .expect("offline")
                .is_empty()
        );
        assert!(task.offline(&synthetic(7, 2)).expect("offline").is_empty());
        // Sentences off the vocabulary do not count.
        let mut sentences = REPORT[..2].to_vec();
        sentences.push(("Something.", "left kidney"));
        assert!(
            task.offline(&input(&sentences))
                .expect("offline")
                .is_empty()
        );
    }

    #[test]
    fn single_choice_answer_positions_are_balanced() {
        let task = task();
        let mut letters = [0usize; 4];
        for seed in 0..400 {
            for record in task
                .offline(&synthetic(seed, 3 + (seed % 6) as usize))
                .expect("offline")
            {
                let record: QaRecord = serde_json::from_value(record).expect("record");
                if record.question_type == QuestionType::SingleChoice {
                    letters[(record.answer.as_bytes()[0] - b'A') as usize] += 1;
                }
            }
        }
        let total: usize = letters.iter().sum();
        assert_eq!(total, 1200);
        for count in letters {
            let share = count as f64 / total as f64;
            assert!((0.15..=0.35).contains(&share), "{letters:?}");
        }
    }
}
