//! Tables written by the pipeline stages: extraction, localization, mapping, graphs, QA, judging.

use std::sync::Arc;

use arrow::datatypes::{DataType, Field, Schema, SchemaRef, TimeUnit};

use crate::rating::rating_field;
use crate::types::{
    bboxes, extraction_quality, image_quality, key, localization, localization_fields,
    observation_fields, observation_tag_fields, struct_list, structure, text, text_list,
};

/// `llm_calls`: the LLM response cache, keyed by the hash of (model, prompt, parameters).
pub fn llm_calls() -> SchemaRef {
    Arc::new(Schema::new(vec![
        key("request_hash"),
        text("endpoint"),
        text("model"),
        text("prompt_version"),
        text("response"),
        text("error"),
        text("finish_reason"),
        Field::new("attempts", DataType::Int32, true),
        Field::new("prompt_tokens", DataType::Int64, true),
        Field::new("completion_tokens", DataType::Int64, true),
        Field::new("latency_ms", DataType::Float64, true),
        Field::new(
            "created_at",
            DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into())),
            false,
        ),
    ]))
}

/// `embeddings`: the embedding cache of model-based embedders (key: embedder, text_hash, the
/// sha256 of the text). The lexical embedder computes faster than a row is read back and is
/// not cached.
pub fn embeddings() -> SchemaRef {
    Arc::new(Schema::new(vec![
        key("embedder"),
        key("text_hash"),
        text("text"),
        Field::new(
            "vector",
            DataType::List(Arc::new(Field::new("item", DataType::Float32, true))),
            true,
        ),
    ]))
}

/// `sentences`: sentence nodes (paper D.1) with their merge links and cluster
/// (key: study_id, sent_id).
pub fn sentences() -> SchemaRef {
    Arc::new(Schema::new(vec![
        key("patient_id"),
        key("study_id"),
        key("sent_id"),
        text("section"),
        text("section_type"),
        text("sentence"),
        text_list("merge_with"),
        text("cluster_id"),
        key("extractor"),
    ]))
}

/// `indications`: the indication extracted per study (listing 5; key: study_id). A study whose
/// extraction output could not be parsed has a row with `parse_error` set and empty fields.
pub fn indications() -> SchemaRef {
    Arc::new(Schema::new(vec![
        key("patient_id"),
        key("study_id"),
        text("indication_summary"),
        text("patient_info"),
        text("indication"),
        text("evaluation"),
        text_list("associated_sentence_ids"),
        text("answer_for_indication"),
        text("parse_error"),
        key("extractor"),
    ]))
}

/// `observations_raw`: observations as extracted from one sentence cluster (listing 3), before
/// mapping; children are rows with `parent_obs_id` and `child_type` (key: study_id, obs_id).
/// Clusters whose output could not be parsed have no rows and a `quarantine` row.
pub fn observations_raw() -> SchemaRef {
    Arc::new(Schema::new(vec![
        key("patient_id"),
        key("study_id"),
        key("obs_id"),
        text("parent_obs_id"),
        text("child_type"),
        key("cluster_id"),
        text("name"),
        text("entity"),
        text("probability"),
        text("change"),
        text("summary_sentence"),
        text("change_sentence"),
        text_list("regions"),
        text_list("modifiers"),
        text_list("sent_ids"),
        key("extractor"),
    ]))
}

/// `region_boxes`: per image × localized region, the boxes of its recipe (key: image_id, region).
pub fn region_boxes() -> SchemaRef {
    Arc::new(Schema::new(vec![
        key("patient_id"),
        key("image_id"),
        key("study_id"),
        key("region"),
        bboxes("bboxes"),
        text_list("localization_reference_ids"),
        Field::new("is_fallback", DataType::Boolean, false),
        text_list("missing_localization"),
        text("localization_quality"),
        text("recipe"),
    ]))
}

/// `observations`: mapped observation nodes, one row each (key: study_id, obs_id), with the
/// sentences each was derived from; per-image localization is added in `scene_graphs`.
pub fn observations() -> SchemaRef {
    let mut fields = vec![key("patient_id"), key("study_id")];
    fields.extend(observation_tag_fields());
    fields.push(text_list("sent_ids"));
    fields.push(key("extractor"));
    fields.push(key("embedder"));
    Arc::new(Schema::new(fields))
}

fn observation_struct(name: &str) -> Field {
    structure(name, observation_fields())
}

/// `scene_graphs`: one nested row per study (paper D.1; key: study_id).
pub fn scene_graphs() -> SchemaRef {
    Arc::new(Schema::new(vec![
        key("patient_id"),
        key("study_id"),
        struct_list(
            "sentences",
            vec![
                key("sent_id"),
                text("section"),
                text("section_type"),
                text("sentence"),
            ],
        ),
        struct_list("observations", observation_fields()),
        text_list("top_level_obs_ids"),
        struct_list(
            "regions",
            vec![
                key("region"),
                text("laterality"),
                localization("localization"),
                text("region_localization_quality"),
            ],
        ),
        structure(
            "indication",
            vec![
                text("indication_summary"),
                text("patient_info"),
                text("indication"),
                text("evaluation"),
                text_list("associated_sentence_ids"),
                text_list("associated_obs_ids"),
                observation_struct("answer_for_indication"),
            ],
        ),
        struct_list(
            "located_at_relations",
            vec![
                key("obs_id"),
                key("region"),
                text_list("distances"),
                text("where_specified"),
            ],
        ),
        struct_list(
            "obs_relations",
            vec![
                key("parent_obs_id"),
                key("child_obs_id"),
                text("child_type"),
            ],
        ),
        struct_list("obs_sent_relations", vec![key("obs_id"), key("sent_id")]),
        struct_list(
            "region_region_relations",
            vec![key("region"), key("related_region"), text("relation_type")],
        ),
        extraction_quality("study_quality"),
        image_quality("study_img_localization_quality"),
        key("extractor"),
        key("embedder"),
    ]))
}

/// `qa_balance`: how often each region and finding is mentioned positively and negatively over
/// all scene graphs, the sampling probability of the QA strategies, and (findings) the
/// correlated findings (key: kind, name).
pub fn qa_balance() -> SchemaRef {
    Arc::new(Schema::new(vec![
        key("kind"),
        key("name"),
        Field::new("pos_studies", DataType::Int64, false),
        Field::new("neg_studies", DataType::Int64, false),
        Field::new("sample_probability", DataType::Float64, false),
        text_list("correlated"),
    ]))
}

/// Text-quality levels of one answer part (table 12), with the part's rating.
fn answer_quality(name: &str) -> Field {
    structure(
        name,
        vec![
            text("entailment"),
            text("relevance"),
            text("answer_clarity"),
            rating_field("rating"),
        ],
    )
}

/// Fields of one answer part. Arrow cannot nest recursively, so the hierarchy is flattened:
/// `parent_answer_id` and `answer_level` rebuild `sub_answers` on JSON export.
pub fn answer_part_fields() -> Vec<Field> {
    vec![
        Field::new("answer_id", DataType::Int64, false),
        Field::new("parent_answer_id", DataType::Int64, true),
        Field::new("answer_level", DataType::Int32, false),
        key("answer_type"),
        text("text"),
        text("name_tag"),
        text("laterality"),
        text_list("regions"),
        text_list("obs_entities"),
        text_list("obs_entities_parents"),
        text_list("obs_categories"),
        text_list("obs_subcategories"),
        text("certainty"),
        text("positiveness"),
        struct_list("modifiers", vec![key("modifier_type"), key("value")]),
        struct_list("localization", localization_fields()),
        Field::new("from_report", DataType::Boolean, false),
        text_list("obs_ids"),
        extraction_quality("extraction_quality"),
        answer_quality("answer_quality"),
    ]
}

/// `qa`: one row per question with nested answer parts (paper D.2; key: study_id, question_id).
pub fn qa() -> SchemaRef {
    Arc::new(Schema::new(vec![
        key("patient_id"),
        key("study_id"),
        key("question_id"),
        key("question_type"),
        key("question_strategy"),
        struct_list("variables", vec![key("name"), text("value_json")]),
        text_list("obs_ids"),
        Field::new("contains_report_answers", DataType::Boolean, false),
        Field::new("contains_template_answers", DataType::Boolean, false),
        extraction_quality("extraction_quality"),
        image_quality("question_img_localization_quality"),
        text("question"),
        struct_list("answers", answer_part_fields()),
        structure(
            "question_quality",
            vec![
                text("question_clarity"),
                text("completeness"),
                rating_field("rating"),
            ],
        ),
        rating_field("rating"),
        Field::new("rating_rank", DataType::Int8, true),
        key("extractor"),
        key("embedder"),
        text("judge"),
    ]))
}

/// `qa_judgements`: the judge's verdicts, content-addressed (key: judge, criterion,
/// content_hash). `content_hash` is the sha256 of exactly what the judge reads for the criterion
/// (for an LLM judge the rendered prompt, for the heuristic judge its canonical input), so
/// identical inputs are judged once, whichever questions share them. `levels` holds one level
/// name per answer part for the per-part criteria (entailment, relevance, answer_clarity), one
/// for the others; a NULL level (or `error`) makes the QA pairs reading it `not rated`.
pub fn qa_judgements() -> SchemaRef {
    Arc::new(Schema::new(vec![
        key("judge"),
        key("criterion"),
        key("content_hash"),
        text_list("levels"),
        text("explanation"),
        text("error"),
    ]))
}

/// `runs`: one row per `cxrlake run` (key: run_id): the command, the stages it ran and every
/// resolved `cxrlake.*` setting with its source (`default`, `lake`, `file`, `env`, `flag`,
/// `sql`). A plain `cxrlake run` reuses the result-changing settings of the newest row.
pub fn runs() -> SchemaRef {
    Arc::new(Schema::new(vec![
        key("run_id"),
        Field::new(
            "started_at",
            DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into())),
            false,
        ),
        text("command"),
        text_list("stages"),
        struct_list("settings", vec![key("key"), text("value"), text("source")]),
        text("cxrlake_version"),
    ]))
}
