//! `conform_to(value, 'table', 'column')`: `value` cast to the type lake table `table` declares for
//! `column`, with Arrow's cast kernel, as the stage runner conforms a stage's rows in Rust
//! before it writes them. On a cluster the executors write a stage's rows themselves
//! (`COPY (SELECT conform_to(…) …) TO …`), so the same cast runs in SQL; DataFusion's own `CAST`
//! refuses a nullable struct field into a non-null one (a stage's struct values are nullable
//! in the plan, the tables' nested fields often non-null), which Arrow's kernel casts as long
//! as no value is NULL. The result keeps the column's metadata (e.g. the ordered rating).

use std::sync::Arc;

use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, FieldRef};
use datafusion::common::{Result, ScalarValue, exec_datafusion_err, exec_err};
use datafusion::logical_expr::{
    ColumnarValue, ReturnFieldArgs, ScalarFunctionArgs, ScalarUDFImpl, Signature, Volatility,
};

/// The `conform_to` scalar function.
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct ConformToFunc {
    signature: Signature,
}

impl Default for ConformToFunc {
    fn default() -> Self {
        Self::new()
    }
}

impl ConformToFunc {
    /// Creates the function: a value, and the table and column as string literals.
    pub fn new() -> Self {
        Self {
            signature: Signature::any(3, Volatility::Immutable),
        }
    }
}

/// The field lake table `table` declares as `column`, nullable (nullability is checked when the
/// table is read and written, not by this cast).
fn column_field(table: &str, column: &str) -> Result<FieldRef> {
    let def = cxrlake_schemas::table(table)
        .ok_or_else(|| exec_datafusion_err!("conform_to: no lake table named {table}"))?;
    let schema = (def.schema)();
    let field = schema
        .field_with_name(column)
        .map_err(|_| exec_datafusion_err!("conform_to: table {table} has no column {column}"))?;
    Ok(Arc::new(field.clone().with_nullable(true)))
}

/// The string literal of argument `index`.
fn literal<'a>(args: &'a ReturnFieldArgs, index: usize) -> Result<&'a str> {
    match args.scalar_arguments.get(index).copied().flatten() {
        Some(value) => match value.try_as_str() {
            Some(Some(text)) => Ok(text),
            _ => exec_err!(
                "conform_to: argument {} must be a string literal",
                index + 1
            ),
        },
        None => exec_err!(
            "conform_to: argument {} must be a string literal",
            index + 1
        ),
    }
}

impl ScalarUDFImpl for ConformToFunc {
    fn name(&self) -> &str {
        "conform_to"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        exec_err!("conform_to: the return type comes from its literal arguments")
    }

    fn return_field_from_args(&self, args: ReturnFieldArgs) -> Result<FieldRef> {
        column_field(literal(&args, 1)?, literal(&args, 2)?)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let [value, ..] = args.args.as_slice() else {
            return exec_err!("conform_to takes three arguments");
        };
        let target = args.return_field.data_type();
        match value {
            ColumnarValue::Array(array) => Ok(ColumnarValue::Array(cast(array, target)?)),
            ColumnarValue::Scalar(scalar) => {
                let array = cast(&scalar.to_array()?, target)?;
                Ok(ColumnarValue::Scalar(ScalarValue::try_from_array(
                    &array, 0,
                )?))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use datafusion::arrow::array::{Array, AsArray};
    use datafusion::logical_expr::ScalarUDF;
    use datafusion::prelude::SessionContext;

    use super::*;

    #[tokio::test]
    async fn casts_to_the_declared_type_with_nested_nullability() {
        let ctx = SessionContext::new();
        ctx.register_udf(ScalarUDF::from(ConformToFunc::new()));
        // A struct with nullable fields into `reports`' column types; a missing column as NULL.
        let batches = ctx
            .sql(
                "SELECT conform_to(arrow_cast('s1', 'Utf8View'), 'reports', 'study_id') AS s, \
                 conform_to(NULL, 'reports', 'study_id') AS n",
            )
            .await
            .expect("plan")
            .collect()
            .await
            .expect("run");
        let batch = &batches[0];
        assert_eq!(batch.column(0).data_type(), &DataType::Utf8);
        // `scene_graphs.sentences`: a list of structs whose sent_id is non-null, from a list of
        // structs with nullable fields (DataFusion's CAST refuses this one).
        let nested = ctx
            .sql(
                "SELECT conform_to([named_struct('sent_id', 's1', 'section', 'FINDINGS',                  'section_type', 'findings', 'sentence', 'Clear.')], 'scene_graphs',                  'sentences') AS s",
            )
            .await
            .expect("plan")
            .collect()
            .await
            .expect("run");
        let declared = (cxrlake_schemas::table("scene_graphs")
            .expect("table")
            .schema)();
        let sentences = declared.field_with_name("sentences").expect("column");
        assert_eq!(nested[0].column(0).data_type(), sentences.data_type());
        assert_eq!(batch.column(0).as_string::<i32>().value(0), "s1");
        assert!(batch.column(1).is_null(0));
        let err = ctx
            .sql("SELECT conform_to(1, 'no_table', 'x')")
            .await
            .expect_err("unknown table");
        assert!(
            err.to_string().contains("no lake table named no_table"),
            "{err}"
        );
    }
}
