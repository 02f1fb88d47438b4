//! `cxrlake demo`: the main job on the embedded defaults.

use std::io::Write;
use std::path::PathBuf;

use cxrlake_lake::Lake;

use crate::commands::export::mimic_cxr_vqa_bank;
use crate::commands::ingest::synth;
use crate::commands::sql::sql;
use crate::commands::tables::{init, tables};
use crate::error::{CliError, Result};
use crate::output::{Format, say};

/// Options of the main job.
#[derive(Debug, Clone, clap::Args)]
pub struct DemoOptions {
    /// Studies in the synthetic corpus
    #[arg(long, default_value_t = 500)]
    pub studies: usize,
    /// Seed of the synthetic corpus and all sampling
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Where the synthetic corpus is written
    #[arg(long, value_name = "DIR", default_value = "corpus")]
    pub corpus: PathBuf,
    /// Where the release is written (metadata/, qa.zip, scene_data.zip, exports/A_frontal,
    /// exports/B_frontal, quality_mappings.csv, README.md; see `cxrlake export release`)
    #[arg(long, value_name = "DIR", default_value = "release")]
    pub release: PathBuf,
    /// Where the other flavours' exports are written (gemex/, llava/, mimic_cxr_vqa/ and
    /// rexvqa/; see `cxrlake export gemex`, `mimic-cxr-vqa` and `rexvqa`)
    #[arg(long, value_name = "DIR", default_value = "flavours")]
    pub flavours: PathBuf,
}

/// The main job on the embedded defaults: synthetic corpus → ingest → localize → extract (rules)
/// → map (lexical) → graph → balance → qa → judge (heuristic) → grade → the GEMeX flavour
/// (offline re-grounding and generation) → the release (both formats: the whole tree, FT and PT
/// exports) and the GEMeX export → summary.
pub async fn demo(
    lake: &Lake,
    options: &DemoOptions,
    progress: bool,
    out: &mut dyn Write,
) -> Result<()> {
    let started = std::time::Instant::now();
    init(lake, out).await?;
    let defs = crate::commands::refdefs::load_defs(None)?;
    crate::commands::refdefs::load_into_lake(lake, &defs).await?;
    say(
        out,
        format_args!("reference definitions {} loaded\n", defs.fingerprint()),
    )?;

    match existing_corpus(&options.corpus)? {
        Some((studies, seed)) if studies == options.studies as u64 && seed == options.seed => {
            say(
                out,
                format_args!(
                    "reusing the synthetic corpus in {} ({studies} studies, seed {seed})\n",
                    options.corpus.display()
                ),
            )?;
        }
        Some((studies, seed)) => {
            return Err(CliError::Usage(format!(
                "{} holds another corpus ({studies} studies, seed {seed}); remove it or pass --corpus DIR",
                options.corpus.display()
            )));
        }
        None => {
            let synth_options = cxrlake_synth::SynthOptions::new(
                options.studies,
                options.seed,
                options.corpus.clone(),
            );
            say(out, format_args!("{}\n", synth(synth_options).await?))?;
        }
    }

    let options_ingest = cxrlake_ingest::IngestOptions::new(vec![options.corpus.clone()])
        .with_limits(cxrlake_ingest::Limits::of(&lake.settings().cxrlake));
    say(
        out,
        format_args!("{}\n", cxrlake_ingest::ingest(lake, &options_ingest).await?),
    )?;
    // Every stage, incremental: a rerun of the demo on its own lake recomputes nothing.
    let pipeline = cxrlake_pipeline::Pipeline::builder(lake.clone(), cxrlake_flavours::ALL)
        .reuse_stored_settings(false)
        .set("cxrlake.flavours", "gemex,mimic_cxr_vqa,rexvqa,givcxr")?
        .progress(progress)
        .open()
        .await?;
    let mut failed = None;
    pipeline
        .run(false, &mut |stage| {
            let line = match &stage.report {
                Some(report) => format!("{report}\n"),
                None => format!("{}: up to date\n", stage.stage),
            };
            if let Err(e) = say(out, format_args!("{line}")) {
                failed.get_or_insert(e);
            }
        })
        .await?;
    if let Some(e) = failed {
        return Err(e);
    }

    let release = cxrlake_export::ReleaseExport::new(options.release.clone())
        .with_dataset_info(defs.dataset_info());
    say(
        out,
        format_args!(
            "{}\n",
            cxrlake_export::export_release(lake, &release).await?
        ),
    )?;
    let gemex = cxrlake_gemex::export::GemexExport::new(&options.flavours);
    say(
        out,
        format_args!(
            "{}\n",
            cxrlake_gemex::export::export_gemex(lake, &gemex).await?
        ),
    )?;
    let vqa = cxrlake_mimic_cxr_vqa::export::MimicVqaExport::new(
        &options.flavours,
        mimic_cxr_vqa_bank(lake)?.dataset_id(),
    );
    say(
        out,
        format_args!(
            "{}\n",
            cxrlake_mimic_cxr_vqa::export::export_mimic_cxr_vqa(lake, &vqa).await?
        ),
    )?;
    let rexvqa = cxrlake_rexvqa::export::RexvqaExport::new(&options.flavours);
    say(
        out,
        format_args!(
            "{}\n",
            cxrlake_rexvqa::export::export_rexvqa(lake, &rexvqa).await?
        ),
    )?;
    let givcxr = cxrlake_givcxr::export::GivcxrExport::new(&options.flavours);
    say(
        out,
        format_args!(
            "{}\n",
            cxrlake_givcxr::export::export_givcxr(lake, &givcxr).await?
        ),
    )?;

    let truth = options.corpus.join("ground_truth.jsonl");
    let report = cxrlake_pipeline::evaluate::observations_vs_truth(lake, &defs, &truth).await?;
    say(
        out,
        format_args!("mapped observations vs the corpus's ground truth:\n{report}\n"),
    )?;

    say(out, format_args!("lake tables:"))?;
    tables(lake, out).await?;
    say(
        out,
        format_args!("\nlocalization quality on frontal images (table 11 levels):"),
    )?;
    let query = "SELECT r.localization_quality, count(*) AS region_boxes, \
                 round(100.0 * count(*) / sum(count(*)) OVER (), 1) AS percent \
                 FROM region_boxes r JOIN images i USING (image_id) WHERE i.is_frontal \
                 GROUP BY 1 ORDER BY 2 DESC";
    sql(lake, query, Format::Table, None, out).await?;
    say(
        out,
        format_args!("\nmapped observations by positiveness and certainty (rules + lexical):"),
    )?;
    let query = "SELECT positiveness, certainty, count(*) AS observations, \
                 count(DISTINCT study_id) AS studies, \
                 round(100.0 * count(*) / sum(count(*)) OVER (), 1) AS percent \
                 FROM observations WHERE child_level = 0 \
                 GROUP BY 1, 2 ORDER BY 3 DESC";
    sql(lake, query, Format::Table, None, out).await?;
    say(
        out,
        format_args!("\nscene-graph extraction quality (table 11, worst aspect per study):"),
    )?;
    let query = "SELECT study_quality['region_extract_quality'] AS regions, \
                 study_quality['entity_extract_quality'] AS entities, \
                 study_quality['general_issue_level'] AS issues, count(*) AS studies \
                 FROM scene_graphs GROUP BY 1, 2, 3 ORDER BY 4 DESC LIMIT 8";
    sql(lake, query, Format::Table, None, out).await?;
    say(
        out,
        format_args!("\nquestions per template (sql/stats/qa_templates.sql):"),
    )?;
    sql(lake, stat("qa_templates"), Format::Table, None, out).await?;
    say(
        out,
        format_args!(
            "\nmost asked regions and findings, positive vs negative (sql/stats/qa_balance.sql):"
        ),
    )?;
    let query = format!(
        "SELECT * FROM ({}) LIMIT 12",
        stat("qa_balance").trim().trim_end_matches(';')
    );
    sql(lake, &query, Format::Table, None, out).await?;
    say(
        out,
        format_args!("\nratings per question type (sql/stats/qa_ratings.sql):"),
    )?;
    sql(lake, stat("qa_ratings"), Format::Table, None, out).await?;
    say(
        out,
        format_args!("\njudge calls with content dedup (sql/stats/judge_calls.sql):"),
    )?;
    sql(lake, stat("judge_calls"), Format::Table, None, out).await?;
    say(
        out,
        format_args!(
            "\nGEMeX questions (T) and boxes (B) per split and type (sql/stats/gemex_table2.sql):"
        ),
    )?;
    sql(lake, stat("gemex_table2"), Format::Table, None, out).await?;
    say(
        out,
        format_args!(
            "\nMIMIC-CXR-VQA images, QA pairs, open and closed answers per split \
             (sql/stats/mimic_cxr_vqa_table1.sql):"
        ),
    )?;
    sql(lake, stat("mimic_cxr_vqa_table1"), Format::Table, None, out).await?;
    say(
        out,
        format_args!(
            "\nMIMIC-CXR-VQA questions per CheXpert label value \
             (sql/stats/mimic_cxr_vqa_table2.sql):"
        ),
    )?;
    sql(lake, stat("mimic_cxr_vqa_table2"), Format::Table, None, out).await?;
    say(
        out,
        format_args!(
            "\nMIMIC-CXR-VQA judge on the QC sample of reports \
             (sql/stats/mimic_cxr_vqa_table3.sql):"
        ),
    )?;
    sql(lake, stat("mimic_cxr_vqa_table3"), Format::Table, None, out).await?;
    say(
        out,
        format_args!("\nReXVQA validators and filters (sql/stats/rexvqa_validators.sql):"),
    )?;
    sql(lake, stat("rexvqa_validators"), Format::Table, None, out).await?;
    say(
        out,
        format_args!(
            "\nReXVQA kept MCQs per task type and difficulty (sql/stats/rexvqa_tasks.sql):"
        ),
    )?;
    sql(lake, stat("rexvqa_tasks"), Format::Table, None, out).await?;
    say(
        out,
        format_args!("\nReXVQA correct-answer positions (sql/stats/rexvqa_positions.sql):"),
    )?;
    sql(lake, stat("rexvqa_positions"), Format::Table, None, out).await?;
    say(
        out,
        format_args!(
            "\nGIV-CXR QA pairs kept and rejected, by reason (givcxr_dataset, givcxr_rejects):"
        ),
    )?;
    let query = "SELECT 'kept' AS outcome, count(*) AS qa_pairs FROM givcxr_dataset \
                 UNION ALL SELECT 'rejected: ' || reason, count(*) \
                 FROM (SELECT unnest(reasons) AS reason FROM givcxr_rejects) GROUP BY reason \
                 ORDER BY qa_pairs DESC";
    sql(lake, query, Format::Table, None, out).await?;
    say(
        out,
        format_args!(
            "\nGIV-CXR QA pairs per clinical finding, multi-label (sql/stats/givcxr_findings.sql):"
        ),
    )?;
    sql(lake, stat("givcxr_findings"), Format::Table, None, out).await?;
    say(out, format_args!("\nreference vocabulary by category:"))?;
    let query = "SELECT category, count(*) AS findings, sum(array_length(synonyms)) AS synonyms \
                 FROM ref_findings GROUP BY category ORDER BY category";
    sql(lake, query, Format::Table, None, out).await?;
    say(
        out,
        format_args!("\ndone in {:.1} s", started.elapsed().as_secs_f64()),
    )
}

/// The SQL of the stats query `name` (one of [`STATS`]; empty, and so an error when run, if not).
fn stat(name: &str) -> &'static str {
    cxrlake_report::stats::query(name).unwrap_or_default()
}

/// `(studies, seed)` of the corpus already in `dir`, if its manifest says so.
fn existing_corpus(dir: &std::path::Path) -> Result<Option<(u64, u64)>> {
    let manifest = dir.join("manifest.json");
    let Ok(text) = std::fs::read_to_string(&manifest) else {
        return Ok(None);
    };
    let value: serde_json::Value = serde_json::from_str(&text).map_err(|e| {
        CliError::Usage(format!(
            "{}: {e}; remove the folder or pass --corpus DIR",
            manifest.display()
        ))
    })?;
    Ok(value["studies"].as_u64().zip(value["seed"].as_u64()))
}
