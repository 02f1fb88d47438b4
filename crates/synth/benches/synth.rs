//! End-to-end throughput of `generate`: `SYNTH_BENCH_STUDIES` studies (default 20000) into a
//! temp dir, `SYNTH_BENCH_CXAS` CXAS fraction (default 1.0); prints studies/s and the
//! extrapolated time for full MIMIC-CXR scale (227,835 studies).
#![allow(clippy::print_stdout)]

use std::time::Instant;

use cxrlake_synth::{SynthOptions, generate};

const MIMIC_STUDIES: f64 = 227_835.0;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let studies: usize = std::env::var("SYNTH_BENCH_STUDIES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20_000);
    let cxas: f64 = std::env::var("SYNTH_BENCH_CXAS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1.0);
    let zip = std::env::var("SYNTH_BENCH_ZIP").is_ok_and(|v| v == "1");
    let dir = tempfile::tempdir()?;
    let options = SynthOptions::new(studies, 42, dir.path().join("corpus"))
        .with_cxas_fraction(cxas)
        .with_zip(zip);
    let start = Instant::now();
    let summary = generate(&options)?;
    let secs = start.elapsed().as_secs_f64();
    let rate = summary.studies as f64 / secs;
    println!("{summary}");
    println!(
        "synth: {} studies, {} images, {} masks in {secs:.2} s on {} threads = {rate:.0} studies/s; \
         extrapolated full MIMIC scale (227,835 studies): {:.0} s",
        summary.studies,
        summary.images,
        summary.masks,
        rayon::current_num_threads(),
        MIMIC_STUDIES / rate
    );
    Ok(())
}
