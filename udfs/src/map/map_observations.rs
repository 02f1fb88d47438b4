//! `map_observations(raw)`: one study's `observations_raw` rows (a `list<struct>` in `obs_id`
//! order) mapped onto the reference definitions and standardised (see `standardize.rs`), as a
//! `list<struct>` of observation nodes (paper D.1 without localization) with their `sent_ids`.

use std::sync::Arc;

use cxrlake_schemas::types::{list_of, observation_tag_fields, text_list};
use datafusion::arrow::datatypes::{DataType, Fields};
use datafusion::common::{Result, exec_datafusion_err};
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDFImpl, Signature, Volatility,
};

use crate::rows::{decode_rows, encode_rows};
use cxrlake_map::{ConceptIndex, RawObservation, Reference, map_study};

/// `list<struct<observation tag fields…, sent_ids>>`.
pub fn mapped_observations_type() -> DataType {
    let mut fields = observation_tag_fields();
    fields.push(text_list("sent_ids"));
    list_of(DataType::Struct(Fields::from(fields)))
}

/// The `map_observations` scalar function.
#[derive(Debug)]
pub struct MapObservationsFunc {
    concepts: Arc<ConceptIndex>,
    reference: Arc<Reference>,
    signature: Signature,
}

impl MapObservationsFunc {
    /// The function over these reference tags and definitions.
    pub fn new(concepts: Arc<ConceptIndex>, reference: Arc<Reference>) -> Self {
        Self {
            concepts,
            reference,
            signature: Signature::any(1, Volatility::Immutable),
        }
    }
}

super::concepts_identity!(MapObservationsFunc);

impl ScalarUDFImpl for MapObservationsFunc {
    fn name(&self) -> &str {
        "map_observations"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _args: &[DataType]) -> Result<DataType> {
        Ok(mapped_observations_type())
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let args = ColumnarValue::values_to_arrays(&args.args)?;
        let studies: Vec<Option<Vec<RawObservation>>> = decode_rows(&args[0], self.name())?;
        let mapped = studies
            .iter()
            .map(|raw| {
                map_study(
                    raw.as_deref().unwrap_or_default(),
                    &self.concepts,
                    &self.reference,
                )
                .map_err(|e| exec_datafusion_err!("map_observations: {e}"))
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(ColumnarValue::Array(encode_rows(
            &mapped,
            &mapped_observations_type(),
        )?))
    }
}
