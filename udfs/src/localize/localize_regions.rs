//! `localize_regions(masks, boxes, height, width)`: the localization of every localized region of
//! the reference definitions on one image, as a list of structs (unnested by `sql/localize.sql`).
//!
//! `masks` is `list<struct<class_name, rle_counts[, bbox]>>` (CXAS, COCO compressed RLE, and the
//! mask's box as ingest stored it; without `bbox` one pass over the counts gives it), `boxes` is
//! `list<struct<bbox_name, bbox>>` (Chest ImaGenome, original pixels); either may be NULL. The
//! counts are borrowed from the batch and decoded only for mask-space unions and intersections
//! (`cxrlake_localize::CxasMask`). The region plan and the minimum box area are fields, so the
//! plan's identity changes with them.

use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

use cxrlake_masks::BBox;
use cxrlake_refdefs::RefDefs;
use cxrlake_schemas::pipeline::region_boxes;
use datafusion::arrow::array::{
    Array, ArrayRef, AsArray, BooleanBuilder, FixedSizeListArray, FixedSizeListBuilder,
    Float32Array, Float32Builder, ListArray, ListBuilder, StringArray, StringBuilder, StructArray,
};
use datafusion::arrow::buffer::OffsetBuffer;
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Field, Fields, Float32Type, Int64Type};
use datafusion::common::{Result, exec_err};
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDFImpl, Signature, Volatility,
};

use cxrlake_localize::{CxasMask, ImageInputs, RegionLocalization, RegionPlan};

/// The `localize_regions` scalar function.
#[derive(Debug)]
pub struct LocalizeRegionsFunc {
    plan: Arc<RegionPlan>,
    fingerprint: String,
    min_area: f64,
    signature: Signature,
}

impl PartialEq for LocalizeRegionsFunc {
    fn eq(&self, other: &Self) -> bool {
        self.fingerprint == other.fingerprint && self.min_area.to_bits() == other.min_area.to_bits()
    }
}

impl Eq for LocalizeRegionsFunc {}

impl Hash for LocalizeRegionsFunc {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.fingerprint.hash(state);
        self.min_area.to_bits().hash(state);
    }
}

impl LocalizeRegionsFunc {
    /// The function for these definitions; boxes under `min_area` px² are dropped.
    pub fn new(defs: &RefDefs, min_area: f64) -> Self {
        Self {
            plan: Arc::new(RegionPlan::new(defs, min_area)),
            fingerprint: defs.fingerprint().to_string(),
            min_area,
            signature: Signature::any(4, Volatility::Immutable),
        }
    }

    /// The fields of one output struct: a `region_boxes` row (as `cxrlake_schemas` declares
    /// it) without its patient, image and study ids.
    pub fn output_fields() -> Fields {
        region_boxes()
            .fields()
            .iter()
            .filter(|f| !matches!(f.name().as_str(), "patient_id" | "image_id" | "study_id"))
            .cloned()
            .collect()
    }
}

fn utf8_column(array: &StructArray, name: &str, function: &str) -> Result<StringArray> {
    let Some(column) = array.column_by_name(name) else {
        return exec_err!("{function}: input struct has no field '{name}'");
    };
    Ok(cast(column, &DataType::Utf8)?.as_string::<i32>().clone())
}

/// The `masks` argument of a batch, its entries' columns read once.
struct MaskColumns {
    list: ListArray,
    classes: StringArray,
    counts: StringArray,
    /// Stored boxes (`[x1, y1, x2, y2]`, NULL for an empty mask) and their values.
    bboxes: Option<(FixedSizeListArray, Float32Array)>,
}

impl MaskColumns {
    fn new(masks: Option<&ListArray>) -> Result<Option<Self>> {
        let Some(list) = masks else {
            return Ok(None);
        };
        let Some(entries) = list.values().as_struct_opt() else {
            return exec_err!("localize_regions: masks must be a list of structs");
        };
        let bboxes = match entries.column_by_name("bbox") {
            Some(column) => {
                let item = Arc::new(Field::new("item", DataType::Float32, true));
                let boxes = cast(column, &DataType::FixedSizeList(item, 4))?;
                let boxes = boxes.as_fixed_size_list().clone();
                let values = boxes.values().as_primitive::<Float32Type>().clone();
                Some((boxes, values))
            }
            None => None,
        };
        Ok(Some(Self {
            list: list.clone(),
            classes: utf8_column(entries, "class_name", "localize_regions")?,
            counts: utf8_column(entries, "rle_counts", "localize_regions")?,
            bboxes,
        }))
    }

    /// The masks of row `row` by class, borrowing their counts.
    fn of_row(&self, row: usize, height: u32, width: u32) -> HashMap<&str, CxasMask<'_>> {
        let mut out = HashMap::new();
        if self.list.is_null(row) {
            return out;
        }
        let offsets = self.list.value_offsets();
        for entry in offsets[row] as usize..offsets[row + 1] as usize {
            if self.classes.is_null(entry) || self.counts.is_null(entry) {
                continue;
            }
            let mut mask = CxasMask::compressed(self.counts.value(entry), height, width);
            if let Some((boxes, values)) = &self.bboxes {
                let stored = boxes.is_valid(entry).then(|| {
                    let at = boxes.value_offset(entry) as usize;
                    [at, at + 1, at + 2, at + 3].map(|i| values.value(i))
                });
                mask = mask.with_bbox(stored);
            }
            out.insert(self.classes.value(entry), mask);
        }
        out
    }
}

fn boxes_of(boxes: Option<&ListArray>, row: usize) -> Result<HashMap<String, BBox>> {
    let mut out = HashMap::new();
    let Some(list) = boxes.filter(|l| l.is_valid(row)) else {
        return Ok(out);
    };
    let entries = list.value(row);
    let Some(entries) = entries.as_struct_opt() else {
        return exec_err!("localize_regions: boxes must be a list of structs");
    };
    let names = utf8_column(entries, "bbox_name", "localize_regions")?;
    let Some(coords) = entries.column_by_name("bbox") else {
        return exec_err!("localize_regions: boxes struct has no field 'bbox'");
    };
    let coords = cast(
        coords,
        &DataType::List(Arc::new(Field::new("item", DataType::Float32, true))),
    )?;
    let coords = coords.as_list::<i32>();
    for (i, name) in names.iter().enumerate() {
        let Some(name) = name else { continue };
        if coords.is_null(i) {
            continue;
        }
        let values = coords.value(i);
        let values = values.as_primitive::<Float32Type>();
        if values.len() != 4 {
            return exec_err!(
                "localize_regions: box '{name}' has {} coordinates, expected 4",
                values.len()
            );
        }
        out.insert(
            name.to_string(),
            [
                values.value(0),
                values.value(1),
                values.value(2),
                values.value(3),
            ],
        );
    }
    Ok(out)
}

fn as_list(array: &ArrayRef) -> Option<&ListArray> {
    array.as_list_opt::<i32>()
}

/// Builders of the output struct's columns.
struct OutputBuilder {
    region: StringBuilder,
    bboxes: ListBuilder<FixedSizeListBuilder<Float32Builder>>,
    references: ListBuilder<StringBuilder>,
    is_fallback: BooleanBuilder,
    missing: ListBuilder<StringBuilder>,
    quality: StringBuilder,
    recipe: StringBuilder,
}

impl OutputBuilder {
    fn new() -> Self {
        Self {
            region: StringBuilder::new(),
            bboxes: ListBuilder::new(FixedSizeListBuilder::new(Float32Builder::new(), 4)),
            references: ListBuilder::new(StringBuilder::new()),
            is_fallback: BooleanBuilder::new(),
            missing: ListBuilder::new(StringBuilder::new()),
            quality: StringBuilder::new(),
            recipe: StringBuilder::new(),
        }
    }

    fn push(&mut self, row: &RegionLocalization) {
        self.region.append_value(&row.region);
        for bbox in &row.bboxes {
            self.bboxes.values().values().append_slice(bbox);
            self.bboxes.values().append(true);
        }
        self.bboxes.append(true);
        for reference in &row.localization_reference_ids {
            self.references.values().append_value(reference);
        }
        self.references.append(true);
        self.is_fallback.append_value(row.is_fallback);
        for region in &row.missing_localization {
            self.missing.values().append_value(region);
        }
        self.missing.append(true);
        self.quality.append_value(row.quality.as_str());
        self.recipe.append_value(&row.recipe);
    }

    fn finish(mut self) -> Result<StructArray> {
        let columns: Vec<ArrayRef> = vec![
            Arc::new(self.region.finish()),
            Arc::new(self.bboxes.finish()),
            Arc::new(self.references.finish()),
            Arc::new(self.is_fallback.finish()),
            Arc::new(self.missing.finish()),
            Arc::new(self.quality.finish()),
            Arc::new(self.recipe.finish()),
        ];
        Ok(StructArray::try_new(
            LocalizeRegionsFunc::output_fields(),
            columns,
            None,
        )?)
    }
}

impl ScalarUDFImpl for LocalizeRegionsFunc {
    fn name(&self) -> &str {
        "localize_regions"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(DataType::List(Arc::new(Field::new(
            "item",
            DataType::Struct(Self::output_fields()),
            true,
        ))))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let rows = args.number_rows;
        let arrays = ColumnarValue::values_to_arrays(&args.args)?;
        let [masks, boxes, height, width] = arrays.as_slice() else {
            return exec_err!("localize_regions takes (masks, boxes, height, width)");
        };
        let (height, width) = (
            cast(height, &DataType::Int64)?,
            cast(width, &DataType::Int64)?,
        );
        let (height, width) = (
            height.as_primitive::<Int64Type>(),
            width.as_primitive::<Int64Type>(),
        );
        let masks = MaskColumns::new(as_list(masks))?;
        let boxes = as_list(boxes);
        let mut builder = OutputBuilder::new();
        let mut lengths = Vec::with_capacity(rows);
        for row in 0..rows {
            if height.is_null(row) || width.is_null(row) {
                lengths.push(0);
                continue;
            }
            let (Ok(h), Ok(w)) = (
                u32::try_from(height.value(row)),
                u32::try_from(width.value(row)),
            ) else {
                return exec_err!(
                    "localize_regions: image size {}x{} is not valid",
                    width.value(row),
                    height.value(row)
                );
            };
            let image = ImageInputs {
                width: w,
                height: h,
                masks: masks
                    .as_ref()
                    .map(|masks| masks.of_row(row, h, w))
                    .unwrap_or_default(),
                boxes: boxes_of(boxes, row)?,
            };
            let located = self.plan.localize(&image);
            lengths.push(located.len());
            for region in &located {
                builder.push(region);
            }
        }
        let values = builder.finish()?;
        let field = Arc::new(Field::new(
            "item",
            DataType::Struct(Self::output_fields()),
            true,
        ));
        let list = ListArray::try_new(
            field,
            OffsetBuffer::from_lengths(lengths),
            Arc::new(values),
            None,
        )?;
        Ok(ColumnarValue::Array(Arc::new(list)))
    }
}
