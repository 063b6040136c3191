//! Parquet through arrow-rs; the layer metadata rides in the file's key-value metadata.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::error::{Error, Result};
use arrow_array::cast::AsArray;
use arrow_array::types::{
    ArrowPrimitiveType, Float16Type, Float32Type, Float64Type, Int8Type, Int16Type, Int32Type,
    Int64Type, UInt8Type, UInt16Type, UInt32Type, UInt64Type,
};
use arrow_array::{
    Array, ArrayRef, BooleanArray, Float64Array, Int64Array, PrimitiveArray, RecordBatch,
    StringArray, UInt64Array,
};
use arrow_schema::{DataType, Field, Schema};
use datasets::output::{Existing, Output};
use parquet::arrow::arrow_reader::{ArrowReaderOptions, ParquetRecordBatchReaderBuilder};
use parquet::arrow::{ArrowWriter, ProjectionMask};
use parquet::basic::Compression;
use parquet::file::metadata::KeyValue;
use parquet::file::properties::WriterProperties;

use super::meta::empty_features;
use crate::InputError;
use crate::matrix::{
    FeatureColumn, FeatureKind, FeatureMatrix, METADATA_KEY, Metadata, OPTIONAL_COLUMNS,
};

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
        Field::new("thread", DataType::Utf8, true),
        Field::new("process", DataType::Utf8, true),
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
    let mut w = Writer::create(path, matrix, existing)?;
    w.write(matrix)?;
    w.finish()
}

/// A Parquet matrix written a part at a time, so that a matrix larger than memory can be written:
/// every part has the columns of the matrix the writer was created with.
pub struct Writer {
    writer: ArrowWriter<Output>,
    schema: Arc<Schema>,
    path: PathBuf,
}

impl Writer {
    /// Creates `path` for a matrix with `columns`' feature columns (its rows are not written).
    pub fn create(path: &Path, columns: &FeatureMatrix, existing: Existing) -> Result<Self> {
        let schema = Arc::new(schema(columns));
        let meta =
            serde_json::to_string(&Metadata::of(columns)).map_err(|e| Error::write(path, e))?;
        let props = WriterProperties::builder()
            .set_compression(Compression::SNAPPY)
            .set_key_value_metadata(Some(vec![KeyValue::new(METADATA_KEY.to_owned(), meta)]))
            .build();
        let file = Output::create(path, existing)?;
        Ok(Self {
            writer: ArrowWriter::try_new(file, schema.clone(), Some(props))
                .map_err(|e| Error::write(path, e))?,
            schema,
            path: path.to_owned(),
        })
    }

    /// Appends `matrix`'s rows.
    pub fn write(&mut self, matrix: &FeatureMatrix) -> Result<()> {
        matrix.check_shape()?;
        let n = matrix.n_rows();
        let mut start = 0;
        while start < n {
            let end = (start + ROWS_PER_BATCH).min(n);
            self.write_batch(matrix, start..end)?;
            start = end;
        }
        Ok(())
    }

    fn write_batch(&mut self, matrix: &FeatureMatrix, r: std::ops::Range<usize>) -> Result<()> {
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
            Arc::new(StringArray::from(matrix.thread[r.clone()].to_vec())),
            Arc::new(StringArray::from(matrix.process[r.clone()].to_vec())),
            Arc::new(UInt64Array::from(matrix.self_ns[r.clone()].to_vec())),
        ];
        columns.extend(
            matrix
                .features
                .iter()
                .map(|f| Arc::new(Float64Array::from(f.values[r.clone()].to_vec())) as ArrayRef),
        );
        let batch = RecordBatch::try_new(self.schema.clone(), columns)
            .map_err(|e| Error::write(&self.path, e))?;
        self.writer
            .write(&batch)
            .map_err(|e| Error::write(&self.path, e))
    }

    /// Writes the footer and puts the file in place.
    pub fn finish(self) -> Result<()> {
        let file = self
            .writer
            .into_inner()
            .map_err(|e| Error::write(&self.path, e))?;
        Ok(file.commit()?)
    }
}

pub fn read(path: &Path) -> Result<FeatureMatrix> {
    let mut matrix = FeatureMatrix::default();
    let template = read_each(path, true, |_, batch| {
        matrix.append(batch);
        true
    })?;
    if matrix.features.is_empty() {
        matrix.features = template.features;
    }
    Ok(matrix)
}

/// The rows and columns of a Parquet matrix, from its footer alone.
pub fn shape(path: &Path) -> Result<(usize, usize)> {
    let file = File::open(path).map_err(|e| InputError::new(path, None, None, e.to_string()))?;
    let builder = ParquetRecordBatchReaderBuilder::try_new(file)
        .map_err(|e| InputError::new(path, None, None, format!("not a Parquet file: {e}")))?;
    let meta = builder.metadata().file_metadata();
    Ok((meta.num_rows() as usize, builder.schema().fields().len()))
}

/// Reads a Parquet matrix one batch of at most 64 Ki rows at a time, row group after row group, so
/// that no more than a batch is held: `each` gets the index of the batch's first row and the batch as
/// a matrix. Without `features`, only the base columns are decoded and the batches have no feature
/// columns. Returns the matrix's columns, without rows. An error of `each` stops the reading and is returned.
pub fn read_batches<E: From<Error>>(
    path: &Path,
    features: bool,
    mut each: impl FnMut(usize, FeatureMatrix) -> Result<(), E>,
) -> Result<FeatureMatrix, E> {
    let mut failed = None;
    let template = read_each(path, features, |first, m| match each(first, m) {
        Ok(()) => true,
        Err(e) => {
            failed = Some(e);
            false
        }
    })?;
    failed.map_or(Ok(template), Err)
}

/// [`read_batches`], until `each` returns false.
fn read_each(
    path: &Path,
    features: bool,
    mut each: impl FnMut(usize, FeatureMatrix) -> bool,
) -> Result<FeatureMatrix> {
    let file = File::open(path).map_err(|e| InputError::new(path, None, None, e.to_string()))?;
    // The Parquet types decide, not the Arrow schema a writer recorded: every string column is then `Utf8`.
    let options = ArrowReaderOptions::new().with_skip_arrow_metadata(true);
    let builder = ParquetRecordBatchReaderBuilder::try_new_with_options(file, options)
        .map_err(|e| InputError::new(path, None, None, format!("not a Parquet file: {e}")))?;
    let meta_text = builder
        .metadata()
        .file_metadata()
        .key_value_metadata()
        .and_then(|kv| kv.iter().find(|kv| kv.key == METADATA_KEY))
        .and_then(|kv| kv.value.clone());
    let meta = match meta_text {
        Some(text) => Metadata::parse(&text, path)?,
        None => metadata_from_names(path, builder.schema())?,
    };
    let template = FeatureMatrix {
        features: empty_features(&meta),
        ..Default::default()
    };
    let expected = schema(&template);
    let builder = if features {
        builder
    } else {
        let base = self::schema(&FeatureMatrix::default());
        let names: Vec<&str> = base.fields().iter().map(|f| f.name().as_str()).collect();
        let mask = ProjectionMask::columns(builder.parquet_schema(), names);
        builder.with_projection(mask)
    };
    let reader = builder
        .with_batch_size(ROWS_PER_BATCH)
        .build()
        .map_err(|e| Error::from(InputError::new(path, None, None, e.to_string())))?;
    let mut row = 0u64;
    for batch in reader {
        let batch = batch.map_err(|e| InputError::new(path, Some(row + 1), None, e.to_string()))?;
        let batch = conform(path, &expected, batch, row)?;
        let mut matrix = FeatureMatrix {
            features: if features {
                empty_features(&meta)
            } else {
                Vec::new()
            },
            ..Default::default()
        };
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
        for (name, out) in [
            ("thread", &mut matrix.thread),
            ("process", &mut matrix.process),
        ] {
            if batch.column_by_name(name).is_none() && OPTIONAL_COLUMNS.contains(&name) {
                out.extend(std::iter::repeat_n(None, batch.num_rows()));
            } else {
                out.extend(col.strings(name)?.into_iter().map(|s| s.map(str::to_owned)));
            }
        }
        for f in &mut matrix.features {
            let a: &Float64Array = col.typed(&f.column, &DataType::Float64)?;
            if let Some(i) = (0..a.len()).find(|&i| a.is_null(i)) {
                return Err(col.error(i, &f.column, "null feature value").into());
            }
            f.values.extend(a.values().iter().copied());
        }
        if !each(row as usize, matrix) {
            break;
        }
        row += batch.num_rows() as u64;
    }
    Ok(template)
}

/// The layer metadata of a matrix another tool rewrote without it (polars keeps no key-value
/// metadata), from its feature columns' names, which spell each one's layer, name and kind
/// ([`FeatureColumn::column_name`]).
fn metadata_from_names(path: &Path, schema: &Schema) -> Result<Metadata> {
    let base = self::schema(&FeatureMatrix::default());
    let features = schema
        .fields()
        .iter()
        .map(|f| f.name())
        .filter(|name| base.field_with_name(name).is_err())
        .map(|column| {
            let (layer, name, kind) = if let Some(layer) = column.strip_prefix("excl::") {
                (layer, "", FeatureKind::ExclusiveNs)
            } else if let Some((layer, name)) = column
                .strip_prefix("count::")
                .and_then(|c| c.split_once("::"))
            {
                (layer, name, FeatureKind::Count)
            } else {
                let (layer, name) = column.split_once("::").ok_or_else(|| {
                    InputError::new(
                        path,
                        None,
                        Some(column),
                        format!(
                            "the file has no layer metadata ({METADATA_KEY}), and this column's \
                             name is not a feature column's (layer::name)"
                        ),
                    )
                })?;
                (layer, name, FeatureKind::TimeNs)
            };
            Ok(FeatureColumn::new(layer, name, kind, Vec::new()))
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(Metadata::of(&FeatureMatrix {
        features,
        ..FeatureMatrix::default()
    }))
}

/// `batch` with each column of `expected` that holds the same kind of number in another width widened to the expected
/// type, as a file another tool rewrote may have them (a user may narrow an integer column, or write floats in 32
/// bits). Strings need nothing here: the reader decodes every Parquet string column as `Utf8`, whatever Arrow type
/// (polars' `large_string` or `string_view`, a dictionary) the writer recorded. A value that does not fit is an error
/// naming its row; a column of another kind is left for [`Columns::typed`] to refuse.
fn conform(path: &Path, expected: &Schema, batch: RecordBatch, row: u64) -> Result<RecordBatch> {
    let schema = batch.schema();
    let columns = schema
        .fields()
        .iter()
        .zip(batch.columns())
        .map(|(field, column)| {
            let name = field.name();
            let to = expected.field_with_name(name).ok().map(|f| f.data_type());
            let column = match to {
                Some(to) if to != column.data_type() => {
                    widen(column, to).map_err(|(i, value)| {
                        InputError::new(
                            path,
                            Some(row + i as u64 + 1),
                            Some(name),
                            format!(
                                "value {value} of a column of type {} does not fit in {to}",
                                column.data_type()
                            ),
                        )
                    })?
                }
                _ => column.clone(),
            };
            Ok((name.clone(), column))
        })
        .collect::<Result<Vec<_>>>()?;
    RecordBatch::try_from_iter(columns)
        .map_err(|e| InputError::new(path, None, None, e.to_string()).into())
}

/// `column` as `to` when both hold integers or both floats; else the column as it is. Err holds the index and the
/// value of the first integer that does not fit.
fn widen(column: &ArrayRef, to: &DataType) -> std::result::Result<ArrayRef, (usize, i128)> {
    match to {
        DataType::UInt64 | DataType::Int64 => {
            let Some(values) = integers(column) else {
                return Ok(column.clone());
            };
            Ok(if to == &DataType::UInt64 {
                Arc::new(fitted::<UInt64Type>(&values)?)
            } else {
                Arc::new(fitted::<Int64Type>(&values)?)
            })
        }
        DataType::Float64 => Ok(match column.data_type() {
            DataType::Float32 => Arc::new(
                column
                    .as_primitive::<Float32Type>()
                    .unary::<_, Float64Type>(f64::from),
            ),
            DataType::Float16 => Arc::new(
                column
                    .as_primitive::<Float16Type>()
                    .unary::<_, Float64Type>(|v| v.to_f64()),
            ),
            _ => column.clone(),
        }),
        _ => Ok(column.clone()),
    }
}

/// `values` as `T`; Err holds the index and the value of the first that does not fit.
fn fitted<T: ArrowPrimitiveType>(
    values: &[Option<i128>],
) -> std::result::Result<PrimitiveArray<T>, (usize, i128)>
where
    T::Native: TryFrom<i128>,
{
    (values.iter().enumerate())
        .map(|(i, v)| {
            v.map(|v| T::Native::try_from(v).map_err(|_| (i, v)))
                .transpose()
        })
        .collect()
}

/// The values of an integer column of any width and sign; None for a column of another type.
fn integers(column: &ArrayRef) -> Option<Vec<Option<i128>>> {
    fn each<T: ArrowPrimitiveType>(column: &ArrayRef) -> Vec<Option<i128>>
    where
        T::Native: Into<i128>,
    {
        column
            .as_primitive::<T>()
            .iter()
            .map(|v| v.map(Into::into))
            .collect()
    }
    Some(match column.data_type() {
        DataType::Int8 => each::<Int8Type>(column),
        DataType::Int16 => each::<Int16Type>(column),
        DataType::Int32 => each::<Int32Type>(column),
        DataType::Int64 => each::<Int64Type>(column),
        DataType::UInt8 => each::<UInt8Type>(column),
        DataType::UInt16 => each::<UInt16Type>(column),
        DataType::UInt32 => each::<UInt32Type>(column),
        DataType::UInt64 => each::<UInt64Type>(column),
        _ => return None,
    })
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
