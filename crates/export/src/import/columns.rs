//! Arrow columns of a lake table built value by value from the release's JSON, for the
//! import's decoder ([`super::decode`]): one [`Column`] per Arrow type the lake's tables use,
//! each a plain vector of values and a validity bitmap, so that a member's rows can be rolled
//! back ([`Column::truncate`]) when the member turns out to be unusable, and a struct row is
//! complete only when [`StructColumn::finish_row`] has checked and filled its fields.

use std::sync::Arc;

use arrow::array::builder::{BooleanBufferBuilder, NullBufferBuilder};
use arrow::array::{
    ArrayRef, BooleanArray, FixedSizeListArray, ListArray, PrimitiveArray, StringArray, StructArray,
};
use arrow::buffer::{Buffer, OffsetBuffer, ScalarBuffer};
use arrow::datatypes::{
    ArrowPrimitiveType, DataType, FieldRef, Fields, Float32Type, Int8Type, Int32Type, Int64Type,
};
use arrow::error::ArrowError;
use serde_json::Value;

use crate::layout::Node;

/// One column under construction.
#[derive(Debug)]
pub(super) enum Column {
    Utf8(Utf8Column),
    Bool(BoolColumn),
    Int8(Primitive<Int8Type>),
    Int32(Primitive<Int32Type>),
    Int64(Primitive<Int64Type>),
    Float32(Primitive<Float32Type>),
    List(ListColumn),
    FixedList(FixedListColumn),
    Struct(StructColumn),
}

/// What [`StructColumn::finish_row`] writes into a field that the row left empty (absent or
/// null).
pub(super) enum Fill<'a> {
    /// Leave it null (an error for a non-nullable field).
    Keep,
    Text(&'a str),
    Int(i64),
    /// A scalar JSON value.
    Json(&'a Value),
}

/// The fields of a struct row written so far: every one, and those with a non-null value.
#[derive(Debug, Default, Clone, Copy)]
pub(super) struct Seen {
    written: u64,
    non_null: u64,
}

impl Seen {
    pub fn set(&mut self, column: usize, non_null: bool) {
        self.written |= 1 << column;
        if non_null {
            self.non_null |= 1 << column;
        } else {
            self.non_null &= !(1 << column);
        }
    }

    pub fn written(&self, column: usize) -> bool {
        self.written & (1 << column) != 0
    }

    pub fn non_null(&self, column: usize) -> bool {
        self.non_null & (1 << column) != 0
    }
}

fn mismatch(what: &str, column: &Column) -> String {
    format!(
        "{what} where the lake's column holds {}",
        column.type_name()
    )
}

impl Column {
    /// An empty column of `data_type`; the error names a type the import cannot build.
    pub fn new(data_type: &DataType) -> Result<Self, String> {
        Ok(match data_type {
            DataType::Utf8 => Column::Utf8(Utf8Column::default()),
            DataType::Boolean => Column::Bool(BoolColumn::default()),
            DataType::Int8 => Column::Int8(Primitive::default()),
            DataType::Int32 => Column::Int32(Primitive::default()),
            DataType::Int64 => Column::Int64(Primitive::default()),
            DataType::Float32 => Column::Float32(Primitive::default()),
            DataType::List(field) => Column::List(ListColumn {
                offsets: vec![0],
                nulls: NullBufferBuilder::new(0),
                item: Box::new(Column::new(field.data_type())?),
                field: Arc::clone(field),
            }),
            DataType::FixedSizeList(field, size) => Column::FixedList(FixedListColumn {
                size: usize::try_from(*size).map_err(|e| e.to_string())?,
                nulls: NullBufferBuilder::new(0),
                item: Box::new(Column::new(field.data_type())?),
                field: Arc::clone(field),
            }),
            DataType::Struct(fields) => Column::Struct(StructColumn::new(fields)?),
            other => return Err(format!("the import cannot build {other} columns")),
        })
    }

    fn type_name(&self) -> &'static str {
        match self {
            Column::Utf8(_) => "text",
            Column::Bool(_) => "booleans",
            Column::Int8(_) | Column::Int32(_) | Column::Int64(_) => "integers",
            Column::Float32(_) => "numbers",
            Column::List(_) | Column::FixedList(_) => "lists",
            Column::Struct(_) => "objects",
        }
    }

    pub fn len(&self) -> usize {
        match self {
            Column::Utf8(c) => c.offsets.len() - 1,
            Column::Bool(c) => c.values.len(),
            Column::Int8(c) => c.values.len(),
            Column::Int32(c) => c.values.len(),
            Column::Int64(c) => c.values.len(),
            Column::Float32(c) => c.values.len(),
            Column::List(c) => c.offsets.len() - 1,
            Column::FixedList(c) => c.nulls.len(),
            Column::Struct(c) => c.len,
        }
    }

    pub fn push_null(&mut self) {
        match self {
            Column::Utf8(c) => {
                c.offsets.push(c.values.len() as i32);
                c.nulls.append_null();
            }
            Column::Bool(c) => {
                c.values.append(false);
                c.nulls.append_null();
            }
            Column::Int8(c) => c.push(None),
            Column::Int32(c) => c.push(None),
            Column::Int64(c) => c.push(None),
            Column::Float32(c) => c.push(None),
            Column::List(c) => {
                c.offsets.push(c.offsets[c.offsets.len() - 1]);
                c.nulls.append_null();
            }
            Column::FixedList(c) => {
                for _ in 0..c.size {
                    c.item.push_null();
                }
                c.nulls.append_null();
            }
            Column::Struct(c) => c.push_null(),
        }
    }

    pub fn push_str(&mut self, text: &str) -> Result<(), String> {
        match self {
            Column::Utf8(c) => {
                c.values.extend_from_slice(text.as_bytes());
                c.offsets.push(c.values.len() as i32);
                c.nulls.append_non_null();
                Ok(())
            }
            Column::Int8(_) | Column::Int32(_) | Column::Int64(_) => {
                let value = text
                    .parse()
                    .map_err(|_| format!("`{text}` where the lake's column holds integers"))?;
                self.push_i64(value)
            }
            _ => Err(mismatch("a string", self)),
        }
    }

    pub fn push_i64(&mut self, value: i64) -> Result<(), String> {
        let range = || format!("{value} is out of the lake column's range");
        match self {
            Column::Int8(c) => c.push(Some(i8::try_from(value).map_err(|_| range())?)),
            Column::Int32(c) => c.push(Some(i32::try_from(value).map_err(|_| range())?)),
            Column::Int64(c) => c.push(Some(value)),
            Column::Float32(c) => c.push(Some(value as f32)),
            _ => return Err(mismatch("a number", self)),
        }
        Ok(())
    }

    pub fn push_f64(&mut self, value: f64) -> Result<(), String> {
        match self {
            Column::Float32(c) => c.push(Some(value as f32)),
            _ => return Err(mismatch("a fractional number", self)),
        }
        Ok(())
    }

    pub fn push_bool(&mut self, value: bool) -> Result<(), String> {
        match self {
            Column::Bool(c) => {
                c.values.append(value);
                c.nulls.append_non_null();
                Ok(())
            }
            _ => Err(mismatch("a boolean", self)),
        }
    }

    /// A scalar JSON value; whether it was non-null.
    pub fn push_json(&mut self, value: &Value) -> Result<bool, String> {
        match value {
            Value::Null => self.push_null(),
            Value::Bool(b) => self.push_bool(*b)?,
            Value::String(text) => self.push_str(text)?,
            Value::Number(n) => match n.as_i64() {
                Some(i) => self.push_i64(i)?,
                None => self.push_f64(n.as_f64().unwrap_or(f64::NAN))?,
            },
            Value::Array(_) | Value::Object(_) => return Err(mismatch("a list or object", self)),
        }
        Ok(!value.is_null())
    }

    /// Drops the values from row `len` on (every row from the first one not yet finished).
    pub fn truncate(&mut self, len: usize) {
        match self {
            Column::Utf8(c) => {
                c.offsets.truncate(len + 1);
                c.values.truncate(c.end());
                c.nulls.truncate(len);
            }
            Column::Bool(c) => {
                c.values.truncate(len);
                c.nulls.truncate(len);
            }
            Column::Int8(c) => c.truncate(len),
            Column::Int32(c) => c.truncate(len),
            Column::Int64(c) => c.truncate(len),
            Column::Float32(c) => c.truncate(len),
            Column::List(c) => {
                c.offsets.truncate(len + 1);
                c.item.truncate(c.offsets[c.offsets.len() - 1] as usize);
                c.nulls.truncate(len);
            }
            Column::FixedList(c) => {
                c.item.truncate(len * c.size);
                c.nulls.truncate(len);
            }
            Column::Struct(c) => c.truncate(len),
        }
    }

    /// Appends every row of `other`, a column of the same type.
    pub fn extend_from(&mut self, other: &Column) {
        let rows = other.len();
        match (self, other) {
            (Column::Utf8(c), Column::Utf8(o)) => {
                let base = c.end();
                c.values.extend_from_slice(&o.values);
                c.offsets
                    .extend(o.offsets[1..].iter().map(|end| end + base as i32));
                extend_nulls(&mut c.nulls, &o.nulls, rows);
            }
            (Column::Bool(c), Column::Bool(o)) => {
                for row in 0..rows {
                    c.values.append(o.values.get_bit(row));
                }
                extend_nulls(&mut c.nulls, &o.nulls, rows);
            }
            (Column::Int8(c), Column::Int8(o)) => c.extend_from(o),
            (Column::Int32(c), Column::Int32(o)) => c.extend_from(o),
            (Column::Int64(c), Column::Int64(o)) => c.extend_from(o),
            (Column::Float32(c), Column::Float32(o)) => c.extend_from(o),
            (Column::List(c), Column::List(o)) => {
                let base = c.item.len() as i32;
                c.offsets
                    .extend(o.offsets[1..].iter().map(|end| end + base));
                c.item.extend_from(&o.item);
                extend_nulls(&mut c.nulls, &o.nulls, rows);
            }
            (Column::FixedList(c), Column::FixedList(o)) => {
                c.item.extend_from(&o.item);
                extend_nulls(&mut c.nulls, &o.nulls, rows);
            }
            (Column::Struct(c), Column::Struct(o)) => c.extend_from(o),
            // Both sides are built from one schema.
            _ => {}
        }
    }

    /// Appends `[length, capacity]` of each of the column's buffers (rows, and bytes of text),
    /// its children's after them: the lengths are what [`Column::reserve`] reads back for the
    /// next batch of the same table.
    pub fn buffers(&self, out: &mut Vec<[usize; 2]>) {
        match self {
            Column::Utf8(c) => out.extend([
                [self.len(), c.offsets.capacity() - 1],
                [c.values.len(), c.values.capacity()],
            ]),
            Column::Bool(c) => out.push([c.values.len(), c.values.capacity()]),
            Column::Int8(c) => out.push([c.values.len(), c.values.capacity()]),
            Column::Int32(c) => out.push([c.values.len(), c.values.capacity()]),
            Column::Int64(c) => out.push([c.values.len(), c.values.capacity()]),
            Column::Float32(c) => out.push([c.values.len(), c.values.capacity()]),
            Column::List(c) => {
                out.push([self.len(), c.offsets.capacity() - 1]);
                c.item.buffers(out);
            }
            Column::FixedList(c) => c.item.buffers(out),
            Column::Struct(c) => c.buffers(out),
        }
    }

    /// Reserves room for `scale` times the lengths [`Column::buffers`] gave (read from `sizes`
    /// in the same order), so that a batch's buffers grow without being copied.
    pub fn reserve(&mut self, sizes: &mut std::slice::Iter<'_, usize>, scale: f64) {
        let mut next = || (sizes.next().copied().unwrap_or(0) as f64 * scale) as usize;
        match self {
            Column::Utf8(c) => {
                c.offsets.reserve(next());
                c.values.reserve(next());
            }
            Column::Bool(c) => c.values.reserve(next()),
            Column::Int8(c) => c.values.reserve(next()),
            Column::Int32(c) => c.values.reserve(next()),
            Column::Int64(c) => c.values.reserve(next()),
            Column::Float32(c) => c.values.reserve(next()),
            Column::List(c) => {
                c.offsets.reserve(next());
                c.item.reserve(sizes, scale);
            }
            Column::FixedList(c) => c.item.reserve(sizes, scale),
            Column::Struct(c) => c.reserve(sizes, scale),
        }
    }

    /// The built array; the column is left empty.
    pub fn finish(&mut self) -> Result<ArrayRef, ArrowError> {
        Ok(match self {
            Column::Utf8(c) => {
                let offsets = std::mem::replace(&mut c.offsets, vec![0]);
                let values = std::mem::take(&mut c.values);
                Arc::new(StringArray::try_new(
                    OffsetBuffer::new(ScalarBuffer::from(offsets)),
                    Buffer::from_vec(values),
                    c.nulls.finish(),
                )?)
            }
            Column::Bool(c) => Arc::new(BooleanArray::new(c.values.finish(), c.nulls.finish())),
            Column::Int8(c) => c.finish(),
            Column::Int32(c) => c.finish(),
            Column::Int64(c) => c.finish(),
            Column::Float32(c) => c.finish(),
            Column::List(c) => {
                let offsets = std::mem::replace(&mut c.offsets, vec![0]);
                Arc::new(ListArray::try_new(
                    Arc::clone(&c.field),
                    OffsetBuffer::new(ScalarBuffer::from(offsets)),
                    c.item.finish()?,
                    c.nulls.finish(),
                )?)
            }
            Column::FixedList(c) => Arc::new(FixedSizeListArray::try_new(
                Arc::clone(&c.field),
                c.size as i32,
                c.item.finish()?,
                c.nulls.finish(),
            )?),
            Column::Struct(c) => Arc::new(c.finish()?),
        })
    }

    pub fn as_list(&mut self) -> Result<&mut ListColumn, String> {
        match self {
            Column::List(list) => Ok(list),
            other => Err(mismatch("a list", other)),
        }
    }

    pub fn as_struct(&mut self) -> Result<&mut StructColumn, String> {
        match self {
            Column::Struct(st) => Ok(st),
            other => Err(mismatch("an object", other)),
        }
    }
}

fn extend_nulls(nulls: &mut NullBufferBuilder, other: &NullBufferBuilder, rows: usize) {
    if other.as_slice().is_none() {
        nulls.append_n_non_nulls(rows);
    } else {
        for row in 0..rows {
            nulls.append(other.is_valid(row));
        }
    }
}

#[derive(Debug)]
pub(super) struct Utf8Column {
    offsets: Vec<i32>,
    values: Vec<u8>,
    nulls: NullBufferBuilder,
}

impl Default for Utf8Column {
    fn default() -> Self {
        Self {
            offsets: vec![0],
            values: Vec::new(),
            nulls: NullBufferBuilder::new(0),
        }
    }
}

impl Utf8Column {
    fn end(&self) -> usize {
        self.offsets[self.offsets.len() - 1] as usize
    }
}

#[derive(Debug)]
pub(super) struct BoolColumn {
    values: BooleanBufferBuilder,
    nulls: NullBufferBuilder,
}

impl Default for BoolColumn {
    fn default() -> Self {
        Self {
            values: BooleanBufferBuilder::new(0),
            nulls: NullBufferBuilder::new(0),
        }
    }
}

#[derive(Debug)]
pub(super) struct Primitive<T: ArrowPrimitiveType> {
    values: Vec<T::Native>,
    nulls: NullBufferBuilder,
}

impl<T: ArrowPrimitiveType> Default for Primitive<T> {
    fn default() -> Self {
        Self {
            values: Vec::new(),
            nulls: NullBufferBuilder::new(0),
        }
    }
}

impl<T: ArrowPrimitiveType> Primitive<T> {
    fn push(&mut self, value: Option<T::Native>) {
        self.values.push(value.unwrap_or_default());
        self.nulls.append(value.is_some());
    }

    fn truncate(&mut self, len: usize) {
        self.values.truncate(len);
        self.nulls.truncate(len);
    }

    fn extend_from(&mut self, other: &Self) {
        self.values.extend_from_slice(&other.values);
        extend_nulls(&mut self.nulls, &other.nulls, other.values.len());
    }

    fn finish(&mut self) -> ArrayRef {
        let values = std::mem::take(&mut self.values);
        Arc::new(PrimitiveArray::<T>::new(
            ScalarBuffer::from(values),
            self.nulls.finish(),
        ))
    }
}

impl Primitive<Int64Type> {
    /// The value of `row`, if not null.
    pub fn get(&self, row: usize) -> Option<i64> {
        (row < self.values.len() && self.nulls.is_valid(row)).then(|| self.values[row])
    }

    /// Sets the value of an existing `row`.
    pub fn set(&mut self, row: usize, value: Option<i64>) {
        self.values[row] = value.unwrap_or_default();
        if value.is_some() != self.nulls.is_valid(row) {
            self.nulls.set_bit(row, value.is_some());
        }
    }
}

#[derive(Debug)]
pub(super) struct ListColumn {
    offsets: Vec<i32>,
    nulls: NullBufferBuilder,
    pub item: Box<Column>,
    field: FieldRef,
}

impl ListColumn {
    /// Ends a list whose items were pushed to [`ListColumn::item`].
    pub fn close(&mut self) {
        self.offsets.push(self.item.len() as i32);
        self.nulls.append_non_null();
    }
}

#[derive(Debug)]
pub(super) struct FixedListColumn {
    size: usize,
    nulls: NullBufferBuilder,
    pub item: Box<Column>,
    field: FieldRef,
}

impl FixedListColumn {
    /// Ends a list whose items were pushed to [`FixedListColumn::item`]; the error says when
    /// it does not have the list's size.
    pub fn close(&mut self) -> Result<(), String> {
        let rows = self.nulls.len() + 1;
        if self.item.len() != rows * self.size {
            let items = self.item.len() - self.nulls.len() * self.size;
            return Err(format!(
                "a list of {items} where {} are expected",
                self.size
            ));
        }
        self.nulls.append_non_null();
        Ok(())
    }
}

/// A struct column: its fields' columns, and which field of a layout node feeds each one.
#[derive(Debug)]
pub(super) struct StructColumn {
    pub fields: Fields,
    pub columns: Vec<Column>,
    nulls: NullBufferBuilder,
    len: usize,
    /// The layout node last read into this column, and its fields' columns.
    slots: Option<(&'static Node, Vec<Option<usize>>)>,
}

impl StructColumn {
    pub fn new(fields: &Fields) -> Result<Self, String> {
        if fields.len() > 64 {
            return Err(format!(
                "{} fields (the import builds 64 at most)",
                fields.len()
            ));
        }
        Ok(Self {
            fields: fields.clone(),
            columns: fields
                .iter()
                .map(|f| Column::new(f.data_type()))
                .collect::<Result<_, _>>()?,
            nulls: NullBufferBuilder::new(0),
            len: 0,
            slots: None,
        })
    }

    pub fn len(&self) -> usize {
        self.len
    }

    /// The column of the field `name`.
    pub fn index(&self, name: &str) -> Option<usize> {
        self.fields.iter().position(|f| f.name() == name)
    }

    /// Per field of `node`, the column it is written to (none: the lake does not keep it), and
    /// the columns.
    pub fn slots(&mut self, node: &'static Node) -> (&[Option<usize>], &mut [Column]) {
        let cached = self
            .slots
            .as_ref()
            .is_some_and(|(cached, _)| std::ptr::eq(*cached, node));
        if !cached {
            let slots = node
                .fields
                .iter()
                .map(|(name, _)| self.index(name))
                .collect();
            self.slots = Some((node, slots));
        }
        let slots = self.slots.as_ref().map_or(&[][..], |(_, s)| s.as_slice());
        (slots, &mut self.columns)
    }

    /// The text of `column` in the row being written, if it has one.
    pub fn text(&self, column: usize, row: usize) -> Option<&str> {
        match &self.columns[column] {
            Column::Utf8(c) if row + 1 < c.offsets.len() && c.nulls.is_valid(row) => {
                let (from, to) = (c.offsets[row] as usize, c.offsets[row + 1] as usize);
                std::str::from_utf8(&c.values[from..to]).ok()
            }
            _ => None,
        }
    }

    /// Ends the row being written: each field without a value gets what `fill` gives for its
    /// name. The error names a non-nullable field left empty.
    pub fn finish_row<'f>(
        &mut self,
        seen: Seen,
        mut fill: impl FnMut(&str) -> Fill<'f>,
    ) -> Result<(), String> {
        for (index, column) in self.columns.iter_mut().enumerate() {
            if seen.non_null(index) {
                continue;
            }
            let field = &self.fields[index];
            let written = seen.written(index);
            let filled = match fill(field.name()) {
                Fill::Keep => {
                    if !written {
                        column.push_null();
                    }
                    false
                }
                other => {
                    if written {
                        column.truncate(self.len);
                    }
                    match other {
                        Fill::Text(text) => column.push_str(text)?,
                        Fill::Int(value) => column.push_i64(value)?,
                        Fill::Json(value) => {
                            column.push_json(value)?;
                        }
                        Fill::Keep => {}
                    }
                    true
                }
            };
            if !filled && !field.is_nullable() {
                return Err(if written {
                    format!("`{}` is null", field.name())
                } else {
                    format!("no `{}`", field.name())
                });
            }
        }
        self.nulls.append_non_null();
        self.len += 1;
        Ok(())
    }

    pub fn push_null(&mut self) {
        for column in &mut self.columns {
            column.push_null();
        }
        self.nulls.append_null();
        self.len += 1;
    }

    pub fn truncate(&mut self, len: usize) {
        for column in &mut self.columns {
            column.truncate(len);
        }
        self.nulls.truncate(len);
        self.len = self.len.min(len);
    }

    pub fn extend_from(&mut self, other: &StructColumn) {
        for (column, from) in self.columns.iter_mut().zip(&other.columns) {
            column.extend_from(from);
        }
        extend_nulls(&mut self.nulls, &other.nulls, other.len);
        self.len += other.len;
    }

    /// Its fields' buffers ([`Column::buffers`]).
    pub fn buffers(&self, out: &mut Vec<[usize; 2]>) {
        for column in &self.columns {
            column.buffers(out);
        }
    }

    /// Reserves room for its fields ([`Column::reserve`]).
    pub fn reserve(&mut self, sizes: &mut std::slice::Iter<'_, usize>, scale: f64) {
        for column in &mut self.columns {
            column.reserve(sizes, scale);
        }
    }

    pub fn finish(&mut self) -> Result<StructArray, ArrowError> {
        let columns = self
            .columns
            .iter_mut()
            .map(Column::finish)
            .collect::<Result<Vec<_>, _>>()?;
        let len = std::mem::take(&mut self.len);
        StructArray::try_new_with_length(self.fields.clone(), columns, self.nulls.finish(), len)
    }
}
