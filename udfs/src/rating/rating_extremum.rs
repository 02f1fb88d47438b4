//! `rating_min(rating)` / `rating_max(rating)`: the worst / best rating of a group, by rating order.
//!
//! `MIN(rating)` and `MAX(rating)` on a rating column are rewritten to these by the order rule.

use std::sync::Arc;

use cxrlake_schemas::{Rating, rating_field};
use datafusion::arrow::array::ArrayRef;
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, FieldRef};
use datafusion::common::cast::as_string_array;
use datafusion::common::{Result, ScalarValue, exec_err};
use datafusion::logical_expr::function::{AccumulatorArgs, StateFieldsArgs};
use datafusion::logical_expr::{Accumulator, AggregateUDFImpl, Signature};

/// Which end of the rating order an aggregate keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Extremum {
    Min,
    Max,
}

/// The `rating_min` / `rating_max` aggregate functions.
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct RatingExtremumFunc {
    extremum: Extremum,
    signature: Signature,
}

impl RatingExtremumFunc {
    fn new(extremum: Extremum) -> Self {
        Self {
            extremum,
            signature: super::string_signature(),
        }
    }

    /// `rating_min`: the worst rating.
    pub fn min() -> Self {
        Self::new(Extremum::Min)
    }

    /// `rating_max`: the best rating.
    pub fn max() -> Self {
        Self::new(Extremum::Max)
    }
}

impl AggregateUDFImpl for RatingExtremumFunc {
    fn name(&self) -> &str {
        match self.extremum {
            Extremum::Min => "rating_min",
            Extremum::Max => "rating_max",
        }
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(DataType::Utf8)
    }

    fn return_field(&self, _arg_fields: &[FieldRef]) -> Result<FieldRef> {
        Ok(Arc::new(rating_field(self.name())))
    }

    fn accumulator(&self, _acc_args: AccumulatorArgs) -> Result<Box<dyn Accumulator>> {
        Ok(Box::new(RatingAccumulator {
            extremum: self.extremum,
            best: None,
        }))
    }

    fn state_fields(&self, args: StateFieldsArgs) -> Result<Vec<FieldRef>> {
        Ok(vec![Arc::new(rating_field(&format!(
            "{}[value]",
            args.name
        )))])
    }
}

#[derive(Debug)]
struct RatingAccumulator {
    extremum: Extremum,
    best: Option<Rating>,
}

impl RatingAccumulator {
    fn offer(&mut self, rating: Rating) {
        self.best = Some(match (self.best, self.extremum) {
            (None, _) => rating,
            (Some(current), Extremum::Min) => current.min(rating),
            (Some(current), Extremum::Max) => current.max(rating),
        });
    }
}

impl Accumulator for RatingAccumulator {
    fn update_batch(&mut self, values: &[ArrayRef]) -> Result<()> {
        let [values] = values else {
            return exec_err!("rating aggregates take exactly one argument");
        };
        let utf8 = cast(values, &DataType::Utf8)?;
        for text in as_string_array(&utf8)?.iter().flatten() {
            match text.parse::<Rating>() {
                Ok(rating) => self.offer(rating),
                Err(err) => return exec_err!("{err}"),
            }
        }
        Ok(())
    }

    fn merge_batch(&mut self, states: &[ArrayRef]) -> Result<()> {
        self.update_batch(states)
    }

    fn state(&mut self) -> Result<Vec<ScalarValue>> {
        Ok(vec![self.evaluate()?])
    }

    fn evaluate(&mut self) -> Result<ScalarValue> {
        Ok(ScalarValue::Utf8(self.best.map(|r| r.as_str().to_string())))
    }

    fn size(&self) -> usize {
        size_of_val(self)
    }
}

#[cfg(test)]
mod tests {
    use datafusion::arrow::array::StringArray;

    use super::*;

    fn run(extremum: Extremum, values: Vec<Option<&str>>) -> Result<ScalarValue> {
        let mut acc = RatingAccumulator {
            extremum,
            best: None,
        };
        acc.update_batch(&[Arc::new(StringArray::from(values)) as ArrayRef])?;
        acc.evaluate()
    }

    #[test]
    fn min_and_max_follow_rating_order() -> Result<()> {
        let values = vec![Some("B"), Some("A++"), None, Some("A"), Some("C")];
        assert_eq!(
            run(Extremum::Min, values.clone())?,
            ScalarValue::Utf8(Some("C".into()))
        );
        assert_eq!(
            run(Extremum::Max, values)?,
            ScalarValue::Utf8(Some("A++".into()))
        );
        assert_eq!(run(Extremum::Max, vec![None])?, ScalarValue::Utf8(None));
        Ok(())
    }
}
