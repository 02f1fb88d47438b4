//! Reading function arguments: strings and string lists as plain UTF-8 (Delta reads strings as
//! views), borrowed per row.

use cxrlake_schemas::types::list_of;
use datafusion::arrow::array::{Array, ArrayRef, AsArray};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::DataType;
use datafusion::common::{Result, exec_err};

/// Argument `index` as UTF-8 strings.
pub(crate) fn utf8_arg(args: &[ArrayRef], index: usize, function: &str) -> Result<ArrayRef> {
    let Some(array) = args.get(index) else {
        return exec_err!("{function}: missing argument {}", index + 1);
    };
    Ok(cast(array, &DataType::Utf8)?)
}

/// Argument `index` as a list of UTF-8 strings.
pub(crate) fn utf8_list_arg(args: &[ArrayRef], index: usize, function: &str) -> Result<ArrayRef> {
    let Some(array) = args.get(index) else {
        return exec_err!("{function}: missing argument {}", index + 1);
    };
    Ok(cast(array, &list_of(DataType::Utf8))?)
}

/// The strings of list row `row`, borrowed from the list's values (empty for NULL).
pub(crate) fn list_strs(list: &ArrayRef, row: usize) -> Vec<&str> {
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

/// The string of row `row` (empty for NULL).
pub(crate) fn string_at(array: &ArrayRef, row: usize) -> &str {
    let strings = array.as_string::<i32>();
    if strings.is_null(row) {
        ""
    } else {
        strings.value(row)
    }
}
