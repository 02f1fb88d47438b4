//! cxrlake's functions and planner rules on a lake's sessions (the lake itself is storage only:
//! its sessions get the functions through `Lake::with_session_factory`).

use std::sync::Arc;

use cxrlake_lake::Lake;
use cxrlake_schemas::rating_field;
use datafusion::arrow::array::{AsArray, Int64Array, RecordBatch, StringArray};
use datafusion::arrow::datatypes::{DataType, Field, Int64Type, Schema};

/// `(study_id, n, rating)` rows, the rating column marked as ratings.
fn batch(rows: &[(&str, i64, &str)]) -> RecordBatch {
    let schema = Schema::new(vec![
        Field::new("study_id", DataType::Utf8, false),
        Field::new("n", DataType::Int64, false),
        rating_field("rating"),
    ]);
    let studies: StringArray = rows.iter().map(|r| Some(r.0)).collect();
    let numbers: Int64Array = rows.iter().map(|r| Some(r.1)).collect();
    let ratings: StringArray = rows.iter().map(|r| Some(r.2)).collect();
    RecordBatch::try_new(
        Arc::new(schema),
        vec![Arc::new(studies), Arc::new(numbers), Arc::new(ratings)],
    )
    .expect("batch")
}

async fn query_i64(lake: &Lake, sql: &str) -> Vec<i64> {
    let ctx = lake.session().await.expect("session");
    ctx.sql(sql)
        .await
        .expect("plan")
        .collect()
        .await
        .expect("run")
        .iter()
        .flat_map(|b| b.column(0).as_primitive::<Int64Type>().values().to_vec())
        .collect()
}

#[tokio::test]
async fn rating_order_survives_the_delta_round_trip() {
    let lake = Lake::open_url("memory:///lake")
        .expect("open")
        .with_session_factory(cxrlake_udfs::session_context_on);
    lake.write("qa_sample")
        .execute(vec![batch(&[
            ("s1", 1, "A++"),
            ("s2", 2, "B"),
            ("s3", 3, "A"),
            ("s4", 4, "not rated"),
        ])])
        .await
        .expect("write");
    assert_eq!(
        query_i64(
            &lake,
            "SELECT n FROM qa_sample WHERE rating >= 'A' ORDER BY rating DESC"
        )
        .await,
        vec![1, 3]
    );
    let ctx = lake.session().await.expect("session");
    let plan = ctx.sql("SELECT n FROM qa_sample WHERE rating > 'Q'").await;
    let err = match plan {
        Ok(df) => df.collect().await.expect_err("bad literal"),
        Err(err) => err,
    };
    assert!(err.to_string().contains("valid ratings are"), "{err}");
}
