//! Arrow schemas of every cxrlake lake table, in one place, with the lake format version.
//!
//! Field names and enumerations follow appendix D of paper 000; `schemas/README.md` explains each
//! table, its key and each encoding choice. All code builds its batches against these schemas.

pub mod config;
pub mod evaluate;
pub mod gemex;
pub mod givcxr;
pub mod mimic_cxr_vqa;
pub mod pipeline;
pub mod quality;
pub mod rating;
pub mod reference;
pub mod rexvqa;
pub mod sources;
pub mod types;

use arrow::datatypes::SchemaRef;

pub use rating::{Rating, is_rating_field, rating_field};

/// Version of the lake layout and table schemas; written into every lake and every commit.
pub const FORMAT_VERSION: u32 = 2;

/// What every lake table is: its name, key, partitioning and schema.
#[derive(Debug, Clone, Copy)]
pub struct TableDef {
    /// Table name (part of the interface: SQL, exports and docs use it).
    pub name: &'static str,
    /// Columns that identify a row.
    pub key: &'static [&'static str],
    /// The column that replace-where operations select on (`study_id` for per-study tables).
    pub replace_by: Option<&'static str>,
    /// Whether a replace deletes the old rows with Delta deletion vectors instead of rewriting
    /// the files that hold them (`qa` only: its scattered studies lie in every file, and
    /// delta-rs scans files with deletion vectors without Parquet filter pushdown, which
    /// would slow the chunked reads of the other tables).
    pub deletion_vectors: bool,
    /// One line on what the table holds.
    pub doc: &'static str,
    /// Builds the Arrow schema.
    pub schema: fn() -> SchemaRef,
}

/// Every table of the lake, in pipeline order.
pub const TABLES: &[TableDef] = &[
    TableDef {
        name: "ref_regions",
        key: &["name"],
        replace_by: None,
        deletion_vectors: false,
        doc: "reference regions with localization recipes and hashes",
        schema: reference::ref_regions_schema,
    },
    TableDef {
        name: "ref_findings",
        key: &["name"],
        replace_by: None,
        deletion_vectors: false,
        doc: "reference findings with categories and hashes",
        schema: reference::ref_findings_schema,
    },
    TableDef {
        name: "ref_modifiers",
        key: &["name"],
        replace_by: None,
        deletion_vectors: false,
        doc: "reference modifiers and probabilities with hashes",
        schema: reference::ref_modifiers_schema,
    },
    TableDef {
        name: "ref_changes",
        key: &["name"],
        replace_by: None,
        deletion_vectors: false,
        doc: "reference change types with hashes",
        schema: reference::ref_changes_schema,
    },
    TableDef {
        name: "reports",
        key: &["study_id"],
        replace_by: Some("study_id"),
        deletion_vectors: false,
        doc: "one row per MIMIC-CXR report",
        schema: sources::reports,
    },
    TableDef {
        name: "images",
        key: &["image_id"],
        replace_by: Some("study_id"),
        deletion_vectors: false,
        doc: "MIMIC-CXR-JPG images with view, size and split",
        schema: sources::images,
    },
    TableDef {
        name: "splits",
        key: &["image_id"],
        replace_by: Some("study_id"),
        deletion_vectors: false,
        doc: "official split per image",
        schema: sources::splits,
    },
    TableDef {
        name: "chexpert_labels",
        key: &["study_id", "labeler"],
        replace_by: Some("study_id"),
        deletion_vectors: false,
        doc: "CheXpert and NegBio labels per study",
        schema: sources::chexpert_labels,
    },
    TableDef {
        name: "imagenome_boxes",
        key: &["image_id", "bbox_name"],
        replace_by: Some("study_id"),
        deletion_vectors: false,
        doc: "Chest ImaGenome boxes in original pixels",
        schema: sources::imagenome_boxes,
    },
    TableDef {
        name: "cxas_masks",
        key: &["image_id", "class_name"],
        replace_by: Some("study_id"),
        deletion_vectors: false,
        doc: "CXAS masks as COCO compressed RLE",
        schema: sources::cxas_masks,
    },
    TableDef {
        name: "quarantine",
        key: &["stage", "source", "location"],
        replace_by: None,
        deletion_vectors: false,
        doc: "inputs that failed, with raw bytes and reason",
        schema: sources::quarantine,
    },
    TableDef {
        name: "llm_calls",
        key: &["request_hash"],
        replace_by: None,
        deletion_vectors: false,
        doc: "LLM response cache",
        schema: pipeline::llm_calls,
    },
    TableDef {
        name: "embeddings",
        key: &["embedder", "text_hash"],
        replace_by: None,
        deletion_vectors: false,
        doc: "text embeddings cache of model-based embedders",
        schema: pipeline::embeddings,
    },
    TableDef {
        name: "sentences",
        key: &["study_id", "sent_id"],
        replace_by: Some("study_id"),
        deletion_vectors: false,
        doc: "report sentences with section and cluster",
        schema: pipeline::sentences,
    },
    TableDef {
        name: "indications",
        key: &["study_id"],
        replace_by: Some("study_id"),
        deletion_vectors: false,
        doc: "indication per study",
        schema: pipeline::indications,
    },
    TableDef {
        name: "observations_raw",
        key: &["study_id", "obs_id"],
        replace_by: Some("study_id"),
        deletion_vectors: false,
        doc: "observations before entity mapping",
        schema: pipeline::observations_raw,
    },
    TableDef {
        name: "region_boxes",
        key: &["image_id", "region"],
        replace_by: Some("study_id"),
        deletion_vectors: false,
        doc: "boxes per image and localized region",
        schema: pipeline::region_boxes,
    },
    TableDef {
        name: "observations",
        key: &["study_id", "obs_id"],
        replace_by: Some("study_id"),
        deletion_vectors: false,
        doc: "mapped observation nodes",
        schema: pipeline::observations,
    },
    TableDef {
        name: "scene_graphs",
        key: &["study_id"],
        replace_by: Some("study_id"),
        deletion_vectors: false,
        doc: "one nested scene graph per study",
        schema: pipeline::scene_graphs,
    },
    TableDef {
        name: "qa_balance",
        key: &["kind", "name"],
        replace_by: None,
        deletion_vectors: false,
        doc: "per region and finding: studies mentioning it positively / negatively, QA sampling probability",
        schema: pipeline::qa_balance,
    },
    TableDef {
        name: "qa",
        key: &["study_id", "question_id"],
        replace_by: Some("study_id"),
        deletion_vectors: true,
        doc: "question-answer pairs with nested answer parts",
        schema: pipeline::qa,
    },
    TableDef {
        name: "qa_judgements",
        key: &["judge", "criterion", "content_hash"],
        replace_by: None,
        deletion_vectors: false,
        doc: "judge verdicts, content-addressed: one per distinct input of a criterion",
        schema: pipeline::qa_judgements,
    },
    TableDef {
        name: "runs",
        key: &["run_id"],
        replace_by: None,
        deletion_vectors: false,
        doc: "one row per pipeline run: its command, stages and resolved settings",
        schema: pipeline::runs,
    },
    TableDef {
        name: "gemex_sentences",
        key: &["study_id", "sent_index"],
        replace_by: Some("study_id"),
        deletion_vectors: false,
        doc: "GEMeX: report sentences re-grounded onto one of 30 regions each",
        schema: gemex::gemex_sentences,
    },
    TableDef {
        name: "gemex_qa",
        key: &["image_id", "question_id"],
        replace_by: Some("study_id"),
        deletion_vectors: false,
        doc: "GEMeX: grounded, explainable QA pairs per frontal image",
        schema: gemex::gemex_qa,
    },
    TableDef {
        name: "mimic_cxr_vqa_reports",
        key: &["study_id"],
        replace_by: Some("study_id"),
        deletion_vectors: false,
        doc: "MIMIC-CXR-VQA: each study's indication and findings text and its images",
        schema: mimic_cxr_vqa::mimic_cxr_vqa_reports,
    },
    TableDef {
        name: "mimic_cxr_vqa_questions",
        key: &["question_id"],
        replace_by: Some("study_id"),
        deletion_vectors: false,
        doc: "MIMIC-CXR-VQA: questions sampled per study and CheXpert label value",
        schema: mimic_cxr_vqa::mimic_cxr_vqa_questions,
    },
    TableDef {
        name: "mimic_cxr_vqa_qa",
        key: &["question_id"],
        replace_by: Some("study_id"),
        deletion_vectors: false,
        doc: "MIMIC-CXR-VQA: answered questions with their linter counts",
        schema: mimic_cxr_vqa::mimic_cxr_vqa_qa,
    },
    TableDef {
        name: "mimic_cxr_vqa_judgements",
        key: &["question_id", "judge"],
        replace_by: None,
        deletion_vectors: false,
        doc: "MIMIC-CXR-VQA: four-rubric verdicts on the QA pairs of the QC sample of reports",
        schema: mimic_cxr_vqa::mimic_cxr_vqa_judgements,
    },
    TableDef {
        name: "mimic_cxr_vqa_ratings",
        key: &["item", "rater", "rubric"],
        replace_by: None,
        deletion_vectors: false,
        doc: "MIMIC-CXR-VQA: human (and other) ratings of QA pairs per rubric",
        schema: mimic_cxr_vqa::mimic_cxr_vqa_ratings,
    },
    TableDef {
        name: "rexvqa_bullets",
        key: &["study_id"],
        replace_by: Some("study_id"),
        deletion_vectors: false,
        doc: "ReXVQA: each study's report as a structured bullet list",
        schema: rexvqa::rexvqa_bullets,
    },
    TableDef {
        name: "rexvqa_mcq",
        key: &["mcq_id"],
        replace_by: Some("study_id"),
        deletion_vectors: false,
        doc: "ReXVQA: every generated MCQ with its structural validators v1-v4",
        schema: rexvqa::rexvqa_mcq,
    },
    TableDef {
        name: "rexvqa_judgements",
        key: &["mcq_id", "judge"],
        replace_by: Some("study_id"),
        deletion_vectors: false,
        doc: "ReXVQA: content validators c1-c3 of the structurally valid MCQs",
        schema: rexvqa::rexvqa_judgements,
    },
    TableDef {
        name: "rexvqa_questions",
        key: &["mcq_id"],
        replace_by: None,
        deletion_vectors: false,
        doc: "ReXVQA: every MCQ with V(Q), PHI, near-duplicate and QC-sample columns; kept = exported",
        schema: rexvqa::rexvqa_questions,
    },
    TableDef {
        name: "rexvqa_taxonomy",
        key: &["id"],
        replace_by: None,
        deletion_vectors: false,
        doc: "ReXVQA: the condition taxonomy of table A2 (categories, subcategories, synonyms)",
        schema: rexvqa::rexvqa_taxonomy,
    },
    TableDef {
        name: "givcxr_regions",
        key: &["context_id"],
        replace_by: Some("study_id"),
        deletion_vectors: false,
        doc: "GIV-CXR: one region context per frontal image and region with facts (box, pipe-encoded attributes, texture, phrases)",
        schema: givcxr::givcxr_regions,
    },
    TableDef {
        name: "givcxr_questions",
        key: &["question_id"],
        replace_by: Some("study_id"),
        deletion_vectors: false,
        doc: "GIV-CXR: questions generated per region context (prompt P1) with their guideline breaches",
        schema: givcxr::givcxr_questions,
    },
    TableDef {
        name: "givcxr_qa",
        key: &["qa_id"],
        replace_by: Some("study_id"),
        deletion_vectors: false,
        doc: "GIV-CXR: every QA pair (P2 answers) with aspect, clinical finding, box size, lengths, prompt version",
        schema: givcxr::givcxr_qa,
    },
    TableDef {
        name: "givcxr_verdicts",
        key: &["qa_id", "judge"],
        replace_by: Some("study_id"),
        deletion_vectors: false,
        doc: "GIV-CXR: hallucination verdicts (P3) of the QA pairs, batched per region context",
        schema: givcxr::givcxr_verdicts,
    },
    TableDef {
        name: "givcxr_dataset",
        key: &["qa_id"],
        replace_by: None,
        deletion_vectors: false,
        doc: "GIV-CXR: the exported QA pairs (judged, not hallucinated, no breach, a finding, box in the image)",
        schema: givcxr::givcxr_dataset,
    },
    TableDef {
        name: "givcxr_rejects",
        key: &["qa_id"],
        replace_by: None,
        deletion_vectors: false,
        doc: "GIV-CXR: every QA pair left out of the export, with its reasons",
        schema: givcxr::givcxr_rejects,
    },
    TableDef {
        name: "givcxr_review",
        key: &["qa_id"],
        replace_by: None,
        deletion_vectors: false,
        doc: "GIV-CXR: the judged pairs in review order, least confident verdict first",
        schema: givcxr::givcxr_review,
    },
    TableDef {
        name: "givcxr_reviews",
        key: &["qa_id", "reviewer"],
        replace_by: None,
        deletion_vectors: false,
        doc: "GIV-CXR: radiologists' verdicts (accepted or not) on QA pairs",
        schema: givcxr::givcxr_reviews,
    },
    TableDef {
        name: "givcxr_region_map",
        key: &["name", "kind"],
        replace_by: None,
        deletion_vectors: false,
        doc: "GIV-CXR: how cxrlake regions and ImaGenome boxes reach the 36 regions, and which do not",
        schema: givcxr::givcxr_region_map,
    },
    TableDef {
        name: "givcxr_prompt_versions",
        key: &["version"],
        replace_by: None,
        deletion_vectors: false,
        doc: "GIV-CXR: the prompts' dated changelog (paper 002 table 5, then ours)",
        schema: givcxr::givcxr_prompt_versions,
    },
    TableDef {
        name: "eval_labels",
        key: &["eval_id", "system", "scope", "name", "metric"],
        replace_by: None,
        deletion_vectors: false,
        doc: "evaluation: scene-graph finding tags against study labels (P/R/F1/MCC per class, subset, micro)",
        schema: evaluate::eval_scores,
    },
    TableDef {
        name: "eval_boxes",
        key: &["eval_id", "system", "scope", "name", "metric"],
        replace_by: None,
        deletion_vectors: false,
        doc: "evaluation: finding boxes against reference boxes (IoU/IoP/IoT, thresholded at 30 %)",
        schema: evaluate::eval_scores,
    },
    TableDef {
        name: "eval_radstruct",
        key: &["eval_id", "system", "scope", "name", "metric"],
        replace_by: None,
        deletion_vectors: false,
        doc: "evaluation: RadStrucVQA sub-metrics of a predictions file (precision, recall, F1)",
        schema: evaluate::eval_scores,
    },
    TableDef {
        name: "eval_text",
        key: &["eval_id", "system", "scope", "name", "metric"],
        replace_by: None,
        deletion_vectors: false,
        doc: "evaluation: free-text answers (BLEU-1..4, METEOR, ROUGE-L, CIDEr-D, BERTScore)",
        schema: evaluate::eval_scores,
    },
    TableDef {
        name: "eval_gemex",
        key: &["eval_id", "system", "scope", "name", "metric"],
        replace_by: None,
        deletion_vectors: false,
        doc: "evaluation: GEMeX A-score and V-score per question type",
        schema: evaluate::eval_scores,
    },
    TableDef {
        name: "eval_choice",
        key: &["eval_id", "system", "scope", "name", "metric"],
        replace_by: None,
        deletion_vectors: false,
        doc: "evaluation: multiple-choice accuracy overall, per category and task type (ReXVQA)",
        schema: evaluate::eval_scores,
    },
    TableDef {
        name: "eval_agreement",
        key: &["eval_id", "system", "scope", "name", "metric"],
        replace_by: None,
        deletion_vectors: false,
        doc: "evaluation: rater agreement (Cohen's and Fleiss' kappa, Gwet's AC1/AC2)",
        schema: evaluate::eval_scores,
    },
    TableDef {
        name: "eval_givcxr_bias",
        key: &["eval_id", "system", "scope", "name", "metric"],
        replace_by: None,
        deletion_vectors: false,
        doc: "evaluation: GIV-CXR bias, scores of common vs rare findings and locations",
        schema: evaluate::eval_scores,
    },
];

/// Looks up a table definition by name.
pub fn table(name: &str) -> Option<&'static TableDef> {
    TABLES.iter().find(|t| t.name == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_names_are_unique_and_keys_exist() {
        let mut names: Vec<_> = TABLES.iter().map(|t| t.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), TABLES.len());
        for t in TABLES {
            let schema = (t.schema)();
            for k in t.key.iter().chain(t.replace_by.iter()) {
                assert!(
                    schema.field_with_name(k).is_ok(),
                    "{}: key column {k} missing",
                    t.name
                );
            }
        }
    }

    #[test]
    fn qa_rating_column_is_marked() {
        let schema = pipeline::qa();
        let field = schema.field_with_name("rating").expect("rating column");
        assert!(is_rating_field(field));
        assert!(!is_rating_field(
            schema.field_with_name("question").expect("question")
        ));
    }

    #[test]
    fn scene_graph_fields_use_the_papers_names() {
        let schema = pipeline::scene_graphs();
        for name in [
            "sentences",
            "observations",
            "top_level_obs_ids",
            "regions",
            "indication",
            "located_at_relations",
            "obs_relations",
            "obs_sent_relations",
            "region_region_relations",
            "study_quality",
            "study_img_localization_quality",
        ] {
            assert!(schema.field_with_name(name).is_ok(), "missing {name}");
        }
    }
}
