//! `extraction_rating(quality) -> Utf8`: the rating a table 11 extraction-quality struct
//! (`study_quality`, `obs_quality`, `extraction_quality`: `region_extract_quality`, …,
//! `general_issue_level` as level names) results in: the worst rating of its levels (section
//! D.3), as rating text (`A`); NULL when every level is NULL. Unknown levels are errors.

use std::sync::Arc;

use cxrlake_schemas::Rating;
use cxrlake_schemas::quality::EXTRACTION;
use datafusion::arrow::array::{Array, AsArray, StringArray};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::DataType;
use datafusion::common::{Result, exec_err};
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDFImpl, Signature, Volatility,
};

/// The `extraction_rating` scalar function.
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct ExtractionRatingFunc {
    signature: Signature,
}

impl Default for ExtractionRatingFunc {
    fn default() -> Self {
        Self::new()
    }
}

impl ExtractionRatingFunc {
    /// Creates the function: one struct argument.
    pub fn new() -> Self {
        Self {
            signature: Signature::any(1, Volatility::Immutable),
        }
    }
}

impl ScalarUDFImpl for ExtractionRatingFunc {
    fn name(&self) -> &str {
        "extraction_rating"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        match &arg_types[0] {
            DataType::Struct(_) | DataType::Null => Ok(DataType::Utf8),
            other => exec_err!("extraction_rating expects a quality struct, got {other}"),
        }
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let arrays = ColumnarValue::values_to_arrays(&args.args)?;
        let [quality] = arrays.as_slice() else {
            return exec_err!("extraction_rating takes exactly one argument");
        };
        let rows = quality.len();
        let mut worst: Vec<Option<Rating>> = vec![None; rows];
        if let DataType::Struct(_) = quality.data_type() {
            let structs = quality.as_struct();
            for aspect in EXTRACTION {
                let Some(levels) = structs.column_by_name(aspect.key) else {
                    continue;
                };
                let levels = cast(levels, &DataType::Utf8)?;
                let levels = levels.as_string::<i32>();
                for (row, worst) in worst.iter_mut().enumerate() {
                    if structs.is_null(row) || levels.is_null(row) {
                        continue;
                    }
                    let name = levels.value(row);
                    let Some(level) = aspect.level(name) else {
                        return exec_err!(
                            "extraction_rating: '{name}' is not a {} level",
                            aspect.key
                        );
                    };
                    *worst = Some(worst.map_or(level.rating, |w| w.min(level.rating)));
                }
            }
        }
        let texts: StringArray = worst.iter().map(|r| r.map(Rating::as_str)).collect();
        Ok(ColumnarValue::Array(Arc::new(texts)))
    }
}

#[cfg(test)]
mod tests {
    use datafusion::logical_expr::ScalarUDF;
    use datafusion::prelude::SessionContext;

    use super::*;

    #[tokio::test]
    async fn the_worst_level_decides() {
        let ctx = SessionContext::new();
        ctx.register_udf(ScalarUDF::from(ExtractionRatingFunc::new()));
        let sql = "SELECT extraction_rating(named_struct('region_extract_quality', 'RESOLVED_REGIONS_ONLY', \
                   'change_quality', 'UNDERSCORES_IN_CHANGE_SENTENCE', 'general_issue_level', 'FIXABLE')), \
                   extraction_rating(named_struct('change_quality', CAST(NULL AS VARCHAR)))";
        let batches = ctx
            .sql(sql)
            .await
            .expect("plan")
            .collect()
            .await
            .expect("run");
        assert_eq!(batches[0].column(0).as_string::<i32>().value(0), "A");
        assert!(batches[0].column(1).is_null(0));
    }
}
