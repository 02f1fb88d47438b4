//! Tables of the ReXVQA flavour (paper 003): each study's bullet list, the generated MCQs with
//! their structural validators, the content judge's verdicts, the filtered questions with V(Q),
//! the PHI and near-duplicate filters and the QC sample, and the table A2 taxonomy.

use std::sync::Arc;

use arrow::datatypes::{DataType, Field, Schema, SchemaRef};

use crate::types::{key, list_of, struct_list, text, text_list};

fn flag(name: &str) -> Field {
    Field::new(name, DataType::Boolean, false)
}

/// The images of a study with their view positions (fields nullable: DataFusion 55's
/// `images[1]` in a pushed-down filter fails on a struct with a non-null field).
fn images() -> Field {
    struct_list("images", vec![text("image_id"), text("view_position")])
}

/// One bullet, as the `rexvqa_bullets` function returns it.
pub fn bullet_fields() -> Vec<Field> {
    vec![
        key("section"),
        key("text"),
        Field::new("level", DataType::Int32, false),
    ]
}

/// One MCQ, as the `rexvqa_generate` function returns it: what the generator wrote (options
/// after balancing), the normalised metadata and the four structural validators.
pub fn mcq_fields() -> Vec<Field> {
    vec![
        Field::new("position", DataType::Int32, false),
        text("question"),
        Field::new("options", list_of(DataType::Utf8), true),
        Field::new("answer_index", DataType::Int32, true),
        Field::new("generated_index", DataType::Int32, true),
        text("explanation"),
        text("difficulty"),
        text("category_raw"),
        text("subcategory_raw"),
        text("category"),
        text("subcategory"),
        text("task_type"),
        flag("v1_schema"),
        flag("v2_types"),
        flag("v3_format"),
        flag("v4_complete"),
        text_list("structural_reasons"),
        key("raw"),
    ]
}

/// One verdict, as the `rexvqa_judge` function returns it: the content validators c1–c3.
pub fn content_fields() -> Vec<Field> {
    vec![
        flag("c1_domain"),
        flag("c2_depth"),
        flag("c3_alignment"),
        text("rationale"),
    ]
}

/// `rexvqa_bullets`: each study's report as a bullet list (key: study_id; `generator` names
/// the model and prompt version, or the offline generator).
pub fn rexvqa_bullets() -> SchemaRef {
    Arc::new(Schema::new(vec![
        key("patient_id"),
        key("study_id"),
        text("split"),
        images(),
        text("indication"),
        struct_list("bullets", bullet_fields()),
        key("generator"),
    ]))
}

fn mcq_table_fields() -> Vec<Field> {
    let mut fields = vec![
        key("patient_id"),
        key("study_id"),
        text("split"),
        key("mcq_id"),
        images(),
    ];
    fields.extend(mcq_fields());
    fields.push(key("bullets_generator"));
    fields.push(key("generator"));
    fields
}

/// `rexvqa_mcq`: every MCQ generated, valid or not (key: mcq_id = `<study_id>_q<position>`).
pub fn rexvqa_mcq() -> SchemaRef {
    Arc::new(Schema::new(mcq_table_fields()))
}

/// `rexvqa_judgements`: the content validators of every structurally valid MCQ (key: mcq_id,
/// judge).
pub fn rexvqa_judgements() -> SchemaRef {
    let mut fields = vec![key("patient_id"), key("study_id"), key("mcq_id")];
    fields.extend(content_fields());
    fields.push(key("judge"));
    Arc::new(Schema::new(fields))
}

/// `rexvqa_questions`: every MCQ with all its checks: c1–c3 (NULL when not judged), V(Q)
/// (`valid`), the PHI found, the earlier MCQ it nearly repeats, whether it is exported
/// (`kept`), the reasons it is not, and whether it is in the QC sample (key: mcq_id).
pub fn rexvqa_questions() -> SchemaRef {
    let mut fields = mcq_table_fields();
    fields.extend([
        Field::new("c1_domain", DataType::Boolean, true),
        Field::new("c2_depth", DataType::Boolean, true),
        Field::new("c3_alignment", DataType::Boolean, true),
        text("content_rationale"),
        text("judge"),
        flag("valid"),
        text_list("phi"),
        text("duplicate_of"),
        flag("kept"),
        text_list("reasons"),
        flag("qc_sample"),
    ]);
    Arc::new(Schema::new(fields))
}

/// `rexvqa_taxonomy`: the condition taxonomy of paper 003 table A2, one row per category and
/// subcategory with its synonyms and linked cxrlake findings (key: id).
pub fn rexvqa_taxonomy() -> SchemaRef {
    Arc::new(Schema::new(vec![
        key("level"),
        key("id"),
        key("name"),
        text("parent"),
        text_list("synonyms"),
        text_list("findings"),
        key("version"),
    ]))
}
