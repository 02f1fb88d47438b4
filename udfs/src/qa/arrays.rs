//! Generated questions → the Arrow array `generate_qa` returns, built column by column from the
//! declared `qa` fields (no JSON round trip: the QA table is the largest one, ~185 rows per
//! study with several answer parts each).

use std::sync::Arc;

use datafusion::arrow::array::{
    ArrayRef, BooleanArray, FixedSizeListArray, Float32Array, Int32Array, Int64Array, ListArray,
    StringArray, StructArray, new_null_array,
};
use datafusion::arrow::buffer::{NullBuffer, OffsetBuffer};
use datafusion::arrow::datatypes::{DataType, Field, FieldRef, Fields};
use datafusion::common::{Result, exec_datafusion_err};

use super::engine::{AnswerPart, ModifierPair, Question, Variable};
use super::generate_qa::generated_type;
use super::scene::Localization;
use crate::map::ObsQuality;

/// One list of questions per study row.
pub fn questions_array(rows: &[Vec<Question>]) -> Result<ArrayRef> {
    let DataType::List(item) = generated_type() else {
        return Err(exec_datafusion_err!(
            "generate_qa: return type is not a list"
        ));
    };
    let questions: Vec<&Question> = rows.iter().flatten().collect();
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

fn utf8<'a>(values: impl Iterator<Item = Option<&'a str>>) -> ArrayRef {
    Arc::new(values.collect::<StringArray>())
}

fn booleans(values: impl Iterator<Item = bool>) -> ArrayRef {
    Arc::new(values.map(Some).collect::<BooleanArray>())
}

/// `list<utf8>` from one slice per row.
fn string_list<'a>(
    field: &Field,
    rows: impl Iterator<Item = &'a [String]> + Clone,
) -> Result<ArrayRef> {
    let values = utf8(rows.clone().flatten().map(|s| Some(s.as_str())));
    list(item_field(field)?, rows.map(<[String]>::len), values)
}

/// A struct array of `fields`, one column per field name from `column`, NULL columns for names
/// it does not know (judged later).
fn structure(
    fields: &Fields,
    len: usize,
    nulls: Option<NullBuffer>,
    mut column: impl FnMut(&Field) -> Result<Option<ArrayRef>>,
) -> Result<ArrayRef> {
    let columns = fields
        .iter()
        .map(|f| Ok(column(f)?.unwrap_or_else(|| new_null_array(f.data_type(), len))))
        .collect::<Result<Vec<_>>>()?;
    Ok(Arc::new(StructArray::try_new(
        fields.clone(),
        columns,
        nulls,
    )?))
}

fn question_struct(fields: &Fields, qs: &[&Question]) -> Result<ArrayRef> {
    structure(fields, qs.len(), None, |f| {
        Ok(Some(match f.name().as_str() {
            "question_id" => utf8(qs.iter().map(|q| Some(q.question_id.as_str()))),
            "question_type" => utf8(qs.iter().map(|q| Some(q.question_type.as_str()))),
            "question_strategy" => utf8(qs.iter().map(|q| Some(q.question_strategy))),
            "question" => utf8(qs.iter().map(|q| Some(q.question.as_str()))),
            "contains_report_answers" => booleans(qs.iter().map(|q| q.contains_report_answers)),
            "contains_template_answers" => booleans(qs.iter().map(|q| q.contains_template_answers)),
            "obs_ids" => string_list(f, qs.iter().map(|q| q.obs_ids.as_slice()))?,
            "extraction_quality" => quality(f, qs.iter().map(|q| q.extraction_quality.as_ref()))?,
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
                let parts: Vec<&AnswerPart> = qs.iter().flat_map(|q| &q.answers).collect();
                let values = answer_struct(struct_fields(item)?, &parts)?;
                list(item, qs.iter().map(|q| q.answers.len()), values)?
            }
            _ => return Ok(None),
        }))
    })
}

fn answer_struct(fields: &Fields, ps: &[&AnswerPart]) -> Result<ArrayRef> {
    structure(fields, ps.len(), None, |f| {
        let text = |get: fn(&AnswerPart) -> Option<&str>| utf8(ps.iter().map(|p| get(p)));
        let texts = |get: fn(&AnswerPart) -> &[String]| string_list(f, ps.iter().map(|p| get(p)));
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
            "text" => text(|p| Some(p.text.as_str())),
            "name_tag" => text(|p| p.name_tag.as_deref()),
            "laterality" => text(|p| p.laterality.as_deref()),
            "certainty" => text(|p| p.certainty.as_deref()),
            "positiveness" => text(|p| p.positiveness.as_deref()),
            "regions" => texts(|p| &p.regions)?,
            "obs_entities" => texts(|p| &p.obs_entities)?,
            "obs_entities_parents" => texts(|p| &p.obs_entities_parents)?,
            "obs_categories" => texts(|p| &p.obs_categories)?,
            "obs_subcategories" => texts(|p| &p.obs_subcategories)?,
            "obs_ids" => texts(|p| &p.obs_ids)?,
            "from_report" => booleans(ps.iter().map(|p| p.from_report)),
            "extraction_quality" => quality(f, ps.iter().map(|p| p.extraction_quality.as_ref()))?,
            "modifiers" => {
                let item = item_field(f)?;
                let all: Vec<&ModifierPair> = ps.iter().flat_map(|p| &p.modifiers).collect();
                let values = structure(struct_fields(item)?, all.len(), None, |g| {
                    Ok(match g.name().as_str() {
                        "modifier_type" => Some(utf8(all.iter().map(|m| Some(m.modifier_type)))),
                        "value" => Some(utf8(all.iter().map(|m| Some(m.value.as_str())))),
                        _ => None,
                    })
                })?;
                list(item, ps.iter().map(|p| p.modifiers.len()), values)?
            }
            "localization" => {
                let item = item_field(f)?;
                let all: Vec<&Localization> = ps.iter().flat_map(|p| &p.localization).collect();
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
                ls.iter().map(|l| l.localization_reference_ids.as_slice()),
            )?,
            "missing_localization" => {
                string_list(f, ls.iter().map(|l| l.missing_localization.as_slice()))?
            }
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
    rows: impl Iterator<Item = Option<&'a ObsQuality>> + Clone,
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
