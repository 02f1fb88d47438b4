//! Throughput of the run-domain mask operations on realistic chest X-ray masks: 2544×3056 images
//! with 150 ellipse masks each (lung- to nodule-sized), as the localisation stage sees them.
//!
//! Run with `cargo bench -p cxrlake-masks`; prints masks/s per operation and the implied
//! images/s at 150 masks per image, on one core and (for the per-image localisation work:
//! decode, bbox and area of every mask) on two threads.

use std::hint::black_box;
use std::time::{Duration, Instant};

use cxrlake_masks::Rle;

const HEIGHT: u32 = 3056;
const WIDTH: u32 = 2544;
const MASKS_PER_IMAGE: usize = 150;

/// An axis-aligned ellipse rasterised column by column, straight into runs.
fn ellipse(cx: f64, cy: f64, rx: f64, ry: f64) -> Rle {
    let h = u64::from(HEIGHT);
    let columns = (0..WIDTH).filter_map(|x| {
        let dx = (f64::from(x) + 0.5 - cx) / rx;
        if dx.abs() >= 1.0 {
            return None;
        }
        let half = ry * (1.0 - dx * dx).sqrt();
        let y0 = (cy - half).max(0.0) as u64;
        let y1 = ((cy + half) as u64).min(h);
        (y0 < y1).then(|| (u64::from(x) * h + y0, u64::from(x) * h + y1))
    });
    Rle::from_intervals(HEIGHT, WIDTH, columns)
}

/// 150 deterministic ellipses from nodule size (radius ~40 px) to lung size (~600×1100 px).
fn image_masks() -> Vec<String> {
    (0..MASKS_PER_IMAGE)
        .map(|i| {
            let t = i as f64 / MASKS_PER_IMAGE as f64;
            let rx = 40.0 + 560.0 * ((i * 37) % 101) as f64 / 100.0;
            let ry = 40.0 + 1060.0 * ((i * 53) % 97) as f64 / 96.0;
            let cx = 300.0 + 1900.0 * t;
            let cy = 500.0 + 2000.0 * ((i * 29) % 89) as f64 / 88.0;
            ellipse(cx, cy, rx, ry).to_compressed_string()
        })
        .collect()
}

/// Runs `op` over all masks until at least a second has passed; returns how many masks it did.
fn masks_in_a_second(masks: &[String], op: &impl Fn(&str)) -> usize {
    let mut done = 0usize;
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(1) {
        for counts in masks {
            op(counts);
        }
        done += masks.len();
    }
    done
}

/// Masks per second of `op`, run on one thread.
fn masks_per_second(masks: &[String], op: impl Fn(&str)) -> f64 {
    let start = Instant::now();
    masks_in_a_second(masks, &op) as f64 / start.elapsed().as_secs_f64()
}

/// Masks per second of `op`, run on `threads` threads at once, each over all masks.
fn masks_per_second_parallel(masks: &[String], threads: usize, op: impl Fn(&str) + Sync) -> f64 {
    let start = Instant::now();
    let done: usize = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..threads)
            .map(|_| scope.spawn(|| masks_in_a_second(masks, &op)))
            .collect();
        workers
            .into_iter()
            .map(|worker| worker.join().expect("bench thread"))
            .sum()
    });
    done as f64 / start.elapsed().as_secs_f64()
}

fn decode(counts: &str) -> Rle {
    Rle::from_compressed_string(counts, HEIGHT, WIDTH).expect("valid bench mask")
}

fn report(name: &str, rate: f64) {
    report_on(name, rate, 1);
}

fn report_on(name: &str, rate: f64, threads: usize) {
    #[allow(clippy::print_stdout)]
    {
        println!(
            "{name:<28} {rate:>12.0} masks/s  {:>10.0} images/s (150 masks/image, {threads} thread(s))",
            rate / MASKS_PER_IMAGE as f64
        );
    }
}

fn main() {
    let masks = image_masks();
    let mean_len = masks.iter().map(String::len).sum::<usize>() / masks.len();
    let mean_runs = masks
        .iter()
        .map(|m| decode(m).counts().len())
        .sum::<usize>()
        / masks.len();
    #[allow(clippy::print_stdout)]
    {
        println!(
            "{WIDTH}x{HEIGHT} image, {MASKS_PER_IMAGE} ellipse masks: mean {mean_len} bytes, {mean_runs} runs"
        );
    }
    report(
        "decode",
        masks_per_second(&masks, |m| {
            black_box(decode(m));
        }),
    );
    report(
        "summarize (area + bbox)",
        masks_per_second(&masks, |m| {
            black_box(cxrlake_masks::summarize(m, HEIGHT, WIDTH).expect("valid bench mask"));
        }),
    );
    report(
        "decode + area",
        masks_per_second(&masks, |m| {
            black_box(decode(m).area());
        }),
    );
    report(
        "decode + bbox",
        masks_per_second(&masks, |m| {
            black_box(decode(m).bbox());
        }),
    );
    let first = decode(&masks[0]);
    report(
        "decode + union + encode",
        masks_per_second(&masks, |m| {
            let union = first.union(&decode(m)).expect("same size");
            black_box(union.to_compressed_string());
        }),
    );
    report(
        "decode + intersection",
        masks_per_second(&masks, |m| {
            black_box(first.intersection(&decode(m)).expect("same size"));
        }),
    );
    report(
        "decode + bbox + area",
        masks_per_second(&masks, |m| {
            let rle = decode(m);
            black_box((rle.bbox(), rle.area()));
        }),
    );
    report_on(
        "decode + bbox + area",
        masks_per_second_parallel(&masks, 2, |m| {
            let rle = decode(m);
            black_box((rle.bbox(), rle.area()));
        }),
        2,
    );
}
