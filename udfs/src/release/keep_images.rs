//! `keep_images(value, image_ids) -> same type as value`: `value` without the per-image entries
//! of images missing from `image_ids` (a list of image ids per row). Every list of structs with
//! an `image_id` field, at any depth of `value`, keeps only the items whose `image_id` is in the
//! row's list; the rest of `value` is unchanged. The release exports use it to drop non-frontal
//! images from answer-part localizations, `question_img_localization_quality` and scene-graph
//! localizations.
//!
//! ```text
//! answers: [{text, localization: [{image_id: F, …}, {image_id: L, …}]}]   image_ids: [F]
//!   ─▶    [{text, localization: [{image_id: F, …}]}]
//! ```
//!
//! A NULL `image_ids` keeps no image; a NULL `value` stays NULL.

use std::sync::Arc;

use datafusion::arrow::array::{
    Array, ArrayRef, AsArray, BooleanArray, ListArray, StringArray, StructArray,
};
use datafusion::arrow::buffer::OffsetBuffer;
use datafusion::arrow::compute::{cast, filter};
use datafusion::arrow::datatypes::{DataType, Field};
use datafusion::common::{Result, exec_err};
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDFImpl, Signature, Volatility,
};

/// The key field of per-image entries.
const IMAGE_ID: &str = "image_id";

/// The `keep_images` scalar function.
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct KeepImagesFunc {
    signature: Signature,
}

impl Default for KeepImagesFunc {
    fn default() -> Self {
        Self::new()
    }
}

impl KeepImagesFunc {
    /// Creates the function: `(any nested value, list of image ids)`.
    pub fn new() -> Self {
        Self {
            signature: Signature::any(2, Volatility::Immutable),
        }
    }
}

impl ScalarUDFImpl for KeepImagesFunc {
    fn name(&self) -> &str {
        "keep_images"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        match &arg_types[1] {
            DataType::List(item) | DataType::LargeList(item) if is_text(item.data_type()) => {
                Ok(arg_types[0].clone())
            }
            DataType::Null => Ok(arg_types[0].clone()),
            other => exec_err!(
                "keep_images(value, image_ids): image_ids must be a list of text, got {other}"
            ),
        }
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let arrays = ColumnarValue::values_to_arrays(&args.args)?;
        let [value, image_ids] = arrays.as_slice() else {
            return exec_err!("keep_images takes exactly two arguments");
        };
        let lists = image_lists(image_ids)?;
        let allowed = allowed_images(lists.as_ref());
        let owners: Vec<usize> = (0..value.len()).collect();
        Ok(ColumnarValue::Array(keep(value, &owners, &allowed)?))
    }
}

fn is_text(data_type: &DataType) -> bool {
    matches!(
        data_type,
        DataType::Utf8 | DataType::Utf8View | DataType::LargeUtf8
    )
}

/// `image_ids` as a list of `Utf8` (`None`: a NULL-typed argument, no image for any row).
fn image_lists(image_ids: &ArrayRef) -> Result<Option<ArrayRef>> {
    if image_ids.data_type().is_null() {
        return Ok(None);
    }
    let item = Arc::new(Field::new("item", DataType::Utf8, true));
    Ok(Some(cast(image_ids, &DataType::List(item))?))
}

/// The image ids of each row of `lists` (from [`image_lists`]), borrowed; none for a NULL
/// list.
fn allowed_images(lists: Option<&ArrayRef>) -> Vec<Vec<&str>> {
    let Some(lists) = lists else {
        return Vec::new();
    };
    let lists = lists.as_list::<i32>();
    let values = lists.values().as_string::<i32>();
    (0..lists.len())
        .map(|row| {
            if lists.is_null(row) {
                return Vec::new();
            }
            let range =
                lists.value_offsets()[row] as usize..lists.value_offsets()[row + 1] as usize;
            range
                .filter(|i| values.is_valid(*i))
                .map(|i| values.value(i))
                .collect()
        })
        .collect()
}

/// Whether `data_type` holds a list of structs with an `image_id` somewhere.
fn has_images(data_type: &DataType) -> bool {
    match data_type {
        DataType::Struct(fields) => fields.iter().any(|f| has_images(f.data_type())),
        DataType::List(item) | DataType::LargeList(item) => match item.data_type() {
            DataType::Struct(fields) if fields.find(IMAGE_ID).is_some() => true,
            other => has_images(other),
        },
        _ => false,
    }
}

/// `array` without the items of image lists whose image is not allowed for their row;
/// `owners[i]` is the top-level row of `array`'s row `i`.
fn keep(array: &ArrayRef, owners: &[usize], allowed: &[Vec<&str>]) -> Result<ArrayRef> {
    if !has_images(array.data_type()) {
        return Ok(Arc::clone(array));
    }
    match array.data_type() {
        DataType::Struct(fields) => {
            let structs = array.as_struct();
            let children = structs
                .columns()
                .iter()
                .map(|child| keep(child, owners, allowed))
                .collect::<Result<Vec<_>>>()?;
            Ok(Arc::new(StructArray::try_new(
                fields.clone(),
                children,
                structs.nulls().cloned(),
            )?))
        }
        DataType::List(item) => {
            let list = array.as_list::<i32>();
            let offsets = list.value_offsets();
            let (start, end) = (offsets[0] as usize, offsets[list.len()] as usize);
            let values = list.values().slice(start, end - start);
            let mut item_owners = Vec::with_capacity(values.len());
            for (row, owner) in owners.iter().enumerate().take(list.len()) {
                let items = (offsets[row + 1] - offsets[row]) as usize;
                item_owners.extend(std::iter::repeat_n(*owner, items));
            }
            let values = keep(&values, &item_owners, allowed)?;
            let relist = |offsets: OffsetBuffer<i32>, values: ArrayRef| -> Result<ArrayRef> {
                Ok(Arc::new(ListArray::try_new(
                    Arc::clone(item),
                    offsets,
                    values,
                    list.nulls().cloned(),
                )?))
            };
            let image_ids = match item.data_type() {
                DataType::Struct(_) => values.as_struct().column_by_name(IMAGE_ID).cloned(),
                _ => None,
            };
            let Some(image_ids) = image_ids else {
                return relist(rebased(offsets), values);
            };
            let image_ids = cast(&image_ids, &DataType::Utf8)?;
            let image_ids: &StringArray = image_ids.as_string::<i32>();
            let mask: BooleanArray = (0..values.len())
                .map(|i| {
                    Some(
                        image_ids.is_valid(i)
                            && allowed
                                .get(item_owners[i])
                                .is_some_and(|ids| ids.contains(&image_ids.value(i))),
                    )
                })
                .collect();
            if mask.true_count() == mask.len() {
                // Every entry kept (the release's root keeps every image): no copy.
                return relist(rebased(offsets), values);
            }
            let mut kept_offsets = Vec::with_capacity(list.len() + 1);
            kept_offsets.push(0i32);
            let mut kept = 0i32;
            for row in 0..list.len() {
                let range =
                    (offsets[row] - offsets[0]) as usize..(offsets[row + 1] - offsets[0]) as usize;
                kept += range.filter(|i| mask.value(*i)).count() as i32;
                kept_offsets.push(kept);
            }
            relist(
                OffsetBuffer::new(kept_offsets.into()),
                filter(&values, &mask)?,
            )
        }
        other => exec_err!("keep_images: {other} is not supported (use lists of structs)"),
    }
}

/// `offsets` starting at 0 (for the values sliced from the first offset).
fn rebased(offsets: &[i32]) -> OffsetBuffer<i32> {
    OffsetBuffer::new(
        offsets
            .iter()
            .map(|o| o - offsets[0])
            .collect::<Vec<_>>()
            .into(),
    )
}

#[cfg(test)]
mod tests {
    use datafusion::logical_expr::ScalarUDF;
    use datafusion::prelude::SessionContext;

    use super::*;

    async fn run(sql: &str) -> Vec<String> {
        let ctx = SessionContext::new();
        ctx.register_udf(ScalarUDF::from(KeepImagesFunc::new()));
        let batches = ctx
            .sql(sql)
            .await
            .expect("plan")
            .collect()
            .await
            .expect("run");
        let mut out = Vec::new();
        for batch in batches {
            let text = datafusion::arrow::util::display::ArrayFormatter::try_new(
                batch.column(0).as_ref(),
                &Default::default(),
            )
            .expect("formatter");
            for row in 0..batch.num_rows() {
                out.push(text.value(row).to_string());
            }
        }
        out
    }

    #[tokio::test]
    async fn entries_of_other_images_are_dropped_at_every_depth() {
        let got = run(
            "SELECT keep_images(answers, ids) FROM (VALUES \
             ([named_struct('text', 'a', 'localization', [named_struct('image_id', 'F', 'q', 1), \
                                                           named_struct('image_id', 'L', 'q', 2)])], \
              ['F']), \
             ([named_struct('text', 'b', 'localization', [named_struct('image_id', 'L', 'q', 3)])], \
              ['F', 'G'])) AS t(answers, ids)",
        )
        .await;
        assert_eq!(
            got,
            [
                "[{text: a, localization: [{image_id: F, q: 1}]}]",
                "[{text: b, localization: []}]"
            ]
        );
        let flat = run(
            "SELECT keep_images([named_struct('image_id', 'L', 'level', 'X'), \
                                 named_struct('image_id', 'F', 'level', 'Y')], ['F'])",
        )
        .await;
        assert_eq!(flat, ["[{image_id: F, level: Y}]"]);
        // Every entry kept: the same values (the function's no-copy path), a NULL list too.
        let all = run(
            "SELECT keep_images(answers, ids) FROM (VALUES \
             ([named_struct('text', 'a', 'localization', [named_struct('image_id', 'F', 'q', 1), \
                                                           named_struct('image_id', 'L', 'q', 2)])], \
              ['L', 'F']), \
             ([named_struct('text', 'b', 'localization', NULL), \
               named_struct('text', 'c', 'localization', [named_struct('image_id', 'F', 'q', 3)])], \
              ['F'])) AS t(answers, ids)",
        )
        .await;
        assert_eq!(
            all,
            [
                "[{text: a, localization: [{image_id: F, q: 1}, {image_id: L, q: 2}]}]",
                "[{text: b, localization: }, {text: c, localization: [{image_id: F, q: 3}]}]"
            ]
        );
        let untouched = run("SELECT keep_images([1, 2], ['F'])").await;
        assert_eq!(untouched, ["[1, 2]"]);
    }
}
