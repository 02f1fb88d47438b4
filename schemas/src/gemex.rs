//! Tables of the GEMeX flavour (paper 004): re-grounded report sentences and grounded,
//! explainable QA pairs per frontal image.

use std::sync::Arc;

use arrow::datatypes::{DataType, Field, Schema, SchemaRef};

use crate::types::{bboxes, key, text, text_list};

/// One re-grounded sentence, as the `gemex_reground` function returns it: the sentence (split
/// or rewritten where the source sentence covered several regions), its one region of the 30,
/// and the clinical rule that chose it (offline) or that disagrees with the LLM's region.
pub fn grounded_fields() -> Vec<Field> {
    vec![key("sentence"), key("region"), text("rule")]
}

/// One GEMeX question, as the `gemex_generate` function returns it (paper 004, section 4.3):
/// type, content category, question, choices `A: …` … `D: …` (single- and multi-choice), answer
/// (text, `Yes`/`No`, or letters), the letters of a choice answer, the reason, the visual regions
/// and their boxes on the image, in original pixels (`location`) and in Chest ImaGenome's
/// 224 × 224 frame (`location_224`).
pub fn qa_record_fields() -> Vec<Field> {
    vec![
        key("question_type"),
        key("content_type"),
        key("question"),
        text_list("choices"),
        key("answer"),
        text_list("answer_letters"),
        text("reason"),
        text_list("regions"),
        bboxes("location"),
        bboxes("location_224"),
    ]
}

/// What a generation function returns per input row: its records, or the reason none are valid
/// with the raw answer, the LLM attempts made, and the generator
/// (`llm:<model>@<prompts version>` or the offline generator's id).
pub fn generated_type(record: Vec<Field>) -> DataType {
    DataType::Struct(
        vec![
            Field::new(
                "records",
                DataType::List(Arc::new(Field::new(
                    "item",
                    DataType::Struct(record.into()),
                    true,
                ))),
                true,
            ),
            text("error"),
            text("raw"),
            Field::new("attempts", DataType::Int32, true),
            text("generator"),
        ]
        .into(),
    )
}

/// `gemex_sentences`: a study's report sentences re-grounded onto GEMeX's 30 regions (key:
/// study_id, sent_index).
pub fn gemex_sentences() -> SchemaRef {
    let mut fields = vec![
        key("patient_id"),
        key("study_id"),
        Field::new("sent_index", DataType::Int32, false),
        text("source_sentence"),
    ];
    fields.extend(grounded_fields());
    fields.push(key("grounder"));
    Arc::new(Schema::new(fields))
}

/// `gemex_qa`: the GEMeX QA pairs of one frontal image (key: image_id, question_id).
pub fn gemex_qa() -> SchemaRef {
    let mut fields = vec![
        key("patient_id"),
        key("study_id"),
        key("image_id"),
        text("split"),
        key("question_id"),
        Field::new("width", DataType::Int32, true),
        Field::new("height", DataType::Int32, true),
    ];
    fields.extend(qa_record_fields());
    fields.push(key("generator"));
    Arc::new(Schema::new(fields))
}
