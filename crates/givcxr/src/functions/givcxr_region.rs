//! `givcxr_region(name) -> utf8` and `givcxr_source_rank(name) -> int`: the GIV-CXR region a
//! cxrlake region or Chest ImaGenome box belongs to (through its nearest source ancestor), and
//! its rank among the region's sources when it is one (the box of the lowest rank on an image is
//! the region's box); NULL otherwise.
//!
//! ```sql
//! SELECT givcxr_region('superior segment of the right lower lobe');  -- right_lower_lobe
//! SELECT givcxr_source_rank('right hemithorax');                      -- 1
//! ```

use std::sync::Arc;

use crate::vocab::RegionMap;
use datafusion::arrow::array::{Int32Builder, StringBuilder};
use datafusion::arrow::datatypes::DataType;
use datafusion::common::{Result, exec_err};
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDFImpl, Signature, Volatility,
};

use cxrlake_udfs::args::{string_at, utf8_arg};

/// What the function returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Lookup {
    /// The region (`givcxr_region`).
    Region,
    /// The source rank (`givcxr_source_rank`).
    SourceRank,
}

/// The `givcxr_region` or `givcxr_source_rank` scalar function over one region map.
#[derive(Debug)]
pub struct GivcxrRegionFunc {
    map: Arc<RegionMap>,
    version: String,
    lookup: Lookup,
    signature: Signature,
}

impl GivcxrRegionFunc {
    /// The function over `map` (made from the vocabulary of `version`).
    pub fn new(map: Arc<RegionMap>, version: &str, lookup: Lookup) -> Self {
        Self {
            map,
            version: version.to_string(),
            lookup,
            signature: Signature::any(1, Volatility::Immutable),
        }
    }
}

impl PartialEq for GivcxrRegionFunc {
    fn eq(&self, other: &Self) -> bool {
        self.version == other.version && self.lookup == other.lookup
    }
}

impl Eq for GivcxrRegionFunc {}

impl std::hash::Hash for GivcxrRegionFunc {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        (&self.version, self.lookup).hash(state);
    }
}

impl ScalarUDFImpl for GivcxrRegionFunc {
    fn name(&self) -> &str {
        match self.lookup {
            Lookup::Region => "givcxr_region",
            Lookup::SourceRank => "givcxr_source_rank",
        }
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _args: &[DataType]) -> Result<DataType> {
        Ok(match self.lookup {
            Lookup::Region => DataType::Utf8,
            Lookup::SourceRank => DataType::Int32,
        })
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let args = ColumnarValue::values_to_arrays(&args.args)?;
        if args.len() != 1 {
            return exec_err!("{} takes one argument, a region name", self.name());
        }
        let names = utf8_arg(&args, 0, self.name())?;
        let rows = 0..names.len();
        Ok(ColumnarValue::Array(match self.lookup {
            Lookup::Region => {
                let mut out = StringBuilder::new();
                for row in rows {
                    out.append_option(self.map.region(string_at(&names, row)));
                }
                Arc::new(out.finish())
            }
            Lookup::SourceRank => {
                let mut out = Int32Builder::new();
                for row in rows {
                    out.append_option(
                        self.map
                            .source_rank(string_at(&names, row))
                            .map(|r| r as i32),
                    );
                }
                Arc::new(out.finish())
            }
        }))
    }
}
