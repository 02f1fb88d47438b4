//! The CSV text of a metadata table (`<table>.csv.gz`): byte for byte what Arrow's CSV writer
//! writes (a header of the field names; a field quoted only when it holds `,`, `"`, CR or LF,
//! its quotes doubled; nulls empty; LF line ends), without its per-value formatter and record
//! buffer for the string, integer and boolean columns the metadata tables consist of. Other
//! types (floats, dates) go through Arrow's formatter, as Arrow's writer would.
//!
//! The per-question tables of an FT export are ~10 M rows; Arrow's writer spent three times
//! the time of this one on them (`benches/src/release.rs`, PhysioNet layout).

use arrow::array::{
    Array, ArrayAccessor, ArrayRef, AsArray, BooleanArray, Int64Array, RecordBatch,
};
use arrow::compute::cast;
use arrow::datatypes::{DataType, Schema};
use arrow::error::ArrowError;
use arrow::util::display::{ArrayFormatter, FormatOptions};

/// Appends the header line (the field names) of `schema` to `out`.
pub(crate) fn header(schema: &Schema, out: &mut Vec<u8>) {
    let names: Vec<&[u8]> = schema
        .fields()
        .iter()
        .map(|f| f.name().as_bytes())
        .collect();
    record(&names, out);
}

fn record(fields: &[&[u8]], out: &mut Vec<u8>) {
    for (i, bytes) in fields.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        field(bytes, fields.len(), out);
    }
    out.push(b'\n');
}

/// One column of a batch as it is written.
enum Column<'a> {
    Utf8(&'a arrow::array::StringArray),
    LargeUtf8(&'a arrow::array::LargeStringArray),
    View(&'a arrow::array::StringViewArray),
    Int(&'a Int64Array),
    Bool(&'a BooleanArray),
    Formatted(ArrayFormatter<'a>),
}

/// Appends the rows of `batch` to `out` (no header).
pub(crate) fn rows(batch: &RecordBatch, out: &mut Vec<u8>) -> Result<(), ArrowError> {
    let options = FormatOptions::default().with_null("");
    // Integers narrower than 64 bits are widened once per batch (their text is the same).
    let widened: Vec<Option<ArrayRef>> = batch
        .columns()
        .iter()
        .map(|column| match column.data_type() {
            DataType::Int8
            | DataType::Int16
            | DataType::Int32
            | DataType::UInt8
            | DataType::UInt16
            | DataType::UInt32 => cast(column, &DataType::Int64).map(Some),
            _ => Ok(None),
        })
        .collect::<Result<_, _>>()?;
    let columns: Vec<Column<'_>> = batch
        .columns()
        .iter()
        .zip(&widened)
        .map(|(column, widened)| {
            let column = widened.as_ref().unwrap_or(column);
            Ok(match column.data_type() {
                DataType::Utf8 => Column::Utf8(column.as_string::<i32>()),
                DataType::LargeUtf8 => Column::LargeUtf8(column.as_string::<i64>()),
                DataType::Utf8View => Column::View(column.as_string_view()),
                DataType::Int64 => Column::Int(column.as_primitive()),
                DataType::Boolean => Column::Bool(column.as_boolean()),
                data_type if data_type.is_nested() => {
                    return Err(ArrowError::CsvError(format!(
                        "nested type {data_type} is not supported in CSV"
                    )));
                }
                _ => Column::Formatted(ArrayFormatter::try_new(column.as_ref(), &options)?),
            })
        })
        .collect::<Result<_, ArrowError>>()?;
    let width = columns.len();
    let mut text = String::new();
    let mut integer = itoa::Buffer::new();
    for row in 0..batch.num_rows() {
        for (i, column) in columns.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            match column {
                Column::Utf8(array) => field(value_bytes(*array, row), width, out),
                Column::LargeUtf8(array) => field(value_bytes(*array, row), width, out),
                Column::View(array) => field(value_bytes(*array, row), width, out),
                Column::Int(array) => {
                    if array.is_valid(row) {
                        out.extend_from_slice(integer.format(array.value(row)).as_bytes());
                    } else {
                        field(b"", width, out);
                    }
                }
                Column::Bool(array) => match array.is_valid(row).then(|| array.value(row)) {
                    Some(true) => out.extend_from_slice(b"true"),
                    Some(false) => out.extend_from_slice(b"false"),
                    None => field(b"", width, out),
                },
                Column::Formatted(formatter) => {
                    text.clear();
                    formatter
                        .value(row)
                        .write(&mut text)
                        .map_err(|err| ArrowError::CsvError(format!("row {}: {err}", row + 1)))?;
                    field(text.as_bytes(), width, out);
                }
            }
        }
        out.push(b'\n');
    }
    Ok(())
}

/// The text at `row` (empty when null).
fn value_bytes<'a>(array: impl ArrayAccessor<Item = &'a str>, row: usize) -> &'a [u8] {
    if array.is_valid(row) {
        array.value(row).as_bytes()
    } else {
        b""
    }
}

/// Appends one field of a record of `width` fields, quoted when it must be (as the `csv`
/// crate's `QuoteStyle::Necessary`: an empty field alone on its line is quoted too).
fn field(bytes: &[u8], width: usize, out: &mut Vec<u8>) {
    let special = |b: &u8| matches!(b, b',' | b'"' | b'\r' | b'\n');
    let alone_and_empty = bytes.is_empty() && width == 1;
    if !alone_and_empty && !bytes.iter().any(special) {
        out.extend_from_slice(bytes);
        return;
    }
    out.push(b'"');
    for (i, part) in bytes.split(|b| *b == b'"').enumerate() {
        if i > 0 {
            out.extend_from_slice(b"\"\"");
        }
        out.extend_from_slice(part);
    }
    out.push(b'"');
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow::array::{
        Float64Array, Int8Array, Int32Array, LargeStringArray, StringArray, StringViewArray,
        UInt16Array,
    };
    use arrow::datatypes::Field;

    use super::*;

    fn arrow_csv(batch: &RecordBatch) -> Vec<u8> {
        let mut writer = arrow::csv::WriterBuilder::new()
            .with_header(true)
            .build(Vec::new());
        writer.write(batch).expect("arrow csv");
        writer.into_inner()
    }

    fn ours(batch: &RecordBatch) -> Vec<u8> {
        let mut out = Vec::new();
        header(&batch.schema(), &mut out);
        rows(batch, &mut out).expect("csv");
        out
    }

    #[test]
    fn text_is_arrows_for_every_column_type_and_awkward_value() {
        let texts = [
            Some("plain"),
            Some("a,b"),
            Some("say \"hi\""),
            Some("two\nlines"),
            Some("cr\rhere"),
            Some(""),
            None,
            Some("ünïcödé \"\""),
        ];
        let n = texts.len();
        let schema = Arc::new(Schema::new(vec![
            Field::new("patient_id", DataType::Utf8, true),
            Field::new("large", DataType::LargeUtf8, true),
            Field::new("view", DataType::Utf8View, true),
            Field::new("question.rating_rank", DataType::Int8, true),
            Field::new("n,32", DataType::Int32, true),
            Field::new("u16", DataType::UInt16, true),
            Field::new("i64", DataType::Int64, true),
            Field::new("flag", DataType::Boolean, true),
            Field::new("score", DataType::Float64, true),
        ]));
        let ints = |i: usize| (i % 3 != 1).then_some(i as i64 * 37 - 100);
        let batch = RecordBatch::try_new(
            Arc::clone(&schema),
            vec![
                Arc::new(StringArray::from(texts.to_vec())),
                Arc::new(LargeStringArray::from(texts.to_vec())),
                Arc::new(StringViewArray::from(texts.to_vec())),
                Arc::new(Int8Array::from_iter(
                    (0..n).map(|i| ints(i).map(|v| v as i8)),
                )),
                Arc::new(Int32Array::from_iter(
                    (0..n).map(|i| ints(i).map(|v| v as i32 * 1_000_000)),
                )),
                Arc::new(UInt16Array::from_iter(
                    (0..n).map(|i| ints(i).map(|v| v.unsigned_abs() as u16)),
                )),
                Arc::new(Int64Array::from_iter(
                    (0..n).map(|i| ints(i).map(|v| v * (i64::MAX / 1000))),
                )),
                Arc::new(BooleanArray::from_iter(
                    (0..n).map(|i| (i % 4 != 3).then_some(i % 2 == 0)),
                )),
                Arc::new(Float64Array::from_iter(
                    (0..n).map(|i| (i % 5 != 2).then_some(i as f64 / 3.0 - 1.5)),
                )),
            ],
        )
        .expect("batch");
        assert_eq!(
            String::from_utf8(ours(&batch)).expect("utf8"),
            String::from_utf8(arrow_csv(&batch)).expect("utf8")
        );
        // One column: an empty field alone on its line is quoted.
        let single = batch.project(&[0]).expect("project");
        assert_eq!(ours(&single), arrow_csv(&single));
    }

    #[test]
    fn nested_columns_are_refused() {
        let schema = Arc::new(Schema::new(vec![Field::new(
            "ids",
            DataType::List(Arc::new(Field::new("item", DataType::Utf8, true))),
            true,
        )]));
        let batch = RecordBatch::new_empty(schema);
        let err = rows(&batch, &mut Vec::new()).expect_err("nested");
        assert!(err.to_string().contains("not supported in CSV"), "{err}");
    }
}
