//! Arrow arrays → `serde_json` values, one row at a time. A [`Column`] is built once per batch
//! (every downcast happens there), then read per row without looking at types again.
//!
//! Structs become objects, lists (plain, large, fixed-size) become arrays, nulls become `null`.
//! Strings may be `utf8`, `large_utf8` or `utf8view` (DataFusion reads Parquet strings as views);
//! integers of any width become JSON integers; `f32` values are written with their shortest
//! decimal form (`0.1`, not `0.10000000149011612`); NaN and infinities become `null`.

use arrow::array::{
    Array, ArrayRef, AsArray, BooleanArray, FixedSizeListArray, Float32Array, Float64Array,
    Int64Array, LargeListArray, LargeStringArray, ListArray, StringArray, StringViewArray,
    StructArray, UInt64Array,
};
use arrow::compute::cast;
use arrow::datatypes::{DataType, Float32Type, Float64Type, Int64Type, UInt64Type};
use serde_json::{Number, Value};

use crate::error::{ExportError, Result};

/// A typed view of one array.
#[derive(Debug)]
pub(crate) enum Column {
    /// An array of the null type.
    Null,
    Bool(BooleanArray),
    Int(Int64Array),
    UInt(UInt64Array),
    Float32(Float32Array),
    Float64(Float64Array),
    Utf8(StringArray),
    LargeUtf8(LargeStringArray),
    Utf8View(StringViewArray),
    List(ListArray, Box<Column>),
    LargeList(LargeListArray, Box<Column>),
    FixedSizeList(FixedSizeListArray, Box<Column>),
    Struct(StructArray, Vec<(String, Column)>),
}

impl Column {
    /// Reads `array` (named `name` in messages).
    pub fn new(name: &str, array: &ArrayRef) -> Result<Self> {
        Ok(match array.data_type() {
            DataType::Null => Column::Null,
            DataType::Boolean => Column::Bool(array.as_boolean().clone()),
            DataType::Int8
            | DataType::Int16
            | DataType::Int32
            | DataType::UInt8
            | DataType::UInt16
            | DataType::UInt32 => {
                let wide = cast(array, &DataType::Int64)?;
                Column::Int(wide.as_primitive::<Int64Type>().clone())
            }
            DataType::Int64 => Column::Int(array.as_primitive::<Int64Type>().clone()),
            DataType::UInt64 => Column::UInt(array.as_primitive::<UInt64Type>().clone()),
            DataType::Float16 => {
                let wide = cast(array, &DataType::Float32)?;
                Column::Float32(wide.as_primitive::<Float32Type>().clone())
            }
            DataType::Float32 => Column::Float32(array.as_primitive::<Float32Type>().clone()),
            DataType::Float64 => Column::Float64(array.as_primitive::<Float64Type>().clone()),
            DataType::Utf8 => Column::Utf8(array.as_string::<i32>().clone()),
            DataType::LargeUtf8 => Column::LargeUtf8(array.as_string::<i64>().clone()),
            DataType::Utf8View => Column::Utf8View(array.as_string_view().clone()),
            DataType::List(_) => {
                let list = array.as_list::<i32>();
                let values = Column::new(name, list.values())?;
                Column::List(list.clone(), Box::new(values))
            }
            DataType::LargeList(_) => {
                let list = array.as_list::<i64>();
                let values = Column::new(name, list.values())?;
                Column::LargeList(list.clone(), Box::new(values))
            }
            DataType::FixedSizeList(_, _) => {
                let list = array.as_fixed_size_list();
                let values = Column::new(name, list.values())?;
                Column::FixedSizeList(list.clone(), Box::new(values))
            }
            DataType::Struct(fields) => {
                let array = array.as_struct();
                let children = fields
                    .iter()
                    .zip(array.columns())
                    .map(|(field, child)| {
                        let path = format!("{name}.{}", field.name());
                        Ok((field.name().clone(), Column::new(&path, child)?))
                    })
                    .collect::<Result<_>>()?;
                Column::Struct(array.clone(), children)
            }
            other if arrow::compute::can_cast_types(other, &DataType::Utf8) => {
                let text = cast(array, &DataType::Utf8)?;
                Column::Utf8(text.as_string::<i32>().clone())
            }
            other => {
                return Err(ExportError::UnsupportedType {
                    column: name.to_string(),
                    data_type: other.to_string(),
                });
            }
        })
    }

    /// The value at `row`.
    pub fn value(&self, row: usize) -> Value {
        match self {
            Column::Null => Value::Null,
            Column::Bool(array) => nullable(array, row, |a| Value::Bool(a.value(row))),
            Column::Int(array) => nullable(array, row, |a| Value::from(a.value(row))),
            Column::UInt(array) => nullable(array, row, |a| Value::from(a.value(row))),
            Column::Float32(array) => nullable(array, row, |a| float32(a.value(row))),
            Column::Float64(array) => nullable(array, row, |a| float64(a.value(row))),
            Column::Utf8(array) => nullable(array, row, |a| Value::from(a.value(row))),
            Column::LargeUtf8(array) => nullable(array, row, |a| Value::from(a.value(row))),
            Column::Utf8View(array) => nullable(array, row, |a| Value::from(a.value(row))),
            Column::List(array, values) => nullable(array, row, |a| {
                let offsets = a.value_offsets();
                range(values, offsets[row] as usize, offsets[row + 1] as usize)
            }),
            Column::LargeList(array, values) => nullable(array, row, |a| {
                let offsets = a.value_offsets();
                range(values, offsets[row] as usize, offsets[row + 1] as usize)
            }),
            Column::FixedSizeList(array, values) => nullable(array, row, |a| {
                let start = a.value_offset(row) as usize;
                range(values, start, start + a.value_length() as usize)
            }),
            Column::Struct(array, children) => nullable(array, row, |_| {
                Value::Object(
                    children
                        .iter()
                        .map(|(name, child)| (name.clone(), child.value(row)))
                        .collect(),
                )
            }),
        }
    }
}

fn nullable<A: Array>(array: &A, row: usize, read: impl FnOnce(&A) -> Value) -> Value {
    if array.is_null(row) {
        Value::Null
    } else {
        read(array)
    }
}

fn range(values: &Column, start: usize, end: usize) -> Value {
    Value::Array((start..end).map(|i| values.value(i)).collect())
}

/// An `f32` as the JSON number with its shortest decimal form.
fn float32(value: f32) -> Value {
    let wide = f64::from(value);
    if wide.fract() == 0.0 || !wide.is_finite() {
        return float64(wide);
    }
    // `f32`'s Display is its shortest round-trip form; read back as `f64` it prints the same.
    float64(value.to_string().parse().unwrap_or(wide))
}

fn float64(value: f64) -> Value {
    Number::from_f64(value).map_or(Value::Null, Value::Number)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow::array::{Int32Array, ListBuilder, StringViewBuilder};
    use arrow::datatypes::{Field, Fields};
    use serde_json::json;

    use super::*;

    #[test]
    fn floats_keep_their_short_form() {
        assert_eq!(float32(0.1).to_string(), "0.1");
        assert_eq!(float32(1520.5).to_string(), "1520.5");
        assert_eq!(float32(1400.0).to_string(), "1400.0");
        assert_eq!(float32(f32::NAN), Value::Null);
        assert_eq!(float64(f64::INFINITY), Value::Null);
    }

    #[test]
    fn nested_views_lists_and_nulls_read_as_json() {
        let mut names = ListBuilder::new(StringViewBuilder::new());
        names.values().append_value("heart");
        names.values().append_value("lungs");
        names.append(true);
        names.append(false);
        let names: ArrayRef = Arc::new(names.finish());
        let levels: ArrayRef = Arc::new(Int32Array::from(vec![Some(1), None]));
        let fields = Fields::from(vec![
            Field::new("names", names.data_type().clone(), true),
            Field::new("level", DataType::Int32, true),
        ]);
        let array: ArrayRef = Arc::new(StructArray::new(fields, vec![names, levels], None));
        let column = Column::new("row", &array).expect("column");
        assert_eq!(
            column.value(0),
            json!({"names": ["heart", "lungs"], "level": 1})
        );
        assert_eq!(column.value(1), json!({"names": null, "level": null}));
        // A slice keeps reading the right rows.
        let sliced = Column::new("row", &array.slice(1, 1)).expect("column");
        assert_eq!(sliced.value(0), json!({"names": null, "level": null}));
    }
}
