//! Plain ("portable") Arrow types: view types become their plain forms, recursively through
//! lists and structs. Readers outside Arrow-rs need them (pandas cannot convert
//! `list<string_view>`), and in-memory step tables of the pipeline keep their strings in one
//! buffer instead of referencing every buffer of the batches they were taken from.

use std::sync::Arc;

use arrow::array::RecordBatch;
use arrow::compute::cast;
use arrow::datatypes::{DataType, FieldRef, Fields, Schema, SchemaRef};

/// The plain form of `data_type`: view types become their plain forms, recursively through
/// lists and structs.
pub fn portable_type(data_type: &DataType) -> DataType {
    let field = |f: &FieldRef| {
        Arc::new(
            f.as_ref()
                .clone()
                .with_data_type(portable_type(f.data_type())),
        )
    };
    match data_type {
        DataType::Utf8View => DataType::Utf8,
        DataType::BinaryView => DataType::Binary,
        DataType::List(item) | DataType::ListView(item) => DataType::List(field(item)),
        DataType::LargeList(item) | DataType::LargeListView(item) => {
            DataType::LargeList(field(item))
        }
        DataType::FixedSizeList(item, size) => DataType::FixedSizeList(field(item), *size),
        DataType::Struct(fields) => DataType::Struct(fields.iter().map(field).collect::<Fields>()),
        other => other.clone(),
    }
}

/// `schema` with [`portable_type`]s (field and schema metadata kept).
pub fn portable_schema(schema: &Schema) -> SchemaRef {
    Arc::new(Schema::new_with_metadata(
        schema
            .fields()
            .iter()
            .map(|f| {
                f.as_ref()
                    .clone()
                    .with_data_type(portable_type(f.data_type()))
            })
            .collect::<Vec<_>>(),
        schema.metadata().clone(),
    ))
}

/// `batch` cast to `schema` (from [`portable_schema`]).
pub fn portable_batch(
    batch: &RecordBatch,
    schema: &SchemaRef,
) -> arrow::error::Result<RecordBatch> {
    let columns = batch
        .columns()
        .iter()
        .zip(schema.fields())
        .map(|(column, field)| cast(column, field.data_type()))
        .collect::<arrow::error::Result<Vec<_>>>()?;
    RecordBatch::try_new(Arc::clone(schema), columns)
}

/// Whether `data_type` has a view type anywhere inside.
pub fn has_view_types(data_type: &DataType) -> bool {
    portable_type(data_type) != *data_type
}

#[cfg(test)]
mod tests {
    use arrow::datatypes::Field;

    use super::*;

    #[test]
    fn view_types_become_plain_through_lists_and_structs() {
        let list = |t| DataType::List(Arc::new(Field::new("item", t, true)));
        assert_eq!(
            portable_type(&list(DataType::Utf8View)),
            list(DataType::Utf8)
        );
        let nested = DataType::Struct(Fields::from(vec![Field::new(
            "tags",
            list(DataType::Utf8View),
            true,
        )]));
        assert!(has_view_types(&nested));
        assert!(!has_view_types(&portable_type(&nested)));
        assert!(!has_view_types(&DataType::Int64));
    }
}
