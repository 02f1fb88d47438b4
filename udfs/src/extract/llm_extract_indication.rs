//! `llm_extract_indication(indication, finding_ids, finding_sentences)`: listing 5 sent to an
//! OpenAI-compatible server, its JSON answer parsed tolerantly. Studies without indication text
//! are not sent.

use std::sync::Arc;

use async_trait::async_trait;
use cxrlake_extract::parse;
use cxrlake_extract::prompts::Prompts;
use cxrlake_llm::LlmClient;
use datafusion::arrow::datatypes::DataType;
use datafusion::common::{Result, exec_err};
use datafusion::logical_expr::async_udf::AsyncScalarUDFImpl;
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDFImpl, Signature, Volatility,
};

use super::Naming;
use super::output::{
    IndicationRow, ask_parsed, findings_at, indication_type, string_at, utf8_arg, utf8_list_arg,
};
use crate::llm_ask::BATCH_ROWS;
use crate::rows::encode_rows;

/// Most tokens of an indication answer.
const MAX_TOKENS: u32 = 1024;

/// The `llm_extract_indication` async scalar function.
#[derive(Debug)]
pub struct LlmExtractIndicationFunc {
    client: Arc<LlmClient>,
    prompts: Arc<Prompts>,
    name: &'static str,
    signature: Signature,
}

impl LlmExtractIndicationFunc {
    /// The function over this client and these prompts, named as `naming` says.
    pub fn new(client: Arc<LlmClient>, prompts: Arc<Prompts>, naming: Naming) -> Self {
        Self {
            client,
            prompts,
            name: naming.pick("llm_extract_indication", 2),
            signature: Signature::any(3, Volatility::Immutable),
        }
    }
}

super::llm_identity!(LlmExtractIndicationFunc);

impl ScalarUDFImpl for LlmExtractIndicationFunc {
    fn name(&self) -> &str {
        self.name
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _args: &[DataType]) -> Result<DataType> {
        Ok(indication_type())
    }

    fn invoke_with_args(&self, _args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        exec_err!("{} is async and runs only inside a query plan", self.name)
    }
}

#[async_trait]
impl AsyncScalarUDFImpl for LlmExtractIndicationFunc {
    fn ideal_batch_size(&self) -> Option<usize> {
        Some(BATCH_ROWS)
    }

    async fn invoke_async_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let args = ColumnarValue::values_to_arrays(&args.args)?;
        let indications = utf8_arg(&args, 0, self.name)?;
        let ids = utf8_list_arg(&args, 1, self.name)?;
        let texts = utf8_list_arg(&args, 2, self.name)?;
        let prompts = (0..indications.len())
            .map(|row| {
                let indication = string_at(&indications, row);
                if indication.trim().is_empty() {
                    return None;
                }
                let findings = findings_at(&ids, &texts, row);
                Some(self.prompts.indication(indication, &findings))
            })
            .collect();
        let parsed = ask_parsed(&self.client, prompts, MAX_TOKENS, |text| {
            parse::indication(text).map(Some)
        })
        .await?;
        let rows: Vec<_> = parsed
            .iter()
            .map(|(indication, failure)| IndicationRow::new(indication.as_ref(), failure.clone()))
            .collect();
        Ok(ColumnarValue::Array(encode_rows(
            &rows,
            &indication_type(),
        )?))
    }
}
