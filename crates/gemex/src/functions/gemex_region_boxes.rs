//! `gemex_region_boxes(boxes)`: one image's Chest ImaGenome boxes (`list<struct<bbox_name,
//! bbox>>`) as the boxes of GEMeX's 30 regions (`list<struct<region, bbox>>`, original pixels):
//! reserved regions keep their box, incorporated and merged ones get the union of their sources
//! (crate `cxrlake-gemex`, `refdefs/gemex/regions.toml`).

use std::hash::{Hash, Hasher};
use std::sync::Arc;

use crate::regions::Regions;
use cxrlake_schemas::types::{bbox, key, list_of};
use datafusion::arrow::datatypes::{DataType, Fields};
use datafusion::common::Result;
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDFImpl, Signature, Volatility,
};
use serde::{Deserialize, Serialize};

use cxrlake_udfs::rows::{decode_rows, encode_rows};

/// `list<struct<region, bbox>>`.
pub fn region_boxes_type() -> DataType {
    list_of(DataType::Struct(Fields::from(vec![
        key("region"),
        bbox("bbox"),
    ])))
}

#[derive(Deserialize)]
struct ImagenomeBox {
    bbox_name: String,
    bbox: Option<[f32; 4]>,
}

#[derive(Serialize)]
struct RegionBox<'a> {
    region: &'a str,
    bbox: [f32; 4],
}

/// The `gemex_region_boxes` scalar function.
#[derive(Debug)]
pub struct GemexRegionBoxesFunc {
    regions: Arc<Regions>,
    signature: Signature,
}

impl GemexRegionBoxesFunc {
    /// The function over this region table.
    pub fn new(regions: Arc<Regions>) -> Self {
        Self {
            regions,
            signature: Signature::any(1, Volatility::Immutable),
        }
    }
}

impl PartialEq for GemexRegionBoxesFunc {
    fn eq(&self, other: &Self) -> bool {
        self.regions.version() == other.regions.version()
    }
}

impl Eq for GemexRegionBoxesFunc {}

impl Hash for GemexRegionBoxesFunc {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.regions.version().hash(state);
    }
}

impl ScalarUDFImpl for GemexRegionBoxesFunc {
    fn name(&self) -> &str {
        "gemex_region_boxes"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _args: &[DataType]) -> Result<DataType> {
        Ok(region_boxes_type())
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let args = ColumnarValue::values_to_arrays(&args.args)?;
        let images: Vec<Option<Vec<ImagenomeBox>>> = decode_rows(&args[0], self.name())?;
        let boxes: Vec<_> = images
            .iter()
            .map(|image| {
                let sources: Vec<(String, [f32; 4])> = image
                    .iter()
                    .flatten()
                    .filter_map(|b| b.bbox.map(|bbox| (b.bbox_name.clone(), bbox)))
                    .collect();
                self.regions.image_boxes(&sources)
            })
            .collect();
        let rows: Vec<Vec<RegionBox<'_>>> = boxes
            .iter()
            .map(|image| {
                image
                    .iter()
                    .map(|(region, bbox)| RegionBox {
                        region,
                        bbox: *bbox,
                    })
                    .collect()
            })
            .collect();
        Ok(ColumnarValue::Array(encode_rows(
            &rows,
            &region_boxes_type(),
        )?))
    }
}
