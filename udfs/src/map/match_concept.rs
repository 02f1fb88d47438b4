//! `match_concept(text, kind)`: the reference tag of `kind` (`finding`, `region`, `modifier`,
//! `change`) that `text` maps to, as `struct<tag, score>`; `tag` is NULL when no reference tag
//! reaches the threshold (the paper's non-resolved tags).
//!
//! ```sql
//! SELECT match_concept('fluid in the pleural space', 'finding');  -- {tag: pleural effusion, …}
//! ```

use std::sync::Arc;

use datafusion::arrow::array::{Array, AsArray, Float32Builder, StringBuilder, StructArray};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Field, Fields};
use datafusion::common::{Result, exec_datafusion_err, exec_err};
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDFImpl, Signature, Volatility,
};

use cxrlake_map::{ConceptIndex, ConceptKind};

/// `struct<tag: utf8, score: float32>`.
pub fn match_type() -> DataType {
    DataType::Struct(Fields::from(vec![
        Field::new("tag", DataType::Utf8, true),
        Field::new("score", DataType::Float32, true),
    ]))
}

/// The `match_concept` scalar function.
#[derive(Debug)]
pub struct MatchConceptFunc {
    concepts: Arc<ConceptIndex>,
    signature: Signature,
}

impl MatchConceptFunc {
    /// The function over these reference tags.
    pub fn new(concepts: Arc<ConceptIndex>) -> Self {
        Self {
            concepts,
            signature: Signature::any(2, Volatility::Immutable),
        }
    }
}

super::concepts_identity!(MatchConceptFunc);

impl ScalarUDFImpl for MatchConceptFunc {
    fn name(&self) -> &str {
        "match_concept"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _args: &[DataType]) -> Result<DataType> {
        Ok(match_type())
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let rows = args.number_rows;
        let args = ColumnarValue::values_to_arrays(&args.args)?;
        let texts = cast(&args[0], &DataType::Utf8)?;
        let kinds = cast(&args[1], &DataType::Utf8)?;
        let (texts, kinds) = (texts.as_string::<i32>(), kinds.as_string::<i32>());
        let mut tags = StringBuilder::with_capacity(rows, rows * 16);
        let mut scores = Float32Builder::with_capacity(rows);
        for row in 0..texts.len() {
            if texts.is_null(row) || kinds.is_null(row) {
                tags.append_null();
                scores.append_null();
                continue;
            }
            let Some(kind) = ConceptKind::parse(kinds.value(row)) else {
                return exec_err!(
                    "match_concept: kind '{}' is not one of finding, region, modifier, change",
                    kinds.value(row)
                );
            };
            let hit = self
                .concepts
                .best(kind, texts.value(row))
                .map_err(|e| exec_datafusion_err!("match_concept: {e}"))?;
            match hit {
                Some(hit) => {
                    tags.append_value(hit.tag);
                    scores.append_value(hit.score);
                }
                None => {
                    tags.append_null();
                    scores.append_null();
                }
            }
        }
        let DataType::Struct(fields) = match_type() else {
            unreachable!("match_type is a struct")
        };
        let array = StructArray::try_new(
            fields,
            vec![Arc::new(tags.finish()), Arc::new(scores.finish())],
            None,
        )?;
        Ok(ColumnarValue::Array(Arc::new(array)))
    }
}
