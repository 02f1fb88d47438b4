//! `build_scene_graph(observations, indication, boxes, images)`: one study's scene-graph parts
//! (see `assemble.rs`) from its mapped observations (`list<struct>` in `obs_id` order), its
//! `indications` row (a struct, NULL without one), its `region_boxes` rows restricted to the
//! graph's regions (`list<struct>`) and its image ids (`list<utf8>`).

use std::sync::Arc;

use cxrlake_schemas::pipeline::scene_graphs;
use cxrlake_schemas::types::text_list;
use datafusion::arrow::datatypes::{DataType, Field, Fields};
use datafusion::common::Result;
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDFImpl, Signature, Volatility,
};

use rayon::prelude::*;

use super::box_rows::region_box_rows;
use crate::rows::{decode_rows, encode_rows};
use cxrlake_graph::{IndicationIn, RegionBox, assemble};
use cxrlake_map::{Observation, Reference};

/// The struct `build_scene_graph` returns: the `scene_graphs` columns it computes, plus the
/// indication's `associated_obs_ids` and `answer_for_indication`.
pub fn assembled_type() -> DataType {
    let schema = scene_graphs();
    let field = |name: &str| -> Field {
        schema
            .field_with_name(name)
            .cloned()
            .unwrap_or_else(|_| text_list(name))
    };
    let indication = match schema
        .field_with_name("indication")
        .map(|f| f.data_type().clone())
    {
        Ok(DataType::Struct(fields)) => fields,
        _ => Fields::empty(),
    };
    let answer = indication
        .iter()
        .find(|f| f.name() == "answer_for_indication")
        .map(|f| f.as_ref().clone())
        .unwrap_or_else(|| text_list("answer_for_indication"));
    DataType::Struct(Fields::from(vec![
        field("observations"),
        field("top_level_obs_ids"),
        field("regions"),
        text_list("associated_obs_ids"),
        answer,
        field("located_at_relations"),
        field("obs_relations"),
        field("obs_sent_relations"),
        field("region_region_relations"),
        field("study_quality"),
        field("study_img_localization_quality"),
    ]))
}

/// The `build_scene_graph` scalar function.
#[derive(Debug)]
pub struct BuildSceneGraphFunc {
    reference: Arc<Reference>,
    identity: String,
    signature: Signature,
}

impl BuildSceneGraphFunc {
    /// The function over this reference; `identity` is the reference definitions' fingerprint.
    pub fn new(reference: Arc<Reference>, identity: &str) -> Self {
        Self {
            reference,
            identity: identity.to_string(),
            signature: Signature::any(4, Volatility::Immutable),
        }
    }
}

super::reference_identity!(BuildSceneGraphFunc);

impl ScalarUDFImpl for BuildSceneGraphFunc {
    fn name(&self) -> &str {
        "build_scene_graph"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _args: &[DataType]) -> Result<DataType> {
        Ok(assembled_type())
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let args = ColumnarValue::values_to_arrays(&args.args)?;
        let observations: Vec<Option<Vec<Observation>>> = decode_rows(&args[0], self.name())?;
        let indications: Vec<Option<IndicationIn>> = decode_rows(&args[1], self.name())?;
        let boxes: Vec<Option<Vec<RegionBox>>> = region_box_rows(&args[2])?;
        let images: Vec<Option<Vec<Option<String>>>> = decode_rows(&args[3], self.name())?;
        // Studies are independent: assemble them on every core.
        let graphs: Vec<_> = observations
            .into_par_iter()
            .zip(indications)
            .zip(boxes)
            .zip(images)
            .map(|(((observations, indication), boxes), images)| {
                let images: Vec<String> =
                    images.unwrap_or_default().into_iter().flatten().collect();
                assemble(
                    observations.unwrap_or_default(),
                    indication.as_ref(),
                    boxes.as_deref().unwrap_or_default(),
                    &images,
                    &self.reference,
                )
            })
            .collect();
        Ok(ColumnarValue::Array(encode_rows(
            &graphs,
            &assembled_type(),
        )?))
    }
}
