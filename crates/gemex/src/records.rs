//! The records of the GEMeX exports: one GEMeX JSON record per question (the fields of paper
//! 004, section 4.3), and one LLaVA conversation per question with the question-type-aware
//! system prompt of the paper's fine-tuning (table 3, tables 11–14).
//!
//! ```text
//!  system:  <LLaVA system prompt> Input a {type} question, and the assistant will output its
//!           answer {supplement} with a detailed reason and corresponding visual location.
//!  human:   <image>\n{question} <choices>: [A: …, B: …, C: …, D: …]
//!  gpt:     <answer>{answer} <reason>{reason} <location>[[x1, y1, x2, y2], …]
//! ```
//!
//! Locations are given in Chest ImaGenome's 224 × 224 frame, rounded to whole pixels, as in the
//! paper's examples; the GEMeX record also keeps them in original pixels. Answers are written as
//! in the paper's samples: open-ended as generated, closed-ended `Yes.`/`No.`, single-choice
//! the letter (`D`), multi-choice the letters in brackets (`[B, C]`).

use serde_json::{Value, json};

use crate::generate::{QaRecord, QuestionType};

/// LLaVA's original system prompt (`<Ori_System_Prompt>` of table 3), with the ASCII apostrophe
/// of LLaVA's code (the paper typesets it as ’).
pub const ORIGINAL_SYSTEM_PROMPT: &str = "A chat between a curious human and an artificial \
     intelligence assistant. The assistant gives helpful, detailed, and polite answers to the \
     human's questions.";

/// The type prompt `X_Type` of table 3: "Input a {Type} question, and the assistant will output
/// its answer {Supplement} with a detailed reason and corresponding visual location."
pub fn type_prompt(question_type: QuestionType) -> &'static str {
    match question_type {
        QuestionType::OpenEnded => {
            "Input an open-ended question, and the assistant will output its answer with a \
             detailed reason and corresponding visual location."
        }
        QuestionType::ClosedEnded => {
            "Input a closed-ended question, and the assistant will output its answer (yes or no) \
             with a detailed reason and corresponding visual location."
        }
        QuestionType::SingleChoice => {
            "Input a single-choice question, and the assistant will output its answer (an \
             option) with a detailed reason and corresponding visual location."
        }
        QuestionType::MultiChoice => {
            "Input a multi-choice question, and the assistant will output its answer (some \
             options) with a detailed reason and corresponding visual location."
        }
    }
}

/// The system prompt of a question: LLaVA's original one and the type prompt.
pub fn system_prompt(question_type: QuestionType) -> String {
    format!("{ORIGINAL_SYSTEM_PROMPT} {}", type_prompt(question_type))
}

/// The answer as the paper writes it: open-ended as generated, `Yes.`/`No.`, `D`, `[B, C]`.
pub fn answer_text(record: &QaRecord) -> String {
    let letters = || {
        if record.answer_letters.is_empty() {
            record.answer.clone()
        } else {
            record.answer_letters.join(", ")
        }
    };
    match record.question_type {
        QuestionType::OpenEnded => record.answer.clone(),
        QuestionType::ClosedEnded => {
            let yes = record
                .answer
                .trim()
                .trim_end_matches(['.', '!'])
                .eq_ignore_ascii_case("yes");
            (if yes { "Yes." } else { "No." }).to_string()
        }
        QuestionType::SingleChoice => letters(),
        QuestionType::MultiChoice => format!("[{}]", letters()),
    }
}

/// Boxes rounded to whole pixels: `[[126, 110, 203, 167]]`.
pub fn location_text(boxes: &[[f32; 4]]) -> String {
    let boxes: Vec<String> = boxes
        .iter()
        .map(|bbox| {
            let coordinates: Vec<String> = bbox
                .iter()
                .map(|v| format!("{}", v.round() as i64))
                .collect();
            format!("[{}]", coordinates.join(", "))
        })
        .collect();
    format!("[{}]", boxes.join(", "))
}

/// The human turn: `<image>\n` and the question, then ` <choices>: [A: …, B: …]` for choice
/// questions.
pub fn human_value(record: &QaRecord) -> String {
    let mut value = format!("<image>\n{}", record.question.trim());
    if !record.choices.is_empty() {
        value.push_str(&format!(" <choices>: [{}]", record.choices.join(", ")));
    }
    value
}

/// The assistant turn: `<answer>… <reason>… <location>[[…]]` (224 frame).
pub fn gpt_value(record: &QaRecord) -> String {
    format!(
        "<answer>{} <reason>{} <location>{}",
        answer_text(record),
        record.reason.trim(),
        location_text(&record.location_224)
    )
}

/// Where a question belongs: its id, image, study, split and the image file the LLaVA record
/// points to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExportIds<'a> {
    /// The question's id (`<image_id>_q01`).
    pub question_id: &'a str,
    /// The MIMIC-CXR image (dicom) id.
    pub image_id: &'a str,
    /// The study id.
    pub study_id: &'a str,
    /// train, validate or test.
    pub split: Option<&'a str>,
    /// The image file, relative to the export's image root.
    pub image: &'a str,
}

/// A coordinate for JSON: whole numbers as integers, others to two decimals.
fn coordinate(value: f32) -> Value {
    let rounded = (f64::from(value) * 100.0).round() / 100.0;
    if rounded.fract() == 0.0 && rounded.abs() < 1e15 {
        json!(rounded as i64)
    } else {
        json!(rounded)
    }
}

/// The GEMeX JSON record of a question: ids, split, type, content type, question, choices,
/// answer (as [`answer_text`]), reason, visual regions, `location` (224 frame, whole pixels)
/// and `location_original` (original pixels).
pub fn gemex_record(record: &QaRecord, ids: &ExportIds<'_>) -> Value {
    let framed: Vec<Vec<i64>> = record
        .location_224
        .iter()
        .map(|bbox| bbox.iter().map(|v| v.round() as i64).collect())
        .collect();
    let original: Vec<Vec<Value>> = record
        .location
        .iter()
        .map(|bbox| bbox.iter().map(|v| coordinate(*v)).collect())
        .collect();
    json!({
        "question_id": ids.question_id,
        "image_id": ids.image_id,
        "study_id": ids.study_id,
        "split": ids.split,
        "question_type": record.question_type.as_str(),
        "content_type": record.content_type.as_str(),
        "question": record.question,
        "choices": record.choices,
        "answer": answer_text(record),
        "reason": record.reason,
        "visual_regions": record.regions,
        "location": framed,
        "location_original": original,
    })
}

/// The LLaVA conversation record of a question: `id`, `image`, the human and gpt turns, and the
/// type-aware system prompt.
pub fn llava(record: &QaRecord, ids: &ExportIds<'_>) -> Value {
    json!({
        "id": ids.question_id,
        "image": ids.image,
        "conversations": [
            {"from": "human", "value": human_value(record)},
            {"from": "gpt", "value": gpt_value(record)},
        ],
        "system": system_prompt(record.question_type),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::generate::ContentType;

    /// Tables 11–14 of paper 004 as printed (`\n` written out, the apostrophe typeset).
    const TABLE_11: &str = "A chat between a curious human and an artificial intelligence assistant. The assistant gives helpful, detailed, and polite answers to the human’s questions. Input an open-ended question, and the assistant will output its answer with a detailed reason and corresponding visual location.\\n\\n### Human:<image>\\n What abnormalities are observed in the left lower lung zone?\\n### Assistant: <answer>Linear atelectasis. <reason>The CXR indicates that the lungs are clear except for linear atelectasis located specifically at the left base. <location>[[126, 110, 203, 167]]\\n###";
    const TABLE_12: &str = "A chat between a curious human and an artificial intelligence assistant. The assistant gives helpful, detailed, and polite answers to the human’s questions. Input a closed-ended question, and the assistant will output its answer (yes or no) with a detailed reason and corresponding visual location.\\n\\n### Human:<image>\\n Are there any lung abnormalities present in this CXR?\\n### Assistant: <answer>No. <reason>The CXR clearly shows that the lungs are clear, indicating no lung abnormalities. <location>[[30, 34, 185, 178]]\\n###";
    const TABLE_13: &str = "A chat between a curious human and an artificial intelligence assistant. The assistant gives helpful, detailed, and polite answers to the human’s questions. Input a single-choice question, and the assistant will output its answer (an option) with a detailed reason and corresponding visual location.\\n\\n### Human:<image>\\n Which of the following is absent in this CXR? <choices>: [A: Pulmonary edema, B: Pleural effusion, C: Pneumothorax, D: All of the above]\\n### Assistant: <answer>D <reason>The CXR shows that there is no pulmonary edema, effusion, or pneumothorax present. <location>[[48, 48, 175, 180]]\\n###";
    const TABLE_14: &str = "A chat between a curious human and an artificial intelligence assistant. The assistant gives helpful, detailed, and polite answers to the human’s questions. Input a multi-choice question, and the assistant will output its answer (some options) with a detailed reason and corresponding visual location.\\n\\n### Human:<image>\\n What abnormalities are mentioned regarding the lung fields? <choices>: [A: Clear lung fields, B: Atelectasis, C: Effusions, D: Congestion]\\n### Assistant: <answer>[B, C] <reason>The CXR shows bibasilar atelectasis and small pleural effusions. There is no impressive congestion shown. <location>[[26, 119, 217, 183]]\\n###";

    /// A printed sample split into (system, human value, gpt value): the printed `\n` are
    /// newlines, the typeset apostrophe is LLaVA's ASCII one, and the space after `<image>\n`
    /// is the typesetting's (LLaVA puts the question right after the newline).
    fn printed(table: &str) -> (String, String, String) {
        let text = table.replace("\\n", "\n").replace('’', "'");
        let (system, rest) = text.split_once("\n\n### Human:").expect("human turn");
        let (human, rest) = rest
            .split_once("\n### Assistant: ")
            .expect("assistant turn");
        let gpt = rest.strip_suffix("\n###").expect("end");
        let human = human.replacen("<image>\n ", "<image>\n", 1);
        (system.to_string(), human, gpt.to_string())
    }

    fn record(
        question_type: QuestionType,
        question: &str,
        choices: &[&str],
        answer: &str,
        reason: &str,
        location_224: [f32; 4],
    ) -> QaRecord {
        let letters = if question_type.has_choices() {
            cxrlake_generate::lint::answer_letters(answer)
                .iter()
                .map(char::to_string)
                .collect()
        } else {
            Vec::new()
        };
        QaRecord {
            question_type,
            content_type: ContentType::Abnormality,
            question: question.into(),
            choices: choices.iter().map(|c| c.to_string()).collect(),
            answer: answer.into(),
            answer_letters: letters,
            reason: reason.into(),
            regions: vec!["bilateral lung".into()],
            location: vec![location_224.map(|v| v * 10.0)],
            location_224: vec![location_224],
        }
    }

    fn golden(table: &str, record: &QaRecord) {
        let (system, human, gpt) = printed(table);
        let ids = ExportIds {
            question_id: "img_q01",
            image_id: "img",
            study_id: "s1",
            split: Some("test"),
            image: "files/p10/p10000032/s1/img.jpg",
        };
        let out = llava(record, &ids);
        assert_eq!(out["system"], system);
        assert_eq!(out["conversations"][0]["from"], "human");
        assert_eq!(out["conversations"][0]["value"], human);
        assert_eq!(out["conversations"][1]["from"], "gpt");
        assert_eq!(out["conversations"][1]["value"], gpt);
        assert_eq!(out["id"], "img_q01");
        assert_eq!(out["image"], "files/p10/p10000032/s1/img.jpg");
    }

    #[test]
    fn table_11_open_ended() {
        golden(
            TABLE_11,
            &record(
                QuestionType::OpenEnded,
                "What abnormalities are observed in the left lower lung zone?",
                &[],
                "Linear atelectasis.",
                "The CXR indicates that the lungs are clear except for linear atelectasis located \
                 specifically at the left base.",
                [126.0, 110.2, 202.6, 167.0],
            ),
        );
    }

    #[test]
    fn table_12_closed_ended() {
        golden(
            TABLE_12,
            &record(
                QuestionType::ClosedEnded,
                "Are there any lung abnormalities present in this CXR?",
                &[],
                "No",
                "The CXR clearly shows that the lungs are clear, indicating no lung abnormalities.",
                [30.0, 34.0, 185.0, 178.0],
            ),
        );
    }

    #[test]
    fn table_13_single_choice() {
        golden(
            TABLE_13,
            &record(
                QuestionType::SingleChoice,
                "Which of the following is absent in this CXR?",
                &[
                    "A: Pulmonary edema",
                    "B: Pleural effusion",
                    "C: Pneumothorax",
                    "D: All of the above",
                ],
                "D",
                "The CXR shows that there is no pulmonary edema, effusion, or pneumothorax present.",
                [48.0, 48.0, 175.0, 180.0],
            ),
        );
    }

    #[test]
    fn table_14_multi_choice() {
        golden(
            TABLE_14,
            &record(
                QuestionType::MultiChoice,
                "What abnormalities are mentioned regarding the lung fields?",
                &[
                    "A: Clear lung fields",
                    "B: Atelectasis",
                    "C: Effusions",
                    "D: Congestion",
                ],
                "B, C",
                "The CXR shows bibasilar atelectasis and small pleural effusions. There is no \
                 impressive congestion shown.",
                [26.0, 119.0, 217.0, 183.0],
            ),
        );
    }

    #[test]
    fn the_gemex_record() {
        let mut qa = record(
            QuestionType::MultiChoice,
            "Which findings are present?",
            &["A: Edema", "B: Effusion", "C: Pneumothorax", "D: Fracture"],
            "A, B",
            "Both are seen.",
            [26.0, 119.4, 217.0, 183.0],
        );
        qa.location = vec![[260.0, 1194.25, 2170.0, 1830.0], [1.0, 2.0, 3.0, 4.0]];
        qa.location_224.push([0.1, 0.2, 0.3, 0.4]);
        let ids = ExportIds {
            question_id: "img_q09",
            image_id: "img",
            study_id: "s1",
            split: None,
            image: "img.jpg",
        };
        let out = gemex_record(&qa, &ids);
        assert_eq!(
            out,
            json!({
                "question_id": "img_q09",
                "image_id": "img",
                "study_id": "s1",
                "split": null,
                "question_type": "multi-choice",
                "content_type": "abnormality",
                "question": "Which findings are present?",
                "choices": ["A: Edema", "B: Effusion", "C: Pneumothorax", "D: Fracture"],
                "answer": "[A, B]",
                "reason": "Both are seen.",
                "visual_regions": ["bilateral lung"],
                "location": [[26, 119, 217, 183], [0, 0, 0, 0]],
                "location_original": [[260, 1194.25, 2170, 1830], [1, 2, 3, 4]],
            })
        );
        assert_eq!(
            location_text(&qa.location_224),
            "[[26, 119, 217, 183], [0, 0, 0, 0]]"
        );
    }

    #[test]
    fn type_prompts_follow_the_template() {
        for (question_type, name, supplement) in [
            (QuestionType::OpenEnded, "an open-ended", ""),
            (QuestionType::ClosedEnded, "a closed-ended", " (yes or no)"),
            (
                QuestionType::SingleChoice,
                "a single-choice",
                " (an option)",
            ),
            (
                QuestionType::MultiChoice,
                "a multi-choice",
                " (some options)",
            ),
        ] {
            assert_eq!(
                type_prompt(question_type),
                format!(
                    "Input {name} question, and the assistant will output its answer{supplement} \
                     with a detailed reason and corresponding visual location."
                )
            );
        }
        assert!(system_prompt(QuestionType::OpenEnded).starts_with(ORIGINAL_SYSTEM_PROMPT));
    }
}
