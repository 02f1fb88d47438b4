//! Reading function arguments: strings and string lists as plain UTF-8 (Delta reads strings as
//! views), borrowed per row.

use std::sync::Arc;

use cxrlake_schemas::types::list_of;
use datafusion::arrow::array::{Array, ArrayRef, AsArray, ListBuilder, StringBuilder};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Int64Type};
use datafusion::common::{Result, exec_err};
use datafusion::logical_expr::ColumnarValue;

/// Argument `index` as UTF-8 strings.
pub fn utf8_arg(args: &[ArrayRef], index: usize, function: &str) -> Result<ArrayRef> {
    let Some(array) = args.get(index) else {
        return exec_err!("{function}: missing argument {}", index + 1);
    };
    Ok(cast(array, &DataType::Utf8)?)
}

/// Argument `index` as a list of UTF-8 strings.
pub fn utf8_list_arg(args: &[ArrayRef], index: usize, function: &str) -> Result<ArrayRef> {
    let Some(array) = args.get(index) else {
        return exec_err!("{function}: missing argument {}", index + 1);
    };
    Ok(cast(array, &list_of(DataType::Utf8))?)
}

/// The strings of list row `row`, borrowed from the list's values (empty for NULL).
pub fn list_strs(list: &ArrayRef, row: usize) -> Vec<&str> {
    let list = list.as_list::<i32>();
    if list.is_null(row) {
        return Vec::new();
    }
    let values = list.values().as_string::<i32>();
    let offsets = list.value_offsets();
    (offsets[row] as usize..offsets[row + 1] as usize)
        .map(|i| {
            if values.is_null(i) {
                ""
            } else {
                values.value(i)
            }
        })
        .collect()
}

/// A text argument that may come dictionary-encoded, read without expanding the dictionary: the
/// report that the judge and grade stages join onto every QA pair and judge group is passed as
/// `Dictionary(Int32, Utf8)`, one copy per study, where a cast to plain UTF-8 would copy it
/// once per row (a 4 MB report on 2,000 rows: 8 GB).
#[derive(Debug)]
pub enum Texts {
    /// Plain UTF-8 strings.
    Plain(ArrayRef),
    /// Keys (as Int64) into UTF-8 values.
    Dictionary { keys: ArrayRef, values: ArrayRef },
}

impl Texts {
    /// Argument `index` of `function`.
    pub fn of(args: &[ArrayRef], index: usize, function: &str) -> Result<Self> {
        let Some(array) = args.get(index) else {
            return exec_err!("{function}: missing argument {}", index + 1);
        };
        match array.as_any_dictionary_opt() {
            Some(dictionary) => Ok(Texts::Dictionary {
                keys: cast(dictionary.keys(), &DataType::Int64)?,
                values: cast(dictionary.values(), &DataType::Utf8)?,
            }),
            None => Ok(Texts::Plain(cast(array, &DataType::Utf8)?)),
        }
    }

    /// The text of row `row` (empty for NULL).
    pub fn get(&self, row: usize) -> &str {
        match self {
            Texts::Plain(strings) => string_at(strings, row),
            Texts::Dictionary { keys, values } => {
                let keys = keys.as_primitive::<Int64Type>();
                match usize::try_from(keys.value(row)) {
                    Ok(key) if keys.is_valid(row) && key < values.len() => string_at(values, key),
                    _ => "",
                }
            }
        }
    }
}

/// The string of row `row` (empty for NULL).
pub fn string_at(array: &ArrayRef, row: usize) -> &str {
    let strings = array.as_string::<i32>();
    if strings.is_null(row) {
        ""
    } else {
        strings.value(row)
    }
}

/// The body of a one-text function returning `list<utf8>` (`lint_banned_terms`, `rexvqa_phi`):
/// `items` of each row's text, NULL for a NULL text; `function` names errors.
pub fn text_to_list(
    args: &[ColumnarValue],
    function: &str,
    items: impl Fn(&str) -> Vec<String>,
) -> Result<ColumnarValue> {
    let args = ColumnarValue::values_to_arrays(args)?;
    if args.len() != 1 {
        return exec_err!("{function} takes one argument, the text");
    }
    let texts = utf8_arg(&args, 0, function)?;
    let texts = texts.as_string::<i32>();
    let mut out = ListBuilder::new(StringBuilder::new());
    for row in 0..texts.len() {
        if texts.is_null(row) {
            out.append_null();
            continue;
        }
        for item in items(texts.value(row)) {
            out.values().append_value(item);
        }
        out.append(true);
    }
    Ok(ColumnarValue::Array(Arc::new(out.finish())))
}
