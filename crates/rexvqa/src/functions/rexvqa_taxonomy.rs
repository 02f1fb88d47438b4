//! `rexvqa_taxonomy() -> list<struct<level, id, name, parent, synonyms, findings>>`: the rows of
//! the table A2 condition taxonomy the function was made with (`refdefs/rexvqa/taxonomy.toml`,
//! or the run's refdefs folder's copy), for the `rexvqa_generate` stage to write as the
//! `rexvqa_taxonomy` table.
//!
//! ```sql
//! SELECT t['id'], t['parent'] FROM (SELECT unnest(rexvqa_taxonomy()) AS t);
//! ```

use std::hash::{Hash, Hasher};
use std::sync::Arc;

use crate::taxonomy::Taxonomy;
use cxrlake_schemas::types::{key, list_of, text, text_list};
use datafusion::arrow::datatypes::{DataType, Fields};
use datafusion::common::{Result, ScalarValue, exec_err};
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDFImpl, Signature, Volatility,
};

use cxrlake_udfs::rows::encode_rows;

/// The type the function returns.
pub fn taxonomy_type() -> DataType {
    list_of(DataType::Struct(Fields::from(vec![
        key("level"),
        key("id"),
        key("name"),
        text("parent"),
        text_list("synonyms"),
        text_list("findings"),
    ])))
}

/// The `rexvqa_taxonomy` scalar function over one taxonomy.
#[derive(Debug)]
pub struct RexvqaTaxonomyFunc {
    taxonomy: Arc<Taxonomy>,
    signature: Signature,
}

impl RexvqaTaxonomyFunc {
    /// The function returning `taxonomy`'s rows.
    pub fn new(taxonomy: Arc<Taxonomy>) -> Self {
        Self {
            taxonomy,
            signature: Signature::nullary(Volatility::Immutable),
        }
    }
}

impl PartialEq for RexvqaTaxonomyFunc {
    fn eq(&self, other: &Self) -> bool {
        self.taxonomy.version() == other.taxonomy.version()
    }
}

impl Eq for RexvqaTaxonomyFunc {}

impl Hash for RexvqaTaxonomyFunc {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.taxonomy.version().hash(state);
    }
}

impl ScalarUDFImpl for RexvqaTaxonomyFunc {
    fn name(&self) -> &str {
        "rexvqa_taxonomy"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _args: &[DataType]) -> Result<DataType> {
        Ok(taxonomy_type())
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        if !args.args.is_empty() {
            return exec_err!("rexvqa_taxonomy takes no arguments");
        }
        let rows = encode_rows(&[self.taxonomy.rows()], &taxonomy_type())?;
        Ok(ColumnarValue::Scalar(ScalarValue::try_from_array(
            &rows, 0,
        )?))
    }
}
