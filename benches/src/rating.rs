//! Benchmark: filtering by rating in cxrlake SQL (`rating >= 'A'`, rewritten to a rank
//! comparison) against the numeric `rating_rank` column and a plain string `IN` list.
//!
//! Scale: `RATING_BENCH_ROWS` rows (default 4,000,000, about the size of a 10% MIMIC QA sample),
//! ratings drawn in the release's proportions; median of 5 runs, rows per second.

use std::sync::Arc;

use cxrlake_schemas::{Rating, rating_field};
use datafusion::arrow::array::{Int8Array, RecordBatch, StringArray};
use datafusion::arrow::datatypes::{DataType, Field, Schema};
use datafusion::datasource::MemTable;
use datafusion::prelude::SessionConfig;

const BATCH_ROWS: usize = 65_536;

fn batches(rows: usize) -> (Arc<Schema>, Vec<RecordBatch>) {
    let schema = Arc::new(Schema::new(vec![
        rating_field("rating"),
        Field::new("rating_rank", DataType::Int8, true),
    ]));
    // Rough release proportions: many B, fewer A grades, some C/D/not rated.
    let cycle = [
        Rating::B,
        Rating::B,
        Rating::B,
        Rating::A,
        Rating::APlus,
        Rating::B,
        Rating::C,
        Rating::APlusPlus,
        Rating::B,
        Rating::D,
        Rating::NotRated,
        Rating::A,
    ];
    let mut out = Vec::new();
    let mut start = 0;
    while start < rows {
        let n = BATCH_ROWS.min(rows - start);
        let ratings: Vec<Rating> = (start..start + n)
            .map(|i| cycle[(i * 7919) % cycle.len()])
            .collect();
        out.push(
            RecordBatch::try_new(
                schema.clone(),
                vec![
                    Arc::new(StringArray::from_iter_values(
                        ratings.iter().map(|r| r.as_str()),
                    )),
                    Arc::new(Int8Array::from_iter_values(
                        ratings.iter().map(|r| r.rank()),
                    )),
                ],
            )
            .expect("batch"),
        );
        start += n;
    }
    (schema, out)
}

#[tokio::main]
#[allow(clippy::print_stdout)]
async fn main() {
    let rows: usize = std::env::var("RATING_BENCH_ROWS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(4_000_000);
    let (schema, data) = batches(rows);
    let ctx = cxrlake_udfs::session_context(SessionConfig::new());
    let table = MemTable::try_new(schema, vec![data]).expect("memtable");
    ctx.register_table("qa", Arc::new(table)).expect("register");

    println!("rating filter benchmark, {rows} rows (median of 5 runs)");
    let queries = [
        (
            "rating >= 'A' (ordered rating)",
            "SELECT count(*) FROM qa WHERE rating >= 'A'",
        ),
        (
            "rating_rank >= 4 (numeric column)",
            "SELECT count(*) FROM qa WHERE rating_rank >= 4",
        ),
        (
            "rating IN ('A++','A+','A') (text)",
            "SELECT count(*) FROM qa WHERE rating IN ('A++', 'A+', 'A')",
        ),
        (
            "ORDER BY rating LIMIT 10",
            "SELECT rating FROM qa ORDER BY rating DESC LIMIT 10",
        ),
    ];
    for (label, sql) in queries {
        let median = cxrlake_benches::median_seconds(&ctx, sql, 5).await;
        println!(
            "{label:<38} {:>8.1} ms  {:>7.1} M rows/s",
            median * 1e3,
            rows as f64 / median / 1e6
        );
    }
}
