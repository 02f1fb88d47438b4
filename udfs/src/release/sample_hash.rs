//! `sample_hash(seed, study_id, item) -> Float64` in `[0, 1)`: the hash of QA sampling
//! (`hash(seed, study, item)`, [`crate::qa::unit_hash`]) in SQL, so a sample is
//! `WHERE sample_hash(seed, study_id, question_id) < p`: reproducible, and a slightly different
//! `p` changes few rows. NULL ids give NULL.

use std::sync::Arc;

use datafusion::arrow::array::{Array, AsArray, Float64Array};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Int64Type};
use datafusion::common::{Result, exec_err};
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDFImpl, Signature, Volatility,
};

use cxrlake_qa::unit_hash;

/// The `sample_hash` scalar function.
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct SampleHashFunc {
    signature: Signature,
}

impl Default for SampleHashFunc {
    fn default() -> Self {
        Self::new()
    }
}

impl SampleHashFunc {
    /// Creates the function: `(integer seed, text study_id, text item)`.
    pub fn new() -> Self {
        Self {
            signature: Signature::any(3, Volatility::Immutable),
        }
    }
}

impl ScalarUDFImpl for SampleHashFunc {
    fn name(&self) -> &str {
        "sample_hash"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        if !arg_types[0].is_integer() && !arg_types[0].is_null() {
            return exec_err!(
                "sample_hash(seed, study_id, item): seed must be an integer, got {}",
                arg_types[0]
            );
        }
        Ok(DataType::Float64)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let rows = args.number_rows;
        let arrays = ColumnarValue::values_to_arrays(&args.args)?;
        let [seeds, studies, items] = arrays.as_slice() else {
            return exec_err!("sample_hash takes exactly three arguments");
        };
        let seeds = cast(seeds, &DataType::Int64)?;
        let seeds = seeds.as_primitive::<Int64Type>();
        let (studies, items) = (
            cast(studies, &DataType::Utf8)?,
            cast(items, &DataType::Utf8)?,
        );
        let (studies, items) = (studies.as_string::<i32>(), items.as_string::<i32>());
        let hashes: Float64Array = (0..rows)
            .map(|row| {
                let valid = seeds.is_valid(row) && studies.is_valid(row) && items.is_valid(row);
                valid.then(|| {
                    // A seed is a u64 in the config; SQL integers are signed: same bits.
                    let seed = seeds.value(row).cast_unsigned();
                    unit_hash(seed, studies.value(row), items.value(row))
                })
            })
            .collect();
        Ok(ColumnarValue::Array(Arc::new(hashes)))
    }
}

#[cfg(test)]
mod tests {
    use datafusion::prelude::SessionContext;

    use super::*;

    #[tokio::test]
    async fn sql_sampling_matches_the_rust_hash() {
        let ctx = SessionContext::new();
        ctx.register_udf(datafusion::logical_expr::ScalarUDF::from(
            SampleHashFunc::new(),
        ));
        let batches = ctx
            .sql("SELECT sample_hash(7, 's50414267', 'D02_has_finding_001'), sample_hash(7, NULL, 'x')")
            .await
            .expect("plan")
            .collect()
            .await
            .expect("run");
        let hash = batches[0]
            .column(0)
            .as_primitive::<datafusion::arrow::datatypes::Float64Type>();
        assert_eq!(
            hash.value(0),
            unit_hash(7, "s50414267", "D02_has_finding_001")
        );
        assert!(batches[0].column(1).is_null(0));
        let err = ctx
            .sql("SELECT sample_hash('seven', 's1', 'x')")
            .await
            .expect_err("text seed");
        assert!(err.to_string().contains("seed must be an integer"), "{err}");
    }
}
