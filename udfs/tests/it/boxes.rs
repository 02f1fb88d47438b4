//! Box and mask functions over a `MemTable` shaped like the lake: RLE columns next to
//! `fixed_size_list<f32, 4>` boxes, and the same boxes as plain `list<f32>` (as Delta reads them).

use std::sync::Arc;

use cxrlake_masks::{BBox, Rle, box_iou};
use datafusion::arrow::array::{
    Array, AsArray, FixedSizeListBuilder, Float32Builder, Int64Array, ListBuilder, RecordBatch,
    StringArray,
};
use datafusion::arrow::datatypes::{DataType, Field, Float32Type, Float64Type, Int64Type, Schema};
use datafusion::datasource::MemTable;
use datafusion::error::Result;
use datafusion::prelude::SessionConfig;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

const HEIGHT: u32 = 64;
const WIDTH: u32 = 48;

fn random_box(rng: &mut ChaCha8Rng) -> BBox {
    let (x0, y0) = (rng.random_range(0..WIDTH), rng.random_range(0..HEIGHT));
    let (x1, y1) = (
        rng.random_range(x0 + 1..=WIDTH),
        rng.random_range(y0 + 1..=HEIGHT),
    );
    [x0 as f32, y0 as f32, x1 as f32, y1 as f32]
}

/// One row per random box pair: masks of both boxes, the boxes as fixed and as plain lists.
fn table(rows: usize) -> Result<(MemTable, Vec<(BBox, BBox)>)> {
    let mut rng = ChaCha8Rng::seed_from_u64(5);
    let pairs: Vec<(BBox, BBox)> = (0..rows)
        .map(|_| (random_box(&mut rng), random_box(&mut rng)))
        .collect();
    let mask = |bbox: BBox| {
        Rle::from_box(bbox, HEIGHT, WIDTH)
            .map(|m| m.to_compressed_string())
            .map_err(|e| datafusion::error::DataFusionError::External(Box::new(e)))
    };
    let item = Arc::new(Field::new("item", DataType::Float32, true));
    let mut fixed = FixedSizeListBuilder::new(Float32Builder::new(), 4).with_field(item.clone());
    let mut plain = ListBuilder::new(Float32Builder::new()).with_field(item);
    for (a, b) in &pairs {
        fixed.values().append_slice(a);
        fixed.append(true);
        plain.values().append_slice(b);
        plain.append(true);
    }
    let fixed = fixed.finish();
    let plain = plain.finish();
    let schema = Arc::new(Schema::new(vec![
        Field::new("counts_a", DataType::Utf8, true),
        Field::new("counts_b", DataType::Utf8, true),
        Field::new("height", DataType::Int64, false),
        Field::new("width", DataType::Int64, false),
        Field::new("box_a", fixed.data_type().clone(), true),
        Field::new("box_b", plain.data_type().clone(), true),
    ]));
    let batch = RecordBatch::try_new(
        schema.clone(),
        vec![
            Arc::new(
                pairs
                    .iter()
                    .map(|(a, _)| mask(*a).map(Some))
                    .collect::<Result<StringArray>>()?,
            ),
            Arc::new(
                pairs
                    .iter()
                    .map(|(_, b)| mask(*b).map(Some))
                    .collect::<Result<StringArray>>()?,
            ),
            Arc::new(Int64Array::from(vec![i64::from(HEIGHT); rows])),
            Arc::new(Int64Array::from(vec![i64::from(WIDTH); rows])),
            Arc::new(fixed),
            Arc::new(plain),
        ],
    )?;
    Ok((MemTable::try_new(schema, vec![vec![batch]])?, pairs))
}

#[tokio::test]
async fn masks_of_boxes_agree_with_box_functions() -> Result<()> {
    let ctx = cxrlake_udfs::session_context(SessionConfig::new().with_target_partitions(2));
    let (table, pairs) = table(200)?;
    ctx.register_table("pairs", Arc::new(table))?;
    let batches = ctx
        .sql(
            "SELECT
                mask_area(mask_intersection(counts_a, counts_b, height, width), height, width)
                    AS mask_overlap,
                box_area(box_intersection(box_a, box_b)) AS box_overlap,
                mask_bbox(mask_union(counts_a, counts_b, height, width), height, width)
                    = box_union(make_array(box_a, arrow_cast(box_b, 'FixedSizeList(4, Float32)')))
                    AS super_box_matches,
                box_iou(box_a, box_b) AS iou,
                mask_bbox(counts_a, height, width) = box_a AS bbox_matches
             FROM pairs",
        )
        .await?
        .collect()
        .await?;
    let mut row = 0;
    for batch in &batches {
        let mask_overlap = batch.column(0).as_primitive::<Int64Type>();
        let box_overlap = batch.column(1).as_primitive::<Float64Type>();
        let super_box = batch.column(2).as_boolean();
        let iou = batch.column(3).as_primitive::<Float64Type>();
        let bbox_matches = batch.column(4).as_boolean();
        for i in 0..batch.num_rows() {
            let (a, b) = pairs[row];
            let expected_overlap = if box_overlap.is_null(i) {
                0.0
            } else {
                box_overlap.value(i)
            };
            assert_eq!(
                mask_overlap.value(i) as f64,
                expected_overlap,
                "{a:?} {b:?}"
            );
            assert!(super_box.value(i), "{a:?} {b:?}");
            assert!(bbox_matches.value(i), "{a:?}");
            assert!((iou.value(i) - box_iou(a, b)).abs() < 1e-12);
            row += 1;
        }
    }
    assert_eq!(row, pairs.len());
    Ok(())
}

#[tokio::test]
async fn union_agg_of_all_masks_covers_every_box() -> Result<()> {
    let ctx = cxrlake_udfs::session_context(SessionConfig::new().with_target_partitions(2));
    let (table, pairs) = table(50)?;
    ctx.register_table("pairs", Arc::new(table))?;
    let batches = ctx
        .sql(
            "SELECT mask_bbox(mask_union_agg(counts_a, height, width), 64, 48),
                    mask_area(mask_union_agg(counts_a, height, width), 64, 48)
             FROM pairs",
        )
        .await?
        .collect()
        .await?;
    let expected = cxrlake_masks::box_union(pairs.iter().map(|(a, _)| *a));
    let boxes = batches[0].column(0).as_fixed_size_list();
    let coords = boxes.value(0);
    let coords = coords.as_primitive::<Float32Type>();
    assert_eq!(
        Some([
            coords.value(0),
            coords.value(1),
            coords.value(2),
            coords.value(3)
        ]),
        expected
    );
    let mut union = vec![false; (HEIGHT * WIDTH) as usize];
    for (a, _) in &pairs {
        for y in a[1] as u32..a[3] as u32 {
            for x in a[0] as u32..a[2] as u32 {
                union[(y * WIDTH + x) as usize] = true;
            }
        }
    }
    let area = batches[0].column(1).as_primitive::<Int64Type>().value(0);
    assert_eq!(area, union.iter().filter(|&&p| p).count() as i64);
    Ok(())
}
