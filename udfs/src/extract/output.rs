//! The result structs of the extraction functions: their Arrow types and the conversion from
//! the extraction crate's values, shared by both backends.

use cxrlake_extract::{Indication, RawObservation, Sentence, clusters};
use cxrlake_llm::LlmClient;
use cxrlake_schemas::types::{key, list_of, struct_list, text, text_list};
use datafusion::arrow::array::ArrayRef;
use datafusion::arrow::datatypes::{DataType, Field, Fields};
use serde::Serialize;

use crate::llm_ask::{ask, reject_prompts};

pub(crate) use crate::args::{list_strs, string_at, utf8_arg, utf8_list_arg};

fn error_fields() -> [Field; 2] {
    [text("error"), text("raw")]
}

/// `struct<sentences: list<struct<sent_id, section, section_type, sentence, merge_with,
/// cluster_id>>, error, raw>`.
pub fn sentences_type() -> DataType {
    let sentence = vec![
        key("sent_id"),
        text("section"),
        text("section_type"),
        text("sentence"),
        text_list("merge_with"),
        text("cluster_id"),
    ];
    let mut fields = vec![struct_list("sentences", sentence)];
    fields.extend(error_fields());
    DataType::Struct(Fields::from(fields))
}

/// `struct<observations: list<struct<index, child, child_type, name, entity, probability,
/// change, summary_sentence, change_sentence, regions, modifiers>>, error, raw>`: `index` numbers
/// the top-level observations of the cluster from 1, `child` their children from 1 (0 = the
/// observation itself).
pub fn observations_type() -> DataType {
    let observation = vec![
        Field::new("index", DataType::Int32, false),
        Field::new("child", DataType::Int32, false),
        text("child_type"),
        text("name"),
        text("entity"),
        text("probability"),
        text("change"),
        text("summary_sentence"),
        text("change_sentence"),
        text_list("regions"),
        text_list("modifiers"),
    ];
    let mut fields = vec![struct_list("observations", observation)];
    fields.extend(error_fields());
    DataType::Struct(Fields::from(fields))
}

/// `struct<patient_info, indication, evaluation, indication_summary, associated_findings,
/// answer_for_indication, error, raw>`; all values NULL when the study has no indication.
pub fn indication_type() -> DataType {
    let mut fields = vec![
        text("patient_info"),
        text("indication"),
        text("evaluation"),
        text("indication_summary"),
        Field::new("associated_findings", list_of(DataType::Utf8), true),
        text("answer_for_indication"),
    ];
    fields.extend(error_fields());
    DataType::Struct(Fields::from(fields))
}

/// What one row failed with: the reason and, for unparseable LLM output, the output.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub(crate) struct Failure {
    error: Option<String>,
    raw: Option<String>,
}

impl Failure {
    /// An unparseable output.
    pub(crate) fn parse(reason: impl ToString, raw: &str) -> Self {
        Self {
            error: Some(reason.to_string()),
            raw: Some(raw.to_string()),
        }
    }

    /// A failed call.
    pub(crate) fn call(reason: impl ToString) -> Self {
        Self {
            error: Some(reason.to_string()),
            raw: None,
        }
    }
}

/// Asks every prompt (`None`: nothing to ask, the default value and no failure) and parses each
/// answer with `parse`. A failed call or an answer `parse` refuses is the row's [`Failure`]; the
/// refused answers are rejected in the client's cache, so the next run asks them again.
pub(crate) async fn ask_parsed<T: Default, E: ToString>(
    client: &LlmClient,
    prompts: Vec<Option<String>>,
    max_tokens: u32,
    parse: impl Fn(&str) -> Result<T, E>,
) -> datafusion::common::Result<Vec<(T, Failure)>> {
    let answers = ask(client, &prompts, max_tokens).await?;
    let mut unusable = Vec::new();
    let mut rows = Vec::with_capacity(answers.len());
    for (prompt, answer) in prompts.iter().zip(answers) {
        rows.push(match answer {
            None => (T::default(), Failure::default()),
            Some(Err(reason)) => (T::default(), Failure::call(reason)),
            Some(Ok(text)) => match parse(&text) {
                Ok(value) => (value, Failure::default()),
                Err(error) => {
                    let reason = error.to_string();
                    if let Some(prompt) = prompt {
                        unusable.push((prompt.as_str(), max_tokens, reason.clone()));
                    }
                    (T::default(), Failure::parse(reason, &text))
                }
            },
        });
    }
    reject_prompts(client, unusable).await;
    Ok(rows)
}

#[derive(Serialize)]
struct SentenceRow<'a> {
    sent_id: &'a str,
    section: &'a str,
    section_type: &'static str,
    sentence: &'a str,
    merge_with: &'a [String],
    cluster_id: String,
}

#[derive(Serialize)]
pub(crate) struct SentencesRow<'a> {
    sentences: Vec<SentenceRow<'a>>,
    #[serde(flatten)]
    failure: Failure,
}

impl<'a> SentencesRow<'a> {
    /// The row of a report's sentences, with their clusters.
    pub(crate) fn new(sentences: &'a [Sentence], failure: Failure) -> Self {
        let rows = sentences
            .iter()
            .zip(clusters(sentences))
            .map(|(s, cluster_id)| SentenceRow {
                sent_id: &s.sent_id,
                section: &s.section,
                section_type: s.section_type.as_str(),
                sentence: &s.sentence,
                merge_with: &s.merge_with,
                cluster_id,
            })
            .collect();
        Self {
            sentences: rows,
            failure,
        }
    }
}

#[derive(Serialize)]
struct ObservationRow<'a> {
    index: i32,
    child: i32,
    child_type: Option<&'a str>,
    name: &'a str,
    entity: &'a str,
    probability: Option<&'a str>,
    change: Option<&'a str>,
    summary_sentence: &'a str,
    change_sentence: Option<&'a str>,
    regions: &'a [String],
    modifiers: &'a [String],
}

impl<'a> ObservationRow<'a> {
    fn new(index: usize, child: usize, o: &'a RawObservation) -> Self {
        Self {
            index: index as i32,
            child: child as i32,
            child_type: o.child_type.as_deref(),
            name: &o.name,
            entity: &o.entity,
            probability: o.probability.as_deref(),
            change: o.change.as_deref(),
            summary_sentence: &o.summary_sentence,
            change_sentence: o.change_sentence.as_deref(),
            regions: &o.regions,
            modifiers: &o.modifiers,
        }
    }
}

#[derive(Serialize)]
pub(crate) struct ObservationsRow<'a> {
    observations: Vec<ObservationRow<'a>>,
    #[serde(flatten)]
    failure: Failure,
}

impl<'a> ObservationsRow<'a> {
    /// The row of a cluster's observations, children flattened after their parent.
    pub(crate) fn new(observations: &'a [RawObservation], failure: Failure) -> Self {
        let mut rows = Vec::new();
        for (i, observation) in observations.iter().enumerate() {
            rows.push(ObservationRow::new(i + 1, 0, observation));
            for (c, child) in observation.children.iter().enumerate() {
                let mut row = ObservationRow::new(i + 1, c + 1, child);
                if row.child_type.is_none() {
                    row.child_type = Some("regional_distinction");
                }
                rows.push(row);
            }
        }
        Self {
            observations: rows,
            failure,
        }
    }
}

#[derive(Serialize)]
pub(crate) struct IndicationRow<'a> {
    #[serde(flatten)]
    indication: Option<&'a Indication>,
    #[serde(flatten)]
    failure: Failure,
}

impl<'a> IndicationRow<'a> {
    /// The row of a study's indication (`None`: the study has none).
    pub(crate) fn new(indication: Option<&'a Indication>, failure: Failure) -> Self {
        Self {
            indication,
            failure,
        }
    }
}

/// The `(sent_id, sentence)` pairs of row `row` of the id and sentence lists.
pub(crate) fn findings_at<'a>(
    ids: &'a ArrayRef,
    texts: &'a ArrayRef,
    row: usize,
) -> Vec<(&'a str, &'a str)> {
    list_strs(ids, row)
        .into_iter()
        .zip(list_strs(texts, row))
        .collect()
}
