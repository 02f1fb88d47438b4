//! `llm_extract_sentences(report)`: listing 1 sent to an OpenAI-compatible server, its line-format
//! answer parsed; sentences that the rules splitter can split further become several sentences
//! (the paper re-splits with Stanza), keeping the merge links.

use std::sync::Arc;

use async_trait::async_trait;
use cxrlake_extract::prompts::Prompts;
use cxrlake_extract::rules::split_sentences;
use cxrlake_extract::{Sentence, parse};
use cxrlake_llm::LlmClient;
use datafusion::arrow::datatypes::DataType;
use datafusion::common::{Result, exec_err};
use datafusion::logical_expr::async_udf::AsyncScalarUDFImpl;
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDFImpl, Signature, Volatility,
};

use super::Naming;
use super::output::{SentencesRow, ask_parsed, sentences_type, string_at, utf8_arg};
use crate::llm_ask::BATCH_ROWS;
use crate::rows::encode_rows;

/// Most tokens of a sentence-extraction answer (a long report has ~40 sentences).
const MAX_TOKENS: u32 = 4096;

/// The `llm_extract_sentences` async scalar function.
#[derive(Debug)]
pub struct LlmExtractSentencesFunc {
    client: Arc<LlmClient>,
    prompts: Arc<Prompts>,
    name: &'static str,
    signature: Signature,
}

impl LlmExtractSentencesFunc {
    /// The function over this client and these prompts, named as `naming` says.
    pub fn new(client: Arc<LlmClient>, prompts: Arc<Prompts>, naming: Naming) -> Self {
        Self {
            client,
            prompts,
            name: naming.pick("llm_extract_sentences", 0),
            signature: Signature::any(1, Volatility::Immutable),
        }
    }
}

super::llm_identity!(LlmExtractSentencesFunc);

impl ScalarUDFImpl for LlmExtractSentencesFunc {
    fn name(&self) -> &str {
        self.name
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _args: &[DataType]) -> Result<DataType> {
        Ok(sentences_type())
    }

    fn invoke_with_args(&self, _args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        exec_err!("{} is async and runs only inside a query plan", self.name)
    }
}

/// Re-splits each sentence with the rules splitter; parts get new ids, links follow the first
/// part, and later parts link to the first.
fn resplit(sentences: Vec<Sentence>) -> Vec<Sentence> {
    let mut out: Vec<Sentence> = Vec::with_capacity(sentences.len());
    let mut renamed = std::collections::HashMap::new();
    for sentence in sentences {
        let parts = split_sentences(&sentence.sentence);
        let first_id = format!("S{:02}", out.len() + 1);
        renamed.insert(sentence.sent_id.clone(), first_id.clone());
        let merge_with: Vec<String> = sentence
            .merge_with
            .iter()
            .filter_map(|id| renamed.get(id).cloned())
            .collect();
        let parts = if parts.len() > 1 {
            parts
        } else {
            vec![sentence.sentence.clone()]
        };
        for (i, part) in parts.into_iter().enumerate() {
            let mut links = merge_with.clone();
            if i > 0 {
                links.push(first_id.clone());
            }
            out.push(Sentence {
                sent_id: format!("S{:02}", out.len() + 1),
                section: sentence.section.clone(),
                section_type: sentence.section_type,
                sentence: part,
                merge_with: links,
            });
        }
    }
    out
}

#[async_trait]
impl AsyncScalarUDFImpl for LlmExtractSentencesFunc {
    fn ideal_batch_size(&self) -> Option<usize> {
        Some(BATCH_ROWS)
    }

    async fn invoke_async_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let args = ColumnarValue::values_to_arrays(&args.args)?;
        let reports = utf8_arg(&args, 0, self.name)?;
        let prompts = (0..reports.len())
            .map(|row| {
                let report = string_at(&reports, row);
                (!report.trim().is_empty()).then(|| self.prompts.sentences(report))
            })
            .collect();
        let parsed = ask_parsed(&self.client, prompts, MAX_TOKENS, |text| {
            parse::sentences(text).map(resplit)
        })
        .await?;
        let rows: Vec<_> = parsed
            .iter()
            .map(|(sentences, failure)| SentencesRow::new(sentences, failure.clone()))
            .collect();
        Ok(ColumnarValue::Array(encode_rows(&rows, &sentences_type())?))
    }
}
