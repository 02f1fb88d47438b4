//! Tables of the MIMIC-CXR-VQA flavour (paper 001): the studies' report text, the sampled
//! questions, the answered QA pairs, the judge's verdicts on the QC sample and the ratings
//! (judge and human) the agreement statistics read.

use std::sync::Arc;

use arrow::datatypes::{DataType, Field, Schema, SchemaRef};

use crate::types::{key, struct_list, text, text_list};

/// The images of a study with their view positions (fields nullable: DataFusion 55's
/// `images[1]` in a pushed-down filter fails on a struct with a non-null field).
fn images() -> Field {
    struct_list("images", vec![text("image_id"), text("view_position")])
}

/// One answer, as the `mimic_cxr_vqa_answer` function returns it: the answer, its type (`open`
/// or `closed`), the question the LLM repeated and whether it is the question, and the linter's
/// hits.
pub fn answer_fields() -> Vec<Field> {
    vec![
        key("answer"),
        key("answer_type"),
        text("echoed_question"),
        Field::new("question_echoed", DataType::Boolean, true),
        text_list("prohibited_terms"),
        text_list("report_references"),
    ]
}

/// One verdict, as the `mimic_cxr_vqa_judge` function returns it: the four rubrics of paper 001
/// table 3 and a rationale.
pub fn verdict_fields() -> Vec<Field> {
    vec![
        key("correctness"),
        key("consistency"),
        key("completeness"),
        key("relevance"),
        text("rationale"),
    ]
}

/// `mimic_cxr_vqa_reports`: per study with a FINDINGS or IMPRESSION section, the text the
/// answers come from and its images (key: study_id).
pub fn mimic_cxr_vqa_reports() -> SchemaRef {
    Arc::new(Schema::new(vec![
        key("patient_id"),
        key("study_id"),
        text("split"),
        text("indication"),
        key("findings"),
        key("findings_section"),
        images(),
    ]))
}

/// `mimic_cxr_vqa_questions`: the questions sampled per study and category (key: question_id =
/// `<study_id>_<template_id>`).
pub fn mimic_cxr_vqa_questions() -> SchemaRef {
    Arc::new(Schema::new(question_fields()))
}

fn question_fields() -> Vec<Field> {
    vec![
        key("patient_id"),
        key("study_id"),
        text("split"),
        key("question_id"),
        key("category"),
        key("label_value"),
        key("template_id"),
        key("question"),
        images(),
        key("bank"),
    ]
}

/// `mimic_cxr_vqa_qa`: the answered questions (key: question_id).
pub fn mimic_cxr_vqa_qa() -> SchemaRef {
    let mut fields = question_fields();
    fields.extend(answer_fields());
    fields.push(Field::new("prohibited_count", DataType::Int32, false));
    fields.push(Field::new("report_reference_count", DataType::Int32, false));
    fields.push(key("generator"));
    Arc::new(Schema::new(fields))
}

/// `mimic_cxr_vqa_judgements`: the judge's verdicts on the QA pairs of the QC sample of reports
/// (key: question_id, judge).
pub fn mimic_cxr_vqa_judgements() -> SchemaRef {
    let mut fields = vec![
        key("patient_id"),
        key("study_id"),
        text("split"),
        key("question_id"),
        key("category"),
        key("label_value"),
    ];
    fields.extend(verdict_fields());
    fields.push(key("judge"));
    Arc::new(Schema::new(fields))
}

/// `mimic_cxr_vqa_ratings`: ratings of QA pairs by other raters (human reviews), one per item,
/// rater and rubric, added with `cxrlake ratings add` (key: item, rater, rubric).
pub fn mimic_cxr_vqa_ratings() -> SchemaRef {
    Arc::new(Schema::new(vec![
        key("item"),
        key("rater"),
        key("rubric"),
        key("value"),
        text("source"),
    ]))
}
