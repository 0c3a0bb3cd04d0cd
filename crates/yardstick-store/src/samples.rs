//! Raw samples as Parquet: a small columnar table type written with the parquet crate's
//! low-level writer (zstd), so no Arrow dependency is needed for the hot path.
//!
//! One row per sample (a request, a step, a process run). Columns are typed; optional columns
//! hold nulls; list columns hold per-sample series such as inter-token gaps.

use std::sync::Arc;

use parquet::basic::{Compression, ZstdLevel};
use parquet::data_type::{BoolType, ByteArray, ByteArrayType, DoubleType, Int64Type};
use parquet::file::properties::WriterProperties;
use parquet::file::writer::SerializedFileWriter;
use parquet::schema::parser::parse_message_type;

use crate::StoreError;

/// One column's values.
#[derive(Debug, Clone, PartialEq)]
pub enum Column {
    /// 64-bit integers.
    I64(Vec<i64>),
    /// Nullable 64-bit integers.
    OptI64(Vec<Option<i64>>),
    /// Doubles.
    F64(Vec<f64>),
    /// Nullable doubles.
    OptF64(Vec<Option<f64>>),
    /// UTF-8 strings.
    Str(Vec<String>),
    /// Nullable UTF-8 strings.
    OptStr(Vec<Option<String>>),
    /// Booleans.
    Bool(Vec<bool>),
    /// A list of doubles per row (never null; may be empty).
    ListF64(Vec<Vec<f64>>),
}

impl Column {
    fn len(&self) -> usize {
        match self {
            Column::I64(v) => v.len(),
            Column::OptI64(v) => v.len(),
            Column::F64(v) => v.len(),
            Column::OptF64(v) => v.len(),
            Column::Str(v) => v.len(),
            Column::OptStr(v) => v.len(),
            Column::Bool(v) => v.len(),
            Column::ListF64(v) => v.len(),
        }
    }

    fn schema(&self, name: &str) -> String {
        match self {
            Column::I64(_) => format!("required int64 {name};"),
            Column::OptI64(_) => format!("optional int64 {name};"),
            Column::F64(_) => format!("required double {name};"),
            Column::OptF64(_) => format!("optional double {name};"),
            Column::Str(_) => format!("required binary {name} (STRING);"),
            Column::OptStr(_) => format!("optional binary {name} (STRING);"),
            Column::Bool(_) => format!("required boolean {name};"),
            Column::ListF64(_) => format!(
                "required group {name} (LIST) {{ repeated group list {{ required double element; }} }}"
            ),
        }
    }
}

/// A table of named columns of equal length.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Table {
    columns: Vec<(String, Column)>,
}

impl Table {
    /// An empty table.
    pub fn new() -> Self {
        Table::default()
    }

    /// Adds a column (builder style). Names must be identifiers (`[a-z0-9_]`).
    pub fn with(mut self, name: &str, column: Column) -> Self {
        self.columns.push((name.to_string(), column));
        self
    }

    /// Whether the table has a column of this name.
    pub fn has(&self, name: &str) -> bool {
        self.columns.iter().any(|(n, _)| n == name)
    }

    /// Adds the join keys of a run's sample file as columns, the same on every row: `run_id`,
    /// `point_id` and `replicate`, then each of `more` (nullable: the node, a Slurm job, a pod),
    /// each unless the table has it already, so a query over many files joins rows to runs,
    /// points, replicates and the cluster's own records without reading file names.
    pub fn with_join_keys(
        self,
        run_id: &str,
        point_id: &str,
        replicate: u32,
        more: &[(&str, Option<String>)],
    ) -> Self {
        let rows = self.rows();
        let mut t = self;
        if !t.has("run_id") {
            t = t.with("run_id", Column::Str(vec![run_id.to_string(); rows]));
        }
        if !t.has("point_id") {
            t = t.with("point_id", Column::Str(vec![point_id.to_string(); rows]));
        }
        if !t.has("replicate") {
            t = t.with("replicate", Column::I64(vec![i64::from(replicate); rows]));
        }
        for (name, value) in more {
            if !t.has(name) {
                t = t.with(name, Column::OptStr(vec![value.clone(); rows]));
            }
        }
        t
    }

    /// Rows in the table.
    pub fn rows(&self) -> usize {
        self.columns.first().map_or(0, |(_, c)| c.len())
    }

    /// Encodes the table as a Parquet file (zstd, one row group).
    pub fn to_parquet(&self, key_values: &[(&str, &str)]) -> Result<Vec<u8>, StoreError> {
        let rows = self.rows();
        for (name, c) in &self.columns {
            if c.len() != rows {
                return Err(StoreError::Invalid(format!(
                    "column {name} has {} rows, expected {rows}",
                    c.len()
                )));
            }
            if name.is_empty()
                || !name
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
            {
                return Err(StoreError::Invalid(format!("invalid column name `{name}`")));
            }
        }
        let pq = |e: parquet::errors::ParquetError| StoreError::Invalid(format!("parquet: {e}"));
        let fields: String = self
            .columns
            .iter()
            .map(|(n, c)| c.schema(n))
            .collect::<Vec<_>>()
            .join(" ");
        let schema =
            Arc::new(parse_message_type(&format!("message samples {{ {fields} }}")).map_err(pq)?);
        let kv = key_values
            .iter()
            .map(|(k, v)| parquet::file::metadata::KeyValue::new(k.to_string(), v.to_string()))
            .collect();
        let props = Arc::new(
            WriterProperties::builder()
                .set_compression(Compression::ZSTD(ZstdLevel::try_new(3).map_err(pq)?))
                .set_key_value_metadata(Some(kv))
                .build(),
        );
        let mut buf = Vec::new();
        let mut writer = SerializedFileWriter::new(&mut buf, schema, props).map_err(pq)?;
        let mut rg = writer.next_row_group().map_err(pq)?;
        let mut i = 0;
        while let Some(mut col) = rg.next_column().map_err(pq)? {
            let (_, column) = &self.columns[i];
            i += 1;
            match column {
                Column::I64(v) => {
                    col.typed::<Int64Type>()
                        .write_batch(v, None, None)
                        .map_err(pq)?;
                }
                Column::OptI64(v) => {
                    let (vals, defs) = split_opt(v);
                    col.typed::<Int64Type>()
                        .write_batch(&vals, Some(&defs), None)
                        .map_err(pq)?;
                }
                Column::F64(v) => {
                    col.typed::<DoubleType>()
                        .write_batch(v, None, None)
                        .map_err(pq)?;
                }
                Column::OptF64(v) => {
                    let (vals, defs) = split_opt(v);
                    col.typed::<DoubleType>()
                        .write_batch(&vals, Some(&defs), None)
                        .map_err(pq)?;
                }
                Column::Str(v) => {
                    let vals: Vec<ByteArray> =
                        v.iter().map(|s| ByteArray::from(s.as_str())).collect();
                    col.typed::<ByteArrayType>()
                        .write_batch(&vals, None, None)
                        .map_err(pq)?;
                }
                Column::OptStr(v) => {
                    let defs: Vec<i16> = v.iter().map(|x| x.is_some() as i16).collect();
                    let vals: Vec<ByteArray> = v
                        .iter()
                        .flatten()
                        .map(|s| ByteArray::from(s.as_str()))
                        .collect();
                    col.typed::<ByteArrayType>()
                        .write_batch(&vals, Some(&defs), None)
                        .map_err(pq)?;
                }
                Column::Bool(v) => {
                    col.typed::<BoolType>()
                        .write_batch(v, None, None)
                        .map_err(pq)?;
                }
                Column::ListF64(v) => {
                    // Definition level 0: empty list; 1: an element. Repetition level 0 starts a
                    // row, 1 continues its list.
                    let mut vals = Vec::new();
                    let mut defs = Vec::new();
                    let mut reps = Vec::new();
                    for row in v {
                        if row.is_empty() {
                            defs.push(0);
                            reps.push(0);
                        }
                        for (j, x) in row.iter().enumerate() {
                            vals.push(*x);
                            defs.push(1);
                            reps.push(if j == 0 { 0 } else { 1 });
                        }
                    }
                    col.typed::<DoubleType>()
                        .write_batch(&vals, Some(&defs), Some(&reps))
                        .map_err(pq)?;
                }
            }
            col.close().map_err(pq)?;
        }
        rg.close().map_err(pq)?;
        writer.close().map_err(pq)?;
        Ok(buf)
    }
}

fn split_opt<T: Copy>(v: &[Option<T>]) -> (Vec<T>, Vec<i16>) {
    (
        v.iter().flatten().copied().collect(),
        v.iter().map(|x| x.is_some() as i16).collect(),
    )
}

/// Reads a Parquet file back as JSON rows (for tests, `runs show` and recomputation).
pub fn read_rows(bytes: Vec<u8>) -> Result<Vec<serde_json::Value>, StoreError> {
    use parquet::file::reader::{FileReader, SerializedFileReader};
    let pq = |e: parquet::errors::ParquetError| StoreError::Integrity(format!("parquet: {e}"));
    let reader = SerializedFileReader::new(bytes::Bytes::from(bytes)).map_err(pq)?;
    let mut out = Vec::new();
    for row in reader.get_row_iter(None).map_err(pq)? {
        out.push(row.map_err(pq)?.to_json_value());
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_every_column_type() {
        let t = Table::new()
            .with("index", Column::I64(vec![0, 1, 2]))
            .with("status", Column::OptI64(vec![Some(200), None, Some(500)]))
            .with("ttft_ms", Column::F64(vec![1.5, 2.5, 3.5]))
            .with("tpot_ms", Column::OptF64(vec![None, Some(0.25), None]))
            .with("id", Column::Str(vec!["a".into(), "b".into(), "c".into()]))
            .with(
                "error",
                Column::OptStr(vec![None, None, Some("timeout".into())]),
            )
            .with("warmup", Column::Bool(vec![true, false, false]))
            .with(
                "itl_ms",
                Column::ListF64(vec![vec![], vec![1.0, 2.0], vec![3.0]]),
            );
        let bytes = t.to_parquet(&[("yardstick.kind", "serve")]).unwrap();
        assert_eq!(&bytes[..4], b"PAR1");
        let rows = read_rows(bytes).unwrap();
        assert_eq!(rows.len(), 3);
        assert_eq!(rows[1]["status"], serde_json::Value::Null);
        assert_eq!(rows[2]["error"], "timeout");
        assert_eq!(rows[1]["itl_ms"], serde_json::json!([1.0, 2.0]));
        assert_eq!(rows[0]["itl_ms"], serde_json::json!([]));
        assert_eq!(rows[0]["warmup"], true);
        assert_eq!(rows[1]["tpot_ms"], 0.25);
    }

    #[test]
    fn rejects_ragged_tables_and_bad_names() {
        let t = Table::new()
            .with("a", Column::I64(vec![1]))
            .with("b", Column::I64(vec![]));
        assert!(t.to_parquet(&[]).is_err());
        let t = Table::new().with("Bad Name", Column::I64(vec![1]));
        assert!(t.to_parquet(&[]).is_err());
    }
}
