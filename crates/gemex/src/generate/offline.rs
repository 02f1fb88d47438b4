//! The offline QA generator: 11 deterministic questions per image from its re-grounded
//! sentences and the study's facts, in fixed slots that cover the 7 content categories.
//!
//! ```text
//!  slot  type           content       from
//!   0    open-ended     abnormality   an abnormal sentence ("What abnormality is seen in …?")
//!   1    open-ended     location      an abnormal sentence ("Where is the … located?")
//!   2    open-ended     implication   an abnormal sentence and a short implication table
//!   3    closed-ended   disease       a positive or negated finding ("Is there any …?")
//!   4    closed-ended   abnormality   a sentence's region ("Does the … appear normal?")
//!   5    single-choice  location      the region of a finding; distractors: regions elsewhere
//!   6    single-choice  severity      mild / moderate / severe / absent
//!   7    single-choice  size          small / moderate / large / absent, or the heart's size
//!   8    multi-choice   abnormality   the findings present; distractors: findings not reported
//!   9    multi-choice   location      the regions with findings (or the regions reported)
//!  10    multi-choice   cause         two causes of a finding and two unrelated conditions
//! ```
//!
//! Each slot keeps the first of its candidates that passes the task's checks and has a box on
//! the image (else the first that passes); the last candidate is a fixed question from general
//! radiology knowledge (table 9's effusion rule, where the heart is), so every slot is filled.
//! A sentence's finding is the fact whose summary sentence it is (or whose finding it names),
//! else the first finding of a small lexicon it names; negated when "no", "without", … come
//! shortly before. A region is "normal" only when its sentence reads as normal and no sentence
//! with a finding concerns an overlapping region. The correct option's position in a
//! single-choice question, the order of a multi-choice question's options and which closed
//! question is asked come from a hash of (image id, slot), so answer letters are balanced over
//! images.

use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use super::{Image, QaRecord};
use crate::regions::{Footprint, Regions};
use crate::{capitalize, find_phrase, words};

/// Findings recognised in sentences without facts: name, phrases.
const FINDINGS: &[(&str, &[&str])] = &[
    (
        "pleural effusion",
        &[
            "pleural effusion",
            "pleural effusions",
            "effusion",
            "effusions",
            "pleural fluid",
        ],
    ),
    ("pneumothorax", &["pneumothorax", "pneumothoraces"]),
    ("consolidation", &["consolidation", "consolidations"]),
    ("atelectasis", &["atelectasis", "atelectatic", "collapse"]),
    (
        "pulmonary edema",
        &["pulmonary edema", "interstitial edema", "edema"],
    ),
    ("pneumonia", &["pneumonia", "infection"]),
    (
        "cardiomegaly",
        &[
            "cardiomegaly",
            "enlarged heart",
            "heart is enlarged",
            "heart is mildly enlarged",
            "heart is moderately enlarged",
            "heart size is enlarged",
            "heart size is mildly enlarged",
            "heart size is moderately enlarged",
            "cardiac silhouette is enlarged",
        ],
    ),
    ("lung opacity", &["opacity", "opacities", "opacification"]),
    ("lung nodule", &["nodule", "nodules"]),
    ("rib fracture", &["fracture", "fractures"]),
    (
        "emphysema",
        &["emphysema", "hyperinflation", "hyperinflated"],
    ),
    ("pleural thickening", &["pleural thickening"]),
    (
        "vascular congestion",
        &["vascular congestion", "venous congestion", "congestion"],
    ),
    ("hiatal hernia", &["hiatal hernia", "hernia"]),
    (
        "mediastinal widening",
        &[
            "mediastinal widening",
            "widened mediastinum",
            "widening of the mediastinum",
        ],
    ),
];

/// Short implications of findings (open-ended implication questions).
const IMPLICATIONS: &[(&str, &str)] = &[
    (
        "pleural effusion",
        "Fluid in the pleural space, as in heart failure or infection.",
    ),
    (
        "pneumothorax",
        "Air in the pleural space that can collapse the lung.",
    ),
    ("consolidation", "Airspace filling, as in pneumonia."),
    ("atelectasis", "Partial collapse of lung tissue."),
    ("pulmonary edema", "Fluid overload, as in heart failure."),
    ("pneumonia", "An infection of the lung."),
    (
        "cardiomegaly",
        "An enlarged heart, as in heart failure or cardiomyopathy.",
    ),
    (
        "lung opacity",
        "Airspace or interstitial disease, such as infection or atelectasis.",
    ),
    (
        "lung nodule",
        "A focal lesion that may need further imaging.",
    ),
    ("rib fracture", "Trauma to the chest wall."),
    ("emphysema", "Chronic obstructive lung disease."),
    (
        "vascular congestion",
        "Raised pulmonary venous pressure, as in heart failure.",
    ),
];

/// Two causes and two unrelated conditions of findings (multi-choice cause questions).
const CAUSES: &[(&str, [&str; 2], [&str; 2])] = &[
    (
        "pleural effusion",
        ["Heart failure", "Pneumonia"],
        ["Osteoporosis", "Anemia"],
    ),
    (
        "pulmonary edema",
        ["Heart failure", "Fluid overload"],
        ["Osteoporosis", "Scoliosis"],
    ),
    (
        "cardiomegaly",
        ["Heart failure", "Valvular heart disease"],
        ["Osteoporosis", "Asthma"],
    ),
    (
        "atelectasis",
        ["Airway obstruction", "Shallow breathing"],
        ["Osteoporosis", "Anemia"],
    ),
    (
        "consolidation",
        ["Pneumonia", "Aspiration"],
        ["Osteoporosis", "Anemia"],
    ),
    (
        "pneumonia",
        ["Bacterial infection", "Aspiration"],
        ["Osteoporosis", "Anemia"],
    ),
    (
        "pneumothorax",
        ["Chest trauma", "Ruptured bleb"],
        ["Heart failure", "Anemia"],
    ),
    (
        "vascular congestion",
        ["Heart failure", "Fluid overload"],
        ["Osteoporosis", "Asthma"],
    ),
];

const NEGATIONS: &[&str] = &["no", "without", "not", "negative", "free", "nor", "absent"];
const NORMAL: &[&str] = &["normal", "clear", "unremarkable", "intact", "no", "without"];
const SEVERITY: &[(&str, &[&str])] = &[
    ("Mild", &["mild", "mildly", "minimal", "slight", "slightly"]),
    ("Moderate", &["moderate", "moderately"]),
    (
        "Severe",
        &["severe", "severely", "marked", "markedly", "extensive"],
    ),
];
const SIZE: &[(&str, &[&str])] = &[
    ("Small", &["small", "tiny", "trace"]),
    ("Moderate", &["moderate"]),
    ("Large", &["large", "substantial", "massive"]),
];
const HEART_SIZES: [&str; 4] = [
    "Normal",
    "Mildly enlarged",
    "Moderately enlarged",
    "Severely enlarged",
];

/// One sentence of the report with what the generator knows about it.
#[derive(Debug)]
struct Subject<'a> {
    sentence: &'a str,
    region: &'a str,
    /// Its finding, lower case.
    label: Option<String>,
    /// Whether the finding is present.
    positive: bool,
    /// Mild, Moderate or Severe.
    severity: Option<&'static str>,
    /// Small, Moderate or Large.
    size: Option<&'static str>,
    /// Whether the sentence reads as normal ("normal", "clear", "no …").
    normal: bool,
}

impl Subject<'_> {
    fn abnormal(&self) -> bool {
        self.label.is_some() && self.positive
    }

    fn label(&self) -> &str {
        self.label.as_deref().unwrap_or_default()
    }
}

/// A sentence normalised for comparison: lower-case words.
fn same_sentence(a: &str, b: &str) -> bool {
    let (a, b) = (words(a), words(b));
    !a.is_empty() && a == b
}

/// Whether the words shortly before `at` negate it.
fn negated(sentence_words: &[String], at: usize) -> bool {
    let before = &sentence_words[at.saturating_sub(6)..at];
    match before.iter().rposition(|w| NEGATIONS.contains(&w.as_str())) {
        Some(negation) => !before[negation..]
            .iter()
            .any(|w| matches!(w.as_str(), "but" | "however")),
        None => false,
    }
}

/// The first word class of `table` among `sentence_words`.
fn grade(table: &[(&'static str, &[&str])], sentence_words: &[String]) -> Option<&'static str> {
    table
        .iter()
        .find(|(_, terms)| sentence_words.iter().any(|w| terms.contains(&w.as_str())))
        .map(|(grade, _)| *grade)
}

/// The lexicon finding `sentence_words` names first, with its position.
fn lexicon_finding(sentence_words: &[String]) -> Option<(&'static str, usize)> {
    FINDINGS
        .iter()
        .filter_map(|(name, terms)| {
            terms
                .iter()
                .filter_map(|term| find_phrase(sentence_words, term))
                .min()
                .map(|at| (at, *name))
        })
        .min()
        .map(|(at, name)| (name, at))
}

/// A finding usable in a question: short, lower case, without banned words.
fn clean_label(finding: &str) -> Option<String> {
    let label = finding.trim().to_lowercase();
    let count = label.split_whitespace().count();
    (count > 0 && count <= 6 && cxrlake_generate::lint::banned_terms(&label).is_empty())
        .then_some(label)
}

/// The report's sentences as subjects.
fn subjects(image: &Image) -> Vec<Subject<'_>> {
    image
        .sentences
        .iter()
        .map(|(sentence, region)| {
            let sentence_words = words(sentence);
            let fact = image
                .facts
                .iter()
                .find(|fact| same_sentence(&fact.sentence, sentence))
                .or_else(|| {
                    image.facts.iter().find(|fact| {
                        let finding = words(&fact.finding).join(" ");
                        !finding.is_empty() && find_phrase(&sentence_words, &finding).is_some()
                    })
                });
            let (label, positive, mut graded) = match fact {
                Some(fact) => (
                    clean_label(&fact.finding),
                    fact.positiveness.eq_ignore_ascii_case("pos"),
                    words(&fact.severity),
                ),
                None => match lexicon_finding(&sentence_words) {
                    Some((name, at)) => (
                        Some(name.to_string()),
                        !negated(&sentence_words, at),
                        Vec::new(),
                    ),
                    None => (None, false, Vec::new()),
                },
            };
            graded.extend(sentence_words.iter().cloned());
            let positive = positive && label.is_some();
            Subject {
                sentence,
                region,
                label,
                positive,
                severity: positive.then(|| grade(SEVERITY, &graded)).flatten(),
                size: positive.then(|| grade(SIZE, &graded)).flatten(),
                normal: !positive && sentence_words.iter().any(|w| NORMAL.contains(&w.as_str())),
            }
        })
        .collect()
}

/// A number from (image id, slot), the same on every run.
fn slot_hash(image_id: &str, slot: usize) -> u64 {
    let digest = Sha256::digest(format!("{image_id}/{slot}").as_bytes());
    let mut bytes = [0u8; 8];
    bytes.copy_from_slice(&digest[..8]);
    u64::from_le_bytes(bytes)
}

/// `items` shuffled by `seed` (Fisher–Yates over a xorshift sequence).
fn shuffle<T>(items: &mut [T], seed: u64) {
    let mut state = seed | 1;
    for i in (1..items.len()).rev() {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        items.swap(i, (state % (i as u64 + 1)) as usize);
    }
}

/// Options labelled `A: …` … `D: …`.
fn labelled(options: &[String]) -> Vec<String> {
    options
        .iter()
        .zip(['A', 'B', 'C', 'D'])
        .map(|(option, letter)| format!("{letter}: {option}"))
        .collect()
}

/// Four options with `correct` at `position` (0–3) and the first three distractors around it,
/// and the answer letter; `None` with fewer than three distractors.
fn single(correct: &str, distractors: &[String], position: usize) -> Option<(Vec<String>, String)> {
    let mut options: Vec<String> = distractors
        .iter()
        .filter(|d| !d.eq_ignore_ascii_case(correct))
        .take(3)
        .cloned()
        .collect();
    if options.len() < 3 {
        return None;
    }
    let position = position % 4;
    options.insert(position, correct.to_string());
    let letter = ['A', 'B', 'C', 'D'][position];
    Some((labelled(&options), letter.to_string()))
}

/// Four options: the correct ones (one to three) and distractors, shuffled by `seed`, and the
/// answer letters `B, C`; `None` without enough options.
fn multi(correct: &[String], distractors: &[String], seed: u64) -> Option<(Vec<String>, String)> {
    let correct: Vec<&String> = correct.iter().take(3).collect();
    if correct.is_empty() {
        return None;
    }
    let mut options: Vec<(&String, bool)> = correct.iter().map(|c| (*c, true)).collect();
    for distractor in distractors {
        if options.len() == 4 {
            break;
        }
        if !options
            .iter()
            .any(|(o, _)| o.eq_ignore_ascii_case(distractor))
        {
            options.push((distractor, false));
        }
    }
    if options.len() < 4 {
        return None;
    }
    shuffle(&mut options, seed);
    let texts: Vec<String> = options.iter().map(|(o, _)| o.to_string()).collect();
    let letters: Vec<String> = options
        .iter()
        .zip(['A', 'B', 'C', 'D'])
        .filter(|((_, right), _)| *right)
        .map(|(_, letter)| letter.to_string())
        .collect();
    Some((labelled(&texts), letters.join(", ")))
}

/// A question as the LLM would answer it.
fn question(
    (question_type, content_type): (&str, &str),
    text: &str,
    (choices, answer): (Vec<String>, String),
    reason: &str,
    regions: &[&str],
) -> Value {
    json!({
        "question_type": question_type,
        "content_type": content_type,
        "question": text,
        "choices": choices,
        "answer": answer,
        "reason": reason,
        "regions": regions,
    })
}

/// The generator over one image.
struct Generator<'a> {
    image: &'a Image,
    regions: &'a Regions,
    subjects: Vec<Subject<'a>>,
}

impl<'a> Generator<'a> {
    fn abnormal(&self) -> Vec<&Subject<'a>> {
        self.subjects.iter().filter(|s| s.abnormal()).collect()
    }

    fn negative(&self) -> Vec<&Subject<'a>> {
        self.subjects
            .iter()
            .filter(|s| s.label.is_some() && !s.positive)
            .collect()
    }

    /// Whether `subject` reads as normal and no sentence with a finding (or an unlabelled,
    /// not normal one) concerns an overlapping region.
    fn clear(&self, subject: &Subject<'_>) -> bool {
        let footprint = Footprint::of(subject.region);
        subject.normal
            && !self.subjects.iter().any(|other| {
                (other.abnormal() || other.label.is_none() && !other.normal)
                    && Footprint::of(other.region).overlaps(&footprint)
            })
    }

    fn hash(&self, slot: usize) -> u64 {
        slot_hash(&self.image.image_id, slot)
    }

    /// Regions of the 30 away from `avoid` and from every region of the report, rotated by
    /// `seed`, capitalised.
    fn region_distractors(&self, avoid: &[&str], seed: u64) -> Vec<String> {
        let avoid: Vec<Footprint> = avoid
            .iter()
            .copied()
            .chain(self.subjects.iter().map(|s| s.region))
            .map(Footprint::of)
            .collect();
        let mut pool: Vec<&str> = self
            .regions
            .names()
            .filter(|name| !avoid.iter().any(|a| a.overlaps(&Footprint::of(name))))
            .collect();
        if !pool.is_empty() {
            let turn = (seed % pool.len() as u64) as usize;
            pool.rotate_left(turn);
        }
        pool.into_iter().map(region_label).collect()
    }

    /// Lexicon findings the report does not name (nor the facts' labels), rotated by `seed`,
    /// capitalised.
    fn finding_distractors(&self, seed: u64) -> Vec<String> {
        let report: Vec<Vec<String>> = self.subjects.iter().map(|s| words(s.sentence)).collect();
        let mut pool: Vec<&str> = FINDINGS
            .iter()
            .filter(|(name, terms)| {
                !self.subjects.iter().any(|s| s.label() == *name)
                    && !terms
                        .iter()
                        .any(|term| report.iter().any(|w| find_phrase(w, term).is_some()))
            })
            .map(|(name, _)| *name)
            .collect();
        if !pool.is_empty() {
            let turn = (seed % pool.len() as u64) as usize;
            pool.rotate_left(turn);
        }
        pool.into_iter().map(capitalize).collect()
    }

    /// The candidates of slot `slot`, best first, the fixed question last.
    fn candidates(&self, slot: usize) -> Vec<Value> {
        let abnormal = self.abnormal();
        let negative = self.negative();
        let h = self.hash(slot);
        let mut out = Vec::new();
        match slot {
            0 => {
                let kind = ("open-ended", "abnormality");
                for s in &abnormal {
                    out.push(question(
                        kind,
                        &format!("What abnormality is seen in the {}?", s.region),
                        (Vec::new(), format!("{}.", capitalize(s.label()))),
                        s.sentence,
                        &[s.region],
                    ));
                }
                for s in self.subjects.iter().filter(|s| self.clear(s)) {
                    out.push(question(
                        kind,
                        &format!("What abnormality is seen in the {}?", s.region),
                        (Vec::new(), "No abnormality is seen.".into()),
                        s.sentence,
                        &[s.region],
                    ));
                }
                out.push(question(
                    kind,
                    "Which abnormality blunts a costophrenic angle on a frontal chest X-ray?",
                    (Vec::new(), "A pleural effusion.".into()),
                    "Fluid in the pleural space collects at the lung base first and fills the \
                     costophrenic angle.",
                    &["bilateral lower lung zone"],
                ));
            }
            1 => {
                for s in abnormal.iter().skip(1).chain(abnormal.first()) {
                    out.push(question(
                        ("open-ended", "location"),
                        &format!("Where is the {} located?", s.label()),
                        (Vec::new(), format!("{}.", region_label(s.region))),
                        &format!("{} This is seen in the {}.", s.sentence, s.region),
                        &[s.region],
                    ));
                }
                out.push(question(
                    ("open-ended", "location"),
                    "Where does a small pleural effusion usually appear on a frontal chest X-ray?",
                    (Vec::new(), "In the lower lung zone.".into()),
                    "A small pleural effusion collects at the dependent lung base, in the lower \
                     lung zone, and blunts the costophrenic angle.",
                    &["bilateral lower lung zone"],
                ));
            }
            2 => {
                for s in abnormal.iter().skip(2).chain(&abnormal) {
                    if let Some((_, implication)) =
                        IMPLICATIONS.iter().find(|(l, _)| *l == s.label())
                    {
                        out.push(question(
                            ("open-ended", "implication"),
                            &format!("What does the {} in the {} suggest?", s.label(), s.region),
                            (Vec::new(), implication.to_string()),
                            &format!(
                                "{} {} suggests {}",
                                s.sentence,
                                capitalize(s.label()),
                                lower_first(implication)
                            ),
                            &[s.region],
                        ));
                    }
                }
                if abnormal.is_empty() {
                    for s in self
                        .subjects
                        .iter()
                        .filter(|s| s.normal && s.region == "bilateral lung")
                    {
                        out.push(question(
                            ("open-ended", "implication"),
                            "What does the appearance of the lungs suggest?",
                            (Vec::new(), "No acute lung disease.".into()),
                            s.sentence,
                            &[s.region],
                        ));
                    }
                }
                out.push(question(
                    ("open-ended", "implication"),
                    "What does blunting of a costophrenic angle usually suggest?",
                    (Vec::new(), "A small pleural effusion.".into()),
                    "Pleural fluid fills the costophrenic angle first, so a blunted angle is the \
                     earliest sign of a small effusion on a frontal view.",
                    &["bilateral lower lung zone"],
                ));
            }
            3 => {
                let yes = abnormal.first().map(|s| (s, "Yes"));
                let no = negative.first().map(|s| (s, "No"));
                let ordered = if h.is_multiple_of(2) {
                    [yes, no]
                } else {
                    [no, yes]
                };
                for (s, answer) in ordered.into_iter().flatten() {
                    out.push(question(
                        ("closed-ended", "disease"),
                        &format!("Is there any {} in this CXR?", s.label()),
                        (Vec::new(), answer.into()),
                        s.sentence,
                        &[s.region],
                    ));
                }
                for s in self.rotated(h) {
                    out.push(question(
                        ("closed-ended", "disease"),
                        &format!("Is there any disease in the {}?", s.region),
                        (
                            Vec::new(),
                            (if self.clear(s) { "No" } else { "Yes" }).into(),
                        ),
                        s.sentence,
                        &[s.region],
                    ));
                }
            }
            4 => {
                for s in self.rotated(h) {
                    let answer = if self.clear(s) { "Yes" } else { "No" };
                    out.push(question(
                        ("closed-ended", "abnormality"),
                        &format!("Does the {} appear normal in this CXR?", s.region),
                        (Vec::new(), answer.into()),
                        s.sentence,
                        &[s.region],
                    ));
                }
            }
            5 => {
                let position = (h % 4) as usize;
                for s in abnormal.iter().chain(&negative) {
                    let text = if s.positive {
                        format!("Which region shows the {}?", s.label())
                    } else {
                        format!("Which region is checked for {} in this CXR?", s.label())
                    };
                    let distractors = self.region_distractors(&[s.region], h);
                    if let Some(options) = single(&region_label(s.region), &distractors, position) {
                        out.push(question(
                            ("single-choice", "location"),
                            &text,
                            options,
                            s.sentence,
                            &[s.region],
                        ));
                    }
                }
                let distractors =
                    ["Right upper lung zone", "Trachea", "Left hemidiaphragm"].map(String::from);
                if let Some(options) = single("Cardiac silhouette", &distractors, position) {
                    out.push(question(
                        ("single-choice", "location"),
                        "Which region holds the heart on a frontal chest X-ray?",
                        options,
                        "The heart projects over the cardiac silhouette in the middle of the chest.",
                        &["cardiac silhouette"],
                    ));
                }
            }
            6 => {
                let position = (h % 4) as usize;
                let scale = ["Mild", "Moderate", "Severe", "Absent"];
                let others = |correct: &str| -> Vec<String> {
                    scale
                        .iter()
                        .filter(|g| **g != correct)
                        .map(|g| g.to_string())
                        .collect()
                };
                for s in &abnormal {
                    if let Some(severity) = s.severity
                        && let Some(options) = single(severity, &others(severity), position)
                    {
                        out.push(question(
                            ("single-choice", "severity"),
                            &format!("How severe is the {}?", s.label()),
                            options,
                            s.sentence,
                            &[s.region],
                        ));
                    }
                }
                if let Some(options) = single("Severe", &others("Severe"), position) {
                    out.push(question(
                        ("single-choice", "severity"),
                        "How severe is a pleural effusion that fills a whole lung?",
                        options,
                        "A large pleural effusion can occupy the entire lung, which makes it \
                         severe.",
                        &["bilateral lung"],
                    ));
                }
            }
            7 => {
                let position = (h % 4) as usize;
                let scale = ["Small", "Moderate", "Large", "Absent"];
                let others = |correct: &str| -> Vec<String> {
                    scale
                        .iter()
                        .filter(|g| **g != correct)
                        .map(|g| g.to_string())
                        .collect()
                };
                for s in &abnormal {
                    if let Some(size) = s.size
                        && s.region != "cardiac silhouette"
                        && let Some(options) = single(size, &others(size), position)
                    {
                        out.push(question(
                            ("single-choice", "size"),
                            &format!("What is the size of the {}?", s.label()),
                            options,
                            s.sentence,
                            &[s.region],
                        ));
                    }
                }
                for s in self
                    .subjects
                    .iter()
                    .filter(|s| s.region == "cardiac silhouette")
                {
                    let correct = match (s.abnormal(), s.severity) {
                        (true, Some("Mild")) => HEART_SIZES[1],
                        (true, Some("Moderate")) => HEART_SIZES[2],
                        (true, Some("Severe")) => HEART_SIZES[3],
                        (false, _) if s.normal => HEART_SIZES[0],
                        _ => continue,
                    };
                    let others: Vec<String> = HEART_SIZES
                        .iter()
                        .filter(|size| **size != correct)
                        .map(|size| size.to_string())
                        .collect();
                    if let Some(options) = single(correct, &others, position) {
                        out.push(question(
                            ("single-choice", "size"),
                            "What is the size of the heart in this CXR?",
                            options,
                            s.sentence,
                            &[s.region],
                        ));
                    }
                }
                if let Some(options) = single("Moderate", &others("Moderate"), position) {
                    out.push(question(
                        ("single-choice", "size"),
                        "What size is a pleural effusion that fills the mid-to-lower lung zone?",
                        options,
                        "A moderate pleural effusion reaches the mid-to-lower lung zone; a small \
                         one stays in the lower zone and a large one can fill the lung.",
                        &["bilateral mid-to-lower lung zone"],
                    ));
                }
            }
            8 => {
                let mut present: Vec<&Subject<'_>> = Vec::new();
                for s in &abnormal {
                    if !present.iter().any(|p| p.label == s.label) {
                        present.push(s);
                    }
                }
                present.truncate(3);
                let correct: Vec<String> = present.iter().map(|s| capitalize(s.label())).collect();
                if let Some(options) = multi(&correct, &self.finding_distractors(h), h) {
                    out.push(question(
                        ("multi-choice", "abnormality"),
                        "Which findings are present in this CXR?",
                        options,
                        &present
                            .iter()
                            .map(|s| s.sentence)
                            .collect::<Vec<_>>()
                            .join(" "),
                        &distinct(present.iter().map(|s| s.region)),
                    ));
                }
                let correct = ["Blunted costophrenic angle", "Meniscus sign"].map(String::from);
                let distractors =
                    ["Sharp costophrenic angles", "Absent lung markings"].map(String::from);
                if let Some(options) = multi(&correct, &distractors, h) {
                    out.push(question(
                        ("multi-choice", "abnormality"),
                        "Which signs suggest a pleural effusion on a frontal chest X-ray?",
                        options,
                        "Pleural fluid blunts the costophrenic angle and climbs the lateral chest \
                         wall as a meniscus; sharp angles and absent lung markings do not suggest \
                         it.",
                        &["bilateral lower lung zone"],
                    ));
                }
            }
            9 => {
                let (text, chosen): (&str, Vec<&Subject<'_>>) = if abnormal.is_empty() {
                    (
                        "Which regions are assessed in this CXR?",
                        self.subjects.iter().collect(),
                    )
                } else {
                    (
                        "Which regions show abnormal findings in this CXR?",
                        abnormal.clone(),
                    )
                };
                let mut correct_regions = distinct(chosen.iter().map(|s| s.region));
                correct_regions.truncate(3);
                let correct: Vec<String> =
                    correct_regions.iter().map(|r| region_label(r)).collect();
                let distractors = self.region_distractors(&correct_regions, h);
                if let Some(options) = multi(&correct, &distractors, h) {
                    let reason: Vec<&str> = chosen
                        .iter()
                        .filter(|s| correct_regions.contains(&s.region))
                        .map(|s| s.sentence)
                        .collect();
                    out.push(question(
                        ("multi-choice", "location"),
                        text,
                        options,
                        &reason.join(" "),
                        &correct_regions,
                    ));
                }
            }
            _ => {
                for s in &abnormal {
                    if let Some((_, causes, unrelated)) =
                        CAUSES.iter().find(|(l, _, _)| *l == s.label())
                    {
                        let correct = causes.map(String::from);
                        if let Some(options) = multi(&correct, &unrelated.map(String::from), h) {
                            out.push(question(
                                ("multi-choice", "cause"),
                                &format!("Which conditions can cause the {}?", s.label()),
                                options,
                                &format!(
                                    "{} {} and {} are common causes of {}.",
                                    s.sentence,
                                    causes[0],
                                    causes[1].to_lowercase(),
                                    s.label()
                                ),
                                &[s.region],
                            ));
                        }
                    }
                }
                let correct = ["Heart failure", "Pneumonia"].map(String::from);
                let unrelated = ["Osteoporosis", "Anemia"].map(String::from);
                if let Some(options) = multi(&correct, &unrelated, h) {
                    out.push(question(
                        ("multi-choice", "cause"),
                        "Which conditions can cause a pleural effusion?",
                        options,
                        "Heart failure and pneumonia are common causes of pleural effusion; \
                         osteoporosis and anemia are not.",
                        &["bilateral lower lung zone"],
                    ));
                }
            }
        }
        out
    }

    /// The subjects starting at one chosen by `seed`.
    fn rotated(&self, seed: u64) -> Vec<&Subject<'a>> {
        let mut all: Vec<&Subject<'a>> = self.subjects.iter().collect();
        if !all.is_empty() {
            let turn = (seed % all.len() as u64) as usize;
            all.rotate_left(turn);
        }
        all
    }
}

/// A region name as an option or answer: capitalised, abbreviations in upper case (`SVC`).
fn region_label(name: &str) -> String {
    if name.chars().count() <= 3 {
        name.to_uppercase()
    } else {
        capitalize(name)
    }
}

/// `text` with its first letter in lower case.
fn lower_first(text: &str) -> String {
    let mut chars = text.chars();
    match chars.next() {
        Some(first) => first.to_lowercase().chain(chars).collect(),
        None => String::new(),
    }
}

/// The distinct items, in order.
fn distinct<'s>(items: impl Iterator<Item = &'s str>) -> Vec<&'s str> {
    let mut out: Vec<&str> = Vec::new();
    for item in items {
        if !out.contains(&item) {
            out.push(item);
        }
    }
    out
}

/// The number of slots: 3 open-ended, 2 closed-ended, 3 single-choice, 3 multi-choice.
pub(super) const SLOTS: usize = 11;

/// The 11 questions of one image (answers as an LLM would give them): per slot the first
/// candidate that `record` accepts and whose regions have a box on the image, else the first
/// it accepts.
pub(super) fn questions(
    image: &Image,
    regions: &Regions,
    record: impl Fn(&Value) -> Result<QaRecord, String>,
) -> Result<Vec<Value>, String> {
    let generator = Generator {
        image,
        regions,
        subjects: subjects(image),
    };
    (0..SLOTS)
        .map(|slot| {
            let valid: Vec<(Value, bool)> = generator
                .candidates(slot)
                .into_iter()
                .filter_map(|candidate| {
                    let boxed = !record(&candidate).ok()?.location.is_empty();
                    Some((candidate, boxed))
                })
                .collect();
            let boxed = valid.iter().position(|(_, boxed)| *boxed).unwrap_or(0);
            valid
                .into_iter()
                .nth(boxed)
                .map(|(candidate, _)| candidate)
                .ok_or_else(|| {
                    format!(
                        "offline generator: no valid question for slot {slot} (the region table \
                         lacks a region its fixed questions use?)"
                    )
                })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn single_places_the_answer_and_multi_shuffles() {
        let distractors = ["B1", "B2", "B3", "B4"].map(String::from);
        for position in 0..4 {
            let (choices, letter) = single("Right", &distractors, position).expect("single");
            assert_eq!(choices.len(), 4);
            let index = (letter.as_bytes()[0] - b'A') as usize;
            assert_eq!(index, position);
            assert!(choices[index].ends_with("Right"));
        }
        assert!(single("x", &distractors[..2], 0).is_none());
        assert!(single("B1", &["B1", "b2", "b3"].map(String::from), 0).is_none());
        let correct = ["X", "Y"].map(String::from);
        let mut letters = std::collections::BTreeSet::new();
        for seed in 0..40 {
            let (choices, answer) =
                multi(&correct, &distractors, slot_hash("i", seed)).expect("multi");
            assert_eq!(choices.len(), 4);
            letters.insert(answer);
        }
        assert!(letters.len() > 3, "{letters:?}");
    }

    #[test]
    fn lexicon_findings_and_negation() {
        let w = words("No focal consolidation, effusion or pneumothorax.");
        let (name, at) = lexicon_finding(&w).expect("finding");
        assert_eq!(name, "consolidation");
        assert!(negated(&w, at));
        let w = words("Small left pleural effusion.");
        let (name, at) = lexicon_finding(&w).expect("finding");
        assert_eq!(name, "pleural effusion");
        assert!(!negated(&w, at));
        let w = words("No pneumothorax but there is a small effusion.");
        assert!(!negated(&w, find_phrase(&w, "effusion").expect("effusion")));
        assert_eq!(
            clean_label(" Pleural Effusion "),
            Some("pleural effusion".into())
        );
        assert_eq!(clean_label("new opacity"), None);
        assert_eq!(clean_label(""), None);
    }
}
