//! `mask_union_agg(counts, height, width) -> utf8`: the union of a group's masks as one compressed
//! COCO RLE string, merged run by run. NULL rows are skipped; NULL for a group without masks;
//! masks of different sizes in one group are an error.

use std::sync::Arc;

use cxrlake_masks::Rle;
use datafusion::arrow::array::ArrayRef;
use datafusion::arrow::datatypes::{DataType, Field, FieldRef};
use datafusion::common::{Result, ScalarValue, exec_datafusion_err};
use datafusion::logical_expr::function::{AccumulatorArgs, StateFieldsArgs};
use datafusion::logical_expr::{Accumulator, AggregateUDFImpl, Signature, Volatility};

use super::kernel::{Arg, MaskReader, coerce};

/// The `mask_union_agg` aggregate function.
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct MaskUnionAggFunc {
    signature: Signature,
}

impl Default for MaskUnionAggFunc {
    fn default() -> Self {
        Self::new()
    }
}

impl MaskUnionAggFunc {
    /// Creates the function; argument types are coerced in `coerce_types`.
    pub fn new() -> Self {
        Self {
            signature: Signature::user_defined(Volatility::Immutable),
        }
    }
}

impl AggregateUDFImpl for MaskUnionAggFunc {
    fn name(&self) -> &str {
        "mask_union_agg"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        coerce(self.name(), &[Arg::Counts, Arg::Size, Arg::Size], arg_types)
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(DataType::Utf8)
    }

    fn accumulator(&self, _acc_args: AccumulatorArgs) -> Result<Box<dyn Accumulator>> {
        Ok(Box::new(MaskUnionAccumulator { union: None }))
    }

    /// The partial union travels as the same `(counts, height, width)` triple as the input.
    fn state_fields(&self, args: StateFieldsArgs) -> Result<Vec<FieldRef>> {
        Ok(vec![
            Arc::new(Field::new(
                format!("{}[counts]", args.name),
                DataType::Utf8,
                true,
            )),
            Arc::new(Field::new(
                format!("{}[height]", args.name),
                DataType::Int64,
                true,
            )),
            Arc::new(Field::new(
                format!("{}[width]", args.name),
                DataType::Int64,
                true,
            )),
        ])
    }
}

#[derive(Debug)]
struct MaskUnionAccumulator {
    union: Option<Rle>,
}

impl Accumulator for MaskUnionAccumulator {
    fn update_batch(&mut self, values: &[ArrayRef]) -> Result<()> {
        let masks = MaskReader::new("mask_union_agg", values)?;
        for row in 0..masks.len() {
            let Some(mask) = masks.get(row)? else {
                continue;
            };
            self.union = Some(match self.union.take() {
                None => mask,
                Some(union) => union
                    .union(&mask)
                    .map_err(|err| exec_datafusion_err!("mask_union_agg: {err}"))?,
            });
        }
        Ok(())
    }

    fn merge_batch(&mut self, states: &[ArrayRef]) -> Result<()> {
        self.update_batch(states)
    }

    fn state(&mut self) -> Result<Vec<ScalarValue>> {
        let (height, width) = self
            .union
            .as_ref()
            .map(|m| (i64::from(m.height()), i64::from(m.width())))
            .unzip();
        Ok(vec![
            self.evaluate()?,
            ScalarValue::Int64(height),
            ScalarValue::Int64(width),
        ])
    }

    fn evaluate(&mut self) -> Result<ScalarValue> {
        Ok(ScalarValue::Utf8(
            self.union.as_ref().map(Rle::to_compressed_string),
        ))
    }

    fn size(&self) -> usize {
        size_of_val(self) + self.union.as_ref().map_or(0, |m| size_of_val(m.counts()))
    }
}

#[cfg(test)]
mod tests {
    use datafusion::arrow::array::{Int64Array, StringArray};

    use super::*;

    fn batch(counts: Vec<Option<&str>>, height: i64, width: i64) -> Vec<ArrayRef> {
        let rows = counts.len();
        vec![
            Arc::new(StringArray::from(counts)),
            Arc::new(Int64Array::from(vec![height; rows])),
            Arc::new(Int64Array::from(vec![width; rows])),
        ]
    }

    #[test]
    fn unions_across_batches_and_states() -> Result<()> {
        // 3x3 masks: column 0 (runs 0,3,6) and column 2 (runs 6,3).
        let mut left = MaskUnionAccumulator { union: None };
        left.update_batch(&batch(vec![Some("036"), None], 3, 3))?;
        let mut right = MaskUnionAccumulator { union: None };
        right.update_batch(&batch(vec![Some("63")], 3, 3))?;
        let state = right
            .state()?
            .iter()
            .map(ScalarValue::to_array)
            .collect::<Result<Vec<_>>>()?;
        left.merge_batch(&state)?;
        assert_eq!(left.evaluate()?, ScalarValue::Utf8(Some("0330".into())));
        Ok(())
    }

    #[test]
    fn different_sizes_are_an_error() -> Result<()> {
        let mut acc = MaskUnionAccumulator { union: None };
        acc.update_batch(&batch(vec![Some("9")], 3, 3))?;
        let err = acc
            .update_batch(&batch(vec![Some("<0")], 3, 4))
            .expect_err("size mismatch")
            .to_string();
        assert!(
            err.contains("mask_union_agg: cannot combine a 3x3 mask with a 3x4"),
            "{err}"
        );
        Ok(())
    }

    #[test]
    fn empty_group_is_null() -> Result<()> {
        let mut acc = MaskUnionAccumulator { union: None };
        acc.update_batch(&batch(vec![None], 3, 3))?;
        assert_eq!(acc.evaluate()?, ScalarValue::Utf8(None));
        Ok(())
    }
}
