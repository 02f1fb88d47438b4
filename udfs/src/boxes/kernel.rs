//! Shared plumbing of the box and mask functions: argument coercion, readers for box and RLE
//! columns, and result builders.
//!
//! ```text
//!   SQL types ──coerce──▶ utf8 counts · int64 sizes · fixed_size_list<f32, n> | list<f32> boxes
//!   invoke: all arguments scalar? ──yes──▶ 1-row arrays ─kernel─▶ ScalarValue
//!                                 └─no───▶ n-row arrays ─kernel─▶ ArrayRef
//! ```
//!
//! Boxes are accepted both as `fixed_size_list<f32, 4>` (the lake schema) and as plain
//! `list<f32>` (what Delta Lake and SQL array literals give back); any numeric element type is
//! cast to `f32`. Arity and coordinates are checked per row, so a bad box is an execution error
//! that names the function and the value.

use std::sync::Arc;

use cxrlake_masks::{BBox, Rle, RleSummary, summarize};
use cxrlake_schemas::types::{bbox_type, list_of};
use datafusion::arrow::array::{
    Array, ArrayRef, FixedSizeListArray, FixedSizeListBuilder, Float32Builder, Float64Array,
    Int64Array, ListArray, StringArray,
};
use datafusion::arrow::datatypes::{DataType, Field};
use datafusion::common::cast::{
    as_fixed_size_list_array, as_float32_array, as_int64_array, as_list_array, as_string_array,
};
use datafusion::common::{Result, ScalarValue, exec_datafusion_err, exec_err, plan_err};
use datafusion::logical_expr::{ColumnarValue, ScalarFunctionArgs};

/// What one argument of a box or mask function is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Arg {
    /// A pycocotools compressed RLE string.
    Counts,
    /// An image height or width in pixels.
    Size,
    /// A box `[x1, y1, x2, y2]`.
    Box,
    /// A list of boxes.
    BoxList,
}

impl Arg {
    fn describe(self) -> &'static str {
        match self {
            Arg::Counts => "counts (string)",
            Arg::Size => "size (integer)",
            Arg::Box => "box (fixed_size_list<float, 4> or list<float>)",
            Arg::BoxList => "list of boxes",
        }
    }
}

/// The types the planner should cast `arg_types` to, or a plan error naming the function.
pub(crate) fn coerce(
    name: &str,
    expected: &[Arg],
    arg_types: &[DataType],
) -> Result<Vec<DataType>> {
    let describe = || {
        expected
            .iter()
            .map(|arg| arg.describe())
            .collect::<Vec<_>>()
            .join(", ")
    };
    if arg_types.len() != expected.len() {
        return plan_err!(
            "{name} takes {} arguments ({}), got {}",
            expected.len(),
            describe(),
            arg_types.len()
        );
    }
    expected
        .iter()
        .zip(arg_types)
        .map(|(&arg, data_type)| match coerce_one(arg, data_type) {
            Some(coerced) => Ok(coerced),
            None => plan_err!(
                "{name} expects ({}), got {data_type} for the {}",
                describe(),
                arg.describe()
            ),
        })
        .collect()
}

fn coerce_one(arg: Arg, data_type: &DataType) -> Option<DataType> {
    match (arg, data_type) {
        (
            Arg::Counts,
            DataType::Null | DataType::Utf8 | DataType::Utf8View | DataType::LargeUtf8,
        ) => Some(DataType::Utf8),
        (Arg::Size, t) if t.is_integer() || *t == DataType::Null => Some(DataType::Int64),
        (Arg::Box, t) => coerce_box(t),
        (Arg::BoxList, DataType::Null) => Some(list_of(bbox_type())),
        (
            Arg::BoxList,
            DataType::List(item) | DataType::LargeList(item) | DataType::FixedSizeList(item, _),
        ) => coerce_box(item.data_type()).map(list_of),
        _ => None,
    }
}

fn coerce_box(data_type: &DataType) -> Option<DataType> {
    let float_item = || Arc::new(Field::new("item", DataType::Float32, true));
    let numeric = |item: &DataType| item.is_numeric() || *item == DataType::Null;
    match data_type {
        DataType::Null => Some(bbox_type()),
        DataType::FixedSizeList(item, size) if numeric(item.data_type()) => {
            Some(DataType::FixedSizeList(float_item(), *size))
        }
        DataType::List(item) | DataType::LargeList(item) if numeric(item.data_type()) => {
            Some(DataType::List(float_item()))
        }
        _ => None,
    }
}

/// The arguments of one call as arrays of equal length; all-scalar calls run on one row and
/// give a scalar back.
#[derive(Debug)]
pub(crate) struct Rows {
    pub(crate) arrays: Vec<ArrayRef>,
    all_scalar: bool,
}

impl Rows {
    pub(crate) fn new(args: &ScalarFunctionArgs) -> Result<Self> {
        let all_scalar = args
            .args
            .iter()
            .all(|arg| matches!(arg, ColumnarValue::Scalar(_)));
        let len = if all_scalar { 1 } else { args.number_rows };
        let arrays = args
            .args
            .iter()
            .map(|arg| arg.to_array(len))
            .collect::<Result<Vec<_>>>()?;
        Ok(Self { arrays, all_scalar })
    }

    /// Wraps a result column: a scalar for an all-scalar call, the array otherwise.
    pub(crate) fn finish(&self, result: ArrayRef) -> Result<ColumnarValue> {
        if self.all_scalar {
            Ok(ColumnarValue::Scalar(ScalarValue::try_from_array(
                &result, 0,
            )?))
        } else {
            Ok(ColumnarValue::Array(result))
        }
    }
}

/// Reads boxes from a `fixed_size_list<f32, n>` or `list<f32>` column.
#[derive(Debug)]
pub(crate) struct BoxReader<'a> {
    name: &'a str,
    lists: BoxLists<'a>,
}

#[derive(Debug)]
enum BoxLists<'a> {
    Fixed(&'a FixedSizeListArray),
    Variable(&'a ListArray),
}

impl<'a> BoxReader<'a> {
    pub(crate) fn new(name: &'a str, array: &'a ArrayRef) -> Result<Self> {
        let lists = match array.data_type() {
            DataType::FixedSizeList(_, _) => BoxLists::Fixed(as_fixed_size_list_array(array)?),
            DataType::List(_) => BoxLists::Variable(as_list_array(array)?),
            other => return exec_err!("{name}: expected a box column, got {other}"),
        };
        Ok(Self { name, lists })
    }

    /// Number of rows.
    pub(crate) fn len(&self) -> usize {
        match self.lists {
            BoxLists::Fixed(lists) => lists.len(),
            BoxLists::Variable(lists) => lists.len(),
        }
    }

    /// The box at `row`; `None` for NULL, an error for a wrong arity, a NULL or a non-finite
    /// coordinate.
    pub(crate) fn get(&self, row: usize) -> Result<Option<BBox>> {
        let coords = match self.lists {
            BoxLists::Fixed(lists) if lists.is_valid(row) => lists.value(row),
            BoxLists::Variable(lists) if lists.is_valid(row) => lists.value(row),
            _ => return Ok(None),
        };
        let coords = as_float32_array(&coords)?;
        if coords.len() != 4 || coords.null_count() > 0 {
            let shown = coords
                .iter()
                .map(|c| c.map_or_else(|| "NULL".to_owned(), |c| c.to_string()))
                .collect::<Vec<_>>()
                .join(", ");
            return exec_err!(
                "{}: a box must be [x1, y1, x2, y2] with 4 non-NULL coordinates, got [{shown}]",
                self.name
            );
        }
        let bbox = [
            coords.value(0),
            coords.value(1),
            coords.value(2),
            coords.value(3),
        ];
        if bbox.iter().any(|c| !c.is_finite()) {
            return exec_err!("{}: box {bbox:?} has a non-finite coordinate", self.name);
        }
        Ok(Some(bbox))
    }
}

/// Builds a `fixed_size_list<f32, 4>` column of boxes.
pub(crate) fn box_array(boxes: impl IntoIterator<Item = Option<BBox>>) -> Result<ArrayRef> {
    let mut builder = FixedSizeListBuilder::new(Float32Builder::new(), 4)
        .with_field(Arc::new(Field::new("item", DataType::Float32, true)));
    for bbox in boxes {
        match bbox {
            Some(bbox) => {
                builder.values().append_slice(&bbox);
                builder.append(true);
            }
            None => {
                builder.values().append_nulls(4);
                builder.append(false);
            }
        }
    }
    Ok(Arc::new(builder.finish()))
}

/// Reads masks from `(counts utf8, height int64, width int64)` columns.
#[derive(Debug)]
pub(crate) struct MaskReader<'a> {
    name: &'a str,
    counts: &'a StringArray,
    heights: &'a Int64Array,
    widths: &'a Int64Array,
}

impl<'a> MaskReader<'a> {
    pub(crate) fn new(name: &'a str, arrays: &'a [ArrayRef]) -> Result<Self> {
        let [counts, heights, widths] = arrays else {
            return exec_err!(
                "{name}: expected counts, height and width, got {} columns",
                arrays.len()
            );
        };
        Ok(Self {
            name,
            counts: as_string_array(counts)?,
            heights: as_int64_array(heights)?,
            widths: as_int64_array(widths)?,
        })
    }

    /// Number of rows.
    pub(crate) fn len(&self) -> usize {
        self.counts.len()
    }

    /// The mask at `row`; `None` if any of its three values is NULL.
    pub(crate) fn get(&self, row: usize) -> Result<Option<Rle>> {
        self.read(row, Rle::from_compressed_string)
    }

    /// Area and box of the mask at `row` without decoding its runs; `None` as for [`Self::get`].
    pub(crate) fn summary(&self, row: usize) -> Result<Option<RleSummary>> {
        self.read(row, summarize)
    }

    fn read<T>(
        &self,
        row: usize,
        parse: impl Fn(&str, u32, u32) -> cxrlake_masks::Result<T>,
    ) -> Result<Option<T>> {
        if self.counts.is_null(row) || self.heights.is_null(row) || self.widths.is_null(row) {
            return Ok(None);
        }
        let height = self.size("height", self.heights.value(row))?;
        let width = self.size("width", self.widths.value(row))?;
        let text = self.counts.value(row);
        parse(text, height, width).map(Some).map_err(|err| {
            exec_datafusion_err!(
                "{}: bad mask counts '{}' for a {height}x{width} image: {err}",
                self.name,
                abbreviate(text)
            )
        })
    }

    fn size(&self, what: &str, value: i64) -> Result<u32> {
        u32::try_from(value).map_err(|_| {
            exec_datafusion_err!(
                "{}: {what} must be between 0 and {}, got {value}",
                self.name,
                u32::MAX
            )
        })
    }
}

/// The first 40 characters of a counts string, for error messages.
fn abbreviate(text: &str) -> String {
    const SHOWN: usize = 40;
    match text.char_indices().nth(SHOWN) {
        Some((cut, _)) => format!("{}… ({} bytes)", &text[..cut], text.len()),
        None => text.to_owned(),
    }
}

/// A `utf8` column of masks as compressed counts strings.
pub(crate) fn counts_array(masks: impl IntoIterator<Item = Option<Rle>>) -> ArrayRef {
    Arc::new(
        masks
            .into_iter()
            .map(|mask| mask.map(|m| m.to_compressed_string()))
            .collect::<StringArray>(),
    )
}

/// Row-wise `op(mask_a, mask_b)` over `(counts_a, counts_b, height, width)` columns.
pub(crate) fn combine_masks(
    name: &str,
    rows: &Rows,
    op: fn(&Rle, &Rle) -> cxrlake_masks::Result<Rle>,
) -> Result<ArrayRef> {
    let [counts_a, counts_b, height, width] = rows.arrays.as_slice() else {
        return exec_err!("{name} takes counts_a, counts_b, height and width");
    };
    let masks_a =
        MaskReader::new(name, &[counts_a.clone(), height.clone(), width.clone()])?.read_all()?;
    let masks_b =
        MaskReader::new(name, &[counts_b.clone(), height.clone(), width.clone()])?.read_all()?;
    let combined = masks_a
        .iter()
        .zip(&masks_b)
        .map(|pair| match pair {
            (Some(a), Some(b)) => op(a, b)
                .map(Some)
                .map_err(|err| exec_datafusion_err!("{name}: {err}")),
            _ => Ok(None),
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(counts_array(combined))
}

/// Row-wise `measure(pred, target)` over two box columns, as `f64`.
pub(crate) fn measure_boxes(
    name: &str,
    rows: &Rows,
    measure: fn(BBox, BBox) -> f64,
) -> Result<ArrayRef> {
    let [pred, target] = rows.arrays.as_slice() else {
        return exec_err!("{name} takes two boxes");
    };
    let (pred, target) = (BoxReader::new(name, pred)?, BoxReader::new(name, target)?);
    let values = (0..pred.len())
        .map(|row| {
            Ok(pred
                .get(row)?
                .zip(target.get(row)?)
                .map(|(p, t)| measure(p, t)))
        })
        .collect::<Result<Float64Array>>()?;
    Ok(Arc::new(values))
}

impl MaskReader<'_> {
    /// Every row's mask.
    pub(crate) fn read_all(&self) -> Result<Vec<Option<Rle>>> {
        (0..self.len()).map(|row| self.get(row)).collect()
    }
}

#[cfg(test)]
mod tests {
    use datafusion::arrow::array::{Float32Array, ListArray};
    use datafusion::arrow::datatypes::Float32Type;
    use datafusion::config::ConfigOptions;
    use datafusion::logical_expr::ScalarUDFImpl;

    use super::*;
    use crate::boxes::BoxIouFunc;

    #[test]
    fn coercion_accepts_lake_and_delta_shapes() -> Result<()> {
        let int_item = Arc::new(Field::new("element", DataType::Int64, true));
        let coerced = coerce(
            "f",
            &[Arg::Counts, Arg::Size, Arg::Box, Arg::Box, Arg::BoxList],
            &[
                DataType::Utf8View,
                DataType::Int32,
                DataType::FixedSizeList(int_item.clone(), 4),
                DataType::List(int_item),
                list_of(DataType::List(Arc::new(Field::new(
                    "item",
                    DataType::Float64,
                    true,
                )))),
            ],
        )?;
        let float_list = DataType::List(Arc::new(Field::new("item", DataType::Float32, true)));
        assert_eq!(
            coerced,
            vec![
                DataType::Utf8,
                DataType::Int64,
                bbox_type(),
                float_list.clone(),
                list_of(float_list),
            ]
        );
        let err = coerce("box_area", &[Arg::Box], &[DataType::Utf8])
            .expect_err("text is not a box")
            .to_string();
        assert!(err.contains("box_area expects"), "{err}");
        assert!(coerce("mask_area", &[Arg::Counts], &[]).is_err());
        Ok(())
    }

    fn iou_args(args: Vec<ColumnarValue>, number_rows: usize) -> ScalarFunctionArgs {
        let arg_fields = args
            .iter()
            .map(|arg| Arc::new(Field::new("box", arg.data_type(), true)))
            .collect();
        ScalarFunctionArgs {
            args,
            arg_fields,
            number_rows,
            return_field: Arc::new(Field::new("iou", DataType::Float64, true)),
            config_options: Arc::new(ConfigOptions::default()),
        }
    }

    #[test]
    fn scalar_calls_give_scalars_and_array_calls_arrays() -> Result<()> {
        let boxes = |rows: Vec<Option<Vec<Option<f32>>>>| {
            Arc::new(ListArray::from_iter_primitive::<Float32Type, _, _>(rows)) as ArrayRef
        };
        let unit = ScalarValue::try_from_array(
            &boxes(vec![Some(vec![Some(0.0), Some(0.0), Some(2.0), Some(2.0)])]),
            0,
        )?;
        let iou = BoxIouFunc::new();
        let scalar = iou.invoke_with_args(iou_args(
            vec![
                ColumnarValue::Scalar(unit.clone()),
                ColumnarValue::Scalar(unit.clone()),
            ],
            3,
        ))?;
        assert!(matches!(
            scalar,
            ColumnarValue::Scalar(ScalarValue::Float64(Some(1.0)))
        ));

        let column = boxes(vec![
            Some(vec![Some(0.0), Some(0.0), Some(1.0), Some(2.0)]),
            None,
            Some(vec![Some(5.0), Some(5.0), Some(6.0), Some(6.0)]),
        ]);
        let ColumnarValue::Array(result) = iou.invoke_with_args(iou_args(
            vec![ColumnarValue::Array(column), ColumnarValue::Scalar(unit)],
            3,
        ))?
        else {
            return exec_err!("array input must give an array");
        };
        let result = result
            .as_any()
            .downcast_ref::<Float64Array>()
            .map(|values| values.iter().collect::<Vec<_>>());
        assert_eq!(result, Some(vec![Some(0.5), None, Some(0.0)]));
        Ok(())
    }

    #[test]
    fn box_columns_round_trip_through_the_builder() -> Result<()> {
        let array = box_array([Some([1.0, 2.0, 3.0, 4.0]), None])?;
        let reader = BoxReader::new("f", &array)?;
        assert_eq!(reader.get(0)?, Some([1.0, 2.0, 3.0, 4.0]));
        assert_eq!(reader.get(1)?, None);
        let values = as_fixed_size_list_array(&array)?.values().clone();
        let values = values
            .as_any()
            .downcast_ref::<Float32Array>()
            .map(Float32Array::len);
        assert_eq!(values, Some(8));
        Ok(())
    }

    #[test]
    fn long_counts_are_abbreviated_in_errors() {
        let text = "0".repeat(100);
        assert_eq!(
            abbreviate(&text),
            format!("{}… (100 bytes)", "0".repeat(40))
        );
        assert_eq!(abbreviate("036"), "036");
    }
}
