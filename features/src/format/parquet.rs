//! Parquet through arrow-rs; the layer metadata rides in the file's key-value metadata.

use std::fs::File;
use std::path::Path;
use std::sync::Arc;

use anyhow::{Context, Result};
use arrow_array::{
    Array, ArrayRef, BooleanArray, Float64Array, Int64Array, RecordBatch, StringArray, UInt64Array,
};
use arrow_schema::{DataType, Field, Schema};
use datasets::output::{Existing, Output};
use parquet::arrow::ArrowWriter;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::basic::Compression;
use parquet::file::metadata::KeyValue;
use parquet::file::properties::WriterProperties;

use super::empty_features;
use crate::error::InputError;
use crate::matrix::{FeatureMatrix, METADATA_KEY, Metadata};

const ROWS_PER_BATCH: usize = 64 * 1024;

fn schema(matrix: &FeatureMatrix) -> Schema {
    let mut fields = vec![
        Field::new("op", DataType::Utf8, false),
        Field::new("pid", DataType::UInt64, false),
        Field::new("tid", DataType::UInt64, false),
        Field::new("ts", DataType::UInt64, false),
        Field::new("dur", DataType::UInt64, false),
        Field::new("file", DataType::Utf8, true),
        Field::new("size", DataType::Int64, true),
        Field::new("bandwidth", DataType::Float64, true),
        Field::new("direct", DataType::Boolean, true),
        Field::new("sequential", DataType::Boolean, true),
        Field::new("run", DataType::Utf8, true),
        Field::new("self_ns", DataType::UInt64, false),
    ];
    fields.extend(
        matrix
            .features
            .iter()
            .map(|f| Field::new(&f.column, DataType::Float64, false)),
    );
    Schema::new(fields)
}

pub fn write(matrix: &FeatureMatrix, path: &Path, existing: Existing) -> Result<()> {
    let schema = Arc::new(schema(matrix));
    let meta = serde_json::to_string(&Metadata::of(matrix))?;
    let props = WriterProperties::builder()
        .set_compression(Compression::SNAPPY)
        .set_key_value_metadata(Some(vec![KeyValue::new(METADATA_KEY.to_owned(), meta)]))
        .build();
    let file = Output::create(path, existing)?;
    let mut writer = ArrowWriter::try_new(file, schema.clone(), Some(props))?;
    let n = matrix.n_rows();
    let mut start = 0;
    loop {
        let end = (start + ROWS_PER_BATCH).min(n);
        let r = start..end;
        let mut columns: Vec<ArrayRef> = vec![
            Arc::new(StringArray::from_iter_values(matrix.op[r.clone()].iter())),
            Arc::new(UInt64Array::from(matrix.pid[r.clone()].to_vec())),
            Arc::new(UInt64Array::from(matrix.tid[r.clone()].to_vec())),
            Arc::new(UInt64Array::from(matrix.ts_ns[r.clone()].to_vec())),
            Arc::new(UInt64Array::from(matrix.dur_ns[r.clone()].to_vec())),
            Arc::new(StringArray::from(matrix.file[r.clone()].to_vec())),
            Arc::new(Int64Array::from(matrix.size[r.clone()].to_vec())),
            Arc::new(Float64Array::from(
                matrix.bandwidth_mibs[r.clone()].to_vec(),
            )),
            Arc::new(BooleanArray::from(matrix.direct[r.clone()].to_vec())),
            Arc::new(BooleanArray::from(matrix.sequential[r.clone()].to_vec())),
            Arc::new(StringArray::from(matrix.run[r.clone()].to_vec())),
            Arc::new(UInt64Array::from(matrix.self_ns[r.clone()].to_vec())),
        ];
        columns.extend(
            matrix
                .features
                .iter()
                .map(|f| Arc::new(Float64Array::from(f.values[r.clone()].to_vec())) as ArrayRef),
        );
        writer.write(&RecordBatch::try_new(schema.clone(), columns)?)?;
        if end == n {
            break;
        }
        start = end;
    }
    let file = writer
        .into_inner()
        .with_context(|| format!("cannot write {}", path.display()))?;
    Ok(file.commit()?)
}

pub fn read(path: &Path) -> Result<FeatureMatrix> {
    let file = File::open(path).map_err(|e| InputError::new(path, None, None, e.to_string()))?;
    let builder = ParquetRecordBatchReaderBuilder::try_new(file)
        .map_err(|e| InputError::new(path, None, None, format!("not a Parquet file: {e}")))?;
    let meta_text = builder
        .metadata()
        .file_metadata()
        .key_value_metadata()
        .and_then(|kv| kv.iter().find(|kv| kv.key == METADATA_KEY))
        .and_then(|kv| kv.value.clone())
        .ok_or_else(|| {
            InputError::new(
                path,
                None,
                Some(METADATA_KEY),
                "missing layer metadata (not written by dc-features?)",
            )
        })?;
    let meta = Metadata::parse(&meta_text, path)?;
    let mut matrix = FeatureMatrix {
        features: empty_features(&meta),
        ..Default::default()
    };
    let reader = builder.with_batch_size(ROWS_PER_BATCH).build()?;
    let mut row = 0u64;
    for batch in reader {
        let batch = batch.map_err(|e| InputError::new(path, Some(row + 1), None, e.to_string()))?;
        let col = Columns {
            path,
            batch: &batch,
            row,
        };
        matrix.op.extend(
            col.strings("op")?
                .into_iter()
                .enumerate()
                .map(|(i, s)| {
                    s.map(str::to_owned)
                        .ok_or_else(|| col.error(i, "op", "null op"))
                })
                .collect::<Result<Vec<_>, _>>()?,
        );
        for (name, out) in [
            ("pid", &mut matrix.pid),
            ("tid", &mut matrix.tid),
            ("ts", &mut matrix.ts_ns),
            ("dur", &mut matrix.dur_ns),
            ("self_ns", &mut matrix.self_ns),
        ] {
            let a: &UInt64Array = col.typed(name, &DataType::UInt64)?;
            if let Some(i) = (0..a.len()).find(|&i| a.is_null(i)) {
                return Err(col.error(i, name, "null value").into());
            }
            out.extend(a.values().iter().copied());
        }
        matrix.file.extend(
            col.strings("file")?
                .into_iter()
                .map(|s| s.map(str::to_owned)),
        );
        let size: &Int64Array = col.typed("size", &DataType::Int64)?;
        matrix.size.extend(size.iter());
        let bw: &Float64Array = col.typed("bandwidth", &DataType::Float64)?;
        matrix.bandwidth_mibs.extend(bw.iter());
        for (name, out) in [
            ("direct", &mut matrix.direct),
            ("sequential", &mut matrix.sequential),
        ] {
            let a: &BooleanArray = col.typed(name, &DataType::Boolean)?;
            out.extend(a.iter());
        }
        matrix.run.extend(
            col.strings("run")?
                .into_iter()
                .map(|s| s.map(str::to_owned)),
        );
        for f in &mut matrix.features {
            let a: &Float64Array = col.typed(&f.column, &DataType::Float64)?;
            if let Some(i) = (0..a.len()).find(|&i| a.is_null(i)) {
                return Err(col.error(i, &f.column, "null feature value").into());
            }
            f.values.extend(a.values().iter().copied());
        }
        row += batch.num_rows() as u64;
    }
    Ok(matrix)
}

struct Columns<'a> {
    path: &'a Path,
    batch: &'a RecordBatch,
    row: u64,
}

impl<'a> Columns<'a> {
    fn error(&self, i: usize, field: &str, msg: &str) -> InputError {
        InputError::new(self.path, Some(self.row + i as u64 + 1), Some(field), msg)
    }

    fn typed<T: 'static>(&self, name: &str, ty: &DataType) -> Result<&'a T> {
        let a = self
            .batch
            .column_by_name(name)
            .ok_or_else(|| InputError::new(self.path, None, Some(name), "column is missing"))?;
        if a.data_type() != ty {
            return Err(InputError::new(
                self.path,
                None,
                Some(name),
                format!("column has type {}, expected {ty}", a.data_type()),
            )
            .into());
        }
        Ok(a.as_any().downcast_ref::<T>().expect("type checked above"))
    }

    fn strings(&self, name: &str) -> Result<Vec<Option<&'a str>>> {
        let a: &StringArray = self.typed(name, &DataType::Utf8)?;
        Ok(a.iter().collect())
    }
}
