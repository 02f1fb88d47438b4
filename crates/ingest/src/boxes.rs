//! Arrow helpers shared by the box-carrying tables: the `fixed_size_list<f32, 4>` box column.

use std::sync::Arc;

use arrow::array::{ArrayRef, FixedSizeListBuilder, Float32Builder};
use arrow::datatypes::{DataType, Field};

/// Builds a box column (`[x1, y1, x2, y2]`, null for no box).
pub fn box_column(boxes: impl Iterator<Item = Option<[f32; 4]>>) -> ArrayRef {
    let mut builder = FixedSizeListBuilder::new(Float32Builder::new(), 4)
        .with_field(Arc::new(Field::new("item", DataType::Float32, true)));
    for bbox in boxes {
        match bbox {
            Some(values) => {
                builder.values().append_slice(&values);
                builder.append(true);
            }
            None => {
                builder.values().append_nulls(4);
                builder.append(false);
            }
        }
    }
    Arc::new(builder.finish())
}
