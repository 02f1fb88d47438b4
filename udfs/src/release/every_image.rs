//! `every_image(levels, image_ids, filler) -> list<struct<image_id, localization_quality>>`: a
//! per-image level list with one entry for each of the row's `image_ids`, in their order: the
//! entry of `levels` for that image, or `filler` where `levels` has none (or a NULL level). The
//! release exports give every question a localization level on every image they keep
//! (`NOT_APPLICABLE` where it localizes nothing), so a loader that joins questions to their
//! images loses none.
//!
//! ```text
//! levels: [{image_id: F, localization_quality: BOX_LOCALIZATION}]   image_ids: [F, L]
//!   ─▶ [{F, BOX_LOCALIZATION}, {L, NOT_APPLICABLE}]
//! ```

use std::collections::HashMap;
use std::sync::Arc;

use datafusion::arrow::array::{
    Array, AsArray, ListArray, StringBuilder, StructArray, new_null_array,
};
use datafusion::arrow::buffer::OffsetBuffer;
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Field};
use datafusion::common::{Result, exec_err};
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDFImpl, Signature, Volatility,
};

/// The `every_image` scalar function.
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct EveryImageFunc {
    signature: Signature,
}

impl Default for EveryImageFunc {
    fn default() -> Self {
        Self::new()
    }
}

impl EveryImageFunc {
    /// Creates the function: `(levels, image_ids, filler)`.
    pub fn new() -> Self {
        Self {
            signature: Signature::any(3, Volatility::Immutable),
        }
    }
}

/// The lake's type of per-image levels (`question_img_localization_quality`).
fn levels_type() -> DataType {
    cxrlake_schemas::types::image_quality("levels")
        .data_type()
        .clone()
}

impl ScalarUDFImpl for EveryImageFunc {
    fn name(&self) -> &str {
        "every_image"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(levels_type())
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let arrays = ColumnarValue::values_to_arrays(&args.args)?;
        let [levels, image_ids, filler] = arrays.as_slice() else {
            return exec_err!("every_image(levels, image_ids, filler) takes three arguments");
        };
        let out_type = levels_type();
        let DataType::List(item) = &out_type else {
            return exec_err!("every_image: the levels type is a list");
        };
        let DataType::Struct(fields) = item.data_type() else {
            return exec_err!("every_image: the levels type is a list of structs");
        };
        let rows = image_ids.len();
        let levels = if levels.data_type().is_null() {
            new_null_array(&out_type, rows)
        } else {
            cast(levels, &out_type)?
        };
        let levels = levels.as_list::<i32>();
        let entries = levels.values().as_struct();
        let (ids, names) = (
            entries.column(0).as_string::<i32>(),
            entries.column(1).as_string::<i32>(),
        );
        let text_list = DataType::List(Arc::new(Field::new("item", DataType::Utf8, true)));
        let image_ids = if image_ids.data_type().is_null() {
            new_null_array(&text_list, rows)
        } else {
            cast(image_ids, &text_list)?
        };
        let image_ids = image_ids.as_list::<i32>();
        let wanted = image_ids.values().as_string::<i32>();
        let filler = cast(filler, &DataType::Utf8)?;
        let filler = filler.as_string::<i32>();

        let (mut id_out, mut level_out) = (StringBuilder::new(), StringBuilder::new());
        let mut lengths = Vec::with_capacity(rows);
        for row in 0..rows {
            let mut known: HashMap<&str, &str> = HashMap::new();
            if levels.is_valid(row) {
                let offsets = levels.value_offsets();
                for i in offsets[row] as usize..offsets[row + 1] as usize {
                    if ids.is_valid(i) && names.is_valid(i) {
                        known.insert(ids.value(i), names.value(i));
                    }
                }
            }
            let mut length = 0;
            if image_ids.is_valid(row) {
                let offsets = image_ids.value_offsets();
                for i in offsets[row] as usize..offsets[row + 1] as usize {
                    if !wanted.is_valid(i) {
                        continue;
                    }
                    let image = wanted.value(i);
                    id_out.append_value(image);
                    match known.get(image) {
                        Some(level) => level_out.append_value(level),
                        None if filler.is_valid(row) => level_out.append_value(filler.value(row)),
                        None => level_out.append_null(),
                    }
                    length += 1;
                }
            }
            lengths.push(length);
        }
        let values = StructArray::try_new(
            fields.clone(),
            vec![Arc::new(id_out.finish()), Arc::new(level_out.finish())],
            None,
        )?;
        Ok(ColumnarValue::Array(Arc::new(ListArray::try_new(
            Arc::clone(item),
            OffsetBuffer::from_lengths(lengths),
            Arc::new(values),
            None,
        )?)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::prelude::SessionContext;

    #[tokio::test]
    async fn every_image_gets_its_level_or_the_filler() {
        let ctx = SessionContext::new();
        ctx.register_udf(EveryImageFunc::new().into());
        let batches = ctx
            .sql(
                "SELECT every_image([named_struct('image_id', 'F', 'localization_quality', 'BOX_LOCALIZATION')], \
                 ['F', 'L'], 'NOT_APPLICABLE') AS a, \
                 every_image(NULL, ['L'], 'NOT_APPLICABLE') AS b",
            )
            .await
            .expect("plan")
            .collect()
            .await
            .expect("run");
        let text = datafusion::arrow::util::pretty::pretty_format_batches(&batches)
            .expect("format")
            .to_string();
        assert!(
            text.contains(
                "[{image_id: F, localization_quality: BOX_LOCALIZATION}, {image_id: L, localization_quality: NOT_APPLICABLE}]"
            ),
            "{text}"
        );
        assert!(
            text.contains("[{image_id: L, localization_quality: NOT_APPLICABLE}]"),
            "{text}"
        );
    }
}
