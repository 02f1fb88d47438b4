//! `llm_extract_observations(sentences)`: listing 3 for one sentence cluster sent to an
//! OpenAI-compatible server, its JSON list answer parsed tolerantly.

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
use super::output::{ObservationsRow, ask_parsed, list_strs, observations_type, utf8_list_arg};
use crate::llm_ask::BATCH_ROWS;
use crate::rows::encode_rows;

/// Most tokens of an observation answer.
const MAX_TOKENS: u32 = 2048;

/// The `llm_extract_observations` async scalar function.
#[derive(Debug)]
pub struct LlmExtractObservationsFunc {
    client: Arc<LlmClient>,
    prompts: Arc<Prompts>,
    name: &'static str,
    signature: Signature,
}

impl LlmExtractObservationsFunc {
    /// The function over this client and these prompts, named as `naming` says.
    pub fn new(client: Arc<LlmClient>, prompts: Arc<Prompts>, naming: Naming) -> Self {
        Self {
            client,
            prompts,
            name: naming.pick("llm_extract_observations", 1),
            signature: Signature::any(1, Volatility::Immutable),
        }
    }
}

super::llm_identity!(LlmExtractObservationsFunc);

impl ScalarUDFImpl for LlmExtractObservationsFunc {
    fn name(&self) -> &str {
        self.name
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _args: &[DataType]) -> Result<DataType> {
        Ok(observations_type())
    }

    fn invoke_with_args(&self, _args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        exec_err!("{} is async and runs only inside a query plan", self.name)
    }
}

#[async_trait]
impl AsyncScalarUDFImpl for LlmExtractObservationsFunc {
    fn ideal_batch_size(&self) -> Option<usize> {
        Some(BATCH_ROWS)
    }

    async fn invoke_async_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let args = ColumnarValue::values_to_arrays(&args.args)?;
        let clusters = utf8_list_arg(&args, 0, self.name)?;
        let prompts = (0..clusters.len())
            .map(|row| {
                let sentences = list_strs(&clusters, row);
                (!sentences.is_empty()).then(|| self.prompts.observations(&sentences))
            })
            .collect();
        let parsed = ask_parsed(&self.client, prompts, MAX_TOKENS, parse::observations).await?;
        let rows: Vec<_> = parsed
            .iter()
            .map(|(observations, failure)| ObservationsRow::new(observations, failure.clone()))
            .collect();
        Ok(ColumnarValue::Array(encode_rows(
            &rows,
            &observations_type(),
        )?))
    }
}
