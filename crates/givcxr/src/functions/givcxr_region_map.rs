//! `givcxr_region_map() -> list<struct<name, kind, region, rank>>`: how every cxrlake region and
//! the vocabulary's Chest ImaGenome boxes reach the 36 GIV-CXR regions (`source`, `imagenome`,
//! `ancestor`) or do not (`unmapped`), for the `givcxr_filter` stage to write as the
//! `givcxr_region_map` table.
//!
//! ```sql
//! SELECT m['name'] FROM (SELECT unnest(givcxr_region_map()) AS m) WHERE m['kind'] = 'unmapped';
//! ```

use std::sync::Arc;

use crate::vocab::RegionMap;
use cxrlake_schemas::types::{key, list_of, text};
use datafusion::arrow::datatypes::{DataType, Field, Fields};
use datafusion::common::{Result, ScalarValue, exec_err};
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDFImpl, Signature, Volatility,
};
use serde::Serialize;

use super::by_version;
use cxrlake_udfs::rows::encode_rows;

/// The type the function returns.
pub fn region_map_type() -> DataType {
    list_of(DataType::Struct(Fields::from(vec![
        key("name"),
        key("kind"),
        text("region"),
        Field::new("rank", DataType::Int32, true),
    ])))
}

#[derive(Serialize)]
struct Row<'a> {
    name: &'a str,
    kind: &'a str,
    region: Option<&'a str>,
    rank: Option<i32>,
}

/// The `givcxr_region_map` scalar function over one region map.
#[derive(Debug)]
pub struct GivcxrRegionMapFunc {
    map: Arc<RegionMap>,
    version: String,
    signature: Signature,
}

impl GivcxrRegionMapFunc {
    /// The function returning `map`'s rows (made from the vocabulary of `version`).
    pub fn new(map: Arc<RegionMap>, version: &str) -> Self {
        Self {
            map,
            version: version.to_string(),
            signature: Signature::nullary(Volatility::Immutable),
        }
    }
}

by_version!(GivcxrRegionMapFunc);

impl ScalarUDFImpl for GivcxrRegionMapFunc {
    fn name(&self) -> &str {
        "givcxr_region_map"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _args: &[DataType]) -> Result<DataType> {
        Ok(region_map_type())
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        if !args.args.is_empty() {
            return exec_err!("givcxr_region_map takes no arguments");
        }
        let rows: Vec<Row> = self
            .map
            .rows()
            .iter()
            .map(|r| Row {
                name: &r.name,
                kind: r.kind,
                region: r.region.as_deref(),
                rank: r.rank.map(|r| r as i32),
            })
            .collect();
        let rows = encode_rows(&[rows], &region_map_type())?;
        Ok(ColumnarValue::Scalar(ScalarValue::try_from_array(
            &rows, 0,
        )?))
    }
}
