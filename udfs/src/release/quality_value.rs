//! `quality_value(aspect, level) -> Int8`: a quality level name (`NO_ISSUES`) as its value in the
//! paper's tables 11 and 12 (`cxrlake_schemas::quality`), the release's integer encoding;
//! `aspect` is a key such as `'change_quality'` or `'entailment'`. NULL stays NULL; an unknown
//! aspect or level is an error listing the valid ones.

use std::sync::Arc;

use cxrlake_schemas::quality::{self, Aspect};
use datafusion::arrow::array::{Array, AsArray, Int8Array};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::DataType;
use datafusion::common::{Result, ScalarValue, exec_err};
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDFImpl, Signature, Volatility,
};

/// The `quality_value` scalar function.
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct QualityValueFunc {
    signature: Signature,
}

impl Default for QualityValueFunc {
    fn default() -> Self {
        Self::new()
    }
}

impl QualityValueFunc {
    /// Creates the function: `(text aspect literal, text level)`.
    pub fn new() -> Self {
        Self {
            signature: Signature::any(2, Volatility::Immutable),
        }
    }
}

fn aspect_of(value: &ColumnarValue) -> Result<&'static Aspect> {
    let key = match value {
        ColumnarValue::Scalar(scalar) => match scalar.try_as_str() {
            Some(Some(key)) => key.to_string(),
            _ => return exec_err!("quality_value: the aspect must be a text literal"),
        },
        ColumnarValue::Array(_) => {
            return exec_err!("quality_value: the aspect must be a literal, e.g. 'entailment'");
        }
    };
    match quality::aspect(&key) {
        Some(aspect) => Ok(aspect),
        None => {
            let keys: Vec<_> = quality::ALL.iter().map(|a| a.key).collect();
            exec_err!(
                "quality_value: unknown aspect '{key}'; aspects are {}",
                keys.join(", ")
            )
        }
    }
}

fn value_of(aspect: &Aspect, name: &str) -> Result<i8> {
    match aspect.level(name) {
        Some(level) => Ok(level.value),
        None => {
            let names: Vec<_> = aspect.names().collect();
            exec_err!(
                "quality_value: '{name}' is not a {} level; levels are {}",
                aspect.key,
                names.join(", ")
            )
        }
    }
}

impl ScalarUDFImpl for QualityValueFunc {
    fn name(&self) -> &str {
        "quality_value"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(DataType::Int8)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let [aspect, level] = args.args.as_slice() else {
            return exec_err!("quality_value takes exactly two arguments: aspect, level");
        };
        let aspect = aspect_of(aspect)?;
        match level {
            ColumnarValue::Scalar(scalar) => {
                let value = match scalar.try_as_str() {
                    Some(Some(name)) => Some(value_of(aspect, name)?),
                    _ if scalar.is_null() => None,
                    _ => return exec_err!("quality_value expects a text level, got {scalar:?}"),
                };
                Ok(ColumnarValue::Scalar(ScalarValue::Int8(value)))
            }
            ColumnarValue::Array(array) => {
                let names = cast(array, &DataType::Utf8)?;
                let names = names.as_string::<i32>();
                let mut values = Vec::with_capacity(names.len());
                for row in 0..names.len() {
                    values.push(if names.is_valid(row) {
                        Some(value_of(aspect, names.value(row))?)
                    } else {
                        None
                    });
                }
                Ok(ColumnarValue::Array(Arc::new(Int8Array::from(values))))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use datafusion::arrow::datatypes::Int8Type;
    use datafusion::logical_expr::ScalarUDF;
    use datafusion::prelude::SessionContext;

    use super::*;

    #[tokio::test]
    async fn levels_become_their_table_values() {
        let ctx = SessionContext::new();
        ctx.register_udf(ScalarUDF::from(QualityValueFunc::new()));
        let sql = "SELECT quality_value('general_issue_level', l) FROM \
                   (VALUES ('DISCARDED'), ('NO_ISSUES'), (NULL)) AS t(l)";
        let batches = ctx
            .sql(sql)
            .await
            .expect("plan")
            .collect()
            .await
            .expect("run");
        let values = batches[0].column(0).as_primitive::<Int8Type>();
        assert_eq!(values.iter().collect::<Vec<_>>(), [Some(-1), Some(4), None]);

        for (sql, message) in [
            (
                "SELECT quality_value('change_quality', 'OPTIMAL')",
                "is not a change_quality level",
            ),
            (
                "SELECT quality_value('colour', 'OPTIMAL')",
                "unknown aspect 'colour'",
            ),
        ] {
            let result = match ctx.sql(sql).await {
                Ok(frame) => frame.collect().await.map(|_| ()),
                Err(err) => Err(err),
            };
            let err = result.expect_err(sql).to_string();
            assert!(err.contains(message), "{err}");
        }
    }
}
