//! `givcxr_texture(names list<utf8>, modifiers list<utf8>) -> list<utf8>`: the texture cues of
//! an observation in the pipe syntax (`texture|yes|opacity`): those of its entity and parents
//! (the `[texture]` table of `refdefs/givcxr/vocabulary.toml`) and its texture modifiers
//! (`patchy`, `reticular`, …); empty when none.
//!
//! ```sql
//! SELECT givcxr_texture(['plate-like atelectasis', 'atelectasis'], ['patchy']);
//! -- [texture|yes|opacity, texture|yes|patchy]
//! ```

use std::sync::Arc;

use crate::vocab::Vocabulary;
use datafusion::arrow::array::{Array, ListBuilder, StringBuilder};
use datafusion::arrow::datatypes::DataType;
use datafusion::common::{Result, exec_err};
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDFImpl, Signature, Volatility,
};

use super::by_version;
use cxrlake_schemas::types::list_of;
use cxrlake_udfs::args::{list_strs, utf8_list_arg};

/// The `givcxr_texture` scalar function over one vocabulary.
#[derive(Debug)]
pub struct GivcxrTextureFunc {
    vocabulary: Arc<Vocabulary>,
    version: String,
    signature: Signature,
}

impl GivcxrTextureFunc {
    /// The function over `vocabulary`.
    pub fn new(vocabulary: Arc<Vocabulary>) -> Self {
        Self {
            version: vocabulary.version().to_string(),
            vocabulary,
            signature: Signature::any(2, Volatility::Immutable),
        }
    }
}

by_version!(GivcxrTextureFunc);

impl ScalarUDFImpl for GivcxrTextureFunc {
    fn name(&self) -> &str {
        "givcxr_texture"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _args: &[DataType]) -> Result<DataType> {
        Ok(list_of(DataType::Utf8))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let args = ColumnarValue::values_to_arrays(&args.args)?;
        if args.len() != 2 {
            return exec_err!("givcxr_texture takes two arguments: names, texture modifiers");
        }
        let names = utf8_list_arg(&args, 0, "givcxr_texture")?;
        let modifiers = utf8_list_arg(&args, 1, "givcxr_texture")?;
        let mut out = ListBuilder::new(StringBuilder::new());
        for row in 0..names.len() {
            let mut cues = self.vocabulary.texture_for(list_strs(&names, row));
            cues.extend(
                list_strs(&modifiers, row)
                    .into_iter()
                    .map(|m| m.trim().to_lowercase())
                    .filter(|m| !m.is_empty()),
            );
            cues.sort();
            cues.dedup();
            for cue in cues {
                out.values().append_value(format!("texture|yes|{cue}"));
            }
            out.append(true);
        }
        Ok(ColumnarValue::Array(Arc::new(out.finish())))
    }
}
