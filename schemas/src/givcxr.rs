//! Tables of the GIV-CXR flavour (paper 002): the region contexts, the generated questions and
//! QA pairs with their derived fields, the hallucination judge's verdicts, the exported pairs,
//! the rejected ones with their reasons, the confidence-ranked review queue, the radiologists'
//! reviews, the region vocabulary's mapping and the prompts' changelog.

use std::sync::Arc;

use arrow::datatypes::{DataType, Field, Schema, SchemaRef};

use crate::types::{bbox, key, text, text_list};

fn int(name: &str) -> Field {
    Field::new(name, DataType::Int32, true)
}

/// One question, as the `givcxr_questions` function returns it.
pub fn question_fields() -> Vec<Field> {
    vec![
        Field::new("position", DataType::Int32, false),
        key("question"),
        text_list("lint"),
    ]
}

/// One answer, as the `givcxr_answers` function returns it.
pub fn answer_fields() -> Vec<Field> {
    vec![
        Field::new("position", DataType::Int32, false),
        key("answer"),
        text_list("lint"),
    ]
}

/// One verdict, as the `givcxr_judge` function returns it.
pub fn verdict_fields() -> Vec<Field> {
    vec![
        Field::new("position", DataType::Int32, false),
        Field::new("is_hallucination", DataType::Boolean, false),
        Field::new("score", DataType::Float64, false),
        text("explanation"),
        key("rule"),
    ]
}

/// `givcxr_regions`: one region context per frontal image and GIV-CXR region with facts: the
/// region's box (original pixels of the image), its attributes in Chest ImaGenome's pipe syntax,
/// texture cues, report phrases, the clinical findings present and the patient's split (key:
/// context_id = `<image_id>/<region>`).
pub fn givcxr_regions() -> SchemaRef {
    Arc::new(Schema::new(vec![
        key("context_id"),
        key("patient_id"),
        key("study_id"),
        key("image_id"),
        key("split"),
        key("region"),
        key("region_name"),
        text("source_region"),
        bbox("bbox"),
        int("image_width"),
        int("image_height"),
        text_list("attributes"),
        text_list("texture"),
        text_list("phrases"),
        text_list("findings"),
        Field::new("abnormal", DataType::Boolean, false),
    ]))
}

/// `givcxr_questions`: the questions generated per region context, with their guideline
/// breaches (key: question_id = `<context_id>/q<position>`).
pub fn givcxr_questions() -> SchemaRef {
    let mut fields = vec![
        key("question_id"),
        key("context_id"),
        key("patient_id"),
        key("study_id"),
    ];
    fields.extend(question_fields());
    fields.extend([key("generator"), key("prompt_version")]);
    Arc::new(Schema::new(fields))
}

/// The fields of a QA pair, shared by `givcxr_qa` and the filter's tables.
fn qa_fields() -> Vec<Field> {
    vec![
        key("qa_id"),
        key("context_id"),
        key("patient_id"),
        key("study_id"),
        key("image_id"),
        key("split"),
        key("region"),
        bbox("bbox"),
        int("image_width"),
        int("image_height"),
        Field::new("position", DataType::Int32, false),
        key("question"),
        key("answer"),
        key("reasoning_aspect"),
        text("clinical_finding"),
        key("bbox_size_category"),
        Field::new("question_length", DataType::Int32, false),
        Field::new("answer_length", DataType::Int32, false),
        text_list("lint"),
        key("generator"),
        key("prompt_version"),
    ]
}

/// `givcxr_qa`: every generated QA pair with the paper's derived fields: reasoning aspect,
/// clinical finding (one of the 28 or `normal`; NULL when none fits), box size category,
/// question and answer lengths in words, and the prompt version (key: qa_id = question_id).
pub fn givcxr_qa() -> SchemaRef {
    Arc::new(Schema::new(qa_fields()))
}

/// `givcxr_verdicts`: the hallucination judge's verdict on every QA pair it could judge (key:
/// qa_id, judge).
pub fn givcxr_verdicts() -> SchemaRef {
    let mut fields = vec![
        key("qa_id"),
        key("context_id"),
        key("patient_id"),
        key("study_id"),
    ];
    fields.extend(verdict_fields().into_iter().skip(1));
    fields.push(key("judge"));
    Arc::new(Schema::new(fields))
}

fn judged_fields() -> Vec<Field> {
    let mut fields = qa_fields();
    fields.extend([
        key("image_path"),
        Field::new("is_hallucination", DataType::Boolean, true),
        Field::new("score", DataType::Float64, true),
        text("explanation"),
        text("rule"),
        text("judge"),
    ]);
    fields
}

/// `givcxr_dataset`: the exported QA pairs: judged, not hallucinated, no guideline breach, a
/// clinical finding, the box inside the image (key: qa_id).
pub fn givcxr_dataset() -> SchemaRef {
    Arc::new(Schema::new(judged_fields()))
}

/// `givcxr_rejects`: every QA pair left out of the export, with the reasons (key: qa_id).
pub fn givcxr_rejects() -> SchemaRef {
    let mut fields = judged_fields();
    fields.push(text_list("reasons"));
    Arc::new(Schema::new(fields))
}

/// `givcxr_review`: the judged pairs in review order, least confident verdict first (key:
/// qa_id; `priority` 1 is reviewed first).
pub fn givcxr_review() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("priority", DataType::Int64, false),
        key("qa_id"),
        key("split"),
        key("region"),
        key("question"),
        key("answer"),
        Field::new("is_hallucination", DataType::Boolean, false),
        Field::new("score", DataType::Float64, false),
        text("explanation"),
        key("rule"),
        Field::new("kept", DataType::Boolean, false),
    ]))
}

/// `givcxr_reviews`: radiologists' verdicts on QA pairs (`cxrlake ratings add --flavour
/// givcxr`): accepted or not, with a comment (key: qa_id, reviewer).
pub fn givcxr_reviews() -> SchemaRef {
    Arc::new(Schema::new(vec![
        key("qa_id"),
        key("reviewer"),
        Field::new("accepted", DataType::Boolean, false),
        text("comment"),
        text("source"),
    ]))
}

/// `givcxr_region_map`: how cxrlake's regions and Chest ImaGenome's boxes reach the 36 GIV-CXR
/// regions (`kind` = source, ancestor, imagenome or unmapped; `region` NULL when unmapped)
/// (key: name, kind).
pub fn givcxr_region_map() -> SchemaRef {
    Arc::new(Schema::new(vec![
        key("name"),
        key("kind"),
        text("region"),
        int("rank"),
        key("version"),
    ]))
}

/// `givcxr_prompt_versions`: the prompts' dated changelog (paper 002 table 5, then ours) (key:
/// version).
pub fn givcxr_prompt_versions() -> SchemaRef {
    Arc::new(Schema::new(vec![
        key("version"),
        key("date"),
        key("change"),
        key("prompts"),
    ]))
}
