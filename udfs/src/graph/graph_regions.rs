//! `graph_regions(observations)`: the region nodes of a study's scene graph (`list<utf8>`,
//! sorted): the regions of its mapped observations, their bilateral versions, every ancestor in
//! the reference region tree and the key regions. The graph stage uses it to read only the
//! `region_boxes` rows a graph needs.

use std::sync::Arc;

use datafusion::arrow::array::{ListBuilder, StringBuilder};
use datafusion::arrow::datatypes::DataType;
use datafusion::common::Result;
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDFImpl, Signature, Volatility,
};

use crate::rows::decode_rows;
use cxrlake_graph::graph_regions;
use cxrlake_map::{Observation, Reference};

/// The `graph_regions` scalar function.
#[derive(Debug)]
pub struct GraphRegionsFunc {
    reference: Arc<Reference>,
    identity: String,
    signature: Signature,
}

impl GraphRegionsFunc {
    /// The function over this reference; `identity` is the reference definitions' fingerprint.
    pub fn new(reference: Arc<Reference>, identity: &str) -> Self {
        Self {
            reference,
            identity: identity.to_string(),
            signature: Signature::any(1, Volatility::Immutable),
        }
    }
}

super::reference_identity!(GraphRegionsFunc);

impl ScalarUDFImpl for GraphRegionsFunc {
    fn name(&self) -> &str {
        "graph_regions"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _args: &[DataType]) -> Result<DataType> {
        Ok(cxrlake_schemas::types::list_of(DataType::Utf8))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let args = ColumnarValue::values_to_arrays(&args.args)?;
        let studies: Vec<Option<Vec<Observation>>> = decode_rows(&args[0], self.name())?;
        let mut out = ListBuilder::new(StringBuilder::new());
        for observations in &studies {
            let regions = graph_regions(observations.iter().flatten(), &self.reference);
            for region in regions {
                out.values().append_value(region);
            }
            out.append(true);
        }
        Ok(ColumnarValue::Array(Arc::new(out.finish())))
    }
}
