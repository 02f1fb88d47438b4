//! Arrow arrays read for JSON writing. A [`Column`] is built once per batch (every downcast and
//! cast happens there), then read per row without looking at types again.
//!
//! Strings may be `utf8`, `large_utf8` or `utf8view` (DataFusion reads Parquet strings as views);
//! integers of any width are written as JSON integers; floats with their shortest form that
//! reads back the same (`0.1`, `1400.0`), NaN and infinities as `null`; lists (plain, large,
//! fixed-size) as arrays; structs as objects with their Arrow field names.

use std::ops::Range;

use arrow::array::{
    Array, ArrayRef, AsArray, BooleanArray, FixedSizeListArray, Float32Array, Float64Array,
    Int64Array, LargeListArray, LargeStringArray, ListArray, StringArray, StringViewArray,
    StructArray, UInt64Array,
};
use arrow::compute::{can_cast_types, cast};
use arrow::datatypes::{DataType, Float32Type, Float64Type, Int64Type, UInt64Type};
use serde::Serialize;

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

/// Appends `value` as JSON (strings escaped, floats in their shortest form).
pub(crate) fn put<T: Serialize + ?Sized>(out: &mut Vec<u8>, value: &T) -> Result<(), String> {
    serde_json::to_writer(out, value).map_err(|e| e.to_string())
}

impl Column {
    /// Reads `array` (its path `name` is used in messages).
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
            other if can_cast_types(other, &DataType::Utf8) => {
                let text = cast(array, &DataType::Utf8)?;
                Column::Utf8(text.as_string::<i32>().clone())
            }
            other => {
                return Err(ExportError::UnsupportedType {
                    column: name.to_string(),
                    data_type: other.to_string(),
                    expected: "a type with a JSON form",
                });
            }
        })
    }

    fn array(&self) -> Option<&dyn Array> {
        Some(match self {
            Column::Null => return None,
            Column::Bool(a) => a,
            Column::Int(a) => a,
            Column::UInt(a) => a,
            Column::Float32(a) => a,
            Column::Float64(a) => a,
            Column::Utf8(a) => a,
            Column::LargeUtf8(a) => a,
            Column::Utf8View(a) => a,
            Column::List(a, _) => a,
            Column::LargeList(a, _) => a,
            Column::FixedSizeList(a, _) => a,
            Column::Struct(a, _) => a,
        })
    }

    /// The Arrow type, for messages.
    pub fn data_type(&self) -> DataType {
        self.array()
            .map_or(DataType::Null, |array| array.data_type().clone())
    }

    /// Whether the value at `row` is null.
    pub fn is_null(&self, row: usize) -> bool {
        self.array().is_none_or(|array| array.is_null(row))
    }

    /// Whether this is a struct column.
    pub fn is_struct(&self) -> bool {
        matches!(self, Column::Struct(..))
    }

    /// A struct column's field `name`.
    pub fn child(&self, name: &str) -> Option<&Column> {
        match self {
            Column::Struct(_, children) => children
                .iter()
                .find(|(child, _)| child == name)
                .map(|(_, column)| column),
            _ => None,
        }
    }

    /// A list column's item column.
    pub fn items(&self) -> Option<&Column> {
        match self {
            Column::List(_, items) | Column::LargeList(_, items) => Some(items),
            Column::FixedSizeList(_, items) => Some(items),
            _ => None,
        }
    }

    /// The rows of [`Column::items`] that make up the (non-null) list at `row`.
    pub fn item_range(&self, row: usize) -> Range<usize> {
        match self {
            Column::List(array, _) => {
                let offsets = array.value_offsets();
                offsets[row] as usize..offsets[row + 1] as usize
            }
            Column::LargeList(array, _) => {
                let offsets = array.value_offsets();
                offsets[row] as usize..offsets[row + 1] as usize
            }
            Column::FixedSizeList(array, _) => {
                let start = array.value_offset(row) as usize;
                start..start + array.value_length() as usize
            }
            _ => 0..0,
        }
    }

    /// The string at `row`, if this is a string column and the value is not null.
    pub fn str(&self, row: usize) -> Option<&str> {
        if self.is_null(row) {
            return None;
        }
        match self {
            Column::Utf8(array) => Some(array.value(row)),
            Column::LargeUtf8(array) => Some(array.value(row)),
            Column::Utf8View(array) => Some(array.value(row)),
            _ => None,
        }
    }

    /// The integer at `row`, if this is a signed integer column and the value is not null.
    pub fn int(&self, row: usize) -> Option<i64> {
        match self {
            Column::Int(array) if array.is_valid(row) => Some(array.value(row)),
            _ => None,
        }
    }

    /// Appends the value at `row` as JSON.
    pub fn write_json(&self, row: usize, out: &mut Vec<u8>) -> Result<(), String> {
        if self.is_null(row) {
            out.extend_from_slice(b"null");
            return Ok(());
        }
        match self {
            Column::Null => out.extend_from_slice(b"null"),
            Column::Bool(array) => put(out, &array.value(row))?,
            Column::Int(array) => put(out, &array.value(row))?,
            Column::UInt(array) => put(out, &array.value(row))?,
            Column::Float32(array) => put(out, &array.value(row))?,
            Column::Float64(array) => put(out, &array.value(row))?,
            Column::Utf8(array) => put(out, array.value(row))?,
            Column::LargeUtf8(array) => put(out, array.value(row))?,
            Column::Utf8View(array) => put(out, array.value(row))?,
            Column::List(_, items)
            | Column::LargeList(_, items)
            | Column::FixedSizeList(_, items) => {
                out.push(b'[');
                for (n, item) in self.item_range(row).enumerate() {
                    if n > 0 {
                        out.push(b',');
                    }
                    items.write_json(item, out)?;
                }
                out.push(b']');
            }
            Column::Struct(_, children) => {
                out.push(b'{');
                for (n, (name, child)) in children.iter().enumerate() {
                    if n > 0 {
                        out.push(b',');
                    }
                    put(out, name)?;
                    out.push(b':');
                    child.write_json(row, out)?;
                }
                out.push(b'}');
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow::array::{Int32Array, ListBuilder, StringViewBuilder};
    use arrow::datatypes::{Field, Fields};

    use super::*;

    fn json(column: &Column, row: usize) -> String {
        let mut out = Vec::new();
        column.write_json(row, &mut out).expect("write");
        String::from_utf8(out).expect("utf-8")
    }

    #[test]
    fn floats_keep_their_short_form() {
        let array: ArrayRef = Arc::new(Float32Array::from(vec![
            Some(0.1),
            Some(1520.5),
            Some(1400.0),
            Some(f32::NAN),
            None,
        ]));
        let column = Column::new("x", &array).expect("column");
        let written: Vec<_> = (0..5).map(|row| json(&column, row)).collect();
        assert_eq!(written, ["0.1", "1520.5", "1400.0", "null", "null"]);
    }

    #[test]
    fn nested_views_lists_and_nulls_read_as_json() {
        let mut names = ListBuilder::new(StringViewBuilder::new());
        names.values().append_value("heart");
        names.values().append_value("say \"ah\"\n");
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
            json(&column, 0),
            r#"{"names":["heart","say \"ah\"\n"],"level":1}"#
        );
        assert_eq!(json(&column, 1), r#"{"names":null,"level":null}"#);
        let first_name = column.child("names").and_then(Column::items);
        assert_eq!(first_name.and_then(|c| c.str(0)), Some("heart"));
        // A slice keeps reading the right rows.
        let sliced = Column::new("row", &array.slice(1, 1)).expect("column");
        assert_eq!(json(&sliced, 0), r#"{"names":null,"level":null}"#);
    }
}
