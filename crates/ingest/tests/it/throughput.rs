//! Ingest throughput on a synthetic corpus (ignored by default; run with `--ignored
//! --nocapture`, scale from `CXRLAKE_INGEST_STUDIES`, default 2,000 studies).

use std::time::Instant;

use cxrlake_ingest::{IngestOptions, ingest};

use crate::common::{corpus, lake};

#[tokio::test(flavor = "multi_thread")]
#[ignore = "benchmark: run with --ignored --nocapture"]
async fn ingest_throughput() {
    let studies = std::env::var("CXRLAKE_INGEST_STUDIES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2_000);
    let started = Instant::now();
    let (_dir, synth) = corpus(studies, 42, false);
    let synth_secs = started.elapsed().as_secs_f64();
    let (_lake_dir, lake) = lake().await;
    let summary = ingest(&lake, &IngestOptions::new(vec![synth.out.clone()]))
        .await
        .expect("ingest");
    assert_eq!(summary.quarantined(), 0);
    let again = ingest(&lake, &IngestOptions::new(vec![synth.out.clone()]))
        .await
        .expect("re-ingest");
    let mut parts = Vec::new();
    for part in ["files", "imagenome", "cxas"] {
        let (_part_dir, part_lake) = crate::common::lake().await;
        let mut inputs = crate::common::csvs(&synth.out);
        inputs.push(synth.out.join(part));
        let part_summary = ingest(&part_lake, &IngestOptions::new(inputs))
            .await
            .expect("ingest part");
        parts.push(format!(
            "CSVs + {part}: {:.1} s",
            part_summary.elapsed.as_secs_f64()
        ));
    }
    #[allow(clippy::print_stdout)]
    {
        println!("{}", parts.join("\n"));
        println!("synth: {studies} studies in {synth_secs:.1} s");
        println!("{summary}");
        println!("re-ingest:\n{again}");
    }
}
