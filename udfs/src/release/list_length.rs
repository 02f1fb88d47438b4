//! `list_length(list) -> Int64`: the number of items in each row's list, read from the list's
//! offsets; NULL for a NULL list. It counts the list's own items only (a list of lists of four
//! numbers counts its lists, not their numbers). The release tables count answer parts, regions
//! and per-image entries with it: DataFusion's `cardinality` and `array_length` take a slice of
//! every row's value (of every nested child of a struct item), which costs more than the rest of
//! the row when the items are answer parts.

use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, AsArray, Int64Array, OffsetSizeTrait};
use datafusion::arrow::datatypes::DataType;
use datafusion::common::{Result, exec_err};
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDFImpl, Signature, Volatility,
};

/// The `list_length` scalar function.
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct ListLengthFunc {
    signature: Signature,
}

impl Default for ListLengthFunc {
    fn default() -> Self {
        Self::new()
    }
}

impl ListLengthFunc {
    /// Creates the function: one list argument.
    pub fn new() -> Self {
        Self {
            signature: Signature::any(1, Volatility::Immutable),
        }
    }
}

impl ScalarUDFImpl for ListLengthFunc {
    fn name(&self) -> &str {
        "list_length"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        match &arg_types[0] {
            DataType::List(_)
            | DataType::LargeList(_)
            | DataType::FixedSizeList(..)
            | DataType::Null => Ok(DataType::Int64),
            other => exec_err!("list_length expects a list, got {other}"),
        }
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let scalar = args
            .args
            .iter()
            .all(|arg| matches!(arg, ColumnarValue::Scalar(_)));
        let arrays = ColumnarValue::values_to_arrays(&args.args)?;
        let [list] = arrays.as_slice() else {
            return exec_err!("list_length takes exactly one argument");
        };
        let lengths: ArrayRef = match list.data_type() {
            DataType::List(_) => Arc::new(lengths(list.as_list::<i32>())),
            DataType::LargeList(_) => Arc::new(lengths(list.as_list::<i64>())),
            DataType::FixedSizeList(_, size) => {
                let size = i64::from(*size);
                let lengths: Int64Array = (0..list.len())
                    .map(|row| list.is_valid(row).then_some(size))
                    .collect();
                Arc::new(lengths)
            }
            DataType::Null => Arc::new(Int64Array::new_null(list.len())),
            other => return exec_err!("list_length expects a list, got {other}"),
        };
        if scalar {
            let value = datafusion::common::ScalarValue::try_from_array(&lengths, 0)?;
            return Ok(ColumnarValue::Scalar(value));
        }
        Ok(ColumnarValue::Array(lengths))
    }
}

/// Each row's item count from the offsets, nulls kept.
fn lengths<O: OffsetSizeTrait>(list: &datafusion::arrow::array::GenericListArray<O>) -> Int64Array {
    let counts = list
        .offsets()
        .windows(2)
        .map(|pair| (pair[1] - pair[0]).as_usize() as i64)
        .collect::<Vec<i64>>();
    Int64Array::new(counts.into(), list.nulls().cloned())
}

#[cfg(test)]
mod tests {
    use datafusion::logical_expr::ScalarUDF;
    use datafusion::prelude::SessionContext;

    use super::*;

    async fn numbers(ctx: &SessionContext, sql: &str) -> Vec<Option<i64>> {
        let batches = ctx
            .sql(sql)
            .await
            .expect("plan")
            .collect()
            .await
            .expect("run");
        batches
            .iter()
            .flat_map(|batch| {
                let column = datafusion::arrow::compute::cast(batch.column(0), &DataType::Int64)
                    .expect("int64");
                column
                    .as_primitive::<datafusion::arrow::datatypes::Int64Type>()
                    .iter()
                    .collect::<Vec<_>>()
            })
            .collect()
    }

    #[tokio::test]
    async fn items_are_counted_from_the_offsets() {
        let ctx = SessionContext::new();
        ctx.register_udf(ScalarUDF::from(ListLengthFunc::new()));
        let parts = "FROM (VALUES ([named_struct('a', 1, 'b', [1, 2]), named_struct('a', 2, 'b', [3])]), \
                     ([named_struct('a', 3, 'b', [4])])) AS t(v)";
        assert_eq!(
            numbers(&ctx, &format!("SELECT list_length(v) {parts}")).await,
            numbers(&ctx, &format!("SELECT cardinality(v) {parts}")).await,
            "as cardinality on a list of structs"
        );
        assert_eq!(
            numbers(&ctx, &format!("SELECT list_length(v) {parts}")).await,
            [Some(2), Some(1)]
        );
        assert_eq!(
            numbers(
                &ctx,
                "SELECT list_length([[1.0, 2.0, 3.0, 4.0], [5.0, 6.0, 7.0, 8.0]])"
            )
            .await,
            [Some(2)],
            "the boxes of a list of boxes, not their numbers"
        );
        assert_eq!(
            numbers(&ctx, "SELECT list_length(CAST(NULL AS INT[]))").await,
            [None]
        );
        assert_eq!(
            numbers(&ctx, "SELECT list_length(make_array())").await,
            [Some(0)]
        );
    }
}
