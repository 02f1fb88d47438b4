//! A statistic's result: its Arrow batches, written as CSV exactly as `cxrlake stats NAME
//! --format csv` writes them, and the same cells as text for the HTML tables and the charts.

use std::path::Path;

use arrow::array::RecordBatch;
use arrow::datatypes::SchemaRef;
use arrow::util::display::{ArrayFormatter, FormatOptions};

use crate::error::{ReportError, Result};

/// One statistic's rows, as Arrow batches and as formatted cells.
#[derive(Debug, Clone)]
pub struct Table {
    /// The statistic (`sql/stats/<name>.sql`) or another table of the report (`provenance`).
    pub name: String,
    /// Column names.
    pub columns: Vec<String>,
    /// Each row's cells, formatted as the CSV writer formats them (null: empty).
    pub rows: Vec<Vec<String>>,
    schema: SchemaRef,
    batches: Vec<RecordBatch>,
}

impl Table {
    /// The table of `batches` (with `schema`), its cells formatted once.
    pub fn new(name: &str, schema: SchemaRef, batches: Vec<RecordBatch>) -> Result<Self> {
        let options = FormatOptions::default();
        let mut rows = Vec::new();
        for batch in &batches {
            let formatters = batch
                .columns()
                .iter()
                .map(|column| ArrayFormatter::try_new(column.as_ref(), &options))
                .collect::<Result<Vec<_>, _>>()?;
            for row in 0..batch.num_rows() {
                rows.push(
                    formatters
                        .iter()
                        .map(|f| f.value(row).to_string())
                        .collect(),
                );
            }
        }
        Ok(Self {
            name: name.to_string(),
            columns: schema.fields().iter().map(|f| f.name().clone()).collect(),
            rows,
            schema,
            batches,
        })
    }

    /// The index of column `name`.
    pub fn column(&self, name: &str) -> Option<usize> {
        self.columns.iter().position(|c| c == name)
    }

    /// The cell of `row` in column `name` ("" if either is absent).
    pub fn text(&self, row: usize, name: &str) -> &str {
        self.column(name)
            .and_then(|c| self.rows.get(row)?.get(c))
            .map_or("", String::as_str)
    }

    /// The cell of `row` in column `name` as a number (0 when empty or not a number).
    pub fn number(&self, row: usize, name: &str) -> f64 {
        self.text(row, name).parse().unwrap_or(0.0)
    }

    /// Writes the rows as CSV with a header, as `cxrlake stats NAME --format csv` does.
    pub fn write_csv(&self, path: &Path) -> Result<()> {
        let file = std::fs::File::create(path).map_err(ReportError::write(path))?;
        let mut writer = arrow::csv::WriterBuilder::new()
            .with_header(true)
            .build(file);
        if self.batches.is_empty() {
            writer.write(&RecordBatch::new_empty(self.schema.clone()))?;
        }
        for batch in &self.batches {
            writer.write(batch)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow::array::{Float64Array, StringArray};
    use arrow::datatypes::{DataType, Field, Schema};

    use super::*;

    fn sample() -> Table {
        let schema = Arc::new(Schema::new(vec![
            Field::new("name", DataType::Utf8, true),
            Field::new("share", DataType::Float64, true),
        ]));
        let batch = RecordBatch::try_new(
            schema.clone(),
            vec![
                Arc::new(StringArray::from(vec![Some("a, b"), None])),
                Arc::new(Float64Array::from(vec![
                    Some(0.25),
                    Some(10.889189189189189),
                ])),
            ],
        )
        .expect("batch");
        Table::new("sample", schema, vec![batch]).expect("table")
    }

    #[test]
    fn cells_are_the_csv_writers_text() {
        let table = sample();
        assert_eq!(table.text(0, "name"), "a, b");
        assert_eq!(table.text(1, "name"), "");
        assert_eq!(table.number(1, "share"), 10.889189189189189);
        assert_eq!(table.number(0, "missing"), 0.0);
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("sample.csv");
        table.write_csv(&path).expect("csv");
        let text = std::fs::read_to_string(&path).expect("read");
        assert_eq!(text, "name,share\n\"a, b\",0.25\n,10.889189189189189\n");
    }
}
