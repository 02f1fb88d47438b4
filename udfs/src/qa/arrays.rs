//! Generated questions → the Arrow array `generate_qa` returns, built column by column from the
//! declared `qa` fields (no JSON round trip: the QA table is the largest one, ~230 rows per
//! study with several answer parts each). The columns of a struct are built on every core.

use std::sync::Arc;

use datafusion::arrow::array::{
    ArrayRef, BooleanArray, FixedSizeListArray, Float32Array, Int32Array, Int64Array, ListArray,
    StringBuilder, StructArray, new_null_array,
};
use datafusion::arrow::buffer::{NullBuffer, OffsetBuffer};
use datafusion::arrow::datatypes::{DataType, Field, FieldRef, Fields};
use datafusion::common::{Result, exec_datafusion_err};
use rayon::prelude::*;

use super::generate_qa::generated_type;
use cxrlake_map::ObsQuality;
use cxrlake_qa::{AnswerPart, Localization, ModifierPair, Question, Texts, Variable};

/// One list of questions per study row.
pub fn questions_array(rows: &[Vec<Question<'_>>]) -> Result<ArrayRef> {
    let DataType::List(item) = generated_type() else {
        return Err(exec_datafusion_err!(
            "generate_qa: return type is not a list"
        ));
    };
    let questions: Vec<&Question<'_>> = rows.iter().flatten().collect();
    let values = question_struct(struct_fields(&item)?, &questions)?;
    list(&item, rows.iter().map(Vec::len), values)
}

fn struct_fields(field: &Field) -> Result<&Fields> {
    match field.data_type() {
        DataType::Struct(fields) => Ok(fields),
        other => Err(exec_datafusion_err!(
            "generate_qa: {} is {other}, not a struct",
            field.name()
        )),
    }
}

fn item_field(field: &Field) -> Result<&FieldRef> {
    match field.data_type() {
        DataType::List(item) => Ok(item),
        other => Err(exec_datafusion_err!(
            "generate_qa: {} is {other}, not a list",
            field.name()
        )),
    }
}

/// A list array of `item` values with these lengths.
fn list(
    item: &FieldRef,
    lengths: impl Iterator<Item = usize>,
    values: ArrayRef,
) -> Result<ArrayRef> {
    let offsets = OffsetBuffer::from_lengths(lengths);
    Ok(Arc::new(ListArray::try_new(
        item.clone(),
        offsets,
        values,
        None,
    )?))
}

/// A UTF-8 array, its buffers sized up front (growing them copies every string again).
fn utf8<'a>(values: impl Iterator<Item = Option<&'a str>> + Clone) -> ArrayRef {
    let (items, bytes) = values
        .clone()
        .fold((0, 0), |(n, b), v| (n + 1, b + v.map_or(0, str::len)));
    let mut builder = StringBuilder::with_capacity(items, bytes);
    builder.extend(values);
    Arc::new(builder.finish())
}

fn booleans(values: impl Iterator<Item = bool>) -> ArrayRef {
    Arc::new(values.map(Some).collect::<BooleanArray>())
}

/// `list<utf8>` of rows with these lengths and values (all rows' values in order).
fn string_list<'a>(
    field: &Field,
    lengths: impl Iterator<Item = usize>,
    values: impl Iterator<Item = &'a str> + Clone,
) -> Result<ArrayRef> {
    list(item_field(field)?, lengths, utf8(values.map(Some)))
}

/// `list<utf8>` of one [`Texts`] per row.
fn texts_list<'t, 'a: 't>(
    field: &Field,
    rows: impl Iterator<Item = &'t Texts<'a>> + Clone,
) -> Result<ArrayRef> {
    let (mut items, mut bytes) = (0, 0);
    for texts in rows.clone() {
        texts.for_each(|t| {
            items += 1;
            bytes += t.len();
        });
    }
    let mut values = StringBuilder::with_capacity(items, bytes);
    for texts in rows.clone() {
        texts.for_each(|t| values.append_value(t));
    }
    list(
        item_field(field)?,
        rows.map(Texts::len),
        Arc::new(values.finish()),
    )
}

/// A struct array of `fields`, one column per field name from `column` (built in parallel), NULL
/// columns for names it does not know (judged later).
fn structure(
    fields: &Fields,
    len: usize,
    nulls: Option<NullBuffer>,
    column: impl Fn(&Field) -> Result<Option<ArrayRef>> + Sync,
) -> Result<ArrayRef> {
    let columns = fields
        .par_iter()
        .map(|f| Ok(column(f)?.unwrap_or_else(|| new_null_array(f.data_type(), len))))
        .collect::<Result<Vec<_>>>()?;
    Ok(Arc::new(StructArray::try_new(
        fields.clone(),
        columns,
        nulls,
    )?))
}

fn question_struct(fields: &Fields, qs: &[&Question<'_>]) -> Result<ArrayRef> {
    structure(fields, qs.len(), None, |f| {
        Ok(Some(match f.name().as_str() {
            "question_id" => utf8(qs.iter().map(|q| Some(q.question_id.as_str()))),
            "question_type" => utf8(qs.iter().map(|q| Some(q.question_type))),
            "question_strategy" => utf8(qs.iter().map(|q| Some(q.question_strategy))),
            "question" => utf8(qs.iter().map(|q| Some(q.question.as_ref()))),
            "contains_report_answers" => booleans(qs.iter().map(|q| q.contains_report_answers)),
            "contains_template_answers" => booleans(qs.iter().map(|q| q.contains_template_answers)),
            "obs_ids" => string_list(
                f,
                qs.iter().map(|q| q.obs_ids.len()),
                qs.iter().flat_map(|q| q.obs_ids.iter().copied()),
            )?,
            "extraction_quality" => quality(f, qs.iter().map(|q| q.extraction_quality.as_deref()))?,
            "variables" => {
                let item = item_field(f)?;
                let vars: Vec<&Variable> = qs.iter().flat_map(|q| &q.variables).collect();
                let values = structure(struct_fields(item)?, vars.len(), None, |g| {
                    Ok(match g.name().as_str() {
                        "name" => Some(utf8(vars.iter().map(|v| Some(v.name)))),
                        "value_json" => {
                            Some(utf8(vars.iter().map(|v| Some(v.value_json.as_str()))))
                        }
                        _ => None,
                    })
                })?;
                list(item, qs.iter().map(|q| q.variables.len()), values)?
            }
            "question_img_localization_quality" => {
                let item = item_field(f)?;
                let all: Vec<_> = qs
                    .iter()
                    .flat_map(|q| &q.question_img_localization_quality)
                    .collect();
                let values = structure(struct_fields(item)?, all.len(), None, |g| {
                    Ok(match g.name().as_str() {
                        "image_id" => Some(utf8(all.iter().map(|v| Some(v.image_id.as_str())))),
                        "localization_quality" => Some(utf8(
                            all.iter().map(|v| Some(v.localization_quality.as_str())),
                        )),
                        _ => None,
                    })
                })?;
                list(
                    item,
                    qs.iter().map(|q| q.question_img_localization_quality.len()),
                    values,
                )?
            }
            "answers" => {
                let item = item_field(f)?;
                let parts: Vec<&AnswerPart<'_>> = qs.iter().flat_map(|q| &q.answers).collect();
                let values = answer_struct(struct_fields(item)?, &parts)?;
                list(item, qs.iter().map(|q| q.answers.len()), values)?
            }
            _ => return Ok(None),
        }))
    })
}

fn answer_struct(fields: &Fields, ps: &[&AnswerPart<'_>]) -> Result<ArrayRef> {
    structure(fields, ps.len(), None, |f| {
        let text = |get: for<'p, 'a> fn(&'p AnswerPart<'a>) -> Option<&'p str>| {
            utf8(ps.iter().map(|p| get(p)))
        };
        let texts = |get: for<'p, 'a> fn(&'p AnswerPart<'a>) -> &'p Texts<'a>| {
            texts_list(f, ps.iter().map(|p| get(p)))
        };
        Ok(Some(match f.name().as_str() {
            "answer_id" => Arc::new(ps.iter().map(|p| Some(p.answer_id)).collect::<Int64Array>()),
            "parent_answer_id" => Arc::new(
                ps.iter()
                    .map(|p| p.parent_answer_id)
                    .collect::<Int64Array>(),
            ),
            "answer_level" => Arc::new(
                ps.iter()
                    .map(|p| Some(p.answer_level))
                    .collect::<Int32Array>(),
            ),
            "answer_type" => text(|p| Some(p.answer_type)),
            "text" => text(|p| Some(p.text.as_ref())),
            "name_tag" => text(|p| p.name_tag),
            "laterality" => text(|p| p.laterality),
            "certainty" => text(|p| p.certainty),
            "positiveness" => text(|p| p.positiveness),
            "regions" => texts(|p| &p.regions)?,
            "obs_entities" => texts(|p| &p.obs_entities)?,
            "obs_entities_parents" => texts(|p| &p.obs_entities_parents)?,
            "obs_categories" => texts(|p| &p.obs_categories)?,
            "obs_subcategories" => texts(|p| &p.obs_subcategories)?,
            "obs_ids" => texts(|p| &p.obs_ids)?,
            "from_report" => booleans(ps.iter().map(|p| p.from_report)),
            "extraction_quality" => quality(f, ps.iter().map(|p| p.extraction_quality.as_deref()))?,
            "modifiers" => {
                let item = item_field(f)?;
                let all: Vec<&ModifierPair<'_>> = ps.iter().flat_map(|p| &p.modifiers).collect();
                let values = structure(struct_fields(item)?, all.len(), None, |g| {
                    Ok(match g.name().as_str() {
                        "modifier_type" => Some(utf8(all.iter().map(|m| Some(m.modifier_type)))),
                        "value" => Some(utf8(all.iter().map(|m| Some(m.value)))),
                        _ => None,
                    })
                })?;
                list(item, ps.iter().map(|p| p.modifiers.len()), values)?
            }
            "localization" => {
                let item = item_field(f)?;
                let all: Vec<&Localization> =
                    ps.iter().flat_map(|p| p.localization.iter()).collect();
                let values = localization_struct(struct_fields(item)?, &all)?;
                list(item, ps.iter().map(|p| p.localization.len()), values)?
            }
            _ => return Ok(None),
        }))
    })
}

fn localization_struct(fields: &Fields, ls: &[&Localization]) -> Result<ArrayRef> {
    structure(fields, ls.len(), None, |f| {
        Ok(Some(match f.name().as_str() {
            "image_id" => utf8(ls.iter().map(|l| Some(l.image_id.as_str()))),
            "localization_quality" => utf8(ls.iter().map(|l| l.localization_quality.as_deref())),
            "is_fallback" => Arc::new(ls.iter().map(|l| l.is_fallback).collect::<BooleanArray>()),
            "localization_reference_ids" => string_list(
                f,
                ls.iter().map(|l| l.localization_reference_ids.len()),
                ls.iter()
                    .flat_map(|l| l.localization_reference_ids.iter().map(String::as_str)),
            )?,
            "missing_localization" => string_list(
                f,
                ls.iter().map(|l| l.missing_localization.len()),
                ls.iter()
                    .flat_map(|l| l.missing_localization.iter().map(String::as_str)),
            )?,
            "bboxes" => {
                let item = item_field(f)?;
                let DataType::FixedSizeList(coord, 4) = item.data_type() else {
                    return Err(exec_datafusion_err!(
                        "generate_qa: bboxes items are {}, not fixed_size_list<4>",
                        item.data_type()
                    ));
                };
                let boxes: Vec<&Option<[f32; 4]>> = ls.iter().flat_map(|l| &l.bboxes).collect();
                let coords: Float32Array = boxes
                    .iter()
                    .flat_map(|b| b.unwrap_or_default())
                    .map(Some)
                    .collect();
                let nulls = NullBuffer::from(boxes.iter().map(|b| b.is_some()).collect::<Vec<_>>());
                let values = FixedSizeListArray::try_new(
                    coord.clone(),
                    4,
                    Arc::new(coords),
                    Some(nulls).filter(|n| n.null_count() > 0),
                )?;
                list(item, ls.iter().map(|l| l.bboxes.len()), Arc::new(values))?
            }
            _ => return Ok(None),
        }))
    })
}

/// The five extraction-quality levels (NULL rows for `None`).
fn quality<'a>(
    field: &Field,
    rows: impl Iterator<Item = Option<&'a ObsQuality>> + Clone + Sync,
) -> Result<ArrayRef> {
    let len = rows.clone().count();
    let valid: Vec<bool> = rows.clone().map(|q| q.is_some()).collect();
    let nulls = Some(NullBuffer::from(valid)).filter(|n| n.null_count() > 0);
    structure(struct_fields(field)?, len, nulls, |f| {
        let get: fn(&ObsQuality) -> &str = match f.name().as_str() {
            "region_extract_quality" => |q| &q.region_extract_quality,
            "entity_extract_quality" => |q| &q.entity_extract_quality,
            "sentence_name_quality" => |q| &q.sentence_name_quality,
            "change_quality" => |q| &q.change_quality,
            "general_issue_level" => |q| &q.general_issue_level,
            _ => return Ok(None),
        };
        Ok(Some(utf8(rows.clone().map(|q| q.map(get)))))
    })
}
