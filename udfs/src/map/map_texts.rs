//! `map_texts(raw)`: the `(kind, text)` pairs the mapping of one study's `observations_raw`
//! rows (a `list<struct>`, as `map_observations` takes them) may look up, by the one splitting
//! rule of `cxrlake_map::Queries`. The incremental planner reads it to find the studies whose
//! mapping an edit of the definitions or of the threshold changes.

use cxrlake_map::{RawObservation, study_texts};
use cxrlake_schemas::types::{key, list_of};
use datafusion::arrow::datatypes::{DataType, Fields};
use datafusion::common::Result;
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDFImpl, Signature, Volatility,
};
use serde::Serialize;

use crate::rows::{decode_rows, encode_rows};

/// `list<struct<kind, text>>`.
pub fn texts_type() -> DataType {
    list_of(DataType::Struct(Fields::from(vec![
        key("kind"),
        key("text"),
    ])))
}

#[derive(Serialize)]
struct Text<'a> {
    kind: &'a str,
    text: &'a str,
}

/// The `map_texts` scalar function.
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct MapTextsFunc {
    signature: Signature,
}

impl Default for MapTextsFunc {
    fn default() -> Self {
        Self::new()
    }
}

impl MapTextsFunc {
    /// The function.
    pub fn new() -> Self {
        Self {
            signature: Signature::any(1, Volatility::Immutable),
        }
    }
}

impl ScalarUDFImpl for MapTextsFunc {
    fn name(&self) -> &str {
        "map_texts"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _args: &[DataType]) -> Result<DataType> {
        Ok(texts_type())
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let args = ColumnarValue::values_to_arrays(&args.args)?;
        let studies: Vec<Option<Vec<RawObservation>>> = decode_rows(&args[0], self.name())?;
        let texts: Vec<Vec<(cxrlake_map::ConceptKind, String)>> = studies
            .iter()
            .map(|raw| study_texts(raw.as_deref().unwrap_or_default()))
            .collect();
        let rows: Vec<Vec<Text<'_>>> = texts
            .iter()
            .map(|study| {
                study
                    .iter()
                    .map(|(kind, text)| Text {
                        kind: kind.as_str(),
                        text,
                    })
                    .collect()
            })
            .collect();
        Ok(ColumnarValue::Array(encode_rows(&rows, &texts_type())?))
    }
}
