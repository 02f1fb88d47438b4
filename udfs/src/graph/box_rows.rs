//! Reads the `boxes` argument of `build_scene_graph` (per study, `list<struct>` of its
//! `region_boxes` rows) straight from Arrow: it is the largest input of the graph stage
//! (~400 rows per study), too large for a JSON round trip.

use datafusion::arrow::array::{Array, ArrayRef, AsArray, BooleanArray, StringArray, StructArray};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Field, Float32Type};
use datafusion::common::{Result, exec_datafusion_err};
use std::sync::Arc;

use cxrlake_graph::RegionBox;

fn column<'a>(rows: &'a StructArray, name: &str) -> Result<&'a ArrayRef> {
    rows.column_by_name(name)
        .ok_or_else(|| exec_datafusion_err!("build_scene_graph: boxes lack the field {name}"))
}

fn strings(array: &ArrayRef) -> Result<StringArray> {
    Ok(cast(array, &DataType::Utf8)?.as_string::<i32>().clone())
}

fn list_of(item: DataType) -> DataType {
    DataType::List(Arc::new(Field::new("item", item, true)))
}

/// `list<utf8>` as one `Vec<String>` per row.
fn string_lists(array: &ArrayRef) -> Result<Vec<Vec<String>>> {
    let lists = cast(array, &list_of(DataType::Utf8))?;
    let lists = lists.as_list::<i32>();
    let values = lists.values().as_string::<i32>();
    Ok((0..lists.len())
        .map(|row| {
            if lists.is_null(row) {
                return Vec::new();
            }
            let (start, end) = (lists.value_offsets()[row], lists.value_offsets()[row + 1]);
            (start as usize..end as usize)
                .filter(|i| values.is_valid(*i))
                .map(|i| values.value(i).to_string())
                .collect()
        })
        .collect())
}

/// Each study's region boxes (`None` for a NULL list).
pub fn region_box_rows(array: &ArrayRef) -> Result<Vec<Option<Vec<RegionBox>>>> {
    let lists = array.as_list_opt::<i32>().ok_or_else(|| {
        exec_datafusion_err!(
            "build_scene_graph: boxes are {}, not a list",
            array.data_type()
        )
    })?;
    let rows = lists
        .values()
        .as_struct_opt()
        .ok_or_else(|| exec_datafusion_err!("build_scene_graph: box rows are not structs"))?;
    let image = strings(column(rows, "image_id")?)?;
    let region = strings(column(rows, "region")?)?;
    let quality = strings(column(rows, "localization_quality")?)?;
    let fallback = cast(column(rows, "is_fallback")?, &DataType::Boolean)?;
    let fallback: &BooleanArray = fallback.as_boolean();
    let references = string_lists(column(rows, "localization_reference_ids")?)?;
    let missing = string_lists(column(rows, "missing_localization")?)?;
    let boxes = cast(
        column(rows, "bboxes")?,
        &list_of(list_of(DataType::Float32)),
    )?;
    let boxes = boxes.as_list::<i32>();
    let coords = boxes.values().as_list::<i32>();
    let floats = coords.values().as_primitive::<Float32Type>();
    let bboxes = |row: usize| -> Vec<Option<[f32; 4]>> {
        if boxes.is_null(row) {
            return Vec::new();
        }
        let offsets = boxes.value_offsets();
        (offsets[row] as usize..offsets[row + 1] as usize)
            .map(|b| {
                let o = coords.value_offsets();
                let (start, end) = (o[b] as usize, o[b + 1] as usize);
                (coords.is_valid(b) && end - start == 4).then(|| {
                    [
                        floats.value(start),
                        floats.value(start + 1),
                        floats.value(start + 2),
                        floats.value(start + 3),
                    ]
                })
            })
            .collect()
    };
    let mut references = references.into_iter();
    let mut missing = missing.into_iter();
    let mut all: Vec<RegionBox> = (0..rows.len())
        .map(|i| RegionBox {
            image_id: if image.is_valid(i) {
                image.value(i).to_string()
            } else {
                Default::default()
            },
            region: if region.is_valid(i) {
                region.value(i).to_string()
            } else {
                Default::default()
            },
            bboxes: bboxes(i),
            localization_reference_ids: references.next().unwrap_or_default(),
            missing_localization: missing.next().unwrap_or_default(),
            is_fallback: fallback.is_valid(i) && fallback.value(i),
            localization_quality: quality.is_valid(i).then(|| quality.value(i).to_string()),
        })
        .collect();
    let mut out = Vec::with_capacity(lists.len());
    let offsets = lists.value_offsets();
    // A sliced list may not use its values' tail.
    all.truncate(offsets[lists.len()] as usize);
    for row in (0..lists.len()).rev() {
        let start = offsets[row] as usize;
        let part = all.split_off(start.min(all.len()));
        out.push(lists.is_valid(row).then_some(part));
    }
    out.reverse();
    Ok(out)
}
