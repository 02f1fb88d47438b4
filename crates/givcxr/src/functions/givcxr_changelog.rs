//! `givcxr_changelog() -> list<struct<version, date, change>>`: the dated versions of the
//! GIV-CXR prompts (`[[changelog]]` of `prompts/givcxr/prompts.toml`: paper 002 table 5, then
//! ours), for the `givcxr_filter` stage to write as the `givcxr_prompt_versions` table.
//!
//! ```sql
//! SELECT c['version'], c['date'] FROM (SELECT unnest(givcxr_changelog()) AS c);
//! ```

use cxrlake_generate::ChangelogEntry;
use cxrlake_schemas::types::{key, list_of};
use datafusion::arrow::datatypes::{DataType, Fields};
use datafusion::common::{Result, ScalarValue, exec_err};
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDFImpl, Signature, Volatility,
};

use super::by_version;
use cxrlake_udfs::rows::encode_rows;

/// The type the function returns.
pub fn changelog_type() -> DataType {
    list_of(DataType::Struct(Fields::from(vec![
        key("version"),
        key("date"),
        key("change"),
    ])))
}

/// The `givcxr_changelog` scalar function over one prompts folder's changelog.
#[derive(Debug)]
pub struct GivcxrChangelogFunc {
    entries: Vec<ChangelogEntry>,
    version: String,
    signature: Signature,
}

impl GivcxrChangelogFunc {
    /// The function returning `entries` (of the prompts of `version`).
    pub fn new(entries: Vec<ChangelogEntry>, version: &str) -> Self {
        Self {
            entries,
            version: version.to_string(),
            signature: Signature::nullary(Volatility::Immutable),
        }
    }
}

by_version!(GivcxrChangelogFunc);

impl ScalarUDFImpl for GivcxrChangelogFunc {
    fn name(&self) -> &str {
        "givcxr_changelog"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _args: &[DataType]) -> Result<DataType> {
        Ok(changelog_type())
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        if !args.args.is_empty() {
            return exec_err!("givcxr_changelog takes no arguments");
        }
        let rows = encode_rows(&[&self.entries], &changelog_type())?;
        Ok(ColumnarValue::Scalar(ScalarValue::try_from_array(
            &rows, 0,
        )?))
    }
}
