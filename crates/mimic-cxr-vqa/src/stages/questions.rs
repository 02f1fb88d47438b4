//! The `mimic_cxr_vqa_questions` stage (`crates/mimic-cxr-vqa/sql/questions.sql`): the report text of
//! every study with a FINDINGS or IMPRESSION section, and the questions the bank asks of it per
//! CheXpert label value and the Heart rule (paper 001, section 3.1, table 2).

use std::collections::BTreeMap;

use crate::functions::{MimicCxrVqaHeartFunc, MimicCxrVqaSampleFunc};
use async_trait::async_trait;
use datafusion::common::ScalarValue;
use datafusion::logical_expr::ScalarUDF;

use cxrlake_pipeline::Pipeline;
use cxrlake_pipeline::error::Result;
use cxrlake_pipeline::stage::{
    Chunking, Coverage, Prepared, RunMode, Stage, StageDef, StageReport, Writes,
};

/// The stage's declaration.
pub static DEF: StageDef = StageDef {
    name: "mimic_cxr_vqa_questions",
    doc: "mimic_cxr_vqa_questions: the 90-question bank sampled per study and label value",
    sql: include_str!("../../sql/questions.sql"),
    file: "crates/mimic-cxr-vqa/sql/questions.sql",
    inputs: &["reports", "sentences", "chexpert_labels", "images"],
    side_inputs: &["quarantine"],
    outputs: &[
        "mimic_cxr_vqa_reports",
        "mimic_cxr_vqa_questions",
        "quarantine",
    ],
    settings: &["templates", "seed", "vqa_paper_typos", "chunk_patients"],
    chunking: Chunking::Patients { default: 5000 },
    writes: Writes::Replace,
    coverage: Coverage::PerStudy,
    detects_changes: true,
    reads_synonyms: true,
};

/// The `mimic_cxr_vqa_questions` stage.
#[derive(Debug)]
pub struct Questions;

#[async_trait]
impl Stage for Questions {
    fn def(&self) -> &'static StageDef {
        &DEF
    }

    async fn definitions(&self, pipeline: &Pipeline) -> Result<BTreeMap<String, String>> {
        Ok(BTreeMap::from([(
            "bank".into(),
            super::bank(pipeline)?.version().to_string(),
        )]))
    }

    async fn prepare(&self, pipeline: &Pipeline, _mode: RunMode) -> Result<Prepared> {
        let bank = super::bank(pipeline)?;
        let version = bank.version().to_string();
        let config = pipeline.config();
        let sample = MimicCxrVqaSampleFunc::new(bank, config.seed, config.vqa_paper_typos);
        Ok(Prepared::new(
            vec![
                ScalarUDF::from(sample),
                ScalarUDF::from(MimicCxrVqaHeartFunc::new()),
            ],
            vec![("bank", ScalarValue::from(version))],
        ))
    }

    fn describe(&self, report: &StageReport) -> String {
        format!(
            "mimic_cxr_vqa_questions: {} questions for {} studies in {:.1} s",
            report.rows("mimic_cxr_vqa_questions"),
            report.rows("mimic_cxr_vqa_reports"),
            report.seconds,
        )
    }
}
