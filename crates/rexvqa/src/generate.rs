//! The MCQ task (paper 003, appendix A): a study's bullet list → four-option multiple-choice
//! questions with an explanation, difficulty, category and task type, from the LLM or the
//! offline generator ([`crate::offline`]). Every MCQ becomes a record, valid or not: the
//! structural validators ([`crate::validate`]) are columns, so failing MCQs stay queryable with
//! their reasons. Only an answer without a `questions` array is asked again.
//!
//! ```text
//!  bullets ──LLM──► {"questions": [item, …]}     facts + refdefs ──offline──► [item, …]
//!                         └───────────────┬──────────────────────────────────┘
//!        per item: v1–v4 · option labels stripped · correct option moved to a seeded position
//!                  · category/subcategory normalised onto table A2 · task type normalised
//! ```

use std::sync::Arc;

use cxrlake_generate::{GenerationTask, PromptSet, TaskPrompt, nullable};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::Result;
use crate::balance::{place, target};
use crate::offline::{Bullet, Catalog, Fact, Generator};
use crate::taxonomy::Taxonomy;
use crate::validate::{strip_label, structural, task_type};

/// The SQL function name of the MCQ task.
pub const TASK_NAME: &str = "rexvqa_generate";

/// The offline generator's id.
pub const OFFLINE_ID: &str = "offline-rexvqa-mcq-1";

/// An MCQ input row: the study, its bullets and its scene-graph facts.
#[derive(Debug, Deserialize)]
struct McqInput {
    #[serde(default, deserialize_with = "nullable")]
    study_id: String,
    #[serde(default, deserialize_with = "nullable")]
    bullets: Vec<Bullet>,
    #[serde(default, deserialize_with = "nullable")]
    facts: Vec<Fact>,
}

impl McqInput {
    fn parse(input: &Value) -> std::result::Result<McqInput, String> {
        let row: McqInput = serde_json::from_value(input.clone())
            .map_err(|e| format!("invalid MCQ input row: {e}"))?;
        if row.study_id.is_empty() {
            return Err("the input row has no study_id".into());
        }
        Ok(row)
    }
}

/// One MCQ, as the `rexvqa_generate` function returns it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct McqRecord {
    /// Its position in the generator's list (0-based).
    pub position: i32,
    /// The question.
    pub question: Option<String>,
    /// The four options (labels such as `B.` removed), after balancing.
    pub options: Option<Vec<String>>,
    /// The correct option's index (0-based), after balancing.
    pub answer_index: Option<i32>,
    /// The correct option's index as generated.
    pub generated_index: Option<i32>,
    /// The explanation.
    pub explanation: Option<String>,
    /// `easy`, `medium` or `hard` (lower-cased), as generated.
    pub difficulty: Option<String>,
    /// The category as generated.
    pub category_raw: Option<String>,
    /// The subcategory as generated.
    pub subcategory_raw: Option<String>,
    /// The table A2 category id (NULL: not recognised).
    pub category: Option<String>,
    /// The table A2 subcategory id (NULL: not recognised or not given).
    pub subcategory: Option<String>,
    /// One of the five task types, or the generator's text when it is none of them.
    pub task_type: Option<String>,
    /// v1 schema.
    pub v1_schema: bool,
    /// v2 data types.
    pub v2_types: bool,
    /// v3 format.
    pub v3_format: bool,
    /// v4 completeness.
    pub v4_complete: bool,
    /// Why validators failed.
    pub structural_reasons: Vec<String>,
    /// The MCQ as generated (JSON).
    pub raw: String,
}

/// The MCQ task over the prompts' `generate` task.
#[derive(Debug)]
pub struct GenerateTask {
    prompts: Arc<PromptSet>,
    prompt: TaskPrompt,
    taxonomy: Arc<Taxonomy>,
    catalog: Arc<Catalog>,
    seed: u64,
    min_explanation: usize,
}

impl GenerateTask {
    /// The task (prompt task `generate`): categories normalised by `taxonomy`, offline options
    /// from `catalog`, correct options placed by `seed`, explanations of at least
    /// `min_explanation` characters.
    pub fn new(
        prompts: Arc<PromptSet>,
        taxonomy: Arc<Taxonomy>,
        catalog: Arc<Catalog>,
        seed: u64,
        min_explanation: usize,
    ) -> Result<GenerateTask> {
        let prompt = prompts.require("generate")?.clone();
        Ok(GenerateTask {
            prompts,
            prompt,
            taxonomy,
            catalog,
            seed,
            min_explanation,
        })
    }

    /// The record of the `position`th MCQ of `study`.
    pub fn record(&self, study: &str, position: usize, item: &Value) -> McqRecord {
        let checks = structural(item, self.min_explanation);
        let text = |name: &str| {
            item.get(name)
                .and_then(Value::as_str)
                .map(|t| t.trim().to_string())
        };
        let options: Option<Vec<String>> =
            item.get("options")
                .and_then(Value::as_array)
                .and_then(|items| {
                    items
                        .iter()
                        .map(|o| o.as_str().map(|t| strip_label(t).to_string()))
                        .collect()
                });
        let generated = item
            .get("answer_index")
            .and_then(Value::as_i64)
            .and_then(|i| i32::try_from(i).ok());
        // Balanced only when the options and the index are well-formed.
        let (options, answer_index) = match (options, generated) {
            (Some(options), Some(index)) if checks.v2_types && checks.v3_format => {
                let key = format!("{study}/{position}");
                let (placed, at) = place(
                    &options,
                    index as usize,
                    target(self.seed, &key, options.len()),
                );
                (Some(placed), Some(at as i32))
            }
            (options, index) => (options, index),
        };
        let (category_raw, subcategory_raw) = (text("category"), text("subcategory"));
        let normalized = self.taxonomy.normalize(
            category_raw.as_deref().unwrap_or_default(),
            subcategory_raw.as_deref().unwrap_or_default(),
        );
        let task = text("task_type").map(|t| task_type(&t).map(str::to_string).unwrap_or(t));
        McqRecord {
            position: position as i32,
            question: text("question"),
            options,
            answer_index,
            generated_index: generated,
            explanation: text("explanation"),
            difficulty: text("difficulty").map(|d| d.to_lowercase()),
            category_raw,
            subcategory_raw,
            category: normalized.category,
            subcategory: normalized.subcategory,
            task_type: task,
            v1_schema: checks.v1_schema,
            v2_types: checks.v2_types,
            v3_format: checks.v3_format,
            v4_complete: checks.v4_complete,
            structural_reasons: checks.reasons,
            raw: item.to_string(),
        }
    }

    fn records(&self, study: &str, items: &[Value]) -> std::result::Result<Vec<Value>, String> {
        items
            .iter()
            .enumerate()
            .map(|(n, item)| {
                serde_json::to_value(self.record(study, n, item)).map_err(|e| e.to_string())
            })
            .collect()
    }
}

/// The bullets as the user prompt lists them: `FINDINGS:` and `IMPRESSION:` headings, one
/// `- ` line per bullet, indented by level (0 to 2).
fn render_bullets(bullets: &[Bullet]) -> String {
    let mut out = String::new();
    let mut section = "";
    for bullet in bullets {
        if bullet.section != section {
            section = &bullet.section;
            if !out.is_empty() {
                out.push('\n');
            }
            out.push_str(&section.to_uppercase());
            out.push_str(":\n");
        }
        out.push_str(&"  ".repeat(bullet.level.clamp(0, 2) as usize));
        out.push_str("- ");
        out.push_str(bullet.text.trim());
        out.push('\n');
    }
    out.trim_end().to_string()
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

    /// `BULLETS`.
    fn placeholders(
        &self,
        input: &Value,
    ) -> std::result::Result<Vec<(&'static str, String)>, String> {
        let row = McqInput::parse(input)?;
        if row.bullets.iter().all(|b| b.text.trim().is_empty()) {
            return Err("the study has no bullets to write questions from".into());
        }
        Ok(vec![("BULLETS", render_bullets(&row.bullets))])
    }

    /// Every item of `questions` becomes a record with its validators; an empty list is asked
    /// again.
    fn check(&self, input: &Value, answer: &Value) -> std::result::Result<Vec<Value>, String> {
        let row = McqInput::parse(input)?;
        let items = answer
            .get("questions")
            .and_then(Value::as_array)
            .filter(|items| !items.is_empty())
            .ok_or("the answer has no questions; write between three and six MCQs")?;
        self.records(&row.study_id, items)
    }

    fn offline(&self, input: &Value) -> std::result::Result<Vec<Value>, String> {
        let row = McqInput::parse(input)?;
        let items = Generator::new(&self.catalog, &self.taxonomy).generate(
            &row.study_id,
            &row.facts,
            &row.bullets,
        );
        self.records(&row.study_id, &items)
    }

    fn offline_id(&self) -> &str {
        OFFLINE_ID
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::offline::{CatalogFinding, CatalogRegion};

    pub(crate) fn catalog() -> Catalog {
        let finding =
            |category: &str, sub: &str, parents: &[&str], indicates: &[&str]| CatalogFinding {
                category: category.into(),
                subcategories: vec![sub.into()],
                parents: parents.iter().map(|p| p.to_string()).collect(),
                indicative_of: indicates.iter().map(|p| p.to_string()).collect(),
            };
        let region = |laterality: &str, counterpart: Option<&str>, parent: &str| CatalogRegion {
            laterality: laterality.into(),
            counterpart: counterpart.map(str::to_string),
            parent: Some(parent.into()),
        };
        Catalog {
            findings: [
                (
                    "pleural effusion",
                    finding("ANATOMICAL_FINDING", "PLEURA", &[], &[]),
                ),
                (
                    "pneumothorax",
                    finding("ANATOMICAL_FINDING", "PLEURA", &[], &[]),
                ),
                (
                    "pleural thickening",
                    finding("ANATOMICAL_FINDING", "PLEURA", &[], &[]),
                ),
                (
                    "pleural plaque",
                    finding("ANATOMICAL_FINDING", "PLEURA", &[], &[]),
                ),
                (
                    "consolidation",
                    finding("ANATOMICAL_FINDING", "LUNG_FIELD", &[], &["pneumonia"]),
                ),
                (
                    "atelectasis",
                    finding("ANATOMICAL_FINDING", "LUNG_FIELD", &[], &[]),
                ),
                (
                    "pulmonary edema",
                    finding("ANATOMICAL_FINDING", "LUNG_FIELD", &[], &[]),
                ),
                (
                    "cardiomegaly",
                    finding("ANATOMICAL_FINDING", "CARDIAC", &[], &[]),
                ),
                ("pneumonia", finding("DISEASE", "INFECTION", &[], &[])),
                ("tuberculosis", finding("DISEASE", "INFECTION", &[], &[])),
                ("lung cancer", finding("DISEASE", "NEOPLASM", &[], &[])),
                ("copd", finding("DISEASE", "PULMONARY_DISEASES", &[], &[])),
                ("heart failure", finding("DISEASE", "CARDIAC", &[], &[])),
            ]
            .into_iter()
            .map(|(n, f)| (n.to_string(), f))
            .collect(),
            regions: [
                (
                    "left lower lung zone",
                    region("left", Some("right lower lung zone"), "left lung"),
                ),
                (
                    "right lower lung zone",
                    region("right", Some("left lower lung zone"), "right lung"),
                ),
                (
                    "left upper lung zone",
                    region("left", Some("right upper lung zone"), "left lung"),
                ),
                (
                    "left mid lung zone",
                    region("left", Some("right mid lung zone"), "left lung"),
                ),
                ("left hilar structures", region("left", None, "left lung")),
            ]
            .into_iter()
            .map(|(n, r)| (n.to_string(), r))
            .collect(),
        }
    }

    fn task(seed: u64) -> GenerateTask {
        GenerateTask::new(
            Arc::new(crate::prompts().expect("prompts")),
            Arc::new(Taxonomy::embedded().expect("taxonomy")),
            Arc::new(catalog()),
            seed,
            40,
        )
        .expect("task")
    }

    fn study() -> Value {
        json!({
            "study_id": "s50000001",
            "bullets": [
                {"section": "findings", "text": "There is a left lower lobe consolidation.", "level": 0},
                {"section": "findings", "text": "Small left pleural effusion.", "level": 1},
                {"section": "findings", "text": "No pneumothorax.", "level": 0},
                {"section": "impression", "text": "Left lower lobe pneumonia.", "level": 0}
            ],
            "facts": [
                {"finding": "consolidation", "subcategories": ["LUNG_FIELD"], "positiveness": "pos",
                 "certainty": "certain", "regions": [{"region": "left lower lung zone"}],
                 "laterality": "left", "statement": "Consolidation in the left lower lobe."},
                {"finding": "pleural effusion", "subcategories": ["PLEURA"], "positiveness": "pos",
                 "certainty": "certain", "regions": ["left lower lung zone"], "laterality": "left"},
                {"finding": "pneumothorax", "subcategories": ["PLEURA"], "positiveness": "neg",
                 "certainty": "certain", "regions": []}
            ]
        })
    }

    #[test]
    fn the_offline_generator_writes_one_valid_mcq_per_task_type() {
        let task = task(0);
        let records = task.offline(&study()).expect("offline");
        let types: Vec<&str> = records
            .iter()
            .map(|r| r["task_type"].as_str().expect("task type"))
            .collect();
        assert_eq!(
            types,
            [
                "presence",
                "location",
                "negation",
                "differential_diagnosis",
                "geometric"
            ]
        );
        for record in &records {
            assert_eq!(record["structural_reasons"], json!([]), "{record}");
            let options = record["options"].as_array().expect("options");
            let answer = record["answer_index"].as_i64().expect("index") as usize;
            assert_eq!(options.len(), 4);
            assert_eq!(record["generated_index"], 0);
            let raw: Value =
                serde_json::from_str(record["raw"].as_str().expect("raw")).expect("json");
            assert_eq!(options[answer], raw["options"][0], "{record}");
        }
        let presence = &records[0];
        let options: Vec<&str> = presence["options"]
            .as_array()
            .expect("options")
            .iter()
            .filter_map(Value::as_str)
            .collect();
        assert!(options.contains(&"Consolidation"), "{options:?}");
        assert!(
            !options.contains(&"Pleural effusion"),
            "present findings are no distractors"
        );
        assert!(
            presence["explanation"]
                .as_str()
                .expect("explanation")
                .starts_with("There is a left lower lobe consolidation.")
        );
        assert_eq!(records[1]["options"].as_array().expect("o").len(), 4);
        assert_eq!(records[2]["category"], "negation");
        assert_eq!(records[3]["category"], "infectious_disease");
        assert_eq!(records[3]["subcategory"], "pneumonia");
        assert_eq!(records[4]["difficulty"], "hard");
        assert_eq!(
            task.offline(&study()).expect("again"),
            records,
            "deterministic"
        );
    }

    #[test]
    fn llm_items_keep_their_failures_as_columns() {
        let task = task(3);
        let records = task
            .check(
                &study(),
                &json!({"questions": [
                    {"question": "Which side?", "options": ["A. Left", "B. Right", "C. Both", "D. Neither"],
                     "answer_index": 0, "explanation": "The consolidation is in the left lower lobe.",
                     "difficulty": "Hard", "category": "Infectious", "subcategory": "Pneumonia",
                     "task_type": "Geometric reasoning"},
                    {"question": "Three options?", "options": ["a", "b", "c"], "answer_index": 1,
                     "explanation": "Only three options were written for this one.",
                     "difficulty": "easy", "category": "Astrology", "task_type": "presence"}
                ]}),
            )
            .expect("records");
        assert_eq!(records.len(), 2);
        let first = &records[0];
        assert_eq!(first["task_type"], "geometric");
        assert_eq!(first["difficulty"], "hard");
        assert_eq!(first["category"], "infectious_disease");
        let at = first["answer_index"].as_i64().expect("index") as usize;
        assert_eq!(first["options"][at], "Left");
        let second = &records[1];
        assert_eq!(second["v3_format"], false);
        assert_eq!(second["v1_schema"], true);
        assert_eq!(second["answer_index"], 1, "malformed MCQs are not balanced");
        assert_eq!(second["category"], Value::Null);
        assert_eq!(second["category_raw"], "Astrology");
        let error = task
            .check(&study(), &json!({"questions": []}))
            .expect_err("empty");
        assert!(error.contains("no questions"), "{error}");
        let prompt = task.placeholders(&study()).expect("placeholders");
        assert!(
            prompt[0]
                .1
                .starts_with("FINDINGS:\n- There is a left lower lobe consolidation.\n  - Small")
        );
        assert!(
            prompt[0]
                .1
                .contains("\nIMPRESSION:\n- Left lower lobe pneumonia.")
        );
    }
}
