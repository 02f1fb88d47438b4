//! `grade_qa(answers, extraction_quality, question_img_localization_quality, frontal_images,
//! verdicts)`: the judged columns of one QA pair (paper 000, D.3, tables 11 and 12) as
//! `struct<answers, question_quality, rating, rating_rank>`:
//!
//! - each answer part's `answer_quality`: its entailment, relevance and answer-clarity levels
//!   and their worst rating (relevance rated by the part's answer type);
//! - `question_quality`: question clarity, completeness and the worst text rating of the pair;
//! - `rating`: the worst of that and the scene-graph aspects: the five extraction levels of the
//!   pair's observations (`extraction_quality`, none for template-only answers) and the
//!   localization level of each image that counts: the study's frontal images
//!   (`frontal_images`), or every image when it has none. Releases are frontal only (paper 3.3),
//!   so lateral localization does not lower a rating.
//!
//! `verdicts` is `list<struct<criterion, levels>>`, one per criterion, `levels` NULL when no
//! usable verdict was found; any missing level makes the pair `not rated`.

use std::collections::HashSet;
use std::sync::Arc;

use cxrlake_grade::{part_rating, scene_graph_rating, text_rating};
use cxrlake_judge::Criterion;
use cxrlake_schemas::pipeline::answer_part_fields;
use cxrlake_schemas::quality::EXTRACTION;
use cxrlake_schemas::rating::rating_field;
use cxrlake_schemas::types::{structure, text};
use datafusion::arrow::array::{
    Array, ArrayRef, AsArray, Int8Array, ListArray, StringArray, StringBuilder, StructArray,
};
use datafusion::arrow::buffer::OffsetBuffer;
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Field, FieldRef, Fields};
use datafusion::common::{Result, exec_datafusion_err, exec_err};
use datafusion::logical_expr::{
    ColumnarValue, ReturnFieldArgs, ScalarFunctionArgs, ScalarUDFImpl, Signature, Volatility,
};

use crate::args::list_strs;
use crate::judge::{Answers, text_at};

/// The declared `answer_quality` field of an answer part.
fn answer_quality_field() -> Field {
    answer_part_fields()
        .into_iter()
        .find(|f| f.name() == "answer_quality")
        .unwrap_or_else(|| unreachable!("answer parts have answer_quality"))
}

fn question_quality_field() -> Field {
    structure(
        "question_quality",
        vec![
            text("question_clarity"),
            text("completeness"),
            rating_field("rating"),
        ],
    )
}

/// `answers` as given, with `answer_quality` of the declared type.
fn graded_answers_type(answers: &DataType) -> Result<DataType> {
    let DataType::List(item) = answers else {
        return exec_err!("grade_qa: answers must be a list, not {answers}");
    };
    let DataType::Struct(fields) = item.data_type() else {
        return exec_err!("grade_qa: answers must be a list of structs");
    };
    let fields: Fields = fields
        .iter()
        .map(|f| {
            if f.name() == "answer_quality" {
                Arc::new(answer_quality_field())
            } else {
                Arc::clone(f)
            }
        })
        .collect();
    Ok(DataType::List(Arc::new(Field::new(
        item.name(),
        DataType::Struct(fields),
        item.is_nullable(),
    ))))
}

fn output_fields(answers: &DataType) -> Result<Fields> {
    Ok(Fields::from(vec![
        Field::new("answers", graded_answers_type(answers)?, true),
        question_quality_field(),
        rating_field("rating"),
        Field::new("rating_rank", DataType::Int8, true),
    ]))
}

/// The `grade_qa` scalar function.
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct GradeQaFunc {
    signature: Signature,
}

impl Default for GradeQaFunc {
    fn default() -> Self {
        Self::new()
    }
}

impl GradeQaFunc {
    /// The function.
    pub fn new() -> Self {
        Self {
            signature: Signature::any(5, Volatility::Immutable),
        }
    }
}

impl ScalarUDFImpl for GradeQaFunc {
    fn name(&self) -> &str {
        "grade_qa"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, args: &[DataType]) -> Result<DataType> {
        let answers = args
            .first()
            .ok_or_else(|| exec_datafusion_err!("grade_qa takes 5 arguments"))?;
        Ok(DataType::Struct(output_fields(answers)?))
    }

    fn return_field_from_args(&self, args: ReturnFieldArgs) -> Result<FieldRef> {
        let answers = args
            .arg_fields
            .first()
            .ok_or_else(|| exec_datafusion_err!("grade_qa takes 5 arguments"))?;
        Ok(Arc::new(Field::new(
            self.name(),
            DataType::Struct(output_fields(answers.data_type())?),
            true,
        )))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let args = ColumnarValue::values_to_arrays(&args.args)?;
        if args.len() != 5 {
            return exec_err!(
                "grade_qa(answers, extraction_quality, question_img_localization_quality, \
                 frontal_images, verdicts) takes 5 arguments"
            );
        }
        Ok(ColumnarValue::Array(grade(&args)?))
    }
}

/// Levels by criterion of one row's verdicts.
struct RowVerdicts<'a> {
    levels: [Option<Vec<Option<&'a str>>>; 5],
}

impl<'a> RowVerdicts<'a> {
    fn read(
        list: &'a ListArray,
        criteria: &'a StringArray,
        levels: &'a ListArray,
        row: usize,
    ) -> Self {
        let mut out: [Option<Vec<Option<&'a str>>>; 5] = Default::default();
        if list.is_valid(row) {
            let offsets = list.value_offsets();
            for i in offsets[row] as usize..offsets[row + 1] as usize {
                let Some(criterion) = text_at(criteria, i).and_then(Criterion::from_key) else {
                    continue;
                };
                if levels.is_null(i) {
                    continue;
                }
                let values = levels.values().as_string::<i32>();
                let range =
                    levels.value_offsets()[i] as usize..levels.value_offsets()[i + 1] as usize;
                out[criterion as usize] = Some(range.map(|j| text_at(values, j)).collect());
            }
        }
        RowVerdicts { levels: out }
    }

    /// The level of `criterion` for part `index` (0 for question criteria).
    fn level(&self, criterion: Criterion, index: usize) -> Option<&'a str> {
        self.levels[criterion as usize]
            .as_ref()
            .and_then(|levels| levels.get(index).copied().flatten())
    }
}

/// Child `name` of a struct array as plain UTF-8.
fn utf8_field(array: &StructArray, name: &str) -> Result<StringArray> {
    let child = array
        .column_by_name(name)
        .ok_or_else(|| exec_datafusion_err!("grade_qa: no field {name}"))?;
    Ok(cast(child, &DataType::Utf8)?.as_string::<i32>().clone())
}

fn list_arg<'a>(args: &'a [ArrayRef], index: usize, what: &str) -> Result<&'a ListArray> {
    args[index]
        .as_list_opt::<i32>()
        .ok_or_else(|| exec_datafusion_err!("grade_qa: {what} must be a list"))
}

fn grade(args: &[ArrayRef]) -> Result<ArrayRef> {
    let rows = args[0].len();
    let answers = Answers::new(&args[0], "grade_qa")?;
    let extraction = args[1]
        .as_struct_opt()
        .ok_or_else(|| exec_datafusion_err!("grade_qa: extraction_quality must be a struct"))?;
    let extraction: Vec<StringArray> = EXTRACTION
        .iter()
        .map(|aspect| utf8_field(extraction, aspect.key))
        .collect::<Result<_>>()?;
    let extraction_valid = args[1].logical_nulls();
    let images = list_arg(args, 2, "question_img_localization_quality")?;
    let image_values = images
        .values()
        .as_struct_opt()
        .ok_or_else(|| exec_datafusion_err!("grade_qa: image qualities must be structs"))?;
    let image_ids = utf8_field(image_values, "image_id")?;
    let image_levels = utf8_field(image_values, "localization_quality")?;
    let frontal = cast(&args[3], &cxrlake_schemas::types::list_of(DataType::Utf8))?;
    let verdicts = list_arg(args, 4, "verdicts")?;
    let verdict_values = verdicts
        .values()
        .as_struct_opt()
        .ok_or_else(|| exec_datafusion_err!("grade_qa: verdicts must be structs"))?;
    let criteria = utf8_field(verdict_values, "criterion")?;
    let levels = cast(
        verdict_values
            .column_by_name("levels")
            .ok_or_else(|| exec_datafusion_err!("grade_qa: verdicts need levels"))?,
        &cxrlake_schemas::types::list_of(DataType::Utf8),
    )?;
    let levels = levels.as_list::<i32>();

    let mut entailment = StringBuilder::new();
    let mut relevance = StringBuilder::new();
    let mut answer_clarity = StringBuilder::new();
    let mut part_ratings = StringBuilder::new();
    let mut question_clarity = StringBuilder::new();
    let mut completeness = StringBuilder::new();
    let mut text_ratings = StringBuilder::new();
    let mut ratings = StringBuilder::new();
    let mut ranks = Vec::with_capacity(rows);
    for row in 0..rows {
        let verdict = RowVerdicts::read(verdicts, &criteria, levels, row);
        let mut parts = Vec::new();
        for (index, i) in answers.range(row).enumerate() {
            let e = verdict.level(Criterion::Entailment, index);
            let r = verdict.level(Criterion::Relevance, index);
            let c = verdict.level(Criterion::AnswerClarity, index);
            let rating = part_rating(answers.answer_type(i), e, r, c);
            entailment.append_option(e);
            relevance.append_option(r);
            answer_clarity.append_option(c);
            part_ratings.append_value(rating.as_str());
            parts.push(rating);
        }
        let qc = verdict.level(Criterion::QuestionClarity, 0);
        let co = verdict.level(Criterion::Completeness, 0);
        let text = text_rating(qc, co, &parts);
        question_clarity.append_option(qc);
        completeness.append_option(co);
        text_ratings.append_value(text.as_str());

        let levels: [Option<&str>; 5] = std::array::from_fn(|k| {
            let valid = extraction_valid.as_ref().is_none_or(|n| n.is_valid(row));
            if valid {
                text_at(&extraction[k], row)
            } else {
                None
            }
        });
        let frontal_ids: HashSet<&str> = list_strs(&frontal, row).into_iter().collect();
        let image_range = if images.is_valid(row) {
            images.value_offsets()[row] as usize..images.value_offsets()[row + 1] as usize
        } else {
            0..0
        };
        let localization = image_range.filter_map(|i| {
            let counts = frontal_ids.is_empty()
                || text_at(&image_ids, i).is_some_and(|id| frontal_ids.contains(id));
            if counts {
                text_at(&image_levels, i)
            } else {
                None
            }
        });
        let rating = text.min(scene_graph_rating(levels, localization));
        ratings.append_value(rating.as_str());
        ranks.push(rating.rank());
    }

    let answer_quality = answer_quality_field();
    let DataType::Struct(quality_fields) = answer_quality.data_type() else {
        unreachable!("answer_quality is a struct")
    };
    let answer_quality: ArrayRef = Arc::new(StructArray::new(
        quality_fields.clone(),
        vec![
            Arc::new(entailment.finish()),
            Arc::new(relevance.finish()),
            Arc::new(answer_clarity.finish()),
            Arc::new(part_ratings.finish()),
        ],
        None,
    ));
    let graded_answers = replace_answer_quality(answers.list(), answer_quality)?;
    let question_quality = question_quality_field();
    let DataType::Struct(question_fields) = question_quality.data_type() else {
        unreachable!("question_quality is a struct")
    };
    let question_quality: ArrayRef = Arc::new(StructArray::new(
        question_fields.clone(),
        vec![
            Arc::new(question_clarity.finish()),
            Arc::new(completeness.finish()),
            Arc::new(text_ratings.finish()),
        ],
        None,
    ));
    let fields = output_fields(args[0].data_type())?;
    Ok(Arc::new(StructArray::new(
        fields,
        vec![
            graded_answers,
            question_quality,
            Arc::new(ratings.finish()),
            Arc::new(Int8Array::from(ranks)),
        ],
        None,
    )))
}

/// The answers list with its parts' `answer_quality` replaced (other fields shared, not copied).
/// `quality` holds one entry per part reached by the rows, in order.
fn replace_answer_quality(list: &ListArray, quality: ArrayRef) -> Result<ArrayRef> {
    let offsets = list.value_offsets();
    let (first, last) = (offsets[0] as usize, offsets[offsets.len() - 1] as usize);
    if last - first != quality.len() {
        return exec_err!(
            "grade_qa: graded {} parts of {}",
            quality.len(),
            last - first
        );
    }
    let parts = list.values().slice(first, last - first);
    let parts = parts.as_struct();
    let DataType::List(item) = graded_answers_type(list.data_type())? else {
        unreachable!("graded answers are a list")
    };
    let DataType::Struct(fields) = item.data_type() else {
        unreachable!("graded answers are structs")
    };
    let columns: Vec<ArrayRef> = fields
        .iter()
        .zip(parts.columns())
        .map(|(field, column)| {
            if field.name() == "answer_quality" {
                Arc::clone(&quality)
            } else {
                Arc::clone(column)
            }
        })
        .collect();
    let values = StructArray::try_new(fields.clone(), columns, parts.nulls().cloned())?;
    let lengths = offsets.windows(2).map(|w| (w[1] - w[0]) as usize);
    Ok(Arc::new(ListArray::try_new(
        item,
        OffsetBuffer::from_lengths(lengths),
        Arc::new(values),
        list.nulls().cloned(),
    )?))
}
